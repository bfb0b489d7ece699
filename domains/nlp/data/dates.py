"""Date normalisation, generated with the standard library: human-written dates -> ISO 8601.

::

    Saturday, 9 May 1998   09/05/98   may 9th 98   9th of May 1998   ->   1998-05-09

The classic task on which a learned alignment can be read: the decoder writes the year
while it attends to the year, the month while it attends to the month name or number,
and so on. Days come before months in numeric forms (09/05/98 is the 9th of May); dates
run from 1950 to 2049, so a two-digit year is unambiguous (50-99 -> 19xx, 00-49 -> 20xx).

The generator knows which source characters produce each output character, so every pair
carries its **gold alignment** and every batch an ``alignment`` tensor (target tokens x source
tokens: 2 = sure link, 1 = possible link, 0 = none), in the sure/possible convention of
alignment error rates (Och & Ney, 2003):

* a copied digit (the year of "1998", the "05" of "09/05/98", the "9" of "9th") has a sure
  link to its source digit and possible links to the rest of its field;
* a derived digit (the "19" of a two-digit year, both month digits of "May", the leading 0
  of "9") has possible links to the whole field it comes from (the month name, the "9th");
* the separators ``-`` and ``</s>`` have none (no source character produces them), and the
  weekday produces no output.
"""

from __future__ import annotations

import datetime
import random
import string
from collections.abc import Sequence
from typing import Any

import torch
from tokenizers import Tokenizer

from framework.values import NonNegativeInt, Seed

from .base import Example
from .translation import TranslationCollator, TranslationData

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FORMATS = (
    "{weekday}, {day} {month} {year}",
    "{dd}/{mm}/{yy}",
    "{mon} {nth} {yy}",
    "{day} {month} {year}",
    "{month} {day}, {year}",
    "{dd}.{mm}.{year}",
    "{wkd} {day} {mon} {year}",
    "{nth} of {month} {year}",
    "{day} {mon} {yy}",
    "{month} {dd}, {year}",
    "{day}-{mon}-{year}",
    "{weekday} {nth} {month} {year}",
)
FIRST, DAYS = datetime.date(1950, 1, 1), (datetime.date(2049, 12, 31) - datetime.date(1950, 1, 1)).days + 1


def ordinal(n: int) -> str:
    """1 -> 1st, 2 -> 2nd, 11 -> 11th, 23 -> 23rd."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _fields(date: datetime.date) -> dict[str, str]:
    month, weekday = MONTHS[date.month - 1], WEEKDAYS[date.weekday()]
    return dict(
        weekday=weekday,
        wkd=weekday[:3],
        day=str(date.day),
        dd=f"{date.day:02d}",
        nth=ordinal(date.day),
        month=month,
        mon=month[:3],
        mm=f"{date.month:02d}",
        year=str(date.year),
        yy=f"{date.year % 100:02d}",
    )


def human_date_spans(date: datetime.date, template: str, lower: bool = False) -> tuple[str, dict[str, tuple[int, int]]]:
    """``date`` written with one of :data:`FORMATS` (lower-cased or not), and the character span
    ``(start, end)`` of each field of the template in the text."""
    values, text, spans = _fields(date), "", {}
    for literal, field, _, _ in string.Formatter().parse(template):
        text += literal
        if field:
            spans[field] = (len(text), len(text) + len(values[field]))
            text += values[field]
    return (text.lower() if lower else text), spans


#: Per output character of "YYYY-MM-DD": (sure source characters, possible source characters).
Alignment = tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]


def gold_alignment(date: datetime.date, spans: dict[str, tuple[int, int]]) -> Alignment:
    """Which characters of the human date produce each character of ``date.isoformat()`` (see the
    module's docstring): per output character, its sure and its possible source characters."""
    links: list[tuple[tuple[int, ...], tuple[int, ...]]] = [((), ())] * 10

    def field(name: str) -> tuple[int, ...]:
        start, end = spans[name]
        return tuple(range(start, end))

    def copy(outputs: range, chars: Sequence[int], whole: tuple[int, ...]) -> None:
        for out, char in zip(outputs, chars):
            links[out] = ((char,), whole)

    def derive(outputs: range, whole: tuple[int, ...]) -> None:
        for out in outputs:
            links[out] = ((), whole)

    if "year" in spans:
        copy(range(0, 4), field("year"), field("year"))
    elif "yy" in spans:
        derive(range(0, 2), field("yy"))
        copy(range(2, 4), field("yy"), field("yy"))
    if "mm" in spans:
        copy(range(5, 7), field("mm"), field("mm"))
    else:
        derive(range(5, 7), field("month" if "month" in spans else "mon"))
    if "dd" in spans:
        copy(range(8, 10), field("dd"), field("dd"))
    else:
        whole = field("day" if "day" in spans else "nth")
        digits = whole[: len(str(date.day))]
        if len(digits) == 2:
            copy(range(8, 10), digits, whole)
        else:
            derive(range(8, 9), whole)
            copy(range(9, 10), digits, whole)
    return tuple(links)


class DatePair(tuple):
    """A ``(human date, ISO date)`` pair that also carries its :func:`gold_alignment`."""

    alignment: Alignment

    def __new__(cls, source: str, target: str, alignment: Alignment) -> DatePair:
        pair = super().__new__(cls, (source, target))
        pair.alignment = alignment
        return pair

    def __getnewargs__(self) -> tuple[str, str, Alignment]:
        return (self[0], self[1], self.alignment)


def date_pairs(count: int, seed: int) -> list[DatePair]:
    """``count`` pairs (human date, ISO date) with distinct human dates, drawn with ``seed``, each
    with its gold alignment (:class:`DatePair`)."""
    rng, pairs, seen = random.Random(seed), [], set()
    while len(pairs) < count:
        date = FIRST + datetime.timedelta(days=rng.randrange(DAYS))
        text, spans = human_date_spans(date, rng.choice(FORMATS), lower=rng.random() < 1 / 3)
        if text not in seen:
            seen.add(text)
            pairs.append(DatePair(text, date.isoformat(), gold_alignment(date, spans)))
    return pairs


def _token_of_char(offsets: Sequence[tuple[int, int]], length: int) -> list[int]:
    """For each character of a text, the token that covers it (-1: none)."""
    owner = [-1] * length
    for token, (start, end) in enumerate(offsets):
        for char in range(start, min(end, length)):
            owner[char] = token
    return owner


class AlignedCollator(TranslationCollator):
    """The translation batches, plus ``alignment`` (B, M, N) int8 for pairs that carry a gold
    alignment: 2 where target token m has a sure link to source token n, 1 a possible one."""

    def __call__(self, examples: list[Example]) -> dict[str, Any]:
        batch = super().__call__(examples)
        if "target" not in batch or not all(isinstance(e, DatePair) for e in examples):
            return batch
        sources = self.tokenizer.encode_batch([s for s, _ in examples], add_special_tokens=False)
        targets = self.tokenizer.encode_batch([t for _, t in examples], add_special_tokens=False)
        alignment = torch.zeros(len(examples), batch["target"].shape[1], batch["tokens"].shape[1], dtype=torch.int8)
        for row, (example, source, target) in enumerate(zip(examples, sources, targets)):
            owner = _token_of_char(source.offsets[: self.max_length], len(example[0]))
            for m, (start, end) in enumerate(target.offsets[: self.max_length - 1]):
                for out in range(start, min(end, len(example.alignment))):
                    sure, possible = example.alignment[out]
                    for char in possible:
                        if owner[char] >= 0:
                            alignment[row, m, owner[char]] = max(int(alignment[row, m, owner[char]]), 1)
                    for char in sure:
                        if owner[char] >= 0:
                            alignment[row, m, owner[char]] = 2
        batch["alignment"] = alignment
        return batch


class DateNormalization(TranslationData):
    """Generated date pairs (no data folder); train, val and test never share a source text.
    Batches carry the gold ``alignment`` of target and source tokens (see the module's docstring).

    Args:
        train_size, val_size, test_size: pairs per split.
        seed: the generator seed.
        **kwargs: tokeniser and loader options of ``TranslationData`` (``tokenizer: char``).
    """

    def __init__(
        self,
        train_size: NonNegativeInt = 10000,
        val_size: NonNegativeInt = 1000,
        test_size: NonNegativeInt = 1000,
        seed: Seed = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.sizes, self.seed = (train_size, val_size, test_size), seed

    #: batches carry gold alignments (``task.attention_supervision`` and ``evaluate`` read them)
    gold_evidence = True

    def make_collator(self, tokenizer: Tokenizer) -> AlignedCollator:
        return AlignedCollator(tokenizer, self.max_length)

    def make_splits(self) -> dict[str, list[DatePair]]:
        pairs = date_pairs(sum(self.sizes), self.seed)
        train, val = self.sizes[0], self.sizes[0] + self.sizes[1]
        return {"train": pairs[:train], "val": pairs[train:val], "test": pairs[val:]}

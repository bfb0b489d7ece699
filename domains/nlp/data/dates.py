"""Date normalisation, generated with the standard library: human-written dates -> ISO 8601.

::

    Saturday, 9 May 1998   09/05/98   may 9th 98   9th of May 1998   ->   1998-05-09

The classic task on which a learned alignment can be read: the decoder writes the year
while it attends to the year, the month while it attends to the month name or number,
and so on. Days come before months in numeric forms (09/05/98 is the 9th of May); dates
run from 1950 to 2049, so a two-digit year is unambiguous (50-99 -> 19xx, 00-49 -> 20xx).
"""

from __future__ import annotations

import datetime
import random
from typing import Any

from .translation import TranslationData

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
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


def human_date(date: datetime.date, template: str, lower: bool = False) -> str:
    """``date`` written with one of :data:`FORMATS`, lower-cased or not."""
    month, weekday = MONTHS[date.month - 1], WEEKDAYS[date.weekday()]
    text = template.format(weekday=weekday, wkd=weekday[:3], day=date.day, dd=f"{date.day:02d}", nth=ordinal(date.day),
                           month=month, mon=month[:3], mm=f"{date.month:02d}", year=date.year, yy=f"{date.year % 100:02d}")
    return text.lower() if lower else text


def date_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` pairs (human date, ISO date) with distinct human dates, drawn with ``seed``."""
    rng, pairs, seen = random.Random(seed), [], set()
    while len(pairs) < count:
        date = FIRST + datetime.timedelta(days=rng.randrange(DAYS))
        text = human_date(date, rng.choice(FORMATS), lower=rng.random() < 1 / 3)
        if text not in seen:
            seen.add(text)
            pairs.append((text, date.isoformat()))
    return pairs


class DateNormalization(TranslationData):
    """Generated date pairs (no data folder); train, val and test never share a source text.

    Args:
        train_size, val_size, test_size: pairs per split.
        seed: the generator seed.
        **kwargs: tokeniser and loader options of ``TranslationData`` (``tokenizer: char``).
    """

    def __init__(self, train_size: int = 10000, val_size: int = 1000, test_size: int = 1000, seed: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sizes, self.seed = (train_size, val_size, test_size), seed

    def make_splits(self) -> dict[str, list[tuple[str, str]]]:
        pairs = date_pairs(sum(self.sizes), self.seed)
        train, val = self.sizes[0], self.sizes[0] + self.sizes[1]
        return {"train": pairs[:train], "val": pairs[train:val], "test": pairs[val:]}

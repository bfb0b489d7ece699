"""Sequence-to-sequence data: (source, target) sentence pairs and one joint tokeniser."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tokenizers import Tokenizer

from .base import Example, TextData, pad
from .tokenization import EOS, UNK


class TranslationCollator:
    """Sentence pairs -> ``{"tokens", "mask", "target", "references"}``.

    tokens, mask (B, N): the source ids (at most ``max_length``); target (B, M): the target
    ids followed by ``</s>`` (at most ``max_length`` in all), padded with ``<pad>`` = 0;
    references: the raw target strings, which BLEU and exact match compare against.
    Texts to predict (no target) give tokens and mask only.
    """

    def __init__(self, tokenizer: Tokenizer, max_length: int) -> None:
        self.tokenizer, self.max_length = tokenizer, max_length

    def __call__(self, examples: list[Example]) -> dict[str, Any]:
        sources = self.tokenizer.encode_batch([s for s, _ in examples], add_special_tokens=False)
        tokens, mask = pad([e.ids[: self.max_length] or [UNK] for e in sources])
        batch: dict[str, Any] = {"tokens": tokens, "mask": mask}
        if examples[0][1] is not None:
            references = [t for _, t in examples]
            targets = self.tokenizer.encode_batch(references, add_special_tokens=False)
            batch["target"] = pad([e.ids[: self.max_length - 1] + [EOS] for e in targets])[0]
            batch["references"] = references
        return batch


class TranslationData(TextData):
    """Base of the sentence-pair data modules: a subclass returns ``{split: [(source,
    target), ...]}`` from :meth:`make_splits`. One tokeniser is trained on the source and
    target sides of the training split together (so the two share ids, and a date and its
    normal form share characters).

    Args:
        **kwargs: tokeniser and loader options of :class:`~domains.nlp.data.TextData`.
    """

    def training_texts(self) -> Iterable[str]:
        for source, target in self.split("train"):
            yield source
            yield target

    def make_collator(self, tokenizer: Tokenizer) -> TranslationCollator:
        return TranslationCollator(tokenizer, self.max_length)

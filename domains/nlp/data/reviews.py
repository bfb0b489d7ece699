"""Generated restaurant reviews: a classification task whose answer sits in one sentence.

A review has three to six sentences: remarks on aspects (each with its own sentiment),
filler, and one *verdict* sentence ("overall the evening was superb .") whose sentiment is
the label (negative, neutral or positive)::

    we sat near the window . the service was really rude . overall the visit was lovely .
    -> positive

The other sentiment words disagree with the verdict as often as not, so a bag of words
gets little beyond chance; a model must find the verdict sentence and its sentiment word,
which is what word- and sentence-level attention do (and what the highlights show).
"""

from __future__ import annotations

import random
from typing import Any

from framework.data import seeded_splits, split_sizes
from framework.values import NonNegativeInt, Seed

from .classification import TextClassificationData

LABELS = ("negative", "neutral", "positive")
SENTIMENT = {
    "negative": ("awful", "terrible", "bland", "rude", "poor", "dreadful", "horrible", "disappointing"),
    "neutral": ("okay", "average", "fine", "ordinary", "acceptable", "decent", "passable", "standard"),
    "positive": ("great", "excellent", "wonderful", "delicious", "superb", "lovely", "fantastic", "perfect"),
}
ASPECTS = (
    "food",
    "service",
    "staff",
    "music",
    "price",
    "room",
    "view",
    "coffee",
    "dessert",
    "wine",
    "bread",
    "decor",
    "menu",
    "waiter",
    "terrace",
    "soup",
)
INTENSIFIERS = ("", "really ", "very ", "quite ", "rather ", "truly ")
REMARKS = (
    "the {aspect} was {adverb}{word} .",
    "we thought the {aspect} was {word} .",
    "the {aspect} seemed {word} to me .",
)
VERDICTS = (
    "overall the {whole} was {adverb}{word} .",
    "all in all it was {word} .",
    "in the end we found the {whole} {word} .",
)
WHOLES = ("evening", "visit", "experience", "meal", "place", "night")
FILLERS = (
    "we came on a {day} .",
    "we sat near the {place} .",
    "it was our {nth} visit .",
    "my {person} ordered the {dish} .",
)
FILL = {
    "day": ("monday", "tuesday", "friday", "saturday", "sunday"),
    "place": ("window", "bar", "door", "kitchen", "garden"),
    "nth": ("first", "second", "third", "fourth"),
    "person": ("sister", "friend", "father", "colleague", "wife", "husband"),
    "dish": ("fish", "steak", "pasta", "salad", "curry", "risotto"),
}


def review(rng: random.Random) -> tuple[str, str]:
    """One generated ``(review, label)``."""
    label = rng.choice(LABELS)
    fill = {key: rng.choice(values) for key, values in FILL.items()}
    verdict = rng.choice(VERDICTS).format(
        whole=rng.choice(WHOLES), adverb=rng.choice(INTENSIFIERS), word=rng.choice(SENTIMENT[label])
    )
    remarks = [
        rng.choice(REMARKS).format(
            aspect=aspect, adverb=rng.choice(INTENSIFIERS), word=rng.choice(SENTIMENT[rng.choice(LABELS)])
        )
        for aspect in rng.sample(ASPECTS, rng.randint(1, 3))
    ]
    fillers = [f.format(**fill) for f in rng.sample(FILLERS, rng.randint(0, 2))]
    sentences = remarks + fillers
    rng.shuffle(sentences)
    sentences.insert(rng.randint(0, len(sentences)), verdict)
    return " ".join(sentences), label


def reviews(size: int, seed: int) -> list[tuple[str, str]]:
    """``size`` generated ``(review, label)`` pairs, drawn from ``seed``."""
    rng = random.Random(seed)
    return [review(rng) for _ in range(size)]


class GeneratedReviews(TextClassificationData):
    """Generated reviews (no data folder): train, val and test from ``seed``, ``seed + 1``, ``seed + 2``
    (:func:`framework.data.seeded_splits`).

    Args:
        train_size, val_size, test_size: reviews per split.
        seed: the seed of the train split.
        **kwargs: tokeniser, sentence and loader options of ``TextClassificationData``.
    """

    def __init__(
        self,
        train_size: NonNegativeInt = 4000,
        val_size: NonNegativeInt = 500,
        test_size: NonNegativeInt = 500,
        seed: Seed = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.sizes, self.seed = split_sizes(train_size, val_size, test_size), seed

    def read(self) -> dict[str, list[tuple[str, str]]]:
        return seeded_splits(self.sizes, self.seed, reviews)

    def label_order(self, names: set[str]) -> list[str]:
        return list(LABELS)

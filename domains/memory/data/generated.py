"""Generated bAbI-style stories: the embedded default, no download.

Four people move between six places and pick up and drop three objects, in the words of
bAbI; each story ends with one question, as in bAbI tasks 1 and 2 (same numbers)::

    task 1, single supporting fact     mary went to the kitchen. john moved to the garden.
                                       mary travelled to the office.  where is mary? -> office  (support: 3)
    task 2, two supporting facts       john moved to the garden. john got the apple there.
                                       john went to the hallway.  where is the apple? -> hallway  (support: 2, 3)

An object is where its holder last went, or where it was dropped; a question is asked
only when its answer follows from the story. Generation is deterministic in the seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal, Optional

from framework.data import seeded_splits, split_sizes
from framework.errors import ConfigError
from framework.values import NonNegativeInt, PositiveInt, Seed

from .stories import Example, StoryDataModule, Vocabulary

PEOPLE = ("mary", "john", "sandra", "daniel")
PLACES = ("kitchen", "garden", "hallway", "bathroom", "office", "bedroom")
OBJECTS = ("football", "apple", "milk")
MOVES = ("went to", "journeyed to", "moved to", "travelled to", "went back to")
GRABS = ("got", "picked up", "took", "grabbed")
DROPS = ("dropped", "discarded", "put down", "left")
TASKS = (1, 2)
#: A generated task's number (``TASKS``).
GeneratedTask = Literal[1, 2]


def lexicon() -> Vocabulary:
    """Every word the generator can write."""
    phrases = (*PEOPLE, *PLACES, *OBJECTS, *MOVES, *GRABS, *DROPS, "the there where is")
    return Vocabulary(w for phrase in phrases for w in phrase.split())


def _single_fact(rng: random.Random, length: int) -> Example:
    last_move: dict[str, int] = {}
    story, place = [], {}
    for i in range(length):
        person, where = rng.choice(PEOPLE), rng.choice(PLACES)
        story.append(f"{person} {rng.choice(MOVES)} the {where}".split())
        last_move[person], place[person] = i, where
    person = rng.choice(sorted(last_move))
    return Example(story, ["where", "is", person], place[person], [last_move[person]], 1)


def _two_facts(rng: random.Random, length: int) -> Optional[Example]:
    """A story of moves, grabs and drops and a question about an object whose place is known;
    None when no object's place is known at the end."""
    story: list[list[str]] = []
    place: dict[str, str] = {}
    last_move: dict[str, int] = {}
    holder: dict[str, str] = {}  # object -> person holding it
    grabbed: dict[str, int] = {}  # object -> sentence of its grab
    dropped: dict[str, tuple[str, list[int]]] = {}  # object -> (place, support)
    for i in range(length):
        person = rng.choice(PEOPLE)
        held = [o for o, p in holder.items() if p == person]
        free = [o for o in OBJECTS if o not in holder]
        roll = rng.random()
        if person in place and held and roll < 0.2:
            thing = rng.choice(held)
            story.append(f"{person} {rng.choice(DROPS)} the {thing}".split())
            dropped[thing] = (place[person], [i, last_move[person]])
            del holder[thing]
        elif person in place and free and roll < 0.5:
            thing = rng.choice(free)
            story.append(f"{person} {rng.choice(GRABS)} the {thing} there".split())
            holder[thing], grabbed[thing] = person, i
            dropped.pop(thing, None)
        else:
            where = rng.choice(PLACES)
            story.append(f"{person} {rng.choice(MOVES)} the {where}".split())
            place[person], last_move[person] = where, i
    known = {o: (place[p], sorted([grabbed[o], last_move[p]])) for o, p in holder.items()}
    known.update(dropped)
    if not known:
        return None
    thing = rng.choice(sorted(known))
    answer, support = known[thing]
    return Example(story, ["where", "is", "the", thing], answer, support, 2)


def generate_stories(
    size: int, tasks: tuple[int, ...], min_sentences: int, max_sentences: int, seed: int
) -> list[Example]:
    """``size`` examples, the tasks taking turns, from a seeded generator."""
    rng = random.Random(seed)
    examples: list[Example] = []
    while len(examples) < size:
        task, length = tasks[len(examples) % len(tasks)], rng.randint(min_sentences, max_sentences)
        example = _single_fact(rng, length) if task == 1 else _two_facts(rng, length)
        if example is not None:
            examples.append(example)
    return examples


class GeneratedStories(StoryDataModule):
    """bAbI-style stories from a seeded generator: tasks 1 and 2, no data folder; train, val and
    test from ``seed``, ``seed + 1``, ``seed + 2`` (:func:`framework.data.seeded_splits`).

    The vocabulary is the generator's lexicon (33 words and the padding, so
    ``model.vocab_size: 34``), the same for every setting.

    Args:
        tasks: which kinds of question, 1 (single supporting fact) and/or 2 (two).
        train_size, val_size, test_size: questions per split.
        min_sentences, max_sentences: sentences per story.
        seed: the seed of the train split.
        memory_size: the most recent sentences kept of a story.
        similar_lengths: batches of similar story lengths (see ``StoryDataModule``; 0 = off).
        batch_size, eval_batch_size, num_workers: loader settings.
    """

    def __init__(
        self,
        tasks: Sequence[GeneratedTask] = (1, 2),
        train_size: PositiveInt = 4000,
        val_size: PositiveInt = 500,
        test_size: PositiveInt = 500,
        min_sentences: PositiveInt = 2,
        max_sentences: PositiveInt = 12,
        seed: Seed = 0,
        memory_size: PositiveInt = 50,
        similar_lengths: NonNegativeInt = 0,
        batch_size: PositiveInt = 32,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(memory_size, similar_lengths, batch_size, eval_batch_size, num_workers)
        if not tasks:
            raise ConfigError(f"data.tasks must list generated tasks among {TASKS}, got {tasks!r}")
        if min_sentences > max_sentences:
            raise ConfigError(f"data: need 1 <= min_sentences <= max_sentences, got {min_sentences}, {max_sentences}")
        self.tasks = tuple(tasks)
        self.sizes = split_sizes(train_size, val_size, test_size)
        self.min_sentences, self.max_sentences, self.seed = min_sentences, max_sentences, seed

    def vocabulary(self) -> Vocabulary:
        return lexicon()

    def examples(self) -> dict[str, list[Example]]:
        make = lambda size, seed: generate_stories(size, self.tasks, self.min_sentences, self.max_sentences, seed)
        return seeded_splits(self.sizes, self.seed, make)

"""The bAbI question-answering tasks 1-20 (Weston et al., arXiv:1502.05698), 1k English set.

Read from ``$FRAMEWORK_DATA_DIR/babi/tasks_1-20_v1-2/en`` (or ``data.root``), the official
file names ``qa1_single-supporting-fact_train.txt`` ... A file lists stories; a line is
``ID sentence`` or ``ID question<TAB>answer<TAB>supporting IDs``, and the ID restarts at 1
with each new story. Every question becomes one example whose story is every sentence of
its story before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Optional, Union

from framework.data import DataNotFoundError, TextFile, dataset_dir
from framework.errors import ConfigError
from framework.values import NonNegativeInt, OpenFraction, PositiveInt, declare

from .stories import Example, StoryDataModule, Vocabulary, words_of

FOLDER = "babi/tasks_1-20_v1-2/en"
SOURCE = "https://research.facebook.com/downloads/babi/ (tasks_1-20_v1-2.tar.gz, folder en/)"
NAMES = {
    1: "single-supporting-fact",
    2: "two-supporting-facts",
    3: "three-supporting-facts",
    4: "two-arg-relations",
    5: "three-arg-relations",
    6: "yes-no-questions",
    7: "counting",
    8: "lists-sets",
    9: "simple-negation",
    10: "indefinite-knowledge",
    11: "basic-coreference",
    12: "conjunction",
    13: "compound-coreference",
    14: "time-reasoning",
    15: "basic-deduction",
    16: "basic-induction",
    17: "positional-reasoning",
    18: "size-reasoning",
    19: "path-finding",
    20: "agents-motivations",
}
LINE = re.compile(
    r"\s*(?P<id>[1-9]\d*) (?P<text>[^\t]*\S[^\t]*?)(?:\t(?P<answer>[^\t]*\S[^\t]*)\t(?P<support>[\d ]*))?\s*"
)
ANSWER = re.compile(r"\t([^\t\n]+)\t")
ANSWER_AND_SUPPORT = re.compile(r"\t[^\n]*")
WORDS = re.compile(r"[^\W\d_]+")  # letters only: bAbI words have no digits, line numbers go
FILES = tuple(f"qa{task}_{name}_{split}.txt" for task, name in NAMES.items() for split in ("train", "test"))

#: A bAbI task's number (``NAMES``).
BabiTask = declare("BabiTask", int, "an int in [1, 20] (a bAbI task)", low=1, high=20)


def parse_babi(lines: Iterable[str], task: int, source: str = "<lines>") -> list[Example]:
    """The questions of a bAbI file, each with the sentences of its story before it.

    Every line must be ``ID sentence`` or ``ID question<TAB>answer<TAB>supporting IDs``, the IDs
    counting up from 1 in each story, the answer not empty and every supporting ID a sentence of
    the story before the question; the first line that is not is an error naming ``source`` and
    the line.
    """
    text = TextFile(source, "a bAbI task file", lines=lines)
    examples: list[Example] = []
    story: list[list[str]] = []
    places: dict[int, int] = {}  # sentence ID -> index in story
    last = 0
    for number, match in text.matches(LINE, "'ID sentence' or 'ID question<TAB>answer<TAB>supporting IDs'"):
        line_id = int(match["id"])
        if line_id == 1:
            story, places = [], {}
        elif line_id != last + 1:
            raise text.error(number, f"line ID {line_id} follows {last}: the IDs count up from 1 in each story")
        last = line_id
        if match["answer"] is None:
            places[line_id] = len(story)
            story.append(words_of(match["text"]))
            continue
        supports = match["support"].split()
        for support in supports:
            if int(support) not in places:
                raise text.error(
                    number,
                    f"supporting ID {support} is out of range: expected the ID of a sentence "
                    f"of this story before the question ({', '.join(map(str, places)) or 'none'})",
                )
        examples.append(
            Example(
                list(story),
                words_of(match["text"]),
                match["answer"].strip().lower(),
                [places[int(s)] for s in supports],
                task,
            )
        )
    return examples


@cache
def read_babi(folder: Path, task: int, split: str) -> tuple[Example, ...]:
    """The examples of one task's ``train`` or ``test`` file (read once per process)."""
    path = folder / f"qa{task}_{NAMES[task]}_{split}.txt"
    return tuple(parse_babi(TextFile(path, "a bAbI task file").lines, task, str(path)))


@cache
def babi_vocabulary(folder: Path) -> Vocabulary:
    """The words of all 40 files and their answers, read without parsing the stories: the
    answer and supporting IDs are cut from the question lines, the rest is lower-cased words."""
    words: set[str] = set()
    for name in FILES:
        text = "\n".join(TextFile(folder / name, "a bAbI task file").lines).lower()
        words.update(answer.strip() for answer in ANSWER.findall(text))
        words.update(WORDS.findall(ANSWER_AND_SUPPORT.sub("", text)))
    return Vocabulary(words)


class BabiStories(StoryDataModule):
    """bAbI 1k, one task or several trained jointly.

    Splits: ``test`` is the task's official test file (1000 questions). bAbI has no
    validation file: the last ``val_fraction`` of each task's training questions are held
    out (10% in the paper; the authors' code holds out the last 10%, so that few stories
    are split between the two), the rest is ``train``.

    The vocabulary is that of all 20 tasks' train and test files (words and answers, 175
    ids with the padding), whatever tasks are chosen, so ``model.vocab_size: 175`` fits
    every choice.

    Args:
        tasks: a task number (1-20) or a list of them (joint training).
        root: the ``en`` folder itself, instead of ``$FRAMEWORK_DATA_DIR/babi/tasks_1-20_v1-2/en``.
        val_fraction: share of each task's training questions held out for validation.
        memory_size: the most recent sentences kept of a story (50 in the paper).
        similar_lengths: batches of similar story lengths (see ``StoryDataModule``; 0 = off).
        batch_size, eval_batch_size, num_workers: loader settings.
    """

    def __init__(
        self,
        tasks: Union[BabiTask, list[BabiTask]] = 1,
        root: Optional[str] = None,
        val_fraction: OpenFraction = 0.1,
        memory_size: PositiveInt = 50,
        similar_lengths: NonNegativeInt = 0,
        batch_size: PositiveInt = 32,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(memory_size, similar_lengths, batch_size, eval_batch_size, num_workers)
        self.tasks = [tasks] if isinstance(tasks, int) else list(tasks)
        if not self.tasks:
            raise ConfigError(f"data.tasks must be bAbI task numbers 1-20 (one or a list), got {tasks!r}")
        self.root, self.val_fraction = root, val_fraction

    def folder(self) -> Path:
        """The ``en`` folder, checked to hold the 40 official files (all 20 tasks make the vocabulary)."""
        folder = dataset_dir(FOLDER, root=self.root, source=SOURCE, expect=FILES[:1]).resolve()
        missing = [name for name in FILES if not (folder / name).is_file()]
        if missing:
            raise DataNotFoundError(
                f"bAbI folder {folder} lacks {len(missing)} of the 40 files of the 1k set "
                f"({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}); the vocabulary "
                f"is built over all 20 tasks. Get them from {SOURCE}."
            )
        return folder

    def vocabulary(self) -> Vocabulary:
        return babi_vocabulary(self.folder())

    def examples(self) -> dict[str, list[Example]]:
        folder = self.folder()
        files = {
            split: ", ".join(f"qa{task}_{NAMES[task]}_{split}.txt" for task in self.tasks)
            for split in ("train", "test")
        }
        self.sources = {
            "train": f"{folder}/{files['train']}",
            "val": f"{folder}/{files['train']}",
            "test": f"{folder}/{files['test']}",
        }
        splits: dict[str, list[Example]] = {"train": [], "val": [], "test": []}
        for task in self.tasks:
            train = read_babi(folder, task, "train")
            kept = len(train) - round(self.val_fraction * len(train))
            splits["train"] += train[:kept]
            splits["val"] += train[kept:]
            splits["test"] += read_babi(folder, task, "test")
        return splits

"""Story data: the bAbI tasks 1-20 read from a local folder, and generated bAbI-style stories
(the embedded default, no download); and generated associative recall of bit vectors
(``recall.py``: :class:`AssociativeRecallBits`, batches of ``inputs``, ``mask``, ``target``).

Both are :class:`StoryDataModule` s whose batches are mappings of padded word ids
(``story``, ``question``, ``target``, ``task``, ``support``: see ``stories.py``).
"""

from .babi import BabiStories, parse_babi
from .generated import GeneratedStories, generate_stories
from .recall import AssociativeRecallBits, RecallSequences
from .stories import Example, StoryDataModule, StoryDataset, Vocabulary

__all__ = [
    "AssociativeRecallBits",
    "BabiStories",
    "Example",
    "GeneratedStories",
    "RecallSequences",
    "StoryDataModule",
    "StoryDataset",
    "Vocabulary",
    "generate_stories",
    "parse_babi",
]

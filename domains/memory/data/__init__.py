"""Story data: the bAbI tasks 1-20 read from a local folder, and generated bAbI-style stories
(the embedded default, no download).

Both are :class:`StoryDataModule` s whose batches are mappings of padded word ids
(``story``, ``question``, ``target``, ``task``, ``support``: see ``stories.py``).
"""

from .babi import BabiStories, parse_babi
from .generated import GeneratedStories, generate_stories
from .stories import Example, StoryDataModule, StoryDataset, Vocabulary

__all__ = ["BabiStories", "Example", "GeneratedStories", "StoryDataModule", "StoryDataset", "Vocabulary",
           "generate_stories", "parse_babi"]

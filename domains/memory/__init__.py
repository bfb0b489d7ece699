"""Memory networks for question answering: end-to-end (MemN2N) and key-value (KV-MemNN)
memory networks on bAbI and on generated bAbI-style stories.

Each hop of both models is the core's ``memory_read`` block; this package adds the
sentence and time features, the answer layer, the data, the task and the linear-start
callback. Configs: ``memn2n.yaml``, ``kvmemnn.yaml`` (generated stories),
``memn2n_babi.yaml`` (one bAbI task), ``memn2n_babi_joint.yaml`` (all 20 jointly).
"""

from .babi import BabiStories, parse_babi
from .generated import GeneratedStories, generate_stories
from .kvmemnn import KVMemNN
from .linear_start import LinearStart
from .memn2n import MemN2N
from .metrics import AnswerMetric
from .task import QuestionAnswering

__all__ = ["AnswerMetric", "BabiStories", "GeneratedStories", "KVMemNN", "LinearStart", "MemN2N",
           "QuestionAnswering", "generate_stories", "parse_babi"]

"""Memory networks for question answering: end-to-end (MemN2N) and key-value (KV-MemNN)
memory networks on bAbI and on generated bAbI-style stories.

Each hop of both models is the core's ``memory_read`` block; this package adds the
sentence and time features and the answer layer (``models/``), the data (``data/``), the
task (``task.py``, ``metrics.py``, ``pictures.py``) and the linear-start callback
(``callbacks.py``). Configs: ``memn2n.yaml``, ``kvmemnn.yaml`` (generated stories,
``datasets/generated.yaml``), ``memn2n_babi.yaml`` (one bAbI task, ``datasets/babi.yaml``),
``memn2n_babi_joint.yaml`` (all 20 jointly, ``datasets/babi_joint.yaml``).
"""

from .callbacks import LinearStart
from .data import BabiStories, GeneratedStories, generate_stories, parse_babi
from .metrics import AnswerMetric
from .models import KVMemNN, MemN2N
from .task import QuestionAnswering

__all__ = ["AnswerMetric", "BabiStories", "GeneratedStories", "KVMemNN", "LinearStart", "MemN2N",
           "QuestionAnswering", "generate_stories", "parse_babi"]

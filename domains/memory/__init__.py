"""Memory networks for question answering: end-to-end (MemN2N) and key-value (KV-MemNN)
memory networks on bAbI and on generated bAbI-style stories.

Each hop of both models is the core's ``memory_read`` block; this package adds the
sentence and time features and the answer layer (``models/``), the data (``data/``), the
task (``task.py``, ``metrics.py``, ``pictures.py``) and the linear-start callback
(``callbacks.py``). Configs: ``memn2n.yaml``, ``kvmemnn.yaml`` (generated stories,
``datasets/generated.yaml``), ``memn2n_babi.yaml`` (one bAbI task, ``datasets/babi.yaml``),
``memn2n_babi_joint.yaml`` (all 20 jointly, ``datasets/babi_joint.yaml``).

Beside them, catalogue II's memory blocks: the dynamic memory network (``DMN``, the
``episodic_memory`` block: ``dmn.yaml``, ``dmn_babi.yaml``), and on associative recall of bit
vectors (``datasets/recall_bits.yaml``, task ``BitSequences``) the neural Turing machine (``NTM``,
``ntm`` heads: ``ntm_recall.yaml``) and a GRU whose states a Hopfield layer retrieves
(``HopfieldReader``, ``hopfield``: ``hopfield_recall.yaml``).
"""

from .callbacks import LinearStart
from .data import AssociativeRecallBits, BabiStories, GeneratedStories, generate_stories, parse_babi
from .metrics import AnswerMetric
from .models import DMN, NTM, HopfieldReader, KVMemNN, MatchingReader, MemN2N
from .task import BitSequences, QuestionAnswering

__all__ = [
    "DMN",
    "NTM",
    "AnswerMetric",
    "AssociativeRecallBits",
    "BabiStories",
    "BitSequences",
    "GeneratedStories",
    "HopfieldReader",
    "KVMemNN",
    "LinearStart",
    "MatchingReader",
    "MemN2N",
    "QuestionAnswering",
    "generate_stories",
    "parse_babi",
]

"""Models of the NLP domain: three attentive text classifiers and two sequence-to-sequence families."""

from .char_word import CharacterWordClassifier
from .common import ClassifierOutput
from .han import HierarchicalAttentionNetwork, SentenceEncoder
from .pointer_net import PointerNetwork, PointerOutput
from .recurrent import RecurrentEncoder
from .selfattentive import SelfAttentiveClassifier
from .seq2seq import Seq2SeqOutput, teacher_inputs
from .seq2seq_rnn import RecurrentSeq2Seq
from .transformer_cls import TransformerClassifier
from .transformer_mt import DecoderLayer, TransformerSeq2Seq

__all__ = [
    "CharacterWordClassifier",
    "ClassifierOutput",
    "DecoderLayer",
    "HierarchicalAttentionNetwork",
    "PointerNetwork",
    "PointerOutput",
    "RecurrentEncoder",
    "RecurrentSeq2Seq",
    "SelfAttentiveClassifier",
    "SentenceEncoder",
    "Seq2SeqOutput",
    "TransformerClassifier",
    "TransformerSeq2Seq",
    "teacher_inputs",
]

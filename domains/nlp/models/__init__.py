"""Models of the NLP domain: three attentive text classifiers and two sequence-to-sequence families."""

from .common import ClassifierOutput
from .han import HierarchicalAttentionNetwork, SentenceEncoder
from .recurrent import RecurrentEncoder
from .selfattentive import SelfAttentiveClassifier
from .seq2seq import Seq2SeqOutput, teacher_inputs
from .seq2seq_rnn import RecurrentSeq2Seq
from .transformer_cls import TransformerClassifier
from .transformer_mt import DecoderLayer, TransformerSeq2Seq

__all__ = [
    "ClassifierOutput",
    "DecoderLayer",
    "HierarchicalAttentionNetwork",
    "RecurrentEncoder",
    "RecurrentSeq2Seq",
    "SelfAttentiveClassifier",
    "SentenceEncoder",
    "Seq2SeqOutput",
    "TransformerClassifier",
    "TransformerSeq2Seq",
    "teacher_inputs",
]

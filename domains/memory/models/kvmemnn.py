"""Key-value memory network (Miller, Fisch, Dodge, Karimi, Bordes & Weston, EMNLP 2016)."""

from __future__ import annotations

from typing import Optional

from torch import Tensor, nn

from framework.attention import MemoryBlock
from framework.data.sizes import require_sizes
from framework.values import NonNegativeFloat, PositiveInt

from .encoding import SentenceEmbedding, TemporalEncoding
from .reader import MemoryReader


class KVMemNN(MemoryReader):
    """KV-MemNN for question answering over a story, sentence-level memories (§3.2).

    Memory slot i is a key k_i and a value v_i; one embedding A serves question, keys and
    values, and a matrix R_j moves the query between hops (the block's ``per_hop`` update)::

        q^1 = A Phi_X(x),   p_i^j = softmax(q^j . A Phi_K(k_i)),   o^j = sum_i p_i^j A Phi_V(v_i)
        q^{j+1} = R_j (q^j + o^j),   answer logits = B q^{H+1}  (candidates: every word)

    The feature maps are the sentence-level ones: key and value are both the sentence
    (bag of words or position encoding), each with its own temporal encoding T_K, T_V,
    which bAbI needs to tell an old fact from a new one (the paper's documents have no time).

    Args:
        vocab_size: V, words and answers (id 0 is padding).
        dim: d.
        hops: H.
        memory_size: slots; temporal vectors for ages 0 .. memory_size - 1.
        position_encoding: PE instead of a bag of words.
        temporal_encoding: add T_K to the keys and T_V to the values.
        random_noise: fraction of empty slots inserted into the time line while training.
        linear_start: start without the softmax in the hops.
        attention: the memory block (``memory_read``, or ``none``).
        init_std: embeddings start as N(0, init_std^2).

    Shapes: story (B, N, L) long, question (B, Lq) long -> logits (B, V); with
    ``need_weights=True`` also the hop weights (B, H, N).
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        dim: PositiveInt = 20,
        hops: PositiveInt = 2,
        memory_size: PositiveInt = 50,
        position_encoding: bool = True,
        temporal_encoding: bool = True,
        random_noise: NonNegativeFloat = 0.1,
        linear_start: bool = False,
        attention: MemoryBlock = "memory_read",
        init_std: NonNegativeFloat = 0.1,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size)
        super().__init__(vocab_size, dim, hops, "per_hop", attention, linear_start)
        self.words = SentenceEmbedding(vocab_size, dim, 1, position_encoding, init_std)  # A
        self.time = TemporalEncoding(memory_size, dim, 2, random_noise, init_std) if temporal_encoding else None
        self.candidates = nn.Linear(dim, vocab_size, bias=False)  # B
        nn.init.normal_(self.candidates.weight, std=init_std)

    def forward(self, story: Tensor, question: Tensor, need_weights: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        mask = story.ne(0).any(-1)
        sentences = self.words(story)  # (B, N, 1, d)
        keys = values = sentences[:, :, 0]
        if self.time is not None:
            time = self.time(mask)
            keys, values = keys + time[:, :, 0], values + time[:, :, 1]
        state, weights = self.attend(self.words(question)[:, 0], keys, values, mask, need_weights)
        logits = self.candidates(state)
        return (logits, weights) if need_weights else logits

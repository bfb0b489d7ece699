"""End-to-end memory network (Sukhbaatar, Szlam, Weston & Fergus, NeurIPS 2015)."""

from __future__ import annotations

from typing import Literal, Optional

from torch import Tensor, nn

from framework.attention import MemoryBlock
from framework.data.sizes import require_sizes
from framework.values import NonNegativeFloat, PositiveInt

from .encoding import SentenceEmbedding, TemporalEncoding
from .reader import MemoryReader


class MemN2N(MemoryReader):
    """MemN2N for question answering: story sentences are memories, the question is u^1.

    Per hop k = 1..K (the memory block, ``memory_read``)::

        m_i^k = Phi(A^k, x_i) + T_A^k(i),   c_i^k = Phi(C^k, x_i) + T_C^k(i),   u^1 = Phi(B, q)
        p^k = softmax(u^k . m^k),   o^k = sum_i p_i^k c_i^k,   u^{k+1} = u^k + o^k  (or H u^k + o^k)
        answer logits = W u^{K+1}

    with Phi the bag-of-words or position encoding of a sentence (``encoding.py``) and
    T(i) the temporal encoding of a slot i sentences old.

    Weight tying (§2.2):
        ``adjacent``: A^{k+1} = C^k, B = A^1, W^T = C^K (K + 1 word tables); u^{k+1} = u^k + o^k.
        ``layerwise``: A^k = A, C^k = C for every hop, B and W their own; u^{k+1} = H u^k + o^k.

    Args:
        vocab_size: V, words and answers (id 0 is padding); logits are over all V.
        dim: d (20 single-task, 50 joint in the paper).
        hops: K (1 to 3 in the paper).
        memory_size: slots; temporal vectors for ages 0 .. memory_size - 1.
        tying: ``adjacent`` or ``layerwise``.
        position_encoding: PE instead of a bag of words.
        temporal_encoding: add T_A, T_C.
        random_noise: fraction of empty slots inserted into the time line while training
            (RN; 0.1 in the paper, 0 = off).
        linear_start: start without the softmax in the hops (LS; see ``LinearStart``).
        attention: the memory block (``memory_read``, or ``none``: answer from u^1 alone).
        init_std: embeddings start as N(0, init_std^2).

    Shapes: story (B, N, L) long, sentences oldest first, padding 0; question (B, Lq) long
    -> logits (B, V); with ``need_weights=True`` also the hop weights (B, K, N).
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        dim: PositiveInt = 20,
        hops: PositiveInt = 3,
        memory_size: PositiveInt = 50,
        tying: Literal["adjacent", "layerwise"] = "adjacent",
        position_encoding: bool = True,
        temporal_encoding: bool = True,
        random_noise: NonNegativeFloat = 0.1,
        linear_start: bool = False,
        attention: MemoryBlock = "memory_read",
        init_std: NonNegativeFloat = 0.1,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size)
        super().__init__(vocab_size, dim, hops, "add" if tying == "adjacent" else "linear", attention, linear_start)
        self.tying = tying
        adjacent = tying == "adjacent"
        # adjacent: tables E_0 .. E_K, A^k = E_{k-1}, C^k = E_k, B = E_0; layer-wise: A, C and B alone.
        tables = hops + 1 if adjacent else 2
        self.words = SentenceEmbedding(vocab_size, dim, tables, position_encoding, init_std)
        self.question_words = None if adjacent else SentenceEmbedding(vocab_size, dim, 1, position_encoding, init_std)
        self.time = TemporalEncoding(memory_size, dim, tables, random_noise, init_std) if temporal_encoding else None
        self.output = None if adjacent else nn.Linear(dim, vocab_size, bias=False)  # W; adjacent: W^T = C^K
        if self.output is not None:
            nn.init.normal_(self.output.weight, std=init_std)

    def forward(self, story: Tensor, question: Tensor, need_weights: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        mask = story.ne(0).any(-1)  # (B, N)
        memory = self.words(story)  # (B, N, tables, d)
        if self.time is not None:
            memory = memory + self.time(mask)
        if self.output is None:  # adjacent
            u = self.words(question)[:, 0]
            keys, values = memory[:, :, :-1].transpose(1, 2), memory[:, :, 1:].transpose(1, 2)  # (B, K, N, d)
        else:
            u = self.question_words(question)[:, 0]
            keys, values = memory.unbind(2)  # (B, N, d) each, shared by the hops
        state, weights = self.attend(u, keys, values, mask, need_weights)
        logits = state @ self.words.table(self.hops).T if self.output is None else self.output(state)
        return (logits, weights) if need_weights else logits

"""Dynamic memory network for question answering (DMN+: Xiong, Merity & Socher, ICML 2016, after
Kumar et al., Ask Me Anything: Dynamic Memory Networks for NLP, ICML 2016)."""

from __future__ import annotations

from typing import Literal, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from framework.attention import AttentionOutput, MemoryBlock, build
from framework.errors import ConfigError
from framework.layers import run_packed
from framework.values import Fraction, NonNegativeFloat, PositiveInt

from .encoding import PAD, SentenceEmbedding


class DMN(nn.Module):
    """DMN+ for bAbI: sentence facts fused by a bidirectional GRU, an episodic memory, a linear answer.

    ::

        input module     s_i = sum_j l_j . E x_ij                 (position encoding, ``encoding.py``)
                         f_i = GRU_fwd(s)_i + GRU_bwd(s)_i        (input fusion layer, over the real sentences)
        question module  q   = last state of a GRU over E y_1 .. E y_Lq
        episodic memory  m^T = the memory block over (q, f)      (``episodic_memory``, T passes)
        answer module    logits = W^(a) [m^T; q] + b              (one-word answers over the vocabulary)

    One embedding E serves story and question. The fusion GRU gives the facts their order (no
    temporal encoding is needed). ``attention: none`` answers from the question alone (m^T = q).

    Args:
        vocab_size: V, words and answers (id 0 is padding); unset, the CLI takes the data's.
        dim: d, of the embeddings, GRUs, facts and memory (80 in DMN+).
        passes: T, the episodic memory's passes.
        episode: ``attention_gru`` or ``soft`` (the block's).
        update: ``relu`` (untied, DMN+) or ``gru`` (DMN), the block's memory update.
        position_encoding: position encoding of the sentences' words, else a bag of words.
        dropout: dropout on the facts and the question (DMN+ drops before the answer as well).
        attention: the memory block (``episodic_memory``, a spec taking its arguments, or ``none``).
        init_std: word embeddings start as N(0, init_std^2) (variance 1, as DMN+ draws them: 0.1, the
            MemN2N setting, learns bAbI task 1 four times slower).

    Shapes: story (B, N, L) long, sentences oldest first, padding 0; question (B, Lq) long ->
    logits (B, V); with ``need_weights=True`` also the gates (B, T, N) of every pass.
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        dim: PositiveInt = 80,
        passes: PositiveInt = 3,
        episode: Literal["attention_gru", "soft"] = "attention_gru",
        update: Literal["relu", "gru"] = "relu",
        position_encoding: bool = True,
        dropout: Fraction = 0.1,
        attention: MemoryBlock = "episodic_memory",
        init_std: NonNegativeFloat = 1.0,
    ) -> None:
        super().__init__()
        if vocab_size is None:
            raise ConfigError("model.vocab_size is not set: set it, or leave it to the CLI, which takes the data's")
        self.vocab_size, self.dim, self.dropout = vocab_size, dim, dropout
        self.words = SentenceEmbedding(vocab_size, dim, 1, position_encoding, init_std)
        self.fusion = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.question = nn.GRU(dim, dim, batch_first=True)
        self.memory = build(attention, dim, passes=passes, episode=episode, update=update, kind="memory")
        self.answer = nn.Linear(2 * dim, vocab_size)

    def forward(
        self, story: Tensor, question: Tensor, need_weights: bool = False
    ) -> Tensor | tuple[Tensor, Optional[Tensor]]:
        mask = story.ne(PAD).any(-1)  # (B, N), the real sentences: a prefix of each story
        sentences = self.words(story)[:, :, 0]  # (B, N, d)
        fused, _ = run_packed(self.fusion, sentences, mask.sum(1))
        facts = F.dropout(sum(fused.chunk(2, -1)), self.dropout, self.training)  # forward + backward states
        _, last = run_packed(self.question, self.words.words(question), question.ne(PAD).sum(1))
        q = F.dropout(last[-1], self.dropout, self.training)
        read = self.memory(q, facts, mask, need_weights=need_weights)
        memory, gates = (read.output, read.weights) if isinstance(read, AttentionOutput) else (read, None)
        logits = self.answer(F.dropout(torch.cat([memory, q], -1), self.dropout, self.training))
        return (logits, gates) if need_weights else logits

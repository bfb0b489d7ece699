"""A reader that answers by matching the story's words with the question's words through a
co-attention block (attention-over-attention, interactive, multi-grained, parallel, alternating)."""

from __future__ import annotations

from typing import Optional, Union

import torch
from torch import Tensor, nn

from framework.attention import CrossBlock, build, capture
from framework.attention.spec import NONE
from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.layers import masked_mean, run_packed
from framework.values import Fraction, PositiveInt

from .encoding import PAD

#: The matching blocks (co-attention signature: (x1, x2, mask1, mask2) -> (c1, c2)) and which of
#: their captured weights is the distribution over the first input, the story's words.
STORY_WEIGHTS = {
    "attention_over_attention": 2,  # s
    "interactive_co_attention": 0,  # a_1
    "multi_grained_co_attention": 2,  # fine-grained a_1 (max-affinity)
    "parallel_co_attention": 1,  # a_1
    "alternating_co_attention": 2,  # c_1's weights
}


def compact(tokens: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """A story's sentences (B, N, L) as one word sequence: ``(words (B, T), mask (B, T),
    sentence (B, T))``, the real words moved to the front in reading order (T the most words
    of an example), ``sentence`` the index of each word's sentence (0 at padding)."""
    batch, sentences, length = tokens.shape
    flat = tokens.reshape(batch, sentences * length)
    real = flat.ne(PAD)
    order = (~real).to(torch.uint8).argsort(dim=1, stable=True)  # real words first, in their order
    width = max(int(real.sum(1).max()), 1)
    order = order[:, :width]
    mask = real.gather(1, order)
    return flat.gather(1, order), mask, (order // length) * mask


class MatchingReader(nn.Module):
    """Question answering by matching story and question word by word through a co-attention block.

    ::

        D = BiGRU(E w_1 .. E w_T)          the story's words in reading order     (B, T, d)
        Q = BiGRU(E q_1 .. E q_M)          the question's words                   (B, M, d)
        (c_D, c_Q) = matching(D, Q, story mask, question mask)
        logits = W [c_D; c_Q] + b          over the vocabulary (the answer is one word)

    ``matching`` names the block: ``attention_over_attention`` (Cui et al., 2017, the
    default), ``interactive_co_attention`` (IAN), ``multi_grained_co_attention`` (MGAN),
    ``parallel_co_attention``, ``alternating_co_attention``, a dotted class path with their
    signature, or ``none`` (the means of D and Q, the baseline). Its output widths are read
    off a call at construction, so blocks whose read-out is wider (MGAN's two grains) fit.

    Args:
        vocab_size: V, words and answers (id 0 is padding); logits are over all V.
        dim: d, the features of both encoders (two GRU directions of d / 2).
        embed_dim: word embedding features (shared by story and question).
        matching: the co-attention block.
        dropout: on the embeddings and before the output layer.

    Shapes: story (B, N, L) long, sentences oldest first, 0 = padding; question (B, Lq) long
    -> logits (B, V); with ``need_weights=True`` also the block's weights over the story's
    words summed per sentence, (B, 1, N) (None for ``none`` and for class paths).
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        dim: PositiveInt = 64,
        embed_dim: PositiveInt = 64,
        matching: CrossBlock = "attention_over_attention",
        dropout: Fraction = 0.1,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size)
        super().__init__()
        if dim % 2:
            raise ConfigError(f"model.dim must be even (two GRU directions of dim / 2), got {dim}")
        if isinstance(matching, str) and matching != NONE and "." not in matching and matching not in STORY_WEIGHTS:
            raise ConfigError(
                f"model.matching must be a co-attention block ({', '.join(STORY_WEIGHTS)}), a class path "
                f"with their signature, or 'none'; got {matching!r}"
            )
        self.vocab_size, self.dim = vocab_size, dim
        self.story_weights = STORY_WEIGHTS.get(matching) if isinstance(matching, str) else None
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.story_encoder = nn.GRU(embed_dim, dim // 2, batch_first=True, bidirectional=True)
        self.question_encoder = nn.GRU(embed_dim, dim // 2, batch_first=True, bidirectional=True)
        self.matching = None if matching == NONE else build(matching, dim, kind="cross", forms=("co-attention",))
        with torch.no_grad():  # the read-out's width, from one call
            width = sum(
                c.shape[-1]
                for c in self._match(
                    torch.zeros(1, 1, dim),
                    torch.zeros(1, 1, dim),
                    torch.ones(1, 1, dtype=torch.bool),
                    torch.ones(1, 1, dtype=torch.bool),
                )
            )
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(width, vocab_size)

    def _match(
        self, story: Tensor, question: Tensor, story_mask: Tensor, question_mask: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, ...]:
        """``(c_D, c_Q)``, and the block's weights when asked (None for ``none``)."""
        if self.matching is None:
            pair = (masked_mean(story, story_mask), masked_mean(question, question_mask))
            return (*pair, None) if need_weights else pair
        if not need_weights or self.story_weights is None:  # a class path's weights are not known
            pair = tuple(self.matching(story, question, story_mask, question_mask))
            return (*pair, None) if need_weights else pair
        with capture(self, "matching") as maps:
            pair = self.matching(story, question, story_mask, question_mask)
        records = maps.get("matching")
        return (*pair, records[0].weights if records else None)

    def forward(
        self, story: Tensor, question: Tensor, need_weights: bool = False
    ) -> Union[Tensor, tuple[Tensor, Optional[Tensor]]]:
        words, story_mask, sentence = compact(story)
        question_mask = question.ne(PAD)
        d = run_packed(self.story_encoder, self.dropout(self.embed(words)), story_mask.sum(1))[0]
        q = run_packed(self.question_encoder, self.dropout(self.embed(question)), question_mask.sum(1))[0]
        matched = self._match(d, q, story_mask, question_mask, need_weights)
        logits = self.output(self.dropout(torch.cat(matched[:2], -1)))
        if not need_weights:
            return logits
        weights = matched[2]
        if weights is None:
            return logits, None
        per_sentence = torch.zeros(story.shape[:2], dtype=logits.dtype, device=logits.device)
        per_sentence.scatter_add_(1, sentence, weights[self.story_weights] * story_mask)
        return logits, per_sentence.unsqueeze(1)

"""Sentence and time features of memory networks (Sukhbaatar et al., NeurIPS 2015, §4.1).

A sentence x_i = (x_i1 .. x_iJ) of word ids becomes one vector per embedding table:

    bag of words       m_i = sum_j A x_ij
    position encoding  m_i = sum_j l_j . A x_ij,   l_kj = (1 - j/J) - (k/d)(1 - 2j/J)

with j = 1..J the word's place, J the sentence's length and k = 1..d the feature. A memory
slot also gets its age: temporal encoding adds a learned T_A(i) for the slot that is i
sentences old (0 = the most recent), and random noise (§4.1, "RN") inserts empty slots
into the time line while training, so the model does not over-fit to exact ages.

Word id 0 is padding throughout: it embeds to zero and counts in no length.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

PAD = 0


class SentenceEmbedding(nn.Module):
    """Embeds sentences with ``tables`` word-embedding tables at once (MemN2N's A^1, C^1 ...).

    Each sum is one ``embedding_bag`` over a (V, tables * d) matrix, so no (L, d) tensor per
    sentence is built: position encoding is (1 - k/d) sum_j A x_j + (2k/d - 1) sum_j (j/J) A x_j.

    Args:
        vocab_size: V (id 0 is padding).
        dim: d.
        tables: how many tables.
        position: position encoding instead of a plain bag of words.
        init_std: embeddings start as N(0, init_std^2) (0.1 in the paper).

    Shapes: tokens (..., L) long -> (..., tables, d).
    """

    def __init__(
        self, vocab_size: int, dim: int, tables: int = 1, position: bool = True, init_std: float = 0.1
    ) -> None:
        super().__init__()
        self.dim, self.tables, self.position = dim, tables, position
        self.words = nn.Embedding(vocab_size, tables * dim, padding_idx=PAD)
        nn.init.normal_(self.words.weight, std=init_std)
        with torch.no_grad():
            self.words.weight[PAD].zero_()

    def table(self, index: int) -> Tensor:
        """The (V, d) matrix of one table (MemN2N ties the answer matrix W to the last one)."""
        return self.words.weight.view(-1, self.tables, self.dim)[:, index]

    def forward(self, tokens: Tensor) -> Tensor:
        flat = tokens.reshape(-1, tokens.shape[-1])
        bag = F.embedding_bag(flat, self.words.weight, mode="sum", padding_idx=PAD)
        if self.position:
            # l_kj = (1 - k/d) + (j/J)(2k/d - 1): two weighted bags, no (L, d) weights per sentence.
            real = flat.ne(PAD)
            places = torch.arange(1, flat.shape[-1] + 1, device=flat.device, dtype=bag.dtype)
            fraction = places / real.sum(-1, keepdim=True).clamp(min=1)  # j / J
            late = F.embedding_bag(flat, self.words.weight, mode="sum", per_sample_weights=fraction, padding_idx=PAD)
            k = torch.arange(1, self.dim + 1, device=bag.device, dtype=bag.dtype) / self.dim
            bag, late = bag.unflatten(-1, (self.tables, self.dim)), late.unflatten(-1, (self.tables, self.dim))
            return ((1 - k) * bag + (2 * k - 1) * late).reshape(*tokens.shape[:-1], self.tables, self.dim)
        return bag.reshape(*tokens.shape[:-1], self.tables, self.dim)


def memory_ages(mask: Tensor, noise: float = 0.0, generator: torch.Generator | None = None) -> Tensor:
    """How many sentences old each memory slot is: 0 for the most recent.

    Slots are in story order (oldest first), the real ones a prefix of each row. With
    ``noise`` > 0 (random noise, RN), ``b ~ U{0 .. ceil(noise * n)}`` empty slots are mixed
    into an example's n sentences at random places first, as in the authors' code: the
    sentences keep their order and take n sorted places out of n + b, ages counted
    over all n + b.

    Shapes: mask (B, N) bool, True = a sentence -> (B, N) long; padding slots get age 0.
    """
    batch, slots = mask.shape
    counts = mask.sum(1)
    if noise <= 0:
        ages = counts.unsqueeze(1) - 1 - torch.arange(slots, device=mask.device)
        return ages.clamp(min=0) * mask
    most = torch.ceil(counts * noise).long()
    blanks = (torch.rand(batch, generator=generator, device=mask.device) * (most + 1)).long().clamp(max=most)
    total = counts + blanks
    width = slots + int(math.ceil(slots * noise))
    places = torch.arange(width, device=mask.device)
    draw = torch.rand(batch, width, generator=generator, device=mask.device).masked_fill(
        places >= total.unsqueeze(1), 2.0
    )
    order = draw.argsort(1)  # a random order of the n + b places, the others last
    chosen = torch.zeros_like(draw, dtype=torch.bool).scatter(1, order, places < counts.unsqueeze(1))
    taken = torch.where(chosen, places, width).sort(1).values[:, :slots]  # n places in increasing order
    return (total.unsqueeze(1) - 1 - taken).clamp(min=0) * mask


class TemporalEncoding(nn.Module):
    """Learned vectors T(age) added to the memory slots, one per table (T_A^k, T_C^k ...).

    Args:
        memory_size: slots; older ages share the last vector.
        dim: d.
        tables: how many tables.
        noise: random-noise fraction of empty slots inserted while training (0.1 in the paper).
        init_std: vectors start as N(0, init_std^2).

    Shapes: mask (B, N) bool -> (B, N, tables, d).
    """

    def __init__(self, memory_size: int, dim: int, tables: int = 1, noise: float = 0.0, init_std: float = 0.1) -> None:
        super().__init__()
        self.dim, self.tables, self.noise = dim, tables, noise
        self.ages = nn.Embedding(memory_size, tables * dim)
        nn.init.normal_(self.ages.weight, std=init_std)

    def forward(self, mask: Tensor) -> Tensor:
        ages = memory_ages(mask, self.noise if self.training else 0.0)
        ages = ages.clamp(max=self.ages.num_embeddings - 1)
        return self.ages(ages).unflatten(-1, (self.tables, self.dim))

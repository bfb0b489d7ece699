"""Distribution (alignment) functions a = g(e) of the general attention model.

Each maps energies to weights along ``dim`` (the key axis), honouring a boolean mask
(True = may attend; masked keys get weight 0, and a query with no key left gets all-zero
weights, the convention of ``scaled_dot_product_attention``). They return
``(weights, log_prob)``; only hard attention has a log-probability, the one a REINFORCE
loss needs.
"""

from __future__ import annotations

import functools
import math
from typing import ClassVar, Literal, Optional

import torch
from entmax import entmax15, entmax_bisect
from torch import Tensor, nn


@functools.cache
def _entmax_in_graph() -> None:
    """The entmax package's autograd Functions are classmethods, which TorchDynamo cannot trace;
    as single graph nodes they compile (AOTAutograd traces them, forward and backward). Marked
    when the first entmax distribution is built, before anything can compile it, so that
    importing the library does not load TorchDynamo (about 1 s)."""
    torch.compiler.allow_in_graph(entmax15)
    torch.compiler.allow_in_graph(entmax_bisect)


def _lowest(e: Tensor) -> float:
    return torch.finfo(e.dtype).min


class Distribution(nn.Module):
    """Base class; subclasses define ``forward(e, mask, dim) -> (weights, log_prob or None)``.
    ``normalised``: whether the weights of a query sum to 1 over its keys (what an ablation keeps).
    ``per_head``: the class is built with the number of heads (a parameter per head).
    ``pairs``: it takes a score's pair of energies, e (..., 2) (see ``Score.pairs``)."""

    normalised: ClassVar[bool] = True
    per_head: ClassVar[bool] = False
    pairs: ClassVar[bool] = False


class Softmax(Distribution):
    """Soft (global) alignment, a_l = exp(e_l) / sum_j exp(e_j) (Bahdanau et al., 2015)."""

    def forward(self, e: Tensor, mask: Optional[Tensor], dim: int = -1) -> tuple[Tensor, None]:
        if mask is None:
            return e.softmax(dim), None
        # A finite fill keeps fully-masked rows free of NaN; the product zeroes them.
        return e.masked_fill(~mask, _lowest(e)).softmax(dim) * mask, None


class Sigmoid(Distribution):
    """Logistic sigmoid, a_l = sigmoid(e_l): independent weights in [0, 1] (Kim et al., ICLR 2017)."""

    normalised = False

    def forward(self, e: Tensor, mask: Optional[Tensor], dim: int = -1) -> tuple[Tensor, None]:
        weights = torch.sigmoid(e)
        return (weights if mask is None else weights * mask), None


class Normalize(Distribution):
    """Sum normalisation, a_l = e_l / (sum_j e_j + eps), for non-negative (kernel) scores
    (Katharopoulos et al., ICML 2020)."""

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, e: Tensor, mask: Optional[Tensor], dim: int = -1) -> tuple[Tensor, None]:
        if mask is not None:
            e = e * mask
        return e / (e.sum(dim, keepdim=True) + self.eps), None


class _SparsemaxFunction(torch.autograd.Function):
    """Sparsemax along the last dim; masked entries must hold -inf."""

    @staticmethod
    def forward(ctx, z: Tensor) -> Tensor:  # type: ignore[override]
        sorted_z, _ = z.sort(dim=-1, descending=True)
        cumsum = sorted_z.cumsum(-1)
        k = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
        support = (1 + k * sorted_z) > cumsum  # a prefix of the sorted entries
        size = support.sum(-1, keepdim=True).clamp(min=1)
        tau = (cumsum.gather(-1, size - 1) - 1) / size.to(z.dtype)
        p = (z - tau).clamp(min=0)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:  # type: ignore[override]
        (p,) = ctx.saved_tensors
        support = p > 0  # Jacobian: diag(s) - s s^T / |s|
        g = grad * support
        mean = g.sum(-1, keepdim=True) / support.sum(-1, keepdim=True).clamp(min=1)
        return (g - mean) * support


class Sparsemax(Distribution):
    """Sparsemax, a = argmin_{p in simplex} |p - e|^2 = max(e - tau, 0): exact zeros outside a
    support set (Martins & Astudillo, ICML 2016)."""

    def forward(self, e: Tensor, mask: Optional[Tensor], dim: int = -1) -> tuple[Tensor, None]:
        z = e
        if mask is not None:  # masked keys drop out; a query with no key left gets finite zeros
            z = torch.where(mask.any(dim, keepdim=True), e.masked_fill(~mask, float("-inf")), 0.0)
        p = _SparsemaxFunction.apply(z.transpose(dim, -1)).transpose(dim, -1)
        return (p if mask is None else p * mask), None


class Hard(Distribution):
    """Hard (stochastic) attention: one key sampled from softmax(e) and attended alone
    (Xu et al., ICML 2015).

    Training samples m ~ Categorical(softmax(e)) (Gumbel-max); evaluation takes the argmax.
    The weights are one-hot in the forward pass and carry the softmax's gradient backwards
    (straight-through). ``log_prob`` = log softmax(e)_m, for a REINFORCE loss.
    """

    def forward(self, e: Tensor, mask: Optional[Tensor], dim: int = -1) -> tuple[Tensor, Tensor]:
        if mask is not None:
            e = e.masked_fill(~mask, _lowest(e))
        log_p = e.log_softmax(dim)
        if self.training:
            uniform = torch.rand_like(log_p).clamp_(min=torch.finfo(log_p.dtype).tiny)
            choice = (log_p.detach() - torch.log(-torch.log(uniform))).argmax(dim, keepdim=True)
        else:
            choice = log_p.argmax(dim, keepdim=True)
        one_hot = torch.zeros_like(log_p).scatter_(dim, choice, 1.0)
        p = log_p.exp()
        weights = one_hot + (p - p.detach())  # exactly one-hot forward, softmax gradient backward
        log_prob = log_p.gather(dim, choice).squeeze(dim)
        if mask is not None:
            valid = mask.any(dim)
            weights = weights * mask
            log_prob = log_prob * valid
        return weights, log_prob


def _below_support(e: Tensor, mask: Tensor, dim: int, gap: Tensor | float) -> Tensor:
    """``e`` with its masked entries set to (the row's largest allowed energy) - ``gap``.

    An alpha-entmax gives exactly zero to every energy more than 1 / (alpha - 1) below the
    row's largest (its threshold is at least (alpha - 1) max - 1), so with
    ``gap = 1 / (alpha - 1) + 1`` masked keys drop out while every value stays finite (a
    filled -inf or float min would overflow in the squares of the sort-based algorithm).
    A row with no allowed key becomes constant (the weights are zeroed by the caller).
    """
    top = e.masked_fill(~mask, _lowest(e)).amax(dim, keepdim=True)
    top = torch.where(mask.any(dim, keepdim=True), top, 0.0)  # any finite value does for an empty row
    return torch.where(mask, e, (top - gap).detach())


class Entmax15(Distribution):
    """1.5-entmax, a = argmax_{p in simplex} p.e + H_1.5(p) = [e/2 - tau]_+^2: sparse, between
    softmax and sparsemax (Peters, Niculae & Martins, ACL 2019; the ``entmax`` package)."""

    def __init__(self) -> None:
        super().__init__()
        _entmax_in_graph()

    def forward(self, e: Tensor, mask: Optional[Tensor], dim: int = -1) -> tuple[Tensor, None]:
        if mask is None:
            return entmax15(e, dim=dim), None
        return entmax15(_below_support(e, mask, dim, 3.0), dim=dim) * mask, None


class AdaptiveEntmax(Distribution):
    """alpha-entmax with a learned alpha per head, a = [(alpha - 1) e - tau]_+^(1 / (alpha - 1)):
    each head learns how sparse it is (Correia, Niculae & Martins, EMNLP 2019; the ``entmax`` package).

    alpha = 1 + 0.01 + 0.99 sigmoid(a_h) lies in (1.01, 2): near softmax (alpha -> 1) to
    sparsemax (alpha = 2); it starts at 1.5. The weights are found by bisection
    (``entmax_bisect``, ``n_iter`` halvings), which also gives the gradient in alpha. The
    energies carry the heads on their axis 1: e (B, h, ...).
    """

    per_head = True
    LOW, RANGE, START = 1.01, 0.99, 1.5

    def __init__(self, num_heads: int = 1, n_iter: int = 50) -> None:
        super().__init__()
        _entmax_in_graph()
        self.n_iter = n_iter
        start = (self.START - self.LOW) / self.RANGE
        self.alpha_logit = nn.Parameter(torch.full((num_heads,), math.log(start / (1 - start))))

    @property
    def alpha(self) -> Tensor:
        """(h,) the alpha of each head."""
        return self.LOW + self.RANGE * torch.sigmoid(self.alpha_logit)

    def forward(self, e: Tensor, mask: Optional[Tensor], dim: int = -1) -> tuple[Tensor, None]:
        alpha = self.alpha.to(e.dtype).reshape(-1, *[1] * (e.dim() - 2))  # (h, 1, ...): heads on axis 1
        if mask is None:
            return entmax_bisect(e, alpha, dim, self.n_iter), None
        z = _below_support(e, mask, dim, 1 / (alpha - 1) + 1)
        return entmax_bisect(z, alpha, dim, self.n_iter) * mask, None


class Quasi(Distribution):
    """Quasi-attention (CoDA), a = tanh(e) * sigmoid(g): weights in (-1, 1) that add, subtract
    or delete values, not normalised (Tay, Luu, Zhang, Wang & Hui, NeurIPS 2019).

    Takes the ``coda`` score's pair of energies, e (..., 2) = [affinity e; gate energy g].
    """

    normalised = False
    pairs = True

    def forward(self, e: Tensor, mask: Optional[Tensor], dim: int = -1) -> tuple[Tensor, None]:
        weights = torch.tanh(e[..., 0]) * torch.sigmoid(e[..., 1])
        return (weights if mask is None else weights * mask), None


#: The names of the distribution functions, the domain of ``Attention``'s ``distribution`` (the
#: keys of :data:`DISTRIBUTIONS`).
DistributionName = Literal[
    "softmax", "sparsemax", "sigmoid", "hard", "normalize", "entmax15", "adaptive_entmax", "quasi"
]

#: Distribution functions by name, as ``Attention(distribution=...)`` takes them.
DISTRIBUTIONS: dict[str, type[Distribution]] = {
    "softmax": Softmax,
    "sparsemax": Sparsemax,
    "sigmoid": Sigmoid,
    "hard": Hard,
    "normalize": Normalize,
    "entmax15": Entmax15,
    "adaptive_entmax": AdaptiveEntmax,
    "quasi": Quasi,
}

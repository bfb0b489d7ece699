"""Monotonic attention: hard monotonic (Raffel et al., ICML 2017), monotonic chunkwise (MoChA,
Chiu & Raffel, ICLR 2018) and monotonic multi-head attention (Ma et al., ICLR 2020).

At output step i the decoder scans the keys from where step i - 1 stopped and stops at key j
with probability p_ij = sigmoid(e_ij) (the monotonic energy); it then attends softly to the
chunk of ``chunk_size`` keys ending there (MoChA), to every key up to there (infinite
lookback, MMA-IL), or to that key alone (hard monotonic, chunk size 1). Inference does exactly
that, in linear time and online. Training uses the expectation over the stopping decisions,
which is differentiable::

    a_ij = p_ij sum_{k<=j} a_{i-1,k} prod_{l=k}^{j-1} (1 - p_il)            (expected alignment)
    b_ij = sum_{k=j}^{j+w-1} a_ik exp(u_ij) / sum_{l=k-w+1}^{k} exp(u_il)   (chunkwise, width w)

The functions below compute both for all keys at once: the sum over k is a cumulative
log-sum-exp of log a_{i-1,k} - L_ik with L_ij = sum_{l<j} log(1 - p_il), so nothing is divided
by a vanishing cumulative product (the instability of the original parallel form); the chunk
sums are moving sums. Only the output steps are a loop (a_i needs a_{i-1}).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..registry import register, unknown_name_message
from .alignment import Aligned, RecurrentAlignment
from .score import SCORES, AdditiveScore, ScoreName

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import AnyReal, NonNegativeFloat, PositiveInt


def expected_alignment(energies: Tensor, previous: Tensor, valid: Tensor) -> Tensor:
    """The expected monotonic alignment of every output step, keys in parallel.

    Args:
        energies: e (..., M, N), the monotonic energies (p = sigmoid(e)).
        previous: a_0 (..., N), the alignment before the first step.
        valid: (..., N) boolean, True = a key that may be chosen (invalid keys have p = 0).

    Returns: a (..., M, N), a_ij = p_ij q_ij with q_ij = sum_{k<=j} a_{i-1,k} exp(L_ij - L_ik)
    and L_ij = sum_{l<j} log(1 - p_il). The sum is taken in log space; exp(L_ij - L_ik) <= 1,
    so a zero of a_{i-1} floored at the smallest normal number adds at most that number.
    """
    valid = valid.unsqueeze(-2).to(energies.dtype)  # (..., 1, N)
    log_p = F.logsigmoid(energies)
    log_stay = F.logsigmoid(-energies) * valid  # log(1 - p); 0 at invalid keys
    exclusive = log_stay.cumsum(-1) - log_stay  # L_ij
    tiny = torch.finfo(energies.dtype).tiny
    steps = []
    for i in range(energies.shape[-2]):
        log_q = exclusive[..., i, :] + torch.logcumsumexp(previous.clamp_min(tiny).log() - exclusive[..., i, :], -1)
        previous = torch.exp(log_p[..., i, :] + log_q) * valid[..., 0, :]
        steps.append(previous)
    return torch.stack(steps, dim=-2)


def hard_alignment(energies: Tensor, previous: Tensor, valid: Tensor) -> Tensor:
    """The alignment of test time: from the key where step i - 1 stopped, step i stops at the
    first valid key with p_ij >= 0.5 (e_ij >= 0); found for all keys at once (no scan).

    Args: as :func:`expected_alignment`; ``previous`` one-hot at the key the previous step
    chose, or zero when it chose none.

    Returns: (..., M, N) one-hot rows (all zero when a step chooses no key: it then attends
    nothing, and nor does any later step).
    """
    positions = torch.arange(energies.shape[-1], device=energies.device)
    steps = []
    for i in range(energies.shape[-2]):
        start = torch.where(previous.sum(-1) > 0, previous.argmax(-1), energies.shape[-1])  # (...)
        stop = (energies[..., i, :] >= 0) & valid & (positions >= start.unsqueeze(-1))
        previous = (stop & (stop.cumsum(-1) == 1)).to(energies.dtype)  # the first stop only
        steps.append(previous)
    return torch.stack(steps, dim=-2)


def moving_sum(x: Tensor, back: int, forward: int) -> Tensor:
    """y_j = sum_{k=j-back}^{j+forward} x_k along the last axis (zeros beyond the ends)."""
    padded = F.pad(x, (back, forward))
    return padded.unfold(-1, back + forward + 1, 1).sum(-1)


def chunkwise_weights(alignment: Tensor, energies: Tensor, valid: Tensor, chunk_size: Optional[int]) -> Tensor:
    """MoChA's weights: each stopping point k spreads its probability a_ik over the chunk of
    keys ending at k, by a softmax of the chunk energies u within the chunk.

    Args:
        alignment: a (..., M, N), expected or hard.
        energies: u (..., M, N), the chunk energies.
        valid: (..., N) boolean.
        chunk_size: w; ``None`` for infinite lookback (every key up to k, Ma et al.'s MMA-IL).

    Returns: b (..., M, N), b_ij = exp(u_ij) sum_{k=j}^{j+w-1} a_ik / sum_{l=k-w+1}^{k} exp(u_il).
    The energies are shifted by their maximum over the valid keys (the ratios do not change).
    """
    keep = valid.unsqueeze(-2)
    shifted = energies.masked_fill(~keep, torch.finfo(energies.dtype).min)
    scores = torch.exp(shifted - shifted.amax(-1, keepdim=True).detach()) * keep
    tiny = torch.finfo(energies.dtype).tiny
    if chunk_size is None:
        ratio = alignment / scores.cumsum(-1).clamp_min(tiny)
        return scores * ratio.flip(-1).cumsum(-1).flip(-1)
    ratio = alignment / moving_sum(scores, chunk_size - 1, 0).clamp_min(tiny)
    return scores * moving_sum(ratio, 0, chunk_size - 1)


class NormalisedAdditiveScore(AdditiveScore):
    """Raffel et al.'s monotonic energy without its offset: e = g v^T tanh(W1 q + W2 k + b) / |v|,
    the additive score with a weight-normalised v, so that the scale of the energies is the
    learned g (initialised to 1 / sqrt(d_w))."""

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1, **options: Any) -> None:
        super().__init__(query_dim, key_dim, num_heads, **options)
        self.gain = nn.Parameter(torch.full((num_heads, 1, 1), self.hidden**-0.5))

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        qh, kh = self._query_key(q, k)
        hidden = self._act(qh.unsqueeze(-2) + kh.unsqueeze(-3))  # (B, h, M, N, d_w)
        direction = self.out / self.out.norm(dim=1, keepdim=True)  # (h, d_w, 1)
        return self.gain * (hidden @ direction.unsqueeze(1)).squeeze(-1)


def _score(name: str, query_dim: int, key_dim: int, num_heads: int, monotonic: bool) -> nn.Module:
    if name not in SCORES:
        raise ValueError(unknown_name_message(name, sorted(SCORES), "score function"))
    cls = NormalisedAdditiveScore if monotonic and name == "additive" else SCORES[name]
    return cls(query_dim, key_dim, num_heads)


class MonotonicAttention(RecurrentAlignment):
    """Monotonic attention, chunkwise (MoChA) or with infinite lookback, in one or several heads.

    ::

        e_ij = energy(q_i, k_j) + r                    monotonic energy (``score``; additive:
                                                       weight-normalised as in Raffel et al.)
        p_ij = sigmoid(e_ij + N(0, sigma^2))           (noise in training, expected alignment only)
        a_i  = expected alignment (training) | first j >= t_{i-1} with p_ij >= 0.5 (inference)
        u_ij = chunk_energy(q_i, k_j)                  (another score of the same kind)
        b_i  = chunkwise(a_i, u_i, w)                  (w = ``chunk_size``; None: infinite lookback;
                                                        1: b = a, hard monotonic attention)
        c_i  = sum_j b_ij v_j  per head,  out = W_O [c^1; ...; c^h]  (with ``project``)

    See the module's docstring for the expected alignment and the chunkwise weights. With
    ``project``, each head has its own query and key maps for each energy (W_Q^m, W_K^m, W_Q^u,
    W_K^u) and shares W_V and W_O, as in Ma et al.; without, the raw features are scored.
    The state carried between output steps (:class:`RecurrentAlignment`) is a_{i-1} per head,
    one-hot at the first key before the first step; a step that chooses no key (inference:
    no p >= 0.5 left) attends nothing, its output is 0.

    Args:
        dim: query features Dq. key_dim: Dk (default ``dim``). value_dim: Dv (default ``key_dim``).
        score: the energy function (``additive``, ``scaled_dot``, ``general``, ...).
        num_heads: h. head_dim: features per head with ``project`` (default ``dim // num_heads``).
        chunk_size: w, or None for infinite lookback.
        project: learn W_Q, W_K, W_V, W_O (Transformer style).
        out_dim: output features with ``project`` (default ``dim``).
        energy_bias: r's initial value (negative: the scan starts out moving on).
        noise: sigma of the pre-sigmoid noise while training (pushes p towards 0 or 1).
        hard: the alignment of inference (True), the expected one (False), or by mode
            (None: expected while training, hard in evaluation).

    Shapes: those of :class:`RecurrentAlignment`; the state (B, h, N); outputs (B, M, Dv)
    without ``project``, (B, M, out_dim) with it.

    Captured weights: the (B, h, M, N) weights b of a call (M = 1 for one step).
    """

    block_name = "monotonic"

    def __init__(
        self,
        dim: PositiveInt,
        key_dim: Optional[PositiveInt] = None,
        value_dim: Optional[PositiveInt] = None,
        *,
        score: ScoreName = "additive",
        num_heads: PositiveInt = 1,
        head_dim: Optional[PositiveInt] = None,
        chunk_size: Optional[PositiveInt] = 2,
        project: bool = False,
        out_dim: Optional[PositiveInt] = None,
        energy_bias: AnyReal = -4.0,
        noise: NonNegativeFloat = 1.0,
        hard: Optional[bool] = None,
    ) -> None:
        super().__init__()
        if chunk_size is not None and chunk_size < 1:
            raise ValueError(
                f"{self.block_name}: chunk_size must be at least 1 (or None: infinite lookback), got {chunk_size}"
            )
        self.dim, self.key_dim = dim, key_dim or dim
        self.value_dim = value_dim or self.key_dim
        self.num_heads, self.chunk_size, self.noise, self.hard = num_heads, chunk_size, noise, hard
        if project:
            if head_dim is None and dim % num_heads:
                raise ValueError(f"{self.block_name}: dim={dim} is not divisible by num_heads={num_heads}")
            hd = head_dim or dim // num_heads
            q_head = k_head = hd
            linear = lambda features: nn.Linear(features, num_heads * hd)
            self.query_maps = nn.ModuleList([linear(dim), linear(dim)])  # W_Q^m, W_Q^u
            self.key_maps = nn.ModuleList([linear(self.key_dim), linear(self.key_dim)])  # W_K^m, W_K^u
            self.v_proj, self.out_proj = linear(self.value_dim), nn.Linear(num_heads * hd, out_dim or dim)
        else:
            if out_dim not in (None, self.value_dim):
                raise ValueError(
                    f"{self.block_name}: out_dim needs project=True (without it the output has value_dim features)"
                )
            for name, size in (("dim", dim), ("key_dim", self.key_dim), ("value_dim", self.value_dim)):
                if size % num_heads:
                    raise ValueError(f"{self.block_name}: {name}={size} is not divisible by num_heads={num_heads}")
            q_head, k_head = dim // num_heads, self.key_dim // num_heads
            self.query_maps = nn.ModuleList([nn.Identity(), nn.Identity()])
            self.key_maps = nn.ModuleList([nn.Identity(), nn.Identity()])
            self.v_proj = self.out_proj = nn.Identity()
        self.monotonic_energy = _score(score, q_head, k_head, num_heads, monotonic=True)
        self.energy_bias = nn.Parameter(torch.full((num_heads, 1, 1), float(energy_bias)))  # r
        self.chunk_energy = None if chunk_size == 1 else _score(score, q_head, k_head, num_heads, monotonic=False)

    def initial_state(self, valid: Tensor) -> Tensor:
        """One-hot at the first key, per head: (B, h, N)."""
        state = torch.zeros(valid.shape[0], self.num_heads, valid.shape[1], device=valid.device)
        state[..., 0] = 1.0
        return state

    def _split(self, x: Tensor) -> Tensor:
        """(B, L, h*d) -> (B, h, L, d)."""
        return x.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)

    def run(self, query: Tensor, keys: Tensor, values: Tensor, valid: Tensor, state: Tensor) -> Aligned:
        heads_valid = valid.unsqueeze(1)  # (B, 1, N)
        wide = torch.promote_types(query.dtype, torch.float32)  # the recurrences in float32 at least (autocast)
        q, k = self._split(self.query_maps[0](query)), self._split(self.key_maps[0](keys))
        energies = (self.monotonic_energy(q, k) + self.energy_bias).to(wide)  # (B, h, M, N)
        hard = not self.training if self.hard is None else self.hard
        if self.training and self.noise and not hard:
            energies = energies + self.noise * torch.randn_like(energies)
        alignment = (hard_alignment if hard else expected_alignment)(energies, state, heads_valid)
        if self.chunk_energy is None:
            weights = alignment
        else:
            q, k = self._split(self.query_maps[1](query)), self._split(self.key_maps[1](keys))
            weights = chunkwise_weights(alignment, self.chunk_energy(q, k).to(wide), heads_valid, self.chunk_size)
        values = self._split(self.v_proj(values))
        weights = self.ablate(weights.to(values.dtype), heads_valid.unsqueeze(-2))
        context = weights @ values  # (B, h, M, dv)
        return Aligned(self.out_proj(context.transpose(1, 2).flatten(2)), weights, alignment[..., -1, :])


def _preset(name: str, category: str, paper: str, **defaults: Any) -> None:
    register(name, kind="cross", category=category, paper=paper, **defaults)(MonotonicAttention)


_preset(
    "monotonic",
    "general / alignment: monotonic (hard, online)",
    "Raffel, Luong, Liu, Weiss & Eck, Online and Linear-Time Attention by Enforcing Monotonic Alignments, ICML 2017",
    chunk_size=1,
)
_preset(
    "mocha",
    "general / alignment: monotonic chunkwise (MoChA)",
    "Chiu & Raffel, Monotonic Chunkwise Attention, ICLR 2018",
    chunk_size=2,
)
_preset(
    "monotonic_multi_head",
    "query-related / multiplicity: monotonic multi-head (infinite lookback)",
    "Ma, Pino, Cross, Puzon & Gu, Monotonic Multihead Attention, ICLR 2020",
    score="scaled_dot",
    num_heads=4,
    chunk_size=None,
    project=True,
)

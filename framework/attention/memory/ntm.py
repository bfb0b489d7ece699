"""Neural Turing machine heads: content and location addressing of a memory matrix, reads and
erase/add writes (Graves, Wayne & Danihelka, Neural Turing Machines, arXiv:1410.5401, 2014, §3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import NonNegativeInt, PositiveInt

#: Norms below this count as zero in the cosine similarity of content addressing.
EPS = 1e-8


class NTMStep(NamedTuple):
    """One step of the heads: what they read, the memory after the writes, every head's weighting."""

    reads: Tensor  # (B, R, M)
    memory: Tensor  # (B, N, M)
    weights: Tensor  # (B, W + R, N): the write heads', then the read heads'


@register(
    "ntm",
    kind="memory",
    category="memory / content + location addressing (NTM)",
    paper="Graves, Wayne & Danihelka, Neural Turing Machines, arXiv:1410.5401, 2014",
)
class NTMHeads(AttentionBlock):
    """Neural Turing machine heads: each head addresses the N memory slots by content and location.

    From the controller's output h, every head emits a key k, a key strength beta, an
    interpolation gate g, a shift distribution s over the offsets -S .. S and a sharpening
    gamma, and addresses the slots M(i) in four steps (§3.3, eqs. 5-9)::

        w^c(i) = softmax_i(beta K[k, M(i)]),   K[u, v] = u.v / (|u| |v|)      content
        w^g    = g w^c + (1 - g) w_{t-1}                                     interpolation
        w~(i)  = sum_j w^g(j) s((i - j) mod N)                              circular shift
        w(i)   = w~(i)^gamma / sum_j w~(j)^gamma                            sharpening

    with beta = softplus(.) >= 0, g = sigmoid(.), s = softmax(.), gamma = 1 + softplus(.) >= 1.
    The W write heads also emit an erase vector e = sigmoid(.) and an add vector a, and write
    (eqs. 3-4; the erasures of several heads multiply, their adds sum)::

        M_t(i) = M_{t-1}(i) prod_w (1 - w_w(i) e_w) + sum_w w_w(i) a_w

    then the R read heads address the written memory and read r = sum_i w(i) M_t(i) (eq. 2).
    All heads of a batch are addressed at once (no loop over slots or examples).

    The controller, the initial memory and weightings and the recurrence over time are the
    model's (``domains.memory.NTM``).

    Args:
        dim: controller features D.
        memory_width: M, features of a slot.
        read_heads: R.
        write_heads: W.
        max_shift: S, the largest offset of the circular shift (1: offsets -1, 0, 1).

    Shapes:
        controller (B, D); memory (B, N, M); previous (B, W + R, N), the heads' weightings
        w_{t-1} (the write heads first). Output :class:`NTMStep` (reads (B, R, M), memory
        (B, N, M), weights (B, W + R, N)); with ``need_weights=True``
        ``AttentionOutput(step, weights)``.

    Captured weights: the (B, W + R, N) weightings w of each call.
    """

    def __init__(
        self,
        dim: PositiveInt,
        memory_width: PositiveInt,
        read_heads: PositiveInt = 1,
        write_heads: NonNegativeInt = 1,
        max_shift: NonNegativeInt = 1,
    ) -> None:
        super().__init__()
        if read_heads < 1 or write_heads < 0:
            raise ValueError(f"ntm: need read_heads >= 1 and write_heads >= 0, got {read_heads} and {write_heads}")
        if max_shift < 0:
            raise ValueError(f"ntm: max_shift must be >= 0, got {max_shift}")
        self.dim, self.memory_width, self.max_shift = dim, memory_width, max_shift
        self.read_heads, self.write_heads = read_heads, write_heads
        self.split_sizes = [memory_width, 1, 1, 2 * max_shift + 1, 1]  # k, beta, g, s, gamma
        self.addressing = nn.Linear(dim, (read_heads + write_heads) * sum(self.split_sizes))
        self.writing = nn.Linear(dim, write_heads * 2 * memory_width) if write_heads else None  # e, a

    def forward(
        self, controller: Tensor, memory: Tensor, previous: Tensor, *, need_weights: bool = False
    ) -> NTMStep | AttentionOutput:
        self.expect("controller", controller, "B D", D=self.dim)
        batch = controller.shape[0]
        self.expect("memory", memory, "B N M", B=batch, M=self.memory_width)
        heads = self.read_heads + self.write_heads
        self.expect("previous", previous, "B H N", B=batch, H=heads, N=memory.shape[1])
        params = self.addressing(controller).view(batch, heads, -1).split(self.split_sizes, -1)
        written = self.write_heads
        weights = []
        if written:
            write = self.address([p[:, :written] for p in params], memory, previous[:, :written])
            erase, add = self.writing(controller).view(batch, written, 2, -1).unbind(2)
            kept = (1 - write.unsqueeze(-1) * torch.sigmoid(erase).unsqueeze(-2)).prod(1)  # (B, N, M)
            memory = memory * kept + torch.einsum("bwn,bwm->bnm", write, add)
            weights.append(write)
        read = self.address([p[:, written:] for p in params], memory, previous[:, written:])
        weights.append(read)
        step = NTMStep(torch.einsum("brn,bnm->brm", read, memory), memory, torch.cat(weights, 1))
        return self.finish(step, step.weights, need_weights, keys=(memory.shape[1],))

    def address(self, params: list[Tensor], memory: Tensor, previous: Tensor) -> Tensor:
        """Weightings (B, H, N) of H heads from their (k, beta, g, s, gamma) (each (B, H, .)),
        the memory (B, N, M) and their previous weightings (B, H, N)."""
        key, beta, gate, shift, gamma = params
        similarity = F.normalize(key, dim=-1, eps=EPS) @ F.normalize(memory, dim=-1, eps=EPS).transpose(1, 2)
        content = torch.softmax(F.softplus(beta) * similarity, -1)
        gate = torch.sigmoid(gate)
        interpolated = gate * content + (1 - gate) * previous
        shift = torch.softmax(shift, -1)
        shifted = sum(
            shift[..., [o + self.max_shift]] * interpolated.roll(o, -1)  # roll(w, o)[i] = w[i - o]
            for o in range(-self.max_shift, self.max_shift + 1)
        )
        # w~^gamma / sum w~^gamma as a softmax of gamma log w~ (a slot at exactly 0 stays at 0)
        sharpened = torch.softmax(
            (1 + F.softplus(gamma)) * shifted.clamp_min(torch.finfo(shifted.dtype).tiny).log(), -1
        )
        return self.ablate(sharpened)

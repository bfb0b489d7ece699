"""The episodic memory of dynamic memory networks: attention gates over facts, several passes
(Kumar et al., Ask Me Anything: Dynamic Memory Networks for NLP, ICML 2016; DMN+ of Xiong,
Merity & Socher, Dynamic Memory Networks for Visual and Textual Question Answering, ICML 2016)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Optional, get_args

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..cross.distribution import Softmax
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt

#: How a pass turns its gates into an episode c^t.
Episode = Literal["attention_gru", "soft"]
EPISODES: tuple[str, ...] = get_args(Episode)
#: How the memory moves from one pass to the next.
Update = Literal["relu", "gru"]
UPDATES: tuple[str, ...] = get_args(Update)


class AttentionGRU(nn.Module):
    """A GRU whose update gate is an attention gate (DMN+, Xiong et al., §3.3)::

        r_i  = sigmoid(W_r f_i + b_r + U_r h_{i-1} + c_r)
        h~_i = tanh(W f_i + b + r_i * (U h_{i-1} + c))
        h_i  = g_i h~_i + (1 - g_i) h_{i-1},      h_0 = 0

    (biases as ``torch.nn.GRU`` places them).

    Shapes: facts (B, N, D), gates (B, N) -> the last state h_N (B, D). A fact with gate 0
    (padding) leaves the state as it is.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.inputs = nn.Linear(dim, 2 * dim)  # W_r, W and b_r, b
        self.hidden = nn.Linear(dim, 2 * dim)  # U_r, U and c_r, c

    def forward(self, facts: Tensor, gates: Tensor) -> Tensor:
        h = facts.new_zeros(facts.shape[0], facts.shape[2])
        reset_in, candidate_in = self.inputs(facts).chunk(2, -1)
        for i in range(facts.shape[1]):
            reset_h, candidate_h = self.hidden(h).chunk(2, -1)
            candidate = torch.tanh(candidate_in[:, i] + torch.sigmoid(reset_in[:, i] + reset_h) * candidate_h)
            g = gates[:, i, None]
            h = g * candidate + (1 - g) * h
        return h


@register(
    "episodic_memory",
    kind="memory",
    category="memory / episodic memory with attention gates (DMN)",
    paper="Kumar et al., Ask Me Anything: Dynamic Memory Networks for NLP, ICML 2016; Xiong, Merity & Socher, "
    "Dynamic Memory Networks for Visual and Textual Question Answering, ICML 2016",
)
class EpisodicMemory(AttentionBlock):
    """DMN episodic memory: per pass, a question- and memory-conditioned gate on every fact.

    With m^0 = q, for passes t = 1 .. T (DMN+, Xiong et al., §3.3, eqs. 6-11)::

        z_i^t = [f_i * q; f_i * m^{t-1}; |f_i - q|; |f_i - m^{t-1}|]
        Z_i^t = w^(2) tanh(W^(1) z_i^t + b^(1)) + b^(2)
        g_i^t = softmax_i(Z_i^t)                                 over the valid facts
        c^t   = AttentionGRU(f, g^t)                             episode="attention_gru"
                sum_i g_i^t f_i                                  episode="soft"
        m^t   = ReLU(W^t [m^{t-1}; c^t; q] + b)                  update="relu" (untied, one W^t a pass)
                GRU(c^t, m^{t-1})                                update="gru"  (DMN, Kumar et al.)

    and the output is m^T. Kumar et al.'s DMN gates each fact with a sigmoid of a larger
    feature vector inside a gated GRU; DMN+'s softmax gates and features are the ones here.
    The input module (facts f, e.g. a bidirectional GRU over sentence encodings), the
    question module and the answer module are the model's (``domains.memory.DMN``).

    Args:
        dim: features D of the facts, the question and the memory.
        passes: T.
        episode: ``attention_gru`` (an :class:`AttentionGRU` shared by the passes) or ``soft``.
        update: ``relu`` or ``gru``.
        hidden: width of the gate's hidden layer (default ``dim``).

    Shapes:
        query q (B, D); facts f (B, N, D); ``mask`` (B, N) boolean, True = a real fact
        (masked facts get gate 0). Output m^T (B, D). With ``need_weights=True``:
        ``AttentionOutput(output, gates (B, T, N))``.

    Captured weights: the (B, N) gates g^t of every pass, one record per pass.
    """

    def __init__(
        self,
        dim: PositiveInt,
        passes: PositiveInt = 3,
        episode: Episode = "attention_gru",
        update: Update = "relu",
        hidden: Optional[PositiveInt] = None,
    ) -> None:
        super().__init__()
        if episode not in EPISODES:
            raise ValueError(f"episodic_memory: episode must be one of {EPISODES}, got {episode!r}")
        if update not in UPDATES:
            raise ValueError(f"episodic_memory: update must be one of {UPDATES}, got {update!r}")
        if passes < 1:
            raise ValueError(f"episodic_memory: passes must be at least 1, got {passes}")
        self.dim, self.passes, self.episode, self.update = dim, passes, episode, update
        hidden = hidden or dim
        self.gate = nn.Sequential(nn.Linear(4 * dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))  # W^(1), w^(2)
        self.softmax = Softmax()
        self.episode_gru = AttentionGRU(dim) if episode == "attention_gru" else None
        if update == "relu":
            self.memory_update = nn.ModuleList(nn.Linear(3 * dim, dim) for _ in range(passes))
        else:
            self.memory_update = nn.GRUCell(dim, dim)

    def forward(
        self, query: Tensor, facts: Tensor, mask: Optional[Tensor] = None, *, need_weights: bool = False
    ) -> Tensor | AttentionOutput:
        self.expect("query", query, "B D", D=self.dim)
        self.expect("facts", facts, "B N D", B=query.shape[0], D=self.dim)
        if mask is not None:
            self.expect("mask", mask, "B N", B=query.shape[0], N=facts.shape[1])
            mask = mask.bool()
        want = self.wants_weights(need_weights)
        memory, gates = query, []
        for t in range(self.passes):
            q, m = query.unsqueeze(1), memory.unsqueeze(1)
            z = torch.cat([facts * q, facts * m, (facts - q).abs(), (facts - m).abs()], -1)
            g, _ = self.softmax(self.gate(z).squeeze(-1), mask)
            g = self.ablate(g, mask)
            if want:
                self.record(g, keys=(g.shape[-1],))
                gates.append(g)
            if self.episode_gru is not None:
                episode = self.episode_gru(facts, g)
            else:
                episode = torch.einsum("bn,bnd->bd", g, facts)
            if isinstance(self.memory_update, nn.GRUCell):
                memory = self.memory_update(episode, memory)
            else:
                memory = torch.relu(self.memory_update[t](torch.cat([memory, episode, query], -1)))
        return self.finish(memory, torch.stack(gates, 1) if need_weights else None, need_weights, recorded=True)

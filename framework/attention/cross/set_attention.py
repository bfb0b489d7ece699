"""The multihead attention block of the Set Transformer (Lee, Lee, Kim, Kosiorek, Choi & Teh,
Set Transformer: A Framework for Attention-based Permutation-Invariant Neural Networks, ICML 2019),
the piece its set blocks (``sab``, ``isab``, ``pma``) are made of."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register
from .attention import Attention

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt

SET_TRANSFORMER = (
    "Lee, Lee, Kim, Kosiorek, Choi & Teh, Set Transformer: A Framework for Attention-based "
    "Permutation-Invariant Neural Networks, ICML 2019"
)


@register(
    "mab",
    kind="cross",
    category="set / multihead attention block (Set Transformer)",
    paper=SET_TRANSFORMER,
    form="set block",
)
class MultiheadAttentionBlock(AttentionBlock):
    """Set Transformer's MAB: the elements of X attend to the set Y, then a row-wise feed-forward.

    ::

        H        = LN(X + Multihead(X, Y, Y))
        MAB(X, Y) = LN(H + rFF(H)),      rFF(h) = W_2 relu(W_1 h + b_1) + b_2

    Multihead is the general :class:`~framework.attention.Attention` with scaled dot-product
    scores and h heads (Vaswani et al.), so without weights it runs on the fused
    ``scaled_dot_product_attention``. MAB is permutation-equivariant in X and invariant in Y.

    Args:
        dim: features D of X (and of the output).
        key_dim: features of Y (default ``dim``).
        num_heads: h (``dim`` must be divisible by it).
        hidden: width of rFF (default ``dim``).
        layer_norm: the two LN (the paper's equations; the authors' code defaults to none).
        dropout: dropout on the attention weights while training.

    Shapes:
        x (B, M, D); y (B, N, D_y); ``key_padding_mask`` (B, N) boolean, True = a real element
        of Y. Output (B, M, D); with ``need_weights=True``
        ``AttentionOutput(output, weights (B, h, M, N))``.

    Captured weights: the (B, h, M, N) weights of each call (the inner ``attention`` also
    records them under its own name).
    """

    def __init__(
        self,
        dim: PositiveInt,
        key_dim: Optional[PositiveInt] = None,
        *,
        num_heads: PositiveInt = 4,
        hidden: Optional[PositiveInt] = None,
        layer_norm: bool = True,
        dropout: Fraction = 0.0,
    ) -> None:
        super().__init__()
        self.dim, self.key_dim = dim, key_dim or dim
        self.attention = Attention(dim, self.key_dim, self.key_dim, num_heads=num_heads, dropout=dropout)
        self.norm_attended = nn.LayerNorm(dim) if layer_norm else nn.Identity()
        self.feed_forward = nn.Sequential(nn.Linear(dim, hidden or dim), nn.ReLU(), nn.Linear(hidden or dim, dim))
        self.norm_output = nn.LayerNorm(dim) if layer_norm else nn.Identity()

    def forward(
        self, x: Tensor, y: Tensor, key_padding_mask: Optional[Tensor] = None, *, need_weights: bool = False
    ) -> Tensor | AttentionOutput:
        self.expect("x", x, "B M D", D=self.dim)
        self.expect("y", y, "B N D", B=x.shape[0], D=self.key_dim)
        if key_padding_mask is not None:
            self.expect("key_padding_mask", key_padding_mask, "B N", B=x.shape[0], N=y.shape[1])
        want = self.wants_weights(need_weights)
        attended = self.attention(x, y, key_padding_mask=key_padding_mask, need_weights=want)
        h = self.norm_attended(x + (attended.output if want else attended))
        out = self.norm_output(h + self.feed_forward(h))
        return self.finish(
            out, attended.weights if want else None, need_weights, queries=(x.shape[1],), keys=(y.shape[1],)
        )

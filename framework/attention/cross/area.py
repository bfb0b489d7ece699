"""Area attention (Li, Kaiser, Bengio & Si, ICML 2019): attend to groups of adjacent keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Optional, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..base import AttentionOutput
from ..registry import register
from .attention import Attention

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt

#: How an area's key is made: its items' mean, or Li et al.'s map of their mean and std.
KeyFeatures = Literal["mean", "mean_std"]
KEY_FEATURES: tuple[str, ...] = get_args(KeyFeatures)


def area_sizes(grid: tuple[int, int], max_height: int, max_width: int) -> list[tuple[int, int]]:
    """The (height, width) of every area shape that fits ``grid``, smallest first: (1, 1), (1, 2) ..."""
    return [(h, w) for h in range(1, min(max_height, grid[0]) + 1) for w in range(1, min(max_width, grid[1]) + 1)]


def area_sums(x: Tensor, grid: tuple[int, int], sizes: list[tuple[int, int]]) -> Tensor:
    """Sums of ``x`` over every area of every size, from a summed-area table (no loop over positions).

    Args:
        x: (B, H * W, D), the items of a grid in row-major order (a sequence is a 1 x N grid).
        grid: (H, W). sizes: the area shapes (:func:`area_sizes`).

    Returns: (B, K, D), the areas of the first size (top-left corners in row-major order),
    then those of the next size, and so on; K = sum over sizes of (H - h + 1)(W - w + 1).
    """
    b, _, d = x.shape
    height, width = grid
    table = F.pad(x.reshape(b, height, width, d).cumsum(1).cumsum(2), (0, 0, 1, 0, 1, 0))  # (B, H + 1, W + 1, D)
    areas = []
    for h, w in sizes:
        total = table[:, h:, w:] - table[:, :-h, w:] - table[:, h:, :-w] + table[:, :-h, :-w]
        areas.append(total.reshape(b, -1, d))
    return torch.cat(areas, dim=1)


@register(
    "area",
    kind="cross",
    category="feature-related / alignment: area attention (groups of adjacent keys)",
    paper="Li, Kaiser, Bengio & Si, Area Attention, ICML 2019",
)
class AreaAttention(Attention):
    """Area attention: the keys and values of every area of 1 .. A adjacent items are pooled,
    and a query attends to the areas.

    ::

        area r = a block of h x w adjacent items (h <= max_height, w <= max_width), |r| = h w
        k_r = (1 / |r|) sum_{j in r} k_j                   (mean key; ``key_features: mean``)
        k_r = W_d relu(W_m mu_r + W_s sigma_r + E[h, w])   (``mean_std``: Li et al.'s
                                                            parameterised key; sigma_r the std)
        v_r = sum_{j in r} v_j                              (summed value)
        out = Attention(q, {k_r}, {v_r})                    (any score, heads, projections)

    A sequence is a 1 x N grid (``max_height`` 1: areas are runs of up to ``max_width``
    tokens); images and spectrograms pass ``grid=(H, W)`` with their keys in row-major order.
    Areas are enumerated smallest first, so the first H * W areas are the items themselves.
    An area is valid when every item in it is (``key_padding_mask``). The sums come from a
    summed-area table; the attention over the areas is :class:`Attention`'s (fused kernel
    included). Everything else (``score``, ``num_heads``, ``project`` ...) is its argument.

    Args:
        dim, key_dim, value_dim: as :class:`Attention`.
        max_width: the widest area (along a sequence, the longest run).
        max_height: the tallest area (1 for sequences).
        key_features: ``mean`` or ``mean_std``.
        **options: :class:`Attention`'s (``score``, ``num_heads``, ``project``, ``dropout`` ...).

    Shapes: query (B, M, Dq) or (B, Dq); keys (B, N, Dk), values (B, N, Dv) (default the keys);
    ``key_padding_mask`` (B, N) boolean, True = may attend; ``grid`` (H, W) with H W = N
    (default (1, N)). Output as :class:`Attention`'s; with ``need_weights=True`` the weights are
    over the K areas, (B, h, M, K); :meth:`position_weights` folds them onto the items.

    Captured weights: the (B, h, M, K) weights over the areas of every call (no key grid: the
    areas are no items; :meth:`position_weights` folds them onto the items).
    """

    key_positions = False

    def __init__(
        self,
        dim: PositiveInt,
        key_dim: Optional[PositiveInt] = None,
        value_dim: Optional[PositiveInt] = None,
        *,
        max_width: PositiveInt = 3,
        max_height: PositiveInt = 1,
        key_features: KeyFeatures = "mean",
        **options: Any,
    ) -> None:
        super().__init__(dim, key_dim, value_dim, **options)
        if max_width < 1 or max_height < 1:
            raise ValueError(f"area: max_width and max_height must be at least 1, got {max_width} and {max_height}")
        if key_features not in KEY_FEATURES:
            raise ValueError(f"area: key_features must be one of {KEY_FEATURES}, got {key_features!r}")
        self.max_width, self.max_height, self.key_features = max_width, max_height, key_features
        if key_features == "mean_std":
            hidden = self.key_dim
            self.mean_map = nn.Linear(self.key_dim, hidden)  # W_m (and the bias)
            self.std_map = nn.Linear(self.key_dim, hidden, bias=False)  # W_s
            self.size_embedding = nn.Embedding(max_height * max_width, hidden)  # E[h, w]
            self.key_map = nn.Linear(hidden, self.key_dim)  # W_d

    def areas(self, grid: tuple[int, int]) -> list[tuple[int, int]]:
        """The area shapes of this block on ``grid``, in the order of the weights' last axis."""
        return area_sizes(grid, self.max_height, self.max_width)

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor] = None,
        value: Optional[Tensor] = None,
        *,
        key_padding_mask: Optional[Tensor] = None,
        attn_mask: Optional[Tensor] = None,
        grid: Optional[tuple[int, int]] = None,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        key = query if key is None else key
        value = key if value is None else value
        b, n = key.shape[0], key.shape[1]
        self.expect("key", key, "B N Dk", Dk=self.key_dim)
        self.expect("value", value, "B N Dv", B=b, N=n, Dv=self.value_dim)
        if attn_mask is not None:
            raise ValueError("area: attn_mask relates queries to keys, not to areas; use key_padding_mask")
        grid = (1, n) if grid is None else tuple(grid)
        if len(grid) != 2 or grid[0] * grid[1] != n:
            raise ValueError(f"area: grid must be (H, W) with H * W = {n} keys, got {grid}")
        sizes = self.areas(grid)
        counts = torch.tensor(
            [h * w for h, w in sizes for _ in range((grid[0] - h + 1) * (grid[1] - w + 1))],
            dtype=key.dtype,
            device=key.device,
        )  # |r| of every area, (K,)
        mean = area_sums(key, grid, sizes) / counts[:, None]
        if self.key_features == "mean_std":
            variance = (area_sums(key.square(), grid, sizes) / counts[:, None] - mean.square()).clamp(min=0)
            shape = torch.tensor(
                [
                    (h - 1) * self.max_width + w - 1
                    for h, w in sizes
                    for _ in range((grid[0] - h + 1) * (grid[1] - w + 1))
                ],
                device=key.device,
            )
            hidden = self.mean_map(mean) + self.std_map(torch.sqrt(variance + 1e-6)) + self.size_embedding(shape)
            area_keys = self.key_map(torch.relu(hidden))
        else:
            area_keys = mean
        area_mask = None
        if key_padding_mask is not None:
            self.expect("key_padding_mask", key_padding_mask, "B N", B=b, N=n)
            valid = area_sums(key_padding_mask.to(key.dtype).unsqueeze(-1), grid, sizes).squeeze(-1)
            area_mask = valid == counts  # every item of the area is valid
        return super().forward(
            query, area_keys, area_sums(value, grid, sizes), key_padding_mask=area_mask, need_weights=need_weights
        )

    def weights_over_keys(self, weights: Tensor, keys: int) -> Tensor:
        """Weights over the areas of a sequence of ``keys`` items folded onto them (:meth:`position_weights`)
        and renormalised, w_j / sum_j' w_j': each item's share of the values the output sums, a
        distribution over the items as the readers of weights over keys expect."""
        folded = self.position_weights(weights, (1, keys))
        return folded / folded.sum(-1, keepdim=True).clamp(min=torch.finfo(folded.dtype).tiny)

    def position_weights(self, weights: Tensor, grid: tuple[int, int]) -> Tensor:
        """Area weights (..., K) folded onto the items (..., H * W): each item gets the summed
        weight of the areas that hold it, so that out = sum_j w_j v_j (before W_O), since area
        values are sums. These weights sum to sum_r a_r |r|, not to 1."""
        sizes = self.areas(grid)
        eye = torch.eye(grid[0] * grid[1], dtype=weights.dtype, device=weights.device)
        membership = area_sums(eye.unsqueeze(0), grid, sizes)[0]  # (K, H * W): item j in area r
        return weights @ membership

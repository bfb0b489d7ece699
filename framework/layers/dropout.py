"""Dropout of sparse input features (bag-of-words node features such as Cora's: 1.3 % non-zero)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

#: Above this share of non-zero entries plain dropout is as cheap.
DENSE_SHARE = 0.25


def feature_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """``F.dropout(x, p, training)`` that draws random numbers for the non-zero entries of ``x`` only.

    Dropout leaves a zero at zero whatever is drawn for it, so drawing for the non-zero entries
    alone gives the same distribution: each non-zero x_i becomes x_i / (1 - p) with probability
    1 - p, else 0. On a CPU the draws are most of the cost: Cora's 2708 x 1433 features need
    3.9 M of them, 50 k here. Taken on the CPU for inputs that need no gradient (the gradient of
    a zero entry is not zero under dropout) and have at most ``DENSE_SHARE`` non-zeros; anything
    else goes to ``F.dropout``. The random stream differs from ``F.dropout``'s.

    Shapes: x any shape -> the same shape.
    """
    if not training or p == 0.0 or x.requires_grad or x.device.type != "cpu":
        return F.dropout(x, p, training)
    nonzero = x.nonzero(as_tuple=True)
    count = nonzero[0].numel()
    if count > DENSE_SHARE * x.numel() or p == 1.0:
        return F.dropout(x, p, training)
    kept = torch.rand(count, device=x.device) >= p
    out = torch.zeros_like(x)
    out[nonzero] = x[nonzero] * kept.to(x.dtype) / (1.0 - p)
    return out

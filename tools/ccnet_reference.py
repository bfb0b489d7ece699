"""The CCNet authors' pure-PyTorch criss-cross algorithm, re-written from its description
(ANCHORS.md §6.1) as the baseline that tests and benchmarks compare the library with.

Row and column energies come from batched matmuls over permuted copies of q, k and v; the
column branch adds a (B*W, H, H) -inf diagonal that is rebuilt on every call; one softmax
runs over the concatenated (H + W) energies; the outputs are permuted back and summed.
"""

from __future__ import annotations

import torch
from torch import Tensor


def criss_cross_authors(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """q, k (B, C', H, W), v (B, C, H, W) -> (B, C, H, W): sum over row and column of each pixel."""
    b, _, h, w = q.shape
    q_col = q.permute(0, 3, 1, 2).reshape(b * w, -1, h).transpose(1, 2)
    q_row = q.permute(0, 2, 1, 3).reshape(b * h, -1, w).transpose(1, 2)
    k_col, k_row = k.permute(0, 3, 1, 2).reshape(b * w, -1, h), k.permute(0, 2, 1, 3).reshape(b * h, -1, w)
    v_col, v_row = v.permute(0, 3, 1, 2).reshape(b * w, -1, h), v.permute(0, 2, 1, 3).reshape(b * h, -1, w)
    diagonal = torch.diag(torch.full((h,), float("-inf"), device=q.device)).unsqueeze(0).repeat(b * w, 1, 1)
    e_col = (torch.bmm(q_col, k_col) + diagonal).view(b, w, h, h).permute(0, 2, 1, 3)
    e_row = torch.bmm(q_row, k_row).view(b, h, w, w)
    a = torch.cat([e_col, e_row], 3).softmax(3)
    a_col = a[..., :h].permute(0, 2, 1, 3).reshape(b * w, h, h)
    a_row = a[..., h:].reshape(b * h, w, w)
    out_col = torch.bmm(v_col, a_col.transpose(1, 2)).view(b, w, -1, h).permute(0, 2, 3, 1)
    out_row = torch.bmm(v_row, a_row.transpose(1, 2)).view(b, h, -1, w).permute(0, 2, 1, 3)
    return out_col + out_row

"""What every block of the library shares: shape checks and on-demand weights."""

from __future__ import annotations

from typing import Optional

from torch import Tensor, nn

from .capture import is_capturing
from .capture import record as _record


class ShapeError(ValueError):
    """A tensor reached a block with the wrong shape; the message names block, tensor and shapes."""


def expect_shape(block: str, name: str, x: Tensor, dims: str, **sizes: int) -> None:
    """Check ``x`` against a shape pattern such as ``"B C H W"``; ``sizes`` pins named dims.

    >>> expect_shape("cbam", "x", torch.zeros(2, 32, 8, 8), "B C H W", C=64)  # doctest: +SKIP
    ShapeError: cbam: x must have shape (B, 64, H, W), got (2, 32, 8, 8)
    """
    names = dims.split()
    if x.dim() == len(names) and all(x.shape[i] == sizes[d] for i, d in enumerate(names) if d in sizes):
        return
    expected = ", ".join(str(sizes.get(d, d)) for d in names)
    raise ShapeError(f"{block}: {name} must have shape ({expected}), got {tuple(x.shape)}")


class AttentionBlock(nn.Module):
    """Base class of the library's blocks.

    Subclasses compute attention weights only when :meth:`wants_weights` says so
    (the caller asked with ``need_weights=True`` or a :class:`~framework.attention.capture`
    watches the block) and hand them to :meth:`record`; they check their inputs
    with :meth:`expect`, so a wrong shape names the block, the tensor and both shapes.
    """

    block_name: str = "attention"

    def wants_weights(self, need_weights: bool = False) -> bool:
        return need_weights or is_capturing(self)

    def record(self, weights: object) -> None:
        _record(self, weights)

    def expect(self, name: str, x: Tensor, dims: str, **sizes: int) -> None:
        expect_shape(self.block_name, name, x, dims, **sizes)

    def weights_image(self, record: object) -> Optional[Tensor]:
        """One 2-D map of the first example of a captured record, for plots and loggers.

        The default averages the leading axes of the first example (heads, hops) down to
        two; for a tuple record it draws the last tensor of two or more dims. Blocks whose
        weights are no image (graphs) return None.
        """
        if isinstance(record, (tuple, list)):
            tensors = [r for r in record if isinstance(r, Tensor) and r.dim() >= 2]
            if not tensors:
                return None
            record = tensors[-1]
        if not isinstance(record, Tensor) or record.dim() < 2:
            return None
        image = record[0].float()
        while image.dim() > 2:
            image = image.mean(0)
        return image if image.dim() == 2 else image.unsqueeze(0)

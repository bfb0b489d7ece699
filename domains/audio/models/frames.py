"""What the spectrogram models share: frame masks after striding and the check that the
frequency axis survives the convolution stages."""

from __future__ import annotations

from typing import Optional

from torch import Tensor

from framework.errors import ConfigError

from .frontend import Frontend


def shrink_mask(mask: Optional[Tensor], factor: int, length: int) -> Optional[Tensor]:
    """The (B, N) frame mask after a stride-``factor`` reduction to ``length`` frames:
    a reduced frame is real if its first input frame is (the padding sits at the end)."""
    return None if mask is None else mask[:, ::factor][:, :length]


def check_frequency_bins(frontend: Frontend, stages: int) -> None:
    """The frequency axis must survive ``stages`` halvings."""
    if frontend.num_features < 2**stages:
        raise ConfigError(
            f"model.widths: {stages} stages halve the frequency axis {stages} times, but the front end "
            f"gives {frontend.num_features} bins; raise model.frontend.n_mels (or n_mfcc) to at least "
            f"{2**stages} or use fewer stages"
        )

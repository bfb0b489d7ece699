"""Audio and image files checked against what their data set fixes, each problem naming the file.

Audio (soundfile): :func:`check_audio` reads the header of every file when a data module is set
up (about 50 µs a file), so that an empty, non-audio or wrongly sampled file stops the run
before training instead of mid-epoch; :func:`read_audio` names the file if reading it still fails.

Images (Pillow): :func:`image_header` opens a file's header only (its size and mode);
:func:`read_image` decodes it; :func:`check_label_values` checks a decoded label map's values
against the values the data set defines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

from .paths import DataError, not_empty, reading


def check_audio(
    paths: Sequence[Path], sample_rate: int, channels: Optional[int] = None, key: str = "data.sample_rate"
) -> None:
    """Every file's header: readable by soundfile, at least one frame, ``sample_rate`` Hz and
    (unless None) ``channels`` channels; the first offence is a :class:`DataError` naming the file."""
    import soundfile

    for path in paths:
        with reading(
            not_empty(path, "an audio file"), "an audio file", errors=(soundfile.SoundFileError, OSError, RuntimeError)
        ):
            info = soundfile.info(str(path))
        if info.frames < 1:
            raise DataError(f"{path} holds no audio (0 samples)")
        if info.samplerate != sample_rate:
            raise DataError(
                f"{path} is sampled at {info.samplerate} Hz but {key}={sample_rate}: resample the file, or "
                f"set {key} (and the model's frontend sample_rate) to {info.samplerate} if all files are"
            )
        if channels is not None and info.channels != channels:
            raise DataError(f"{path} has {info.channels} channels; the data set's files have {channels}")


def read_audio(path: Path) -> tuple[np.ndarray, int]:
    """Samples (frames, channels) float32 in [-1, 1] and the rate of an audio file; a file that
    cannot be read is a :class:`DataError` naming it."""
    import soundfile

    with reading(
        not_empty(path, "an audio file"),
        "an audio file",
        errors=(soundfile.SoundFileError, OSError, RuntimeError, ValueError),
    ):
        samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    if not len(samples):
        raise DataError(f"{path} holds no audio (0 samples)")
    return samples, rate


class ImageHeader(NamedTuple):
    """What an image file's header says: width and height in pixels and Pillow's mode (RGB, L, P ...)."""

    width: int
    height: int
    mode: str


def image_header(path: Path, what: str = "an image") -> ImageHeader:
    """The header of an image file (nothing is decoded); a file Pillow cannot identify is a
    :class:`DataError` naming it."""
    from PIL import Image

    with reading(not_empty(path, what), what, errors=(OSError, ValueError, SyntaxError)), Image.open(path) as image:
        return ImageHeader(*image.size, image.mode)


def read_image(path: Path, mode: Optional[str] = None, what: str = "an image") -> np.ndarray:
    """The pixels of an image file (H, W) or (H, W, C), converted to ``mode`` if given; a file that
    cannot be decoded (cut short, not an image) is a :class:`DataError` naming it."""
    from PIL import Image

    with reading(not_empty(path, what), what, errors=(OSError, ValueError, SyntaxError)), Image.open(path) as image:
        return np.array(image.convert(mode) if mode is not None else image)


def check_label_values(values: np.ndarray, valid: np.ndarray, path: Path, meaning: str) -> None:
    """Every value of an integer label map ``values`` must be marked in ``valid`` (a bool table
    indexed by value); the first other value is a :class:`DataError` naming the file, the pixel
    and ``meaning`` (what the valid values are, e.g. "a class 0-10 or void 11")."""
    bad = ~valid[values]
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise DataError(
            f"{path}: label value {int(values[row, column])} at row {row}, column {column} is out of "
            f"range: expected {meaning}"
        )

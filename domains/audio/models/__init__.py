"""Spectrogram classifiers: a CNN, a Transformer and a CRNN, each with its blocks by registry name.

All take a batch's ``waveform`` (B, T) and ``lengths`` (B,) and return logits (B, K); the
:class:`~domains.audio.models.frontend.Frontend` inside each turns waveforms into (B, F, N) frames.
The Transformer and the CRNN summarise the frames with a pooling block (``pooling``: the
registry's attention pooling; ``none``: the mean of the real frames) that masks the
padding, and name it ``pool``, which the task's time-attention picture reads.
"""

from .cnn import SpectrogramCNN
from .crnn import CRNN
from .frontend import Frontend
from .las import ListenAttendSpell, PyramidalEncoder, RecognizerOutput
from .transformer import SpectrogramTransformer

__all__ = [
    "CRNN",
    "Frontend",
    "ListenAttendSpell",
    "PyramidalEncoder",
    "RecognizerOutput",
    "SpectrogramCNN",
    "SpectrogramTransformer",
]

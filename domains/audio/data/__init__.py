"""Audio data: generated audio events (the embedded default, no download), the Free Spoken Digit
Dataset and Speech Commands from local folders.

Every module is an :class:`AudioDataModule` of clips of one fixed length, whose batches are
``{"waveform": (B, T), "lengths": (B,), "target": (B,)}`` (``clips.py``).
"""

from .clips import AudioDataModule, ClipFiles, fit_length
from .digit_strings import DigitStrings, transcript
from .events import CLASSES, AudioEventDataset, AudioEvents
from .fsdd import FSDD
from .speechcommands import SpeechCommands

__all__ = [
    "CLASSES",
    "FSDD",
    "AudioDataModule",
    "AudioEventDataset",
    "AudioEvents",
    "ClipFiles",
    "DigitStrings",
    "SpeechCommands",
    "fit_length",
    "transcript",
]

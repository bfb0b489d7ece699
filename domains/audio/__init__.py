"""Audio domain: attention over spectrograms for spoken-word and audio-event classification.

* Front end (inside every model): torchaudio log-mel or MFCC, per-clip standardisation,
  SpecAugment in training (:class:`Frontend`).
* Models: a log-mel CNN with the registry's feature-map blocks (:class:`SpectrogramCNN`), a
  Transformer with attention pooling over time (:class:`SpectrogramTransformer`), and a CRNN
  with attention pooling over time (:class:`CRNN`).
* Task: :class:`AudioClassification` (accuracy, macro F1, attention over time drawn on the
  spectrogram).
* Data: generated audio events (:class:`AudioEvents`, the embedded default), the Free Spoken
  Digit Dataset (:class:`FSDD`, official and speaker-disjoint splits) and Speech Commands
  (:class:`SpeechCommands`, torchaudio's layout from a local folder).
"""

from .clips import AudioDataModule, ClipFiles, fit_length
from .events import CLASSES, AudioEventDataset, AudioEvents
from .frontend import Frontend
from .fsdd import FSDD
from .models import CRNN, SpectrogramCNN, SpectrogramTransformer
from .speechcommands import SpeechCommands
from .pictures import spectrogram_with_attention
from .task import AudioClassification

__all__ = [
    "CLASSES",
    "CRNN",
    "FSDD",
    "AudioClassification",
    "AudioDataModule",
    "AudioEventDataset",
    "AudioEvents",
    "ClipFiles",
    "Frontend",
    "SpectrogramCNN",
    "SpectrogramTransformer",
    "SpeechCommands",
    "fit_length",
    "spectrogram_with_attention",
]

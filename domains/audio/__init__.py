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

Layout: ``data/`` (data modules), ``models/`` (front end and networks), ``task.py``,
``pictures.py``; ``datasets/<name>.yaml`` are the data sections that the experiment configs
(``<experiment>.yaml``) name.
"""

from .data import CLASSES, FSDD, AudioDataModule, AudioEventDataset, AudioEvents, ClipFiles, SpeechCommands, fit_length
from .models import CRNN, Frontend, SpectrogramCNN, SpectrogramTransformer
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

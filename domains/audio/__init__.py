"""Audio domain: attention over spectrograms for spoken-word and audio-event classification, and
an attention-based recogniser of spoken digit strings.

* Front end (inside every model): torchaudio log-mel or MFCC, per-clip standardisation,
  SpecAugment in training (:class:`Frontend`).
* Models: a log-mel CNN with the registry's feature-map blocks (:class:`SpectrogramCNN`), a
  Transformer with attention pooling over time (:class:`SpectrogramTransformer`), and a CRNN
  with attention pooling over time (:class:`CRNN`); listen-attend-spell with location-aware
  attention or MoChA (:class:`ListenAttendSpell`).
* Tasks: :class:`AudioClassification` (accuracy, macro F1, attention over time drawn on the
  spectrogram) and :class:`SequenceRecognition` (word and character error rates, the
  alignment of the tokens under the spectrogram).
* Data: generated audio events (:class:`AudioEvents`, the embedded default), the Free Spoken
  Digit Dataset (:class:`FSDD`, official and speaker-disjoint splits), Speech Commands
  (:class:`SpeechCommands`, torchaudio's layout from a local folder), and connected digit
  strings made of FSDD recordings or of generated events (:class:`DigitStrings`).

Layout: ``data/`` (data modules), ``models/`` (front end and networks), ``tasks/``,
``pictures.py``; ``datasets/<name>.yaml`` are the data sections that the experiment configs
(``<experiment>.yaml``) name.
"""

from .data import (
    CLASSES,
    FSDD,
    AudioDataModule,
    AudioEventDataset,
    AudioEvents,
    ClipFiles,
    DigitStrings,
    SpeechCommands,
    fit_length,
)
from .models import CRNN, Frontend, ListenAttendSpell, SpectrogramCNN, SpectrogramTransformer
from .pictures import spectrogram_with_alignment, spectrogram_with_attention
from .tasks import AudioClassification, SequenceRecognition

__all__ = [
    "CLASSES",
    "CRNN",
    "FSDD",
    "AudioClassification",
    "AudioDataModule",
    "AudioEventDataset",
    "AudioEvents",
    "ClipFiles",
    "DigitStrings",
    "Frontend",
    "ListenAttendSpell",
    "SequenceRecognition",
    "SpectrogramCNN",
    "SpectrogramTransformer",
    "SpeechCommands",
    "fit_length",
    "spectrogram_with_alignment",
    "spectrogram_with_attention",
]

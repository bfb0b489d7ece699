"""The audio front end: waveforms -> standardised log-mel (or MFCC) frames, inside the model.

It is an ``nn.Module`` of the model, so the spectrogram is computed on the model's device
(GPU included) and SpecAugment masking runs only in training mode.
"""

from __future__ import annotations

from typing import Literal, Optional

import torch
import torchaudio.transforms as T
from torch import Tensor, nn

from framework.errors import ConfigError
from framework.values import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt

LOG_EPS = 1e-6  # log(mel + eps), as torchaudio's MFCC(log_mels=True)
#: The front end's features (``features``) and its standardisation (``normalize``).
Features = Literal["mel", "mfcc"]
Normalize = Literal["clip", "bins"]


def frame_mask(lengths: Tensor, num_frames: int, hop_length: int) -> Tensor:
    """(B, N) boolean, True = frame n is centred on a real sample: n * hop < length.

    With centred frames (``center=True``) frame n covers samples n * hop +- n_fft / 2, so
    the real frames of a clip of ``length`` samples are n = 0 .. ceil(length / hop) - 1.
    """
    return torch.arange(num_frames, device=lengths.device) * hop_length < lengths.unsqueeze(1)


def standardize(x: Tensor, mask: Optional[Tensor], per_bin: bool = False) -> Tensor:
    """Per-clip standardisation over the real frames of (B, F, N) features:
    (x - mean) / sqrt(var + 1e-5), with the mean and (population) variance taken over all F
    bins of the real frames (``per_bin=False``: removes the recording's gain, keeps its
    spectral shape), or over the real frames of each bin separately (``per_bin=True``:
    cepstral mean and variance normalisation, which also removes the channel and some of the
    speaker). Padded frames become 0 (the mean)."""
    if mask is None:
        mask = torch.ones(x.shape[0], x.shape[2], dtype=torch.bool, device=x.device)
    weight = mask.unsqueeze(1).to(x.dtype)
    dims = 2 if per_bin else (1, 2)
    count = weight.sum(dims, keepdim=True) * (1 if per_bin else x.shape[1])
    mean = (x * weight).sum(dims, keepdim=True) / count
    var = ((x - mean).square() * weight).sum(dims, keepdim=True) / count
    return (x - mean) * torch.rsqrt(var + 1e-5) * weight


def check_sample_rate(model: nn.Module, data: object) -> None:
    """A model's front end must expect the data's sample rate (its mel scale depends on it)."""
    frontend, rate = getattr(model, "frontend", None), getattr(data, "sample_rate", None)
    if frontend is not None and rate is not None and frontend.sample_rate != rate:
        raise ConfigError(
            f"model.frontend.init_args.sample_rate is {frontend.sample_rate} Hz but "
            f"data.sample_rate is {rate} Hz: set both to the recordings' rate"
        )


class Frontend(nn.Module):
    """Waveform -> features (log-mel or MFCC), standardised per clip, SpecAugment in training.

    ::

        S = |STFT(x)|^2 (Hann window, centred, zero padded),  M = mel_filterbank S,
        mel:  F = log(M + 1e-6)       mfcc: F = DCT-II(log(M + 1e-6))[:n_mfcc]
        F <- (F - mean) / std over the clip's real frames (all bins, or each bin: ``normalize``);
        padded frames <- 0

    Then, in training mode only, SpecAugment (Park et al., Interspeech 2019): ``time_masks``
    bands of up to ``time_mask_param`` frames and ``freq_masks`` bands of up to
    ``freq_mask_param`` bins, drawn independently per example, set to 0 (the clip mean).
    The transforms are torchaudio's (MelSpectrogram, MFCC, SpecAugment); the STFT runs in
    float32 (or float64) even under autocast.

    Args:
        sample_rate: Hz of the waveforms (the data module's ``sample_rate``).
        n_fft: STFT size (window length) in samples.
        hop_length: samples between frames.
        n_mels: mel bands.
        features: ``"mel"`` (log-mel, F = n_mels) or ``"mfcc"`` (F = n_mfcc).
        n_mfcc: cepstral coefficients kept for ``"mfcc"``.
        f_min, f_max: frequency range of the mel bands (f_max default: sample_rate / 2).
        normalize: ``"clip"`` (one mean and variance per clip) or ``"bins"`` (per bin: CMVN).
        time_masks, time_mask_param, freq_masks, freq_mask_param: SpecAugment (0 masks = off).

    Shapes: waveform (B, T), lengths (B,) samples (None = all T real) ->
    features (B, F, N) with N = T // hop_length + 1, and mask (B, N) boolean (True = real
    frame; None when lengths is None).
    """

    def __init__(
        self,
        sample_rate: PositiveInt = 8000,
        n_fft: PositiveInt = 256,
        hop_length: PositiveInt = 128,
        n_mels: PositiveInt = 32,
        features: Features = "mel",
        n_mfcc: PositiveInt = 20,
        f_min: NonNegativeFloat = 0.0,
        f_max: Optional[PositiveFloat] = None,
        normalize: Normalize = "clip",
        time_masks: NonNegativeInt = 2,
        time_mask_param: NonNegativeInt = 5,
        freq_masks: NonNegativeInt = 2,
        freq_mask_param: NonNegativeInt = 4,
    ) -> None:
        super().__init__()
        if features == "mfcc" and not 1 <= n_mfcc <= n_mels:
            raise ConfigError(f"model.frontend.n_mfcc must be in 1..n_mels={n_mels}, got {n_mfcc}")
        mel = dict(
            sample_rate=sample_rate,
            n_fft=n_fft,
            hop_length=hop_length,
            n_mels=n_mels,
            f_min=f_min,
            f_max=f_max,
            pad_mode="constant",
        )
        self.sample_rate, self.hop_length, self.features, self.normalize = sample_rate, hop_length, features, normalize
        self.num_features = n_mels if features == "mel" else n_mfcc
        if features == "mel":
            self.transform = T.MelSpectrogram(**mel)
        else:
            melkwargs = {k: v for k, v in mel.items() if k != "sample_rate"}
            self.transform = T.MFCC(sample_rate, n_mfcc, log_mels=True, melkwargs=melkwargs)
        self.spec_augment = T.SpecAugment(
            time_masks, time_mask_param, freq_masks, freq_mask_param, iid_masks=True, zero_masking=True
        )
        self.augments = time_masks > 0 or freq_masks > 0

    def forward(self, waveform: Tensor, lengths: Optional[Tensor] = None) -> tuple[Tensor, Optional[Tensor]]:
        if waveform.ndim != 2:
            raise ValueError(f"Frontend: waveform must have shape (B, T), got {tuple(waveform.shape)}")
        if lengths is not None and lengths.shape != waveform.shape[:1]:
            raise ValueError(f"Frontend: lengths must have shape ({waveform.shape[0]},), got {tuple(lengths.shape)}")
        with torch.autocast(waveform.device.type, enabled=False):
            x = self.transform(waveform.to(torch.promote_types(waveform.dtype, torch.float32)))
            if self.features == "mel":
                x = torch.log(x + LOG_EPS)
        mask = None if lengths is None else frame_mask(lengths, x.shape[-1], self.hop_length)
        x = standardize(x, mask, per_bin=self.normalize == "bins")
        if self.training and self.augments:
            x = self.spec_augment(x.unsqueeze(1)).squeeze(1)
        return x, mask

"""The front end against a naive log-mel / MFCC formula (forward and backward), and SpecAugment."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

from domains.audio import Frontend
from tests.attention.reference import assert_matches_reference

SAMPLE_RATE, N_FFT, HOP, N_MELS = 8000, 64, 16, 12


def naive_power_spectrum(x: Tensor) -> Tensor:
    """(T,) -> (n_fft / 2 + 1, N): zero-padded centred frames, periodic Hann window, explicit DFT."""
    padded = torch.nn.functional.pad(x, (N_FFT // 2, N_FFT // 2))
    k = torch.arange(N_FFT, dtype=x.dtype)
    window = 0.5 - 0.5 * torch.cos(2 * math.pi * k / N_FFT)
    frames = torch.stack([padded[n * HOP : n * HOP + N_FFT] * window for n in range(x.shape[0] // HOP + 1)], 1)
    f = torch.arange(N_FFT // 2 + 1, dtype=x.dtype).unsqueeze(1)
    angle = 2 * math.pi * f * k / N_FFT
    real, imag = torch.cos(angle) @ frames, -torch.sin(angle) @ frames
    return real**2 + imag**2


def naive_mel_filters(dtype: torch.dtype) -> Tensor:
    """(n_mels, n_fft / 2 + 1) HTK triangles between mel-spaced corner frequencies, unnormalised."""
    mel = lambda hz: 2595 * math.log10(1 + hz / 700)
    corners = [700 * (10 ** (m / 2595) - 1) for m in torch.linspace(mel(0), mel(SAMPLE_RATE / 2), N_MELS + 2).tolist()]
    bins = torch.arange(N_FFT // 2 + 1, dtype=dtype) * SAMPLE_RATE / N_FFT
    filters = torch.zeros(N_MELS, len(bins), dtype=dtype)
    for m in range(N_MELS):
        low, centre, high = corners[m : m + 3]
        rise, fall = (bins - low) / (centre - low), (high - bins) / (high - centre)
        filters[m] = torch.clamp(torch.minimum(rise, fall), min=0)
    return filters


def naive_standardize(features: Tensor, real_frames: int, per_bin: bool) -> Tensor:
    out = torch.zeros_like(features)
    rows = [slice(b, b + 1) for b in range(len(features))] if per_bin else [slice(None)]
    for row in rows:
        real = features[row, :real_frames]
        out[row, :real_frames] = (real - real.mean()) / torch.sqrt(((real - real.mean()) ** 2).mean() + 1e-5)
    return out


def naive_frontend(block: Frontend, waveform: Tensor, lengths: Tensor) -> Tensor:
    outputs = []
    for x, length in zip(waveform, lengths.tolist()):
        log_mel = torch.log(naive_mel_filters(x.dtype) @ naive_power_spectrum(x) + 1e-6)
        if block.features == "mfcc":
            m, k = torch.arange(N_MELS, dtype=x.dtype), torch.arange(block.num_features, dtype=x.dtype).unsqueeze(1)
            dct = torch.cos(math.pi * k * (m + 0.5) / N_MELS) * math.sqrt(2 / N_MELS)
            dct[0] /= math.sqrt(2)
            log_mel = dct @ log_mel
        outputs.append(naive_standardize(log_mel, -(-length // HOP), per_bin=block.normalize == "bins"))
    return torch.stack(outputs)


@pytest.mark.parametrize("features, normalize", [("mel", "clip"), ("mfcc", "clip"), ("mel", "bins")])
def test_frontend_matches_the_naive_formula_forward_and_backward(features, normalize, device):
    frontend = Frontend(SAMPLE_RATE, N_FFT, HOP, N_MELS, features=features, n_mfcc=8, normalize=normalize).eval()
    waveform = torch.randn(2, 200, generator=torch.Generator().manual_seed(0))
    lengths = torch.tensor([200, 123])
    # torchaudio builds its window and mel filters in float32: agreement to ~1e-6, not 1e-12.
    assert_matches_reference(
        frontend,
        naive_frontend,
        waveform,
        lengths=lengths,
        output=lambda out: out[0],
        atol=2e-5,
        rtol=1e-4,
        device=device,
    )


def test_frame_mask_marks_the_frames_centred_on_real_samples():
    frontend = Frontend(SAMPLE_RATE, N_FFT, HOP, N_MELS).eval()
    features, mask = frontend(torch.randn(2, 200), torch.tensor([200, 33]))
    assert features.shape == (2, N_MELS, 200 // HOP + 1)
    assert mask.sum(1).tolist() == [13, 3]  # frames 0..12 centred before sample 200; 0, 16, 32 before 33
    assert not features[1, :, 3:].any()
    _, none = frontend(torch.randn(2, 200))
    assert none is None


def test_spec_augment_masks_bands_only_in_training():
    frontend = Frontend(
        SAMPLE_RATE, N_FFT, HOP, N_MELS, time_masks=2, time_mask_param=4, freq_masks=2, freq_mask_param=3
    )
    waveform = torch.randn(8, 400)
    clean, _ = frontend.eval()(waveform)
    assert torch.equal(frontend(waveform)[0], clean)  # eval: deterministic, no masks
    torch.manual_seed(0)
    augmented, _ = frontend.train()(waveform)
    assert not torch.equal(augmented, clean)
    assert ((augmented == clean) | (augmented == 0)).all()  # masking only zeroes entries
    zero_rows = (augmented == 0).all(2).sum() + (augmented == 0).all(1).sum()
    assert zero_rows > 0  # ... in whole frequency bands or time bands


def test_frontend_rejects_bad_values():
    with pytest.raises(ValueError, match="model.frontend.n_mfcc must be in 1..n_mels=32"):
        Frontend(n_mels=32, features="mfcc", n_mfcc=40)
    with pytest.raises(ValueError, match=r"waveform must have shape \(B, T\)"):
        Frontend()(torch.randn(2, 1, 800))

"""The spectrogram models: shapes, registry blocks, masking of the padding, the time-attention picture."""

from __future__ import annotations

import pytest
import torch

from domains.audio import CRNN, AudioClassification, Frontend, SpectrogramCNN, SpectrogramTransformer
from domains.audio.pictures import spectrogram_with_attention
from framework.attention import MeanPooling, build, capture, create
from tests.conftest import on
from tests.image_logger import readable

FRONT = dict(sample_rate=8000, n_fft=128, hop_length=64, n_mels=16)


def frontend() -> Frontend:
    return Frontend(**FRONT)


def models() -> dict[str, torch.nn.Module]:
    torch.manual_seed(0)
    return {
        "cnn_se": SpectrogramCNN(4, frontend(), widths=(4, 8), attention="se"),
        "transformer": SpectrogramTransformer(4, frontend(), dim=16, depth=1, attention="mhsa"),
        "crnn": CRNN(4, frontend(), widths=(4, 8), attention="cbam", hidden=8),
    }


def test_models_give_logits_and_use_the_registry_blocks():
    waveform, lengths = torch.randn(3, 2000), torch.tensor([2000, 1500, 300])
    for name, model in models().items():
        logits = model(waveform, lengths)
        assert logits.shape == (3, 4), name
        logits.sum().backward()
    built = models()
    assert type(built["cnn_se"].net.stages[0].attention) is type(create("se", 4))
    assert type(built["transformer"].pool) is type(create("pooling", 16))
    assert type(built["crnn"].stages[1].attention) is type(create("cbam", 8))
    assert isinstance(SpectrogramTransformer(4, frontend(), dim=16, pooling="none").pool, MeanPooling)


def test_padding_never_reaches_the_logits():
    waveform = torch.randn(2, 2000, generator=torch.Generator().manual_seed(1))
    lengths = torch.tensor([2000, 900])
    garbage = waveform.clone()
    garbage[1, 900 + FRONT["n_fft"] // 2 :] = 100.0  # beyond the last real frame's window
    for name, model in models().items():
        model.eval()
        with torch.no_grad():
            torch.testing.assert_close(
                model(garbage, lengths), model(waveform, lengths), msg=lambda m, name=name: f"{name}: {m}"
            )


def test_transformer_output_does_not_depend_on_how_much_padding_follows():
    model = SpectrogramTransformer(4, frontend(), dim=16, depth=2).eval()
    clip = torch.randn(1, 1000)
    longer = torch.nn.functional.pad(clip, (0, 1500))
    with torch.no_grad():
        torch.testing.assert_close(model(longer, torch.tensor([1000])), model(clip, torch.tensor([1000])))


def test_pooling_weights_are_zero_on_padded_frames_and_none_pools_the_mean():
    model = CRNN(4, frontend(), widths=(4, 8), hidden=8).eval()
    with torch.no_grad(), capture(model, "pool") as maps:
        model(torch.randn(2, 2000), torch.tensor([2000, 700]))
    weights = maps["pool"][0].weights  # (B, 1, N')
    assert weights.shape == (2, 1, (2000 // FRONT["hop_length"] + 1) // 4)
    # 700 samples: 11 real frames, of which 0, 4 and 8 start a frame of the 4x reduced sequence
    assert weights[1, 0, :3].min() > 0 and weights[1, 0, 3:].abs().max() == 0
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 1))
    x, mask = torch.randn(2, 5, 3), torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=torch.bool)
    pool = build("none", 3, kind="pooling")  # what CRNN(pooling="none") pools with
    torch.testing.assert_close(pool(x, mask), torch.stack([x[0].mean(0), x[1, :2].mean(0)]))


def test_spectrogram_picture_draws_one_bar_per_frame():
    features, weights = torch.randn(4, 3), torch.tensor([0.0, 0.25, 0.75])
    fig = spectrogram_with_attention(features, weights, "a clip")
    readable(fig)
    spectrogram, bars = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert spectrogram.get_ylabel() == "mel bin" and bars.get_xlabel() == "frame"
    assert (spectrogram.images[0].get_array() == features.numpy()).all() and spectrogram.images[0].origin == "lower"
    assert [bar.get_height() for bar in bars.patches] == weights.tolist()
    assert [bar.get_x() + bar.get_width() / 2 for bar in bars.patches] == [0, 1, 2], "one bar under each frame"
    alone = spectrogram_with_attention(features, title="a clip")
    readable(alone)
    assert len(alone.axes) == 2  # the spectrogram and its colour bar


@pytest.mark.parametrize("name", ["cnn_se", "transformer", "crnn"])
def test_task_images_show_the_first_clip_cut_to_its_real_frames(name, device):
    model = models()[name].eval()
    batch = {"waveform": torch.randn(2, 2000), "lengths": torch.tensor([1000, 2000]), "target": torch.tensor([0, 1])}
    model, batch = on(device, model, batch)
    with torch.no_grad():
        (fig,) = AudioClassification(4).images(model, batch)["time_attention"]
    readable(fig)
    frames = -(-1000 // FRONT["hop_length"])  # 16 real frames of 16 mel bins
    spectrogram, *bars = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert spectrogram.images[0].get_array().shape == (16, frames) and len(bars) == (name != "cnn_se")
    if bars:  # the pooling weights of the real frames, each encoder frame under the spectrogram frames it covers
        heights = torch.tensor([bar.get_height() for bar in bars[0].patches])
        assert len(heights) == frames and heights.min() > 0 and heights.sum() > 1


def test_models_reject_a_frequency_axis_too_small_for_their_stages():
    with pytest.raises(ValueError, match=r"model.widths: 5 stages halve the frequency axis 5 times, but the front end"):
        SpectrogramCNN(4, frontend(), widths=(4, 4, 4, 4, 4))

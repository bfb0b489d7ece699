"""Connected digit strings, the listen-attend-spell recogniser and its task (WER, CER, alignment)."""

from __future__ import annotations

import pytest
import torch

from domains.audio import DigitStrings, Frontend, ListenAttendSpell, SequenceRecognition
from domains.audio.data.digit_strings import EDGE_S, EOS, FIRST_DIGIT, PAD, transcript
from framework.decoding import shift_right
from tests.image_logger import readable


def events(**options) -> DigitStrings:
    """The embedded variant, small."""
    settings = dict(source="events", train_size=32, val_size=8, test_size=8, events_per_digit=2, batch_size=8)
    return DigitStrings(**{**settings, **options})


def small_model(attention: str = "location_aware") -> ListenAttendSpell:
    frontend = Frontend(n_mels=16, time_masks=0, freq_masks=0)
    return ListenAttendSpell(
        frontend=frontend, dim=16, embed_dim=8, stem_layers=2, pyramid_layers=1, attention=attention, dropout=0.0
    )


def test_transcripts_are_the_digit_words_up_to_the_end():
    assert transcript([FIRST_DIGIT + 3, FIRST_DIGIT + 5, FIRST_DIGIT + 1, EOS, PAD]) == "three five one"
    assert transcript([FIRST_DIGIT, EOS, FIRST_DIGIT + 2]) == "zero"
    assert transcript([EOS]) == ""


def test_strings_are_their_digits_with_gaps_and_reproducible():
    data = events(min_digits=2, max_digits=4, gap=(0.1, 0.1), noise=0.0)
    data.setup("fit")
    strings = data.splits["train"]
    for i in range(len(strings)):
        example, (chosen, _) = strings[i], strings.strings[i]
        digits = example["target"][:-1] - FIRST_DIGIT
        assert example["target"][-1] == EOS and 2 <= len(digits) <= 4
        assert digits.tolist() == [strings.clips[c].digit for c in chosen]
        clip_samples = sum(len(strings.clips[c].waveform) for c in chosen)
        edges, between = 2 * round(EDGE_S * 8000), 800 * (len(digits) - 1)
        assert int(example["lengths"]) == len(example["waveform"]) == clip_samples + edges + between
        assert not example["waveform"][: round(EDGE_S * 8000)].any()  # silence before the first digit
    again = events(min_digits=2, max_digits=4, gap=(0.1, 0.1), noise=0.0)
    again.setup("fit")
    assert torch.equal(again.splits["train"][3]["waveform"], strings[3]["waveform"])
    batch = next(iter(data.loader("train")))
    assert batch["waveform"].shape[0] == 8 and batch["target"].shape[0] == 8
    assert (batch["target"] == PAD).any() or batch["target"].shape[1] == 5


def test_fsdd_strings_keep_split_recordings_apart_and_one_voice_per_string(shared_data):
    shared_data("fsdd")
    data = DigitStrings(train_size=20, val_size=5, test_size=5, split="speakers", test_speakers=["george"])
    data.setup("fit")
    for name, strings in data.splits.items():
        for chosen, _ in strings.strings:
            voices = {strings.clips[c].voice for c in chosen}
            assert len(voices) == 1 and (voices == {"george"}) == (name == "test")
    train = {id(c.waveform) for c in data.splits["train"].clips}
    assert not train & {id(c.waveform) for c in data.splits["val"].clips}


def test_bad_data_options_name_the_key():
    with pytest.raises(ValueError, match="data.min_digits and data.max_digits"):
        DigitStrings(source="events", min_digits=3, max_digits=2)
    with pytest.raises(ValueError, match="data.test_speakers must name at least one speaker"):
        DigitStrings(split="speakers")


@pytest.mark.parametrize("attention", ["location_aware", "mocha", "additive"])
def test_step_by_step_decoding_gives_the_teacher_forced_logits(attention, device):
    torch.manual_seed(0)
    model = small_model(attention).eval().to(device)
    data = events()
    batch = {k: v.to(device) for k, v in next(iter(data.loader("train"))).items()}
    target_in = shift_right(batch["target"], 1)
    full = model(batch["waveform"], batch["lengths"], target_in, need_weights=True)
    state, steps = model.start(batch["waveform"], batch["lengths"]), []
    for t in range(target_in.shape[1]):
        logits, state = model.step(state, target_in[:, t])
        steps.append(logits)
    torch.testing.assert_close(torch.stack(steps, 1), full.logits, atol=1e-5, rtol=1e-5)
    frames = state["mask"].sum(-1)
    assert full.alignment.shape[:2] == target_in.shape
    assert all(not full.alignment[e, :, n:].any() for e, n in enumerate(frames.tolist()))  # no weight on padding


def test_word_and_character_error_rates_of_decoded_strings():
    metrics = SequenceRecognition().generation_metrics()
    metrics.update(["three five one", "two"], ["three nine one", "two four"])
    assert metrics["wer"].compute().item() == pytest.approx(2 / 5)  # one substitution, one deletion
    assert metrics["cer"].compute().item() == pytest.approx((2 + 5) / (14 + 8))  # f->n, v->n; " four"


def test_the_recogniser_learns_and_the_task_draws_its_alignment():
    torch.manual_seed(0)
    data = events(max_digits=3)
    model, task = small_model(), SequenceRecognition()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.02)
    batch, losses = next(iter(data.loader("train"))), []
    for _ in range(25):  # one batch: far below the 2.3 nats of guessing digits, which a prior alone gives
        loss = task.step(model, batch, "train").loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert sum(losses[-3:]) / 3 < 1.5, losses
    model.eval()
    batch = next(iter(data.loader("val")))
    with torch.no_grad():
        hypotheses, references = task.decode(model, batch)
        pictures = task.images(model, batch)
    assert references == [transcript(row) for row in batch["target"].tolist()] and len(hypotheses) == len(references)
    metrics = task.generation_metrics()
    metrics.update(hypotheses, references)
    assert 0 <= metrics["wer"].compute() <= 2
    fig = pictures["alignment"][0]
    readable(fig)
    spectrogram, alignment = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    assert spectrogram.get_ylabel() == "mel bin" and alignment.get_ylabel() == "output token"
    decoded = task.generate(model, {key: batch[key][:1] for key in ("waveform", "lengths", "target")})[0].tolist()
    assert [label.get_text() for label in alignment.get_yticklabels()][:2] == [
        transcript([t]) or {EOS: "</s>", PAD: "<pad>"}[t] for t in decoded[:2]
    ]
    with pytest.raises(
        ValueError, match="model.frontend.init_args.sample_rate is 8000 Hz but data.sample_rate is 16000"
    ):
        task.check(model, events(sample_rate=16000))

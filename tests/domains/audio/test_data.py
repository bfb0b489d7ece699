"""The audio data: clip fitting, generated events, FSDD (real and a tmp layout), Speech Commands."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch

from domains.audio import CLASSES, FSDD, AudioEventDataset, AudioEvents, SpeechCommands, fit_length


def write_wav(path: Path, seconds: float, rate: int, seed: int = 0) -> np.ndarray:
    samples = np.random.default_rng(seed).uniform(-0.5, 0.5, round(seconds * rate)).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), samples, rate, subtype="PCM_16")
    return soundfile.read(str(path), dtype="float32")[0]


def test_fit_length_crops_the_centre_and_pads_the_end():
    x = torch.arange(10.0)
    assert fit_length(x, 4)[0].tolist() == [3, 4, 5, 6] and fit_length(x, 4)[1] == 4
    padded, length = fit_length(x, 13)
    assert length == 10 and padded[:10].tolist() == x.tolist() and not padded[10:].any()


def dominant_bins(waveform: torch.Tensor) -> torch.Tensor:
    """The strongest frequency bin of every loud frame of a clean clip."""
    power = torch.stft(waveform, 256, 64, window=torch.hann_window(256), return_complex=True).abs() ** 2
    loud = power.sum(0) > 0.1 * power.sum(0).max()
    return power[:, loud].argmax(0).float()


def test_generated_events_are_deterministic_and_follow_their_pitch_pattern():
    make = lambda seed: AudioEventDataset(120, 8000, 8000, (40.0, 40.0), seed)
    clips = make(0)
    assert torch.equal(clips.waveform, make(0).waveform) and not torch.equal(clips.waveform, make(1).waveform)
    assert clips.waveform.shape == (120, 8000) and set(clips.target.tolist()) == set(range(len(CLASSES)))
    expected = {
        "rise": lambda change: change > 2,
        "fall": lambda change: change < -2,
        "steady": lambda change: change.abs() <= 1,
    }
    for name, holds in expected.items():
        for i in (clips.target == CLASSES.index(name)).nonzero().flatten().tolist():
            bins = dominant_bins(clips.waveform[i])
            third = len(bins) // 3
            change = bins[-third:].mean() - bins[:third].mean()  # last third of the event vs first, in bins
            assert holds(change), f"{name} clip {i}: the pitch changes by {change} bins"


def test_event_splits_and_bad_snr_range():
    data = AudioEvents(train_size=20, val_size=10, test_size=5, batch_size=8)
    data.setup("fit")
    assert {k: len(v) for k, v in data.splits.items()} == {"train": 20, "val": 10, "test": 5}
    assert not torch.equal(data.splits["train"].waveform[:5], data.splits["test"].waveform)
    batch = next(iter(data.train_dataloader()))
    assert batch["waveform"].shape == (8, 8000) and batch["lengths"].tolist() == [8000] * 8
    with pytest.raises(ValueError, match=r"data.snr_db must be \[low, high\]"):
        AudioEvents(snr_db=(10.0, -10.0))


def fake_fsdd(root: Path) -> Path:
    """Two digits x three speakers x indices 0-7, short random clips."""
    for digit in (3, 7):
        for speaker in ("ann", "bob", "cid"):
            for index in range(8):
                write_wav(root / f"{digit}_{speaker}_{index}.wav", 0.05 + 0.01 * index, 8000, seed=index)
    return root


def test_fsdd_splits_on_a_tmp_layout(tmp_path):
    root = str(fake_fsdd(tmp_path / "recordings"))
    official = FSDD(root=root, val_fraction=0.25, duration=0.1)
    official.setup("fit")
    names = {k: {Path(p).name for p in v.paths} for k, v in official.splits.items()}
    assert len(names["test"]) == 2 * 3 * 5 and all(int(n[:-4].split("_")[2]) < 5 for n in names["test"])
    assert len(names["val"]) == round(0.25 * 18) and not names["val"] & names["train"]
    disjoint = FSDD(root=root, split="speakers", test_speakers=["bob"], duration=0.1)
    disjoint.setup("fit")
    speakers = {k: {Path(p).name.split("_")[1] for p in v.paths} for k, v in disjoint.splits.items()}
    assert speakers["train"] == {"ann", "cid"} and speakers["val"] <= {"ann", "cid"} and speakers["test"] == {"bob"}
    with pytest.raises(ValueError, match=r"data.test_speakers: no recordings of \['dan'\]; the speakers are"):
        FSDD(root=root, split="speakers", test_speakers=["dan"]).setup("fit")
    with pytest.raises(ValueError, match="holds out every speaker"):
        FSDD(root=root, split="speakers", test_speakers=["ann", "bob", "cid"]).setup("fit")


def test_fsdd_rejects_test_speakers_that_do_not_fit_the_split():
    with pytest.raises(ValueError, match="data.test_speakers must name at least one speaker"):
        FSDD(split="speakers")
    with pytest.raises(ValueError, match="only used with data.split: speakers"):
        FSDD(test_speakers=["george"])


def test_fsdd_real_official_and_speaker_splits(shared_data):
    recordings = shared_data("fsdd") / "recordings"
    data = FSDD(val_fraction=0.1, seed=0)
    data.setup("fit")
    splits = data.splits
    assert (len(splits["train"]), len(splits["val"]), len(splits["test"])) == (2025, 225, 250)
    assert all(int(Path(p).stem.split("_")[2]) < 5 for p in splits["test"].paths)
    example = splits["test"][0]
    path = splits["test"].paths[0]
    samples = torch.from_numpy(soundfile.read(str(path), dtype="float32")[0])
    assert example["lengths"] == len(samples) < 8000 and example["target"] == int(path.name[0])
    assert torch.equal(example["waveform"][: len(samples)], samples) and not example["waveform"][len(samples) :].any()
    again = FSDD(seed=0)
    again.setup("fit")
    assert again.splits["val"].paths == splits["val"].paths
    disjoint = FSDD(split="speakers", test_speakers=["george"])
    disjoint.setup("fit")
    assert len(disjoint.splits["test"]) == 500
    assert {p.name.split("_")[1] for p in disjoint.splits["test"].paths} == {"george"}
    assert not any("george" in p.name for p in disjoint.splits["train"].paths + disjoint.splits["val"].paths)
    assert len(list(recordings.glob("*.wav"))) == 2500


def test_speech_commands_reads_torchaudios_layout(tmp_path):
    version = tmp_path / "SpeechCommands" / "speech_commands_v0.02"
    clips = {
        "yes/aa_nohash_0.wav": 1.0,
        "yes/bb_nohash_0.wav": 0.5,
        "yes/cc_nohash_1.wav": 1.2,
        "no/aa_nohash_0.wav": 1.0,
        "no/dd_nohash_0.wav": 0.8,
        "up/ee_nohash_0.wav": 1.0,
        "_background_noise_/white_noise.wav": 2.0,
    }
    audio = {name: write_wav(version / name, seconds, 16000, seed=i) for i, (name, seconds) in enumerate(clips.items())}
    (version / "validation_list.txt").write_text("yes/bb_nohash_0.wav\n")
    (version / "testing_list.txt").write_text("no/dd_nohash_0.wav\nyes/cc_nohash_1.wav\n")
    data = SpeechCommands(root=str(tmp_path / "SpeechCommands"), words=["yes", "no"], batch_size=4)
    data.setup("fit")
    names = {k: sorted(str(p.relative_to(version)) for p in v.paths) for k, v in data.splits.items()}
    assert names == {
        "train": ["no/aa_nohash_0.wav", "yes/aa_nohash_0.wav"],
        "val": ["yes/bb_nohash_0.wav"],
        "test": ["no/dd_nohash_0.wav", "yes/cc_nohash_1.wav"],
    }
    assert data.splits["train"].labels == [1, 0] and data.classes == ["yes", "no"]
    short = data.splits["val"][0]
    assert short["lengths"] == 8000
    assert torch.equal(short["waveform"][:8000], torch.from_numpy(audio["yes/bb_nohash_0.wav"]))
    long = data.splits["test"][1]  # 1.2 s: the centre second
    assert long["lengths"] == 16000
    assert torch.equal(long["waveform"], torch.from_numpy(audio["yes/cc_nohash_1.wav"][1600:17600]))
    everything = SpeechCommands(root=str(tmp_path / "SpeechCommands"))
    everything.setup("fit")
    assert everything.classes == ["no", "up", "yes"]
    with pytest.raises(ValueError, match=r"data.words: no training clips of \['left'\]"):
        SpeechCommands(root=str(tmp_path / "SpeechCommands"), words=["yes", "left"]).setup("fit")
    with pytest.raises(ValueError, match="sampled at 16000 Hz but data.sample_rate=8000"):
        SpeechCommands(root=str(tmp_path / "SpeechCommands"), sample_rate=8000).split("train")[0]

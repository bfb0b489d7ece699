"""Damaged data is named, never trained on: every real loader against every kind of damage.

The cases are generated from a table. :data:`LOADERS` says, for each real loader, its config,
how to make a tiny fixture (the first lines or files of the real data set in ``../shared/data``,
written into ``tmp_path``) and, for every kind of damage in :data:`KINDS` that applies to its
format, which file to damage and how. Each case damages a fresh fixture, runs the command line
as a user would (``fit``, one batch) and expects exit status 1, one or two lines naming the file
(and ``file:line`` where the format has lines), and no run folder left behind. One more case
per loader runs the undamaged fixture, so that no case passes on a fixture that was broken anyway.

The kinds that break a format's declared invariants (``framework.data.invariants``: a repeated key,
a dangling reference, a label row without a label, files of unpaired lengths) are generated from
the declarations themselves: a loader names the :class:`~framework.data.DataSet` its reader checks
and which fixture file is which of its files (:class:`Declared`), and every key, reference, label
set and pair declared there becomes a case; :func:`test_every_declared_invariant_is_damaged` fails
for a declaration that no loader's fixture reaches.
"""

from __future__ import annotations

import dataclasses
import gzip
import importlib
import pickle
import pkgutil
import shutil
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import numpy as np
import pytest

import domains
from domains.graph.data.movielens import MOVIELENS
from domains.graph.data.planetoid import PLANETOID
from domains.nlp.data.labelled import LABELLED
from domains.nlp.data.multi30k import PARALLEL
from domains.nlp.data.trec import TREC_FILES
from domains.vision.data.torchvision_sets import MNIST
from framework.__main__ import main
from framework.data import MOVIELENS_RATINGS, DataSet, Format
from tests.test_bad_inputs import fails, nothing_left

#: The kinds of damage: what each does to a text file and to a binary one.
KINDS = {
    "truncated": "cut short (a text file in the middle of a line, a binary file halfway)",
    "empty": "no bytes at all",
    "encoding": "text in UTF-16; a binary file replaced by text",
    "garbage": "a line of binary junk in a text file; junk over the middle of a binary file",
    "label": "a label the data set does not know",
    "range": "a value out of its range",
    "size": "another sample rate or image size",
    "columns": "a field, channel or line too many or too few",
    "duplicate": "a row that repeats another's key",
    "reference": "a field that names nothing in the file it refers to",
    "no label": "a row of label indicators without a label (or more than the format allows)",
    "unpaired": "one file of a pair a row shorter than the other",
}
#: The kinds generated from the declarations (the others are written in :data:`LOADERS`).
DECLARED_KINDS = ("duplicate", "reference", "no label", "unpaired")
ONE_STEP = [
    "--trainer.max_steps=1",
    "--trainer.max_epochs=1",
    "--trainer.limit_train_batches=1",
    "--trainer.limit_val_batches=1",
    "--trainer.num_sanity_val_steps=0",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--attention_maps.every_n_epochs=0",  # the data is read before any picture or statistic
    "--attention_stats.every_n_epochs=0",
    "--config",
    "configs/logger/csv.yaml",
]
JUNK = b"\x89\x00\xfe\xff junk \x01\x02\x9c"


# --- damage, applied to a file; a text damage returns the line it damaged --------------------------------------


def text_lines(path: Path) -> list[bytes]:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.splitlines(keepends=True)


def write_lines(path: Path, lines: list[bytes]) -> None:
    data = b"".join(lines)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


def cut_line(line: int, separator: bytes) -> Callable[[Path], int]:
    """Cut the file just after the first ``separator`` of ``line``: the rest of the file is gone."""

    def damage(path: Path) -> int:
        lines = text_lines(path)
        write_lines(path, lines[: line - 1] + [lines[line - 1].split(separator)[0] + separator])
        return line

    return damage


def utf16(path: Path) -> None:
    text = b"".join(text_lines(path)).decode("latin-1")
    path.write_bytes(gzip.compress(text.encode("utf-16")) if path.suffix == ".gz" else text.encode("utf-16"))


def junk_line(line: int) -> Callable[[Path], int]:
    def damage(path: Path) -> int:
        lines = text_lines(path)
        write_lines(path, lines[: line - 1] + [JUNK + b"\n"] + lines[line - 1 :])
        return line

    return damage


def set_field(line: int, column: int, value: bytes, separator: bytes) -> Callable[[Path], int]:
    """Replace field ``column`` of ``line`` (``value`` None: drop it; a column past the end: add one)."""

    def damage(path: Path) -> int:
        lines = text_lines(path)
        end = b"\r\n" if lines[line - 1].endswith(b"\r\n") else b"\n"
        fields = lines[line - 1].rstrip(b"\r\n").split(separator)
        if value is None:
            del fields[column]
        elif column == len(fields):
            fields.append(value)
        else:
            fields[column] = value
        lines[line - 1] = separator.join(fields) + end
        write_lines(path, lines)
        return line

    return damage


def drop_last_line(path: Path) -> None:
    write_lines(path, text_lines(path)[:-1])


def empty(path: Path) -> None:
    path.write_bytes(b"")


def halve(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def keep_bytes(count: int) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        path.write_bytes(path.read_bytes()[:count])

    return damage


def garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = (JUNK * 8)[:64]
    path.write_bytes(bytes(data))


def text_instead(path: Path) -> None:
    path.write_text("this is a text file, not what the format says\n")


def rename(name: str) -> Callable[[Path], Path]:
    def damage(path: Path) -> Path:
        return path.rename(path.with_name(name))

    return damage


def resample(rate: int) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        import soundfile

        samples, _ = soundfile.read(path, dtype="int16")
        soundfile.write(path, samples, rate, subtype="PCM_16")

    return damage


def stereo(path: Path) -> None:
    import soundfile

    samples, rate = soundfile.read(path, dtype="int16")
    soundfile.write(path, np.stack([samples, samples], 1), rate, subtype="PCM_16")


def resize_image(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as image:
        image.resize((image.width // 2, image.height // 2)).save(path)


def as_rgb(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").save(path)


def paint(value: int) -> Callable[[Path], None]:
    from PIL import Image

    def damage(path: Path) -> None:
        with Image.open(path) as image:
            pixels = np.array(image)
        pixels[5, 7] = value
        Image.fromarray(pixels).save(path)

    return damage


def repickle(change: Callable[[object], object]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        with open(path, "rb") as file:
            value = pickle.load(file, encoding="latin1")
        with open(path, "wb") as file:
            pickle.dump(change(value), file)

    return damage


def far_neighbour(graph: dict) -> dict:
    graph[0] = [*graph[0], 99999]
    return graph


def write_idx(path: Path, array: np.ndarray) -> None:
    header = b"\x00\x00\x08" + bytes([array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(gzip.compress(header + array.astype(np.uint8).tobytes()))


def read_idx(path: Path) -> np.ndarray:
    raw = gzip.decompress(path.read_bytes())
    shape = struct.unpack(f">{raw[3]}I", raw[4 : 4 + 4 * raw[3]])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * raw[3]).reshape(shape)


def change_idx(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        write_idx(path, change(read_idx(path).copy()))

    return damage


def label_twelve(labels: np.ndarray) -> np.ndarray:
    labels[3] = 12
    return labels


# --- the tiny fixtures: the first lines or files of the real data sets ---------------------------------


def copy_lines(source: Path, target: Path, count: int, keep: Callable[[bytes], bool] = lambda line: True) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    write_lines(target, [line for line in text_lines(source) if keep(line)][:count])


def trec(real: Path, root: Path) -> None:
    """TREC's first questions, without the class ABBR in training, so that a test question of it
    refers to a class the training file lacks."""
    copy_lines(
        real / "TREC/train_5500.label", root / "TREC/train_5500.label", 300, lambda line: not line.startswith(b"ABBR")
    )
    coarse = {line.split(b":")[0] for line in text_lines(root / "TREC/train_5500.label")}
    copy_lines(real / "TREC/TREC_10.label", root / "TREC/TREC_10.label", 40, lambda line: line.split(b":")[0] in coarse)


def multi30k(real: Path, root: Path) -> None:
    for source in (real / "multi30k").glob("*.gz"):
        copy_lines(source, root / "multi30k" / source.name, 48)


def babi(real: Path, root: Path) -> None:
    for source in (real / "babi/tasks_1-20_v1-2/en").glob("qa*.txt"):
        copy_lines(source, root / "babi/tasks_1-20_v1-2/en" / source.name, 45)


def fsdd(real: Path, root: Path) -> None:
    (root / "fsdd/recordings").mkdir(parents=True)
    for digit in range(10):
        for index in (0, 5, 6, 7):
            name = f"{digit}_george_{index}.wav"
            shutil.copy(real / "fsdd/recordings" / name, root / "fsdd/recordings" / name)


def cora(real: Path, root: Path) -> None:
    shutil.copytree(real / "Planetoid/Cora/raw", root / "Planetoid/Cora/raw")


def movielens_ratings(real: Path, root: Path) -> None:
    copy_lines(
        real / "MovieLens100K/raw/u.data",
        root / "MovieLens100K/raw/u.data",
        10**6,
        lambda line: int(line.split(b"\t")[0]) <= 20,
    )


def movielens_graph(real: Path, root: Path) -> None:
    for name in ("u.user", "u.item", "u.occupation"):
        copy_lines(real / "MovieLens100K/raw" / name, root / "MovieLens100K/raw" / name, 10**6)
    copy_lines(real / "MovieLens100K/raw/u.data", root / "MovieLens100K/raw/u.data", 3000)


def camvid(real: Path, root: Path) -> None:
    for split in ("train", "val", "test"):
        for folder in (split, f"{split}annot"):
            (root / "CamVid" / folder).mkdir(parents=True)
            for path in sorted((real / "CamVid" / folder).glob("*.png"))[:2]:
                shutil.copy(path, root / "CamVid" / folder / path.name)


def mnist(real: Path, root: Path) -> None:
    (root / "MNIST/raw").mkdir(parents=True)
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        write_idx(root / "MNIST/raw" / name, read_idx(real / "MNIST/raw" / name)[:200])


def labelled_tsv(real: Path, root: Path) -> None:
    """TREC's questions as ``coarse label<TAB>question`` lines (``LabelledText``), and its next
    training questions as a validation split of a text file and a label file."""
    (root / "corpus").mkdir(parents=True)
    train = [line.split(b" ", 1) for line in text_lines(real / "TREC/train_5500.label")[:300]]
    labels = {label.split(b":")[0] for label, _ in train}
    test = [line.split(b" ", 1) for line in text_lines(real / "TREC/TREC_10.label")[:60]]
    for name, pairs in (("train.tsv", train), ("test.tsv", test)):
        write_lines(
            root / "corpus" / name,
            [label.split(b":")[0] + b"\t" + question for label, question in pairs if label.split(b":")[0] in labels],
        )
    val = [line.split(b" ", 1) for line in text_lines(real / "TREC/train_5500.label")[300:330]]
    write_lines(root / "corpus/val.txt", [question for _, question in val])
    write_lines(root / "corpus/val.labels", [label.split(b":")[0] + b"\n" for label, _ in val])


def user_item_lines(real: Path, root: Path) -> None:
    """The ratings of MovieLens' first 20 users as a SASRec file (``user item``, each user's in time order)."""
    rows = [
        line.split(b"\t") for line in text_lines(real / "MovieLens100K/raw/u.data") if int(line.split(b"\t")[0]) <= 20
    ]
    rows.sort(key=lambda row: (int(row[0]), int(row[3])))
    (root / "sasrec").mkdir(parents=True)
    write_lines(root / "sasrec/ml.txt", [row[0] + b" " + row[1] + b"\n" for row in rows])


def image_folders(real: Path, root: Path) -> None:
    """MNIST's first digits 0-2 as PNGs in ``digits/<train|val>/<digit>/`` (``ImageFolderClassification``)."""
    from PIL import Image

    images, labels = (
        read_idx(real / "MNIST/raw" / name) for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    )
    for digit in range(3):
        for index, image in enumerate(images[labels == digit][:12]):
            folder = root / "digits" / ("train" if index < 8 else "val") / str(digit)
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(image).save(folder / f"{index}.png")


def speech_commands(real: Path, root: Path) -> None:
    """FSDD's recordings of zero, one and two in Speech Commands' layout, with its two lists."""
    version = root / "SpeechCommands/speech_commands_v0.02"
    words = ("zero", "one", "two")
    for digit, word in enumerate(words):
        (version / word).mkdir(parents=True)
        for index in range(8):
            shutil.copy(
                real / f"fsdd/recordings/{digit}_george_{index}.wav", version / word / f"george_nohash_{index}.wav"
            )
    (version / "validation_list.txt").write_text("".join(f"{word}/george_nohash_5.wav\n" for word in words))
    (version / "testing_list.txt").write_text("".join(f"{word}/george_nohash_0.wav\n" for word in words))


def new_class(name: str) -> Callable[[Path], Path]:
    """A copy of the image in a class folder of its own (a class the training split lacks); the
    split's folder is what the message names."""

    def damage(path: Path) -> Path:
        (path.parent.parent / name).mkdir()
        shutil.copy(path, path.parent.parent / name / path.name)
        return path.parent.parent

    return damage


def load_pickle(path: Path) -> object:
    with open(path, "rb") as file:
        return pickle.load(file, encoding="latin1")


def save_pickle(path: Path, value: object) -> None:
    with open(path, "wb") as file:
        pickle.dump(value, file)


def save_idx(path: Path, value: np.ndarray) -> None:
    write_idx(path, value)


#: How the files stored as arrays are read and written back (the others are lines of text).
Codec = tuple[Callable[[Path], object], Callable[[Path, object], None]]
PICKLE: Codec = (load_pickle, save_pickle)
IDX: Codec = (read_idx, save_idx)


@dataclass
class Declared:
    """What a loader's reader declares (``framework.data.invariants``): its data set's invariants,
    which fixture file (relative to the data root) is which of the data set's files, and how
    those stored as arrays are read and written."""

    dataset: DataSet
    files: dict[str, str]
    arrays: dict[str, Codec] = field(default_factory=dict)


@dataclass
class Loader:
    """A real loader in the table: its command line (``{root}``: the fixture's data root), its
    fixture, and per kind of damage the
    file (relative to the data root) and the damage, a function of the path that returns the
    line it damaged (the message must name ``file:line``), the file it became (renamed) or None;
    and what its reader declares, from which the damages of :data:`DECLARED_KINDS` are made."""

    config: list[str]
    fixture: Callable[[Path, Path], None]
    damages: dict[str, tuple[str, Callable[[Path], Union[int, Path, None]]]] = field(default_factory=dict)
    declared: Optional[Declared] = None


TAB, SPACE = b"\t", b" "
LOADERS = {
    "trec": Loader(
        ["--config", "domains/nlp/selfattentive_trec.yaml", "--data.val_size=20"],
        trec,
        {
            "truncated": ("TREC/train_5500.label", cut_line(120, SPACE)),
            "empty": ("TREC/TREC_10.label", empty),
            "encoding": ("TREC/train_5500.label", utf16),
            "garbage": ("TREC/train_5500.label", junk_line(50)),
            "label": ("TREC/TREC_10.label", set_field(7, 0, b"FOO:bar", SPACE)),
            "columns": ("TREC/TREC_10.label", cut_line(9, SPACE)),
            "reference": ("TREC/TREC_10.label", set_field(7, 0, b"ABBR:abb", SPACE)),  # a class the training file lacks
        },
        Declared(TREC_FILES, {"train": "TREC/train_5500.label", "test": "TREC/TREC_10.label"}),
    ),
    "multi30k": Loader(
        ["--config", "domains/nlp/seq2seq_luong_multi30k.yaml"],
        multi30k,
        {
            "truncated": ("multi30k/train.de.gz", halve),
            "empty": ("multi30k/val.en.gz", empty),
            "encoding": ("multi30k/val.de.gz", utf16),
            "garbage": ("multi30k/train.en.gz", junk_line(30)),
            "columns": ("multi30k/test_2016_flickr.de.gz", drop_last_line),
        },
        Declared(PARALLEL, {"source": "multi30k/train.de.gz", "target": "multi30k/train.en.gz"}),
    ),
    "babi": Loader(
        ["--config", "domains/memory/memn2n_babi.yaml"],
        babi,
        {
            "truncated": ("babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_train.txt", cut_line(20, SPACE)),
            "empty": ("babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_test.txt", empty),
            "encoding": ("babi/tasks_1-20_v1-2/en/qa7_counting_train.txt", utf16),
            "garbage": ("babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_train.txt", junk_line(10)),
            "range": ("babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_train.txt", set_field(3, 2, b"99", TAB)),
            "columns": ("babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_test.txt", set_field(6, 2, None, TAB)),
        },
    ),
    "fsdd": Loader(
        ["--config", "domains/audio/cnn_fsdd.yaml"],
        fsdd,
        {
            "truncated": ("fsdd/recordings/3_george_5.wav", keep_bytes(20)),
            "empty": ("fsdd/recordings/4_george_6.wav", empty),
            "encoding": ("fsdd/recordings/0_george_0.wav", text_instead),
            "label": ("fsdd/recordings/1_george_7.wav", rename("x_george_7.wav")),
            "size": ("fsdd/recordings/2_george_5.wav", resample(16000)),
            "columns": ("fsdd/recordings/5_george_6.wav", stereo),
        },
    ),
    "cora": Loader(
        ["--config", "domains/graph/gat_cora.yaml"],
        cora,
        {
            "truncated": ("Planetoid/Cora/raw/ind.cora.graph", halve),
            "empty": ("Planetoid/Cora/raw/ind.cora.tx", empty),
            "encoding": ("Planetoid/Cora/raw/ind.cora.allx", text_instead),
            "garbage": ("Planetoid/Cora/raw/ind.cora.graph", garble),
            "range": ("Planetoid/Cora/raw/ind.cora.graph", repickle(far_neighbour)),
            "columns": ("Planetoid/Cora/raw/ind.cora.ty", repickle(lambda labels: labels[:, :-1])),
        },
        Declared(
            PLANETOID,
            {part: f"Planetoid/Cora/raw/ind.cora.{part}" for part in PLANETOID.files},
            dict.fromkeys(("x", "tx", "allx", "y", "ty", "ally"), PICKLE),
        ),
    ),
    "movielens": Loader(
        ["--config", "domains/recommender/sasrec_ml100k.yaml", "--data.num_negatives=10"],
        movielens_ratings,
        {
            "truncated": ("MovieLens100K/raw/u.data", cut_line(500, TAB)),
            "empty": ("MovieLens100K/raw/u.data", empty),
            "encoding": ("MovieLens100K/raw/u.data", utf16),
            "garbage": ("MovieLens100K/raw/u.data", junk_line(700)),
            "range": ("MovieLens100K/raw/u.data", set_field(40, 2, b"9", TAB)),
            "columns": ("MovieLens100K/raw/u.data", set_field(90, 4, b"5", TAB)),
        },
        Declared(DataSet("u.data", {"u.data": MOVIELENS_RATINGS}), {"u.data": "MovieLens100K/raw/u.data"}),
    ),
    "movielens_users": Loader(
        ["--config", "domains/graph/han_movielens.yaml"],
        movielens_graph,
        {
            "truncated": ("MovieLens100K/raw/u.user", cut_line(400, b"|")),
            "empty": ("MovieLens100K/raw/u.occupation", empty),
            "encoding": ("MovieLens100K/raw/u.item", utf16),
            "garbage": ("MovieLens100K/raw/u.item", junk_line(77)),
            "label": ("MovieLens100K/raw/u.user", set_field(12, 3, b"astronaut", b"|")),
            "range": ("MovieLens100K/raw/u.data", set_field(30, 1, b"99999", TAB)),
            "columns": ("MovieLens100K/raw/u.item", set_field(5, 23, None, b"|")),
        },
        Declared(MOVIELENS, {name: f"MovieLens100K/raw/{name}" for name in MOVIELENS.files}),
    ),
    "camvid": Loader(
        ["--config", "domains/vision/ccnet_camvid.yaml", "--data.batch_size=2"],
        camvid,
        {
            "truncated": ("CamVid/trainannot/0001TP_006690.png", halve),
            "empty": ("CamVid/val/0016E5_07959.png", empty),
            "encoding": ("CamVid/testannot/0001TP_008550.png", text_instead),
            "garbage": ("CamVid/train/0001TP_006750.png", garble),
            "range": ("CamVid/trainannot/0001TP_006750.png", paint(200)),
            "size": ("CamVid/train/0001TP_006690.png", resize_image),
            "columns": ("CamVid/valannot/0016E5_07959.png", as_rgb),
        },
    ),
    "mnist": Loader(
        [
            "--config",
            "domains/vision/classify.yaml",
            "--data=domains.vision.TorchvisionClassification",
            "--data.name=mnist",
            "--data.test_split_only=true",
        ],
        mnist,
        {
            "truncated": ("MNIST/raw/t10k-images-idx3-ubyte.gz", halve),
            "empty": ("MNIST/raw/t10k-labels-idx1-ubyte.gz", empty),
            "encoding": ("MNIST/raw/t10k-images-idx3-ubyte.gz", text_instead),
            "range": ("MNIST/raw/t10k-labels-idx1-ubyte.gz", change_idx(label_twelve)),
            "size": ("MNIST/raw/t10k-images-idx3-ubyte.gz", change_idx(lambda images: images[:, 4:24, 4:24])),
            "columns": ("MNIST/raw/t10k-labels-idx1-ubyte.gz", change_idx(lambda labels: labels[:-1])),
        },
        Declared(
            MNIST,
            {"images": "MNIST/raw/t10k-images-idx3-ubyte.gz", "labels": "MNIST/raw/t10k-labels-idx1-ubyte.gz"},
            dict.fromkeys(("images", "labels"), IDX),
        ),
    ),
    "labelled_text": Loader(
        [
            "--config",
            "domains/nlp/selfattentive_trec.yaml",
            "--data=domains.nlp.LabelledText",
            "--data.root={root}/corpus",
            "--data.splits={train: [train.tsv], val: [val.txt, val.labels], test: [test.tsv]}",
            "--data.val_size=20",
            "--data.encoding=latin-1",
        ],
        labelled_tsv,
        {
            "truncated": ("corpus/train.tsv", cut_line(100, TAB)),
            "empty": ("corpus/test.tsv", empty),
            "encoding": ("corpus/train.tsv", utf16),
            "garbage": ("corpus/test.tsv", junk_line(12)),
            "label": ("corpus/test.tsv", set_field(4, 0, b"FOO", TAB)),
            "columns": ("corpus/train.tsv", set_field(33, 2, b"extra", TAB)),
        },
        Declared(
            LABELLED,
            {
                "train": "corpus/train.tsv",
                "split": "corpus/test.tsv",
                "texts": "corpus/val.txt",
                "labels": "corpus/val.labels",
            },
        ),
    ),
    "user_item_file": Loader(
        [
            "--config",
            "domains/recommender/sasrec_ml100k.yaml",
            "--data=domains.recommender.UserItemSequences",
            "--data.path=sasrec/ml.txt",
            "--data.num_negatives=10",
        ],
        user_item_lines,
        {
            "truncated": ("sasrec/ml.txt", cut_line(300, SPACE)),
            "empty": ("sasrec/ml.txt", empty),
            "encoding": ("sasrec/ml.txt", utf16),
            "garbage": ("sasrec/ml.txt", junk_line(1000)),
            "range": ("sasrec/ml.txt", set_field(40, 1, b"0", SPACE)),
            "columns": ("sasrec/ml.txt", set_field(41, 2, b"5", SPACE)),
        },
    ),
    "image_folder": Loader(
        [
            "--config",
            "domains/vision/classify.yaml",
            "--data=domains.vision.ImageFolderClassification",
            "--data.folder=digits",
            "--data.image_size=28",
            "--model.in_chans=3",
        ],
        image_folders,
        {
            "truncated": ("digits/train/1/3.png", halve),
            "empty": ("digits/val/0/9.png", empty),
            "encoding": ("digits/train/2/0.png", text_instead),
            "garbage": ("digits/train/0/5.png", garble),
            "label": ("digits/val/2/10.png", new_class("ten")),
        },
    ),
    "speech_commands": Loader(
        ["--config", "domains/audio/cnn_fsdd.yaml", "--data=domains.audio.SpeechCommands", "--data.sample_rate=8000"],
        speech_commands,
        {
            "truncated": ("SpeechCommands/speech_commands_v0.02/one/george_nohash_3.wav", keep_bytes(30)),
            "empty": ("SpeechCommands/speech_commands_v0.02/two/george_nohash_5.wav", empty),
            "encoding": ("SpeechCommands/speech_commands_v0.02/zero/george_nohash_7.wav", text_instead),
            "garbage": ("SpeechCommands/speech_commands_v0.02/validation_list.txt", junk_line(2)),
            "label": ("SpeechCommands/speech_commands_v0.02/testing_list.txt", set_field(3, 0, b"three", b"/")),
            "size": ("SpeechCommands/speech_commands_v0.02/one/george_nohash_6.wav", resample(16000)),
        },
    ),
}
CASES = [(loader, kind) for loader, spec in LOADERS.items() for kind in KINDS if kind in spec.damages]


# --- the damages the declarations forbid, generated from them ---------------------------------------------------

#: The line (1-based) or row (0-based) a generated damage changes.
ROW = 5


def split_line(spec: Format, line: bytes) -> list[bytes]:
    separator = spec.separator.encode(spec.encoding) if spec.separator is not None else None
    return line.rstrip(b"\r\n").split(separator)


def set_fields(spec: Format, values: Callable[[list[list[bytes]]], dict[str, bytes]]) -> Callable[[Path], int]:
    """Set fields, by name, of line :data:`ROW` of a text file of format ``spec`` to ``values(lines
    split into fields)``."""
    names = [f.name for f in spec.fields]
    separator = spec.separator.encode(spec.encoding) if spec.separator is not None else b" "

    def damage(path: Path) -> int:
        lines = text_lines(path)
        split = [split_line(spec, line) for line in lines]
        for name, value in values(split).items():
            split[ROW - 1][names.index(name)] = value
        lines[ROW - 1] = separator.join(split[ROW - 1]) + b"\n"
        write_lines(path, lines)
        return ROW

    return damage


def change_array(codec: Codec, change: Callable[[object], object], row: Optional[int]) -> Callable[[Path], object]:
    """Read an array file with ``codec``, change it and write it back; the damage returns what the
    message must name: ``file: row <row>``, or the file (``row`` None)."""
    load, save = codec

    def damage(path: Path) -> object:
        save(path, change(load(path)))
        return f"{path}: row {row}" if row is not None else path

    return damage


def zero_row(value: np.ndarray) -> np.ndarray:
    value = np.array(value)
    value[ROW] = 0
    return value


def absent(spec: Format, name: str, present: np.ndarray) -> bytes:
    """A value of field ``name`` in its declared domain that ``present`` lacks."""
    declared = spec.field(name)
    if not declared.text:
        return str(int(np.max(present)) + 1).encode()
    return sorted(set(declared.known or ("dangling",)) - {str(value) for value in present})[0].encode(spec.encoding)


#: An invariant as the declarations hold it: (kind, the Format or DataSet, what in it).
Invariant = tuple[str, int, object]


def declared_damages(spec: Loader, root: Optional[Path] = None) -> Iterator[tuple[str, str, str, Callable, Invariant]]:
    """``(kind, invariant, file, damage, identity)`` of every invariant that the loader's reader
    declares and its fixture (in ``root``; None: the cases are only named) can break: a key
    repeated at :data:`ROW`, a reference at :data:`ROW` to a value its target lacks, the labels of
    :data:`ROW` cleared, the second file of a pair a row short."""
    declared = spec.declared
    if declared is None:
        return
    dataset = declared.dataset
    for name, relative in declared.files.items():
        form, codec = dataset.files[name], declared.arrays.get(name)
        if form.key and codec is None:
            names = [f.name for f in form.fields]
            copy = lambda split, form=form, names=names: {key: split[0][names.index(key)] for key in form.key}
            yield "duplicate", f"{name}: key", relative, set_fields(form, copy), ("duplicate", id(form), None)
        if form.labels is not None:
            clear = lambda split, form=form: dict.fromkeys(form.labels.fields or (), b"0")
            damage = set_fields(form, clear) if codec is None else change_array(codec, zero_row, ROW)
            yield "no label", f"{name}: labels", relative, damage, ("no label", id(form), None)
    for reference in dataset.references:
        source = dataset.files[reference.source]
        stored = reference.field in [f.name for f in source.fields]
        if stored and {reference.source, reference.target} <= declared.files.keys():
            target = declared.files[reference.target]

            def dangling(split, reference=reference, source=source, target=target) -> dict[str, bytes]:
                form = dataclasses.replace(dataset.files[reference.target], encoding="latin-1")  # any bytes decode
                keys = form.read(root / target)[reference.key]
                return {reference.field: absent(source, reference.field, keys)}

            invariant = f"{reference.source}.{reference.field} in {reference.target}"
            identity = ("reference", id(dataset), reference)
            yield "reference", invariant, declared.files[reference.source], set_fields(source, dangling), identity
    for first, second in dataset.paired:
        if {first, second} <= declared.files.keys():
            codec = declared.arrays.get(second)
            damage = drop_last_line if codec is None else change_array(codec, lambda value: value[:-1], None)
            yield (
                "unpaired",
                f"{first} ~ {second}",
                declared.files[second],
                damage,
                ("unpaired", id(dataset), (first, second)),
            )


@pytest.fixture(autouse=True)
def as_a_user(monkeypatch):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)


@pytest.fixture
def fixture_of(shared_data, tmp_path, monkeypatch):
    """The tiny fixture of a loader in ``tmp_path/data``, made the data root."""

    def make(loader: Loader) -> Path:
        real = shared_data(".")
        root = tmp_path / "data"
        loader.fixture(real, root)
        monkeypatch.setenv("FRAMEWORK_DATA_DIR", str(root))
        return root

    return make


def test_the_table_covers_every_kind_and_every_loader_several():
    assert {kind for _, kind in CASES} | {kind for _, kind, _ in DECLARED} == set(KINDS)
    assert {kind for _, kind, _ in DECLARED} == set(DECLARED_KINDS)
    assert all(len(spec.damages) >= 5 for spec in LOADERS.values())


def damaged_run_is_named(capsys, spec: Loader, root: Path, relative: str, damage: Callable, kind: str) -> str:
    """Damage the fixture's file, run the command line, and check that it stops naming the file
    (and its line, or its row); returns the message."""
    path = root / relative
    damaged = damage(path)
    message = fails(capsys, ["fit", *(arg.replace("{root}", str(root)) for arg in spec.config), *ONE_STEP])
    named = f"{path}:{damaged}:" if isinstance(damaged, int) else str(damaged or path)
    assert named in message, f"{kind} of {relative}: {message}"
    nothing_left()
    return message


@pytest.mark.parametrize("loader, kind", CASES, ids=[f"{loader}-{kind}" for loader, kind in CASES])
@pytest.mark.slow
def test_damaged_data_is_named_and_leaves_no_run_folder(capsys, fixture_of, loader, kind):
    spec = LOADERS[loader]
    relative, damage = spec.damages[kind]
    damaged_run_is_named(capsys, spec, fixture_of(spec), relative, damage, kind)


DECLARED = [
    (loader, kind, invariant) for loader, spec in LOADERS.items() for kind, invariant, *_ in declared_damages(spec)
]


@pytest.mark.parametrize("loader, kind, invariant", DECLARED, ids=[" - ".join(case) for case in DECLARED])
@pytest.mark.slow
def test_a_broken_declared_invariant_is_named(capsys, fixture_of, loader, kind, invariant):
    spec = LOADERS[loader]
    root = fixture_of(spec)
    relative, damage = next(
        (relative, damage) for k, i, relative, damage, _ in declared_damages(spec, root) if (k, i) == (kind, invariant)
    )
    message = damaged_run_is_named(capsys, spec, root, relative, damage, kind)
    expected = {"duplicate": "repeats", "reference": "dangling reference", "no label": "no label", "unpaired": "pair"}
    assert expected[kind] in message, message


def declarations() -> Iterator[Union[Format, DataSet]]:
    """Every Format and DataSet that the domains' data modules and ``framework.data`` declare (a
    DataSet's own Formats through it)."""
    import framework.data.formats

    modules = [framework.data.formats] + [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(domains.__path__, "domains.")
        if ".data." in info.name
    ]
    for module in modules:
        for value in vars(module).values():
            for item in value.values() if isinstance(value, dict) else (value,):
                if isinstance(item, (Format, DataSet)):
                    yield item


def required(declaration: Union[Format, DataSet]) -> set[Invariant]:
    """The invariants a declaration states that can be broken in a file."""
    if isinstance(declaration, Format):
        return {
            (kind, id(declaration), None)
            for kind, stated in (("duplicate", declaration.key), ("no label", declaration.labels))
            if stated
        }
    found = {invariant for form in declaration.files.values() for invariant in required(form)}
    found |= {("reference", id(declaration), reference) for reference in declaration.references}
    return found | {("unpaired", id(declaration), tuple(pair)) for pair in declaration.paired}


def test_every_declared_invariant_is_damaged():
    """Every key, label set, reference and pair that a reader declares is broken by a case: one
    generated from a loader's declarations, or, for a reference to a value the reader derives (TREC's
    coarse class), a hand-written ``reference`` damage of a loader that declares it."""
    covered = {identity for spec in LOADERS.values() for *_, identity in declared_damages(spec)}
    for spec in LOADERS.values():
        if spec.declared is not None and "reference" in spec.damages:
            dataset = spec.declared.dataset
            covered |= {("reference", id(dataset), reference) for reference in dataset.references}
    missing = set().union(*map(required, declarations())) - covered
    assert not missing, f"declared invariants no fixture breaks: {missing}"


@pytest.mark.parametrize("loader", list(LOADERS))
@pytest.mark.slow
def test_the_undamaged_fixture_trains(capsys, fixture_of, loader):
    spec = LOADERS[loader]
    root = fixture_of(spec)
    assert main(["fit", *(arg.replace("{root}", str(root)) for arg in spec.config), *ONE_STEP]).trainer.state.finished


# --- the checks every reader goes through ---------------------------------------------------------------------


def test_a_text_file_is_decoded_strictly_and_its_problems_name_the_line(tmp_path):
    from framework.data import DataError, TextFile

    path = tmp_path / "data.txt"
    path.write_bytes(b"first\r\nna\x85ve\n\nthird\n")  # CRLF, a latin-1 byte that str.splitlines would split at
    assert TextFile(path, "x", encoding="latin-1").lines == ["first", "na\x85ve", "", "third"]
    assert list(TextFile(path, "x", encoding="latin-1").numbered()) == [(1, "first"), (2, "na\x85ve"), (4, "third")]
    for data, problem in [
        (b"ok\nna\x85ve\n", "data.txt:2: byte 0x85 is not valid utf-8 text"),
        (b"ok\nok\n\x00\x01\n", "data.txt:3: byte 0x00 is a control character"),
        ("ok\n".encode("utf-16"), "data.txt is UTF-16 text"),
        (b" \n\n", r"data.txt \(x\) is empty: it holds no lines"),
    ]:
        path.write_bytes(data)
        with pytest.raises(DataError, match=problem):
            TextFile(path, "x")
    path.write_bytes(b"\xef\xbb\xbfwith a UTF-8 mark\n")
    assert TextFile(path, "x").lines == ["with a UTF-8 mark"]


def test_integer_tables_name_the_first_bad_line_and_field(tmp_path):
    from framework.data import DataError, TextFile

    path = tmp_path / "ratings.tsv"
    columns = {"user": (1, None), "rating": (1, 5)}
    path.write_text("1\t5\n\n2\t3\n")
    assert TextFile(path, "x").integers("\t", columns, "'user<TAB>rating'").tolist() == [[1, 5], [2, 3]]
    for text, problem in [
        ("1\t5\n\n2\t6\n", "ratings.tsv:3: rating 6 is out of range: expected 1 to 5"),
        ("1\t5\n0\t3\n", "ratings.tsv:2: user 0 is out of range: expected at least 1"),
        ("1\t5\n2\tfive\n", "ratings.tsv:2: rating 'five' is not an integer"),
        ("1\t5\t7\n", r"ratings.tsv:1: expected 'user<TAB>rating' \(2 fields\), got 3"),
    ]:
        path.write_text(text)
        with pytest.raises(DataError, match=problem):
            TextFile(path, "x").integers("\t", columns, "'user<TAB>rating'")
    path.write_text("1 NUM:dist\n")
    with pytest.raises(DataError, match="ratings.tsv:1: label 'NUM:dst' is unknown; did you mean NUM:dist"):
        TextFile(path, "x").known(1, "NUM:dst", {"NUM:dist", "LOC:city"}, "label")


def test_label_maps_and_empty_files_are_named(tmp_path):
    from framework.data import DataError, check_label_values, not_empty

    valid = np.zeros(256, bool)
    valid[:12] = True
    check_label_values(np.full((4, 5), 11, np.uint8), valid, tmp_path / "mask.png", "a class")
    values = np.zeros((4, 5), np.uint8)
    values[2, 3] = 200
    with pytest.raises(
        DataError, match="mask.png: label value 200 at row 2, column 3 is out of range: expected a class"
    ):
        check_label_values(values, valid, tmp_path / "mask.png", "a class")
    (tmp_path / "empty.wav").write_bytes(b"")
    with pytest.raises(DataError, match=r"empty.wav \(an audio file\) is empty: 0 bytes"):
        not_empty(tmp_path / "empty.wav", "an audio file")


def test_an_empty_split_names_its_source_when_read_and_a_generated_one_when_loaded():
    from framework.data import DataError, SplitDataModule

    class Listed(SplitDataModule):
        def __init__(self, sources):
            super().__init__(batch_size=2)
            self.sources = sources

        def make_splits(self):
            return {"train": [1, 2, 3], "val": [], "test": [4]}

    with pytest.raises(DataError, match=r"the val split is empty \(read from x/val.txt\)"):
        Listed({"val": "x/val.txt"}).setup("fit")
    generated = Listed({})
    assert len(generated.loader("train").dataset) == 3, "a generated split asked to be empty is no error until read"
    with pytest.raises(DataError, match=r"the val split is empty \(made by Listed\)"):
        generated.loader("val")


@pytest.mark.parametrize(
    "stage, settings, key",
    [
        ("fit", {"limit_train_batches": 0}, "trainer.limit_train_batches=0 leaves fit nothing to run"),
        ("fit", {"max_epochs": 0, "limit_train_batches": 1.0}, "trainer.max_epochs=0"),
        ("validate", {"limit_val_batches": 0.0}, "trainer.limit_val_batches=0.0 leaves validate"),
        ("fit", {"limit_val_batches": 0}, None),  # fit without validation is fine
        ("fit", {"limit_train_batches": 0, "fast_dev_run": True}, None),
    ],
)
def test_limits_that_leave_a_stage_nothing_to_read(stage, settings, key):
    from types import SimpleNamespace

    from framework.data.limits import check_limits
    from framework.errors import ConfigError

    trainer = SimpleNamespace(**settings)
    if key is None:
        check_limits(stage, trainer)
    else:
        with pytest.raises(ConfigError, match=key):
            check_limits(stage, trainer)


@pytest.mark.slow
def test_a_file_found_damaged_after_training_began_leaves_no_run_folder(capsys, fixture_of):
    """A label map is decoded when read: one found damaged in the first validation, after a logged
    training step (metrics written) but before the first checkpoint, leaves no folder behind."""
    spec = LOADERS["camvid"]
    mask = fixture_of(spec) / "CamVid/valannot/0016E5_07959.png"
    paint(200)(mask)
    message = fails(capsys, ["fit", *spec.config, *ONE_STEP, "--trainer.log_every_n_steps=1"])
    assert f"{mask}: label value 200 at row 5, column 7 is out of range" in message
    nothing_left()


def test_the_declared_invariants_name_the_row_that_breaks_them(tmp_path):
    from framework.data import DataError, DataSet, Field, Format, Labels, Reference, Rows

    fields = (Field("id", 1), Field("title", text=True), Field("a", 0, 1), Field("b", 0, 1))
    films = Format(
        "films", fields, "|", "'id|title|a|b'", key=("id",), numbered=True, labels=Labels(("a", "b"), 1, None)
    )
    ratings = Format("ratings", (Field("user", 1), Field("film", 1)), "\t", "'user<TAB>film'", key=("user", "film"))
    data = DataSet("films", {"films": films, "ratings": ratings}, (Reference("ratings", "film", "films", "id"),))
    (tmp_path / "films").write_text("1|Up|1|0\n2|Down|1|1\n")
    (tmp_path / "ratings").write_text("1\t2\n\n1\t1\n")
    rows = {name: spec.read(tmp_path / name) for name, spec in data.files.items()}
    data.check(rows)
    assert rows["ratings"]["film"].tolist() == [2, 1] and rows["ratings"].where(1) == f"{tmp_path / 'ratings'}:3"
    for name, text, problem in [
        (
            "ratings",
            "1\t2\n\n1\t2\n",
            "ratings:3: user 1, film 2 repeats line 1: ratings hold one row per user and film",
        ),
        ("films", "1|Up|1|0\n1|Down|0|1\n", "films:2: id 1 repeats line 1, where 2 is due: the ids count up from 1"),
        ("films", "1|Up|1|0\n2|Down|0|0\n", r"films:2: no label \(every indicator 0\): expected 1 to any number"),
        ("films", "1||1|0\n", "films:1: the title is empty"),
        ("ratings", "1\t2\n2\t3\n", r"ratings:2: film 3 is no id of .*films \(a dangling reference\)"),
    ]:
        for other, good in (("films", "1|Up|1|0\n2|Down|1|1\n"), ("ratings", "1\t2\n")):
            (tmp_path / other).write_text(text if other == name else good)
        with pytest.raises(DataError, match=problem):
            data.check({name: spec.read(tmp_path / name) for name, spec in data.files.items()})
    one_hot = Format("labels", labels=Labels())
    with pytest.raises(
        DataError, match=r"y: row 1: no label \(every indicator 0\): expected exactly 1 \(one label per example\)"
    ):
        one_hot.array(tmp_path / "y", np.array([[0, 1], [0, 0]]))
    with pytest.raises(DataError, match=r"y: row 0: 2 labels"):
        one_hot.array(tmp_path / "y", np.array([[1, 1]]))
    paired = DataSet("pairs", {"x": Format("x"), "y": one_hot}, paired=(("x", "y"),))
    with pytest.raises(DataError, match=r"y has 1 rows but .*x has 2: their rows pair one to one"):
        paired.check({"x": Rows(tmp_path / "x", count=2), "y": one_hot.array(tmp_path / "y", np.array([[1, 0]]))})

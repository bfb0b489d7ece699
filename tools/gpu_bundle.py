"""What a GPU machine without a network needs to run the GPU check (``make gpu-bundle``).

    python -m tools.gpu_bundle                      # .whl/ and .gpu/data/ in the repository root

GPU machines of this kind hold PyTorch, Lightning, torchmetrics, timm, torch_geometric and
most of the scientific stack, but not every package the project needs, and they reach no
package index. This writes, into folders git ignores:

* ``.whl/``: wheels for the GPU machine's Python (``--python-version``, default 3.12, x86-64
  Linux) of every package in :data:`MISSING`, at the versions installed here, without their
  dependencies (each needed one is in the list);
* ``.gpu/data/``: a copy of the real data sets the configs read, cut down where they are large
  (FSDD: recordings 0-24 of every digit and speaker, both official splits; CamVid: the first
  12, 4 and 4 images of train, val and test) so that bundle and repository travel in 64 MiB.

On the GPU machine (``--install`` prints it)::

    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site FRAMEWORK_DATA_DIR=$PWD/.gpu/data python3 -m tools.gpu_check
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from importlib.metadata import requires, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
#: Packages the GPU image lacks (it has torch, lightning, torchmetrics, timm, torch_geometric, scipy,
#: matplotlib, tokenizers, requests, pyyaml, xxhash, tqdm, markupsafe, pytest-xdist ...): the project's own,
#: wandb's and optuna's needs (compare --search), and click and typing_extensions at versions new enough for wandb.
MISSING = (
    "jsonargparse",
    "docstring_parser",
    "typeshed_client",
    "wandb",
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_inspection",
    "platformdirs",
    "protobuf",
    "cwevals",
    "distro",
    "sniffio",
    "googleapis-common-protos",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "opentelemetry-proto",
    "opentelemetry-semantic-conventions",
    "opentelemetry-exporter-otlp-proto-common",
    "opentelemetry-exporter-otlp-proto-http",
    "opentelemetry-exporter-http-transport",
    "opentelemetry-exporter-otlp-common",
    "soundfile",
    "cffi",
    "pycparser",
    "torchdata",
    "entmax",
    "captum",
    "submitit",
    "optuna",
    "optuna-integration",
    "alembic",
    "sqlalchemy",
    "mako",
    "colorlog",
    "tensorboardX",  # the TensorBoard logger preset (configs/logger/tensorboard.yaml)
    "click",
    "typing_extensions",
)
#: What the GPU image holds of what the project's dependencies reach (the device README's package list
#: for the H200 image, read 2026-11-17); what those need comes with them there.
IMAGE = (
    "torch",
    "torchvision",
    "torchaudio",
    "lightning",
    "torchmetrics",
    "torch-geometric",
    "timm",
    "tokenizers",
    "numpy",
    "scipy",
    "scikit-learn",
    "matplotlib",
    "pillow",
    "pyyaml",
    "packaging",
    "tqdm",
    "markupsafe",
    "cloudpickle",
    "requests",
    "urllib3",
    "httpx",
    "anyio",
    "xxhash",
    "protobuf",
    "click",
    "typing-extensions",
    "pytest",
    "pytest-timeout",
    "pytest-xdist",
    "hypothesis",
    "sacrebleu",
)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
#: Data sets copied whole; FSDD and CamVid are cut down (see the module's docstring).
WHOLE = ("Planetoid", "MovieLens100K", "babi", "TREC", "multi30k", "MNIST")
CAMVID_IMAGES = {"train": 12, "val": 4, "test": 4}
#: FSDD recordings kept per digit and speaker (0-4 are the official test split): enough for the
#: digit strings' validation hold-out to have a voice with every digit.
FSDD_RECORDINGS = 25
INSTALL = (
    "python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && "
    "export PYTHONPATH=/tmp/site FRAMEWORK_DATA_DIR=$PWD/.gpu/data"
)


def uncovered(requirements: list[str]) -> set[str]:
    """The distributions that ``requirements`` need, followed through the metadata of the packages
    installed here (their extras too), that neither :data:`IMAGE` nor :data:`MISSING` holds."""
    held = {canonicalize_name(name) for name in IMAGE + MISSING}
    todo, seen, lacking = [Requirement(text) for text in requirements], set(), set()
    while todo:
        wanted = todo.pop()
        name = canonicalize_name(wanted.name)
        if (name, frozenset(wanted.extras)) in seen:
            continue
        seen.add((name, frozenset(wanted.extras)))
        if name not in held:
            lacking.add(name)
        if name in IMAGE:
            continue  # the image has what it needs
        for text in requires(name) or []:
            need = Requirement(text)
            extras = [""] + sorted(wanted.extras)
            if need.marker is None or any(need.marker.evaluate({"extra": extra}) for extra in extras):
                todo.append(need)
    return lacking


def download(python: str, folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    pins = [f"{name}=={version(name)}" for name in MISSING]
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            python,
            "--implementation",
            "cp",
            *platforms,
            "-d",
            str(folder),
            *pins,
        ],
        check=True,
    )


def copy_data(source: Path, target: Path) -> None:
    for name in WHOLE:
        shutil.copytree(source / name, target / name, dirs_exist_ok=True)
    for path in sorted((source / "fsdd").glob("recordings/*.wav")):
        digit, _, index = path.stem.split("_")
        if int(index) < FSDD_RECORDINGS:
            (target / "fsdd" / "recordings").mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / "fsdd" / "recordings" / path.name)
    for split, count in CAMVID_IMAGES.items():
        for image in sorted((source / "CamVid" / split).glob("*.png"))[:count]:
            for folder in (split, f"{split}annot"):
                (target / "CamVid" / folder).mkdir(parents=True, exist_ok=True)
                shutil.copy2(source / "CamVid" / folder / image.name, target / "CamVid" / folder / image.name)


def size_mb(folder: Path) -> float:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.gpu_bundle", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the real data sets")
    parser.add_argument("--install", action="store_true", help="print the command that installs the bundle there")
    args = parser.parse_args()
    if args.install:
        print(INSTALL)
        return
    wheels, data = ROOT / ".whl", ROOT / ".gpu" / "data"
    download(args.python_version, wheels)
    copy_data(Path(args.data), data)
    print(
        f"{wheels}: {len(list(wheels.glob('*.whl')))} wheels, {size_mb(wheels):.1f} MiB; "
        f"{data}: {size_mb(data):.1f} MiB\non the GPU machine: {INSTALL}"
    )


if __name__ == "__main__":
    main()

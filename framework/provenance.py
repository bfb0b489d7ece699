"""Where a run's numbers come from, kept in its ``summary.json`` (``provenance``), so that a figure
can be traced and rerun: the resolved config's hash, what the data was, the seed, the versions of
the code and libraries, the device and the attention blocks the model used.

    {"config_hash": "3f2a...",                # SHA-256 (16 hex) of the resolved config, run folders left out
     "data": {"class": "domains.nlp.TREC", "content_key": "9c1e...", "sources": ["/data/TREC"]},
     "seed": 0, "deterministic": true,
     "versions": {"python": "3.11.7", "torch": "2.11.0+cu130", "cuda": "13.0", "lightning": "2.6.6", ...},
     "code": {"commit": "4fee354...", "clean": false},
     "device": "cpu (x86_64, 2 threads)" or "NVIDIA H200",
     "numerics": {"threads": 2, "cpu_capability": "AVX2", "precision": "32-true",
                  "float32_matmul_precision": "highest", "cudnn_benchmark": false, ...},
     "blocks": {"encoder.layers.0.attention": {"class": "...MultiHeadSelfAttention", "backend": "sdpa"}}}

Within one version of the code and the libraries, a seed reproduces a run run for run: what
else decides its numbers is recorded with it, so that where a rerun's numbers differ the record
says which part changed (``compare --verify`` sets the parts side by side): the config (its
hash), the data, the seed, the code and the library versions, the device, and ``numerics``
(:func:`numerics`), the settings of this process that change floating-point results without
changing the config: torch's threads (a sum split over more threads adds in another order), the
CPU's vector instructions torch dispatches to, the trainer's precision, TF32 and matmul
precision, cuDNN's autotuning and determinism, and cuBLAS's workspace.

The data's ``content_key`` hashes the files a reader names in its ``sources`` (the same key the
caches use, :func:`framework.data.content_key`); generated data has none: its class, arguments
and the seed say what it was.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Optional

import torch
from torch import nn

from .data.cache import content_key

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = (
    "lightning",
    "torchmetrics",
    "torch-geometric",
    "timm",
    "torchaudio",
    "torchvision",
    "wandb",
    "jsonargparse",
)
#: Data folders hashed up to this size (larger ones are named, not hashed: hashing reads every byte).
MAX_HASHED_BYTES = 512 * 2**20


def config_hash(resolved_yaml: str) -> str:
    return hashlib.sha256(resolved_yaml.encode()).hexdigest()[:16]


def versions() -> dict[str, Optional[str]]:
    found: dict[str, Optional[str]] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    for name in LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def code_state(root: Path = ROOT) -> dict[str, Any]:
    """The project's git commit and whether its tree had changes (None outside a git checkout)."""

    def git(*args: str) -> Optional[str]:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "clean": None if status is None else status == ""}


def numerics(precision: Optional[str] = None) -> dict[str, Any]:
    """This process's settings that change a run's numbers but not its config (see the module's
    docstring); ``precision``: the trainer's (``32-true``, ``bf16-mixed`` ...)."""
    return {
        "threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "precision": precision,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda_matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_tf32": torch.backends.cudnn.allow_tf32,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cublas_workspace": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    }


def device_name(module: nn.Module) -> str:
    parameter = next(module.parameters(), None)
    device = parameter.device if parameter is not None else torch.device("cpu")
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{device.type} ({platform.machine()}, {torch.get_num_threads()} threads)"


def data_record(datamodule: Any, data_config: Optional[dict]) -> dict[str, Any]:
    """The data's class, the files it was read from and their content key (None for generated data
    or folders larger than :data:`MAX_HASHED_BYTES`)."""
    sources = sorted({str(text).split(" (")[0] for text in (getattr(datamodule, "sources", None) or {}).values()})
    files: set[Path] = set()
    for source in sources:
        for path in _paths(source):
            files |= (
                {path} if path.is_file() else {p for p in path.rglob("*") if p.is_file()} if path.is_dir() else set()
            )
    size = sum(path.stat().st_size for path in files)
    return {
        "class": (data_config or {}).get("class_path") or type(datamodule).__name__,
        "sources": sources,
        "content_key": content_key(files) if files and size <= MAX_HASHED_BYTES else None,
    }


def blocks_record(model: nn.Module) -> dict[str, dict[str, Optional[str]]]:
    """Every attention block of the model: its class and, where it says, the backend it runs on."""
    from .attention import blocks_in

    return {
        name: {
            "class": f"{type(block).__module__}.{type(block).__qualname__}",
            "backend": getattr(block, "backend", None),
        }
        for name, block in blocks_in(model).items()
    }


def _paths(source: str) -> list[Path]:
    """The files or folders a reader's ``sources`` text names: one path, or ``folder/a, b, c``
    (names after the first are beside it); text that names no path gives none."""
    first, *rest = source.split(", ")
    paths = [Path(first)] + [Path(first).parent / name for name in rest]
    try:
        return [path for path in paths if path.exists()]
    except OSError:  # not a path at all (too long, ...)
        return []

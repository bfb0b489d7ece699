"""The outcome of a run: printed when a fit ends, and written to ``<run folder>/summary.json``.

With W&B, the run's summary gets the same "best" (``best/<monitor>``, ``best/epoch`` and the other
validation metrics of that epoch as ``best/<name>``), and each validation metric's own summary is its
best value (max or min as the task's table of directions says), not its last.

``summary.json`` is what tools read instead of parsing logs (``python -m framework compare``
does). It is rewritten atomically (temporary file, fsync, rename) after every validation
epoch and when a stage ends, so a killed run leaves a readable file whose ``status`` says it
did not finish. It holds one section per stage that ran in the folder, ``fit``, ``validate``
and ``test`` (a ``test`` run gets a folder of its own, so its file usually has that section
alone)::

    {"format": 1, "run_dir": "...",
     "fit": {"status": "finished",           # running | finished | failed | interrupted
             "seed": 0,                       # seed_everything of the run
             "monitor": "val/acc", "mode": "max", "best_score": 0.99,
             "best_epoch": 7,                 # 0-based training epoch of the best validation
             "best": {"val/acc": ...},        # validation metrics of that epoch
             "last": {"val/acc": ...},        # of the last validation
             "history": [{"epoch": 0, "val/acc": ..., ...}, ...],        # the learning curve
             "train_history": [{"epoch": 0, "train/loss": ..., ...}, ...],
             "epochs": 8,                     # training epochs completed
             "train_seconds": [...],          # per training epoch, validation excluded
             "val_seconds": [...],            # per validation
             "seconds_per_epoch": 1.9,        # median of train_seconds
             "wall_seconds": 21.0,            # the stage, from its start (this process)
             "peak_memory_mb": 812.0,         # see memory_kind
             "memory_kind": "cpu_max_rss",    # or "cuda_max_allocated"
             "best_checkpoint": ".../best.ckpt", "last_checkpoint": ".../last.ckpt",
             "provenance": {"config_hash": ..., "data": ..., "versions": ..., "code": ...,   # see
                            "device": ..., "numerics": ..., "blocks": ...},            # framework.provenance
             "directions": {"val/acc": "max", "val/loss": "min", ...},   # of every metric the task logs
             "changes": [{"step": 120, "key": "trainer.max_epochs", "from": 3, "to": 5}],  # a resume's
             "global_step": 160},             # optimizer steps so far: where its tests log in W&B
     "test": {"status": "finished", "ckpt_path": ".../best.ckpt",
              "metrics": {"test/acc": ..., ...}, "wall_seconds": ..., "peak_memory_mb": ...,
              "memory_kind": ...}}

Peak memory is ``torch.cuda.max_memory_allocated`` when the module is on a GPU, else the
process's peak resident set (``ru_maxrss``: weights, activations, data and the Python process).
"""

from __future__ import annotations

import math
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_only

from .. import provenance, signals
from ..runs import SUMMARY_FILE, SUMMARY_FORMAT, read_summary, write_json_atomically


def _scalars(metrics: dict, prefix: str) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if k.startswith(prefix) and getattr(v, "numel", lambda: 1)() == 1}


def _peak_memory(pl_module: pl.LightningModule) -> tuple[float, str]:
    device = getattr(pl_module, "device", torch.device("cpu"))
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20, "cuda_max_allocated"
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20, "cpu_max_rss"


class RunSummary(Callback):
    """Print the last and the best validation metrics, the run folder and the best checkpoint
    when a fit ends, and keep ``summary.json`` in the run folder (see the module's docstring).

    "Best" is the validation epoch that the checkpoint callback judged best (its ``monitor``
    and ``mode``); metric names are the logged ones (``val/acc``, ``val/miou`` ...).
    """

    def __init__(self) -> None:
        #: SHA-256 (16 hex) of the run's resolved config, set by the command line.
        self.config_hash: Optional[str] = None
        self.provenance: dict[str, Any] = {}
        #: whether higher ("max") or lower ("min") is better, of each metric the task logs
        self.directions: dict[str, str] = {}
        #: the config's changes a resumed fit took (the CLI sets them: key, recorded, given), recorded
        #: with the step they took effect at when training starts
        self.pending_changes: list = []
        self.changes: list[dict[str, Any]] = []
        self.history: list[dict[str, float]] = []
        self.epochs: list[int] = []  # training epoch of each validation in ``history``
        self.train_history: list[dict[str, float]] = []
        self.train_seconds: list[float] = []
        self.val_seconds: list[float] = []
        self._started = time.perf_counter()
        self._epoch_start: Optional[float] = None
        self._val_start: Optional[float] = None
        self._val_in_epoch = 0.0
        self._pending_train: Optional[int] = None  # epoch whose training metrics are not yet read
        self._epoch = 0
        self._carried: Optional[tuple[int, float]] = None  # (epoch, seconds) trained before a resume

    def state_dict(self) -> dict[str, Any]:
        """The validations so far: a resumed run's summary covers the whole run. A checkpoint
        taken inside an epoch (at its validation, or by ResumePoints) carries the training
        seconds of that epoch so far."""
        state = {
            "history": self.history,
            "epochs": self.epochs,
            "train_history": self.train_history,
            "train_seconds": self.train_seconds,
            "val_seconds": self.val_seconds,
            "changes": self.changes,
        }
        if self._epoch_start is not None:
            state["partial_epoch"] = [self._epoch, time.perf_counter() - self._epoch_start - self._val_in_epoch]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.history = list(state_dict.get("history", []))
        self.epochs = list(state_dict.get("epochs", range(len(self.history))))
        self.train_history = list(state_dict.get("train_history", []))
        self.train_seconds = list(state_dict.get("train_seconds", []))
        self.val_seconds = list(state_dict.get("val_seconds", []))
        self.changes = list(state_dict.get("changes", []))
        partial = state_dict.get("partial_epoch")
        self._carried = (int(partial[0]), float(partial[1])) if partial else None

    # -- hooks -----------------------------------------------------------------------------

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._started = time.perf_counter()
        self._record_provenance(trainer, pl_module)
        if trainer.is_global_zero:
            for run in _wandb_runs(trainer):  # the run page's summary shows each validation metric's best
                for name, direction in self.directions.items():
                    if name.startswith("val/"):
                        run.define_metric(name, summary=direction)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """A resumed fit's config changes, at the step it resumes at (its checkpoint restored)."""
        self.changes += [
            {"step": trainer.global_step, "key": key, "from": recorded, "to": given}
            for key, recorded, given in self.pending_changes
        ]
        self.pending_changes = []

    def on_test_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._started = time.perf_counter()
        self._record_provenance(trainer, pl_module)

    def _record_provenance(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        task = getattr(pl_module, "task", None)
        self.directions = task.directions() if hasattr(task, "directions") else {}
        if not trainer.is_global_zero:
            return
        model = getattr(pl_module, "model", pl_module)
        self.provenance = {
            "config_hash": self.config_hash,
            "seed": _seed(),
            "deterministic": torch.are_deterministic_algorithms_enabled(),
            "data": provenance.data_record(trainer.datamodule, getattr(pl_module, "data_config", None)),
            "versions": provenance.versions(),
            "code": provenance.code_state(),
            "device": provenance.device_name(model),
            "numerics": provenance.numerics(str(trainer.precision)),
            "blocks": provenance.blocks_record(model),
        }

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._read_train_metrics(trainer)
        self._epoch, self._epoch_start, self._val_in_epoch = trainer.current_epoch, time.perf_counter(), 0.0
        if self._carried is not None:
            epoch, seconds = self._carried
            if epoch < trainer.current_epoch:  # the checkpoint ended that epoch: it counts as it was
                self.train_seconds.append(seconds)
            else:  # resumed inside this epoch: its earlier part counts too
                self._epoch_start -= seconds
            self._carried = None

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._epoch_start is not None:
            self.train_seconds.append(time.perf_counter() - self._epoch_start - self._val_in_epoch)
            self._epoch_start = None
        # The module logs the epoch's training metrics after this hook: read them at the next one.
        self._pending_train = trainer.current_epoch

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._val_start = time.perf_counter()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        if self._val_start is not None:
            seconds = time.perf_counter() - self._val_start
            self._val_in_epoch += seconds
            self._val_start = None
        else:
            seconds = float("nan")
        self.history.append(_scalars(trainer.callback_metrics, "val/"))
        if trainer.state.fn == "fit":
            self.epochs.append(trainer.current_epoch)
            self.val_seconds.append(seconds)
            self._write(trainer, pl_module, "fit", "running")
        else:
            self._write(trainer, pl_module, "validate", "finished")

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._read_train_metrics(trainer)
        if self._carried is not None:  # resumed from the checkpoint of the last epoch: nothing left to train
            self.train_seconds.append(self._carried[1])
            self._carried = None

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._write(trainer, pl_module, "fit", "interrupted" if trainer.interrupted else "finished")
        if trainer.is_global_zero:
            print(self.render(trainer.default_root_dir, trainer.checkpoint_callback), flush=True)

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._write(trainer, pl_module, "test", "finished")

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        stage = {"fit": "fit", "test": "test", "validate": "validate"}.get(str(getattr(trainer.state.fn, "value", "")))
        if stage:
            status = "interrupted" if signals.from_outside(exception) else "failed"  # stopped from outside: resumable
            said = f"{type(exception).__name__}: {exception}" if str(exception) else type(exception).__name__
            self._write(trainer, pl_module, stage, status, error=said[:500])

    # -- the file --------------------------------------------------------------------------

    def _read_train_metrics(self, trainer: pl.Trainer) -> None:
        if self._pending_train is None:
            return
        train = _scalars(trainer.callback_metrics, "train/")
        train.pop("train/loss_step", None)
        self.train_history.append({"epoch": self._pending_train, **train})
        self._pending_train = None

    def _best(self, checkpoint: Optional[ModelCheckpoint]) -> tuple[Optional[int], dict[str, float]]:
        """Index in ``history`` of the validation the checkpoint callback judged best, and its metrics."""
        if not self.history:
            return None, {}
        if checkpoint is not None and checkpoint.monitor and checkpoint.best_model_score is not None:
            scores = [h.get(checkpoint.monitor) for h in self.history]
            target = float(checkpoint.best_model_score)
            matches = [
                i for i, s in enumerate(scores) if s is not None and abs(s - target) <= 1e-6 * max(1.0, abs(target))
            ]
            if matches:  # a tie keeps the earlier checkpoint, as the checkpoint callback does
                return matches[0], self.history[matches[0]]
        return len(self.history) - 1, self.history[-1]

    @rank_zero_only
    def _write(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str, status: str, error: Optional[str] = None
    ) -> None:
        run_dir = Path(trainer.default_root_dir)
        memory, kind = _peak_memory(pl_module)
        section: dict[str, Any] = {
            "status": status,
            "seed": _seed(),
            "wall_seconds": time.perf_counter() - self._started,
            "peak_memory_mb": memory,
            "memory_kind": kind,
        }
        if error:
            section["error"] = error
        if self.provenance:
            section["provenance"] = self.provenance
        if self.directions:
            section["directions"] = self.directions
        checkpoint = trainer.checkpoint_callback
        if stage == "fit":
            index, best = self._best(checkpoint)
            epochs = self.epochs if len(self.epochs) == len(self.history) else list(range(len(self.history)))
            section.update(
                {
                    "monitor": getattr(checkpoint, "monitor", None),
                    "mode": getattr(checkpoint, "mode", None),
                    "best_score": _finite(getattr(checkpoint, "best_model_score", None)),
                    "best_epoch": epochs[index] if index is not None else None,
                    "best": best,
                    "last": self.history[-1] if self.history else {},
                    "history": [{"epoch": e, **h} for e, h in zip(epochs, self.history)],
                    "train_history": self.train_history,
                    "epochs": len(self.train_seconds),
                    "train_seconds": self.train_seconds,
                    "val_seconds": self.val_seconds,
                    "seconds_per_epoch": statistics.median(self.train_seconds) if self.train_seconds else None,
                    "best_checkpoint": getattr(checkpoint, "best_model_path", None) or None,
                    "last_checkpoint": getattr(checkpoint, "last_model_path", None) or None,
                    "changes": self.changes,
                    "global_step": trainer.global_step,
                }
            )
        elif stage == "test":
            section.update({"ckpt_path": trainer.ckpt_path, "metrics": _scalars(trainer.callback_metrics, "test/")})
        else:
            section.update({"ckpt_path": trainer.ckpt_path, "metrics": self.history[-1] if self.history else {}})
        if stage == "fit" and section["best_score"] is not None:
            best = {
                f"best/{section['monitor']}": section["best_score"],
                "best/epoch": section["best_epoch"],
                **{f"best/{name}": value for name, value in section["best"].items() if name != section["monitor"]},
            }
            for run in _wandb_runs(trainer):
                run.summary.update(best)
        content = read_summary(run_dir)
        content.update({"format": SUMMARY_FORMAT, "run_dir": str(run_dir), stage: section})
        try:
            write_json_atomically(run_dir / SUMMARY_FILE, content)
        except OSError as err:  # a summary must never stop a run
            print(f"warning: could not write {run_dir / SUMMARY_FILE}: {err}", file=sys.stderr)

    def render(self, run_dir: str, checkpoint: Optional[ModelCheckpoint]) -> str:
        lines = [f"Run summary: {run_dir}"]
        if not self.history:
            lines.append("  no validation epoch ran")
        else:
            last = self.history[-1]
            index, best = self._best(checkpoint)
            width = max((len(k) for k in last), default=6)
            lines.append(
                f"  {'metric':<{width}}  {'last':>10}  {'best':>10}   "
                f"(best: validation {index + 1} of {len(self.history)})"
            )
            for key in sorted(last):
                lines.append(f"  {key:<{width}}  {last[key]:>10.4f}  {best.get(key, float('nan')):>10.4f}")
        if checkpoint is not None and checkpoint.best_model_path:
            lines.append(
                f"  best checkpoint: {checkpoint.best_model_path} "
                f"({checkpoint.monitor} = {float(checkpoint.best_model_score):.4f})"
            )
        if checkpoint is not None and checkpoint.last_model_path:
            lines.append(f"  last checkpoint: {checkpoint.last_model_path}")
        return "\n".join(lines)


def _finite(value: Any) -> Optional[float]:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _seed() -> Optional[int]:
    seed = os.environ.get("PL_GLOBAL_SEED")
    return int(seed) if seed and seed.lstrip("-").isdigit() else None


def _wandb_runs(trainer: pl.Trainer) -> list:
    """The W&B runs of the trainer's W&B loggers (each made on first use)."""
    from lightning.pytorch.loggers import WandbLogger

    return [logger.experiment for logger in trainer.loggers if isinstance(logger, WandbLogger)]

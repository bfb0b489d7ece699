"""The outcome of a fit, printed when it ends: no dashboard needed to see it."""

from __future__ import annotations

from typing import Optional

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_only


class RunSummary(Callback):
    """Print the last and the best validation metrics, the run folder and the best checkpoint.

    "Best" is the validation epoch that the checkpoint callback judged best (its ``monitor``
    and ``mode``); metric names are the logged ones (``val/acc``, ``val/miou`` ...).
    """

    def __init__(self) -> None:
        self.history: list[dict[str, float]] = []

    def state_dict(self) -> dict[str, list[dict[str, float]]]:
        """The validations so far: a resumed run's summary covers the whole run."""
        return {"history": self.history}

    def load_state_dict(self, state_dict: dict[str, list[dict[str, float]]]) -> None:
        self.history = list(state_dict.get("history", []))

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        self.history.append(
            {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/") and v.numel() == 1}
        )

    @rank_zero_only
    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        print(self.render(trainer.default_root_dir, trainer.checkpoint_callback), flush=True)

    def render(self, run_dir: str, checkpoint: Optional[ModelCheckpoint]) -> str:
        lines = [f"Run summary: {run_dir}"]
        if not self.history:
            lines.append("  no validation epoch ran")
        else:
            last, best, best_epoch = self.history[-1], self.history[-1], len(self.history)
            if checkpoint is not None and checkpoint.monitor and checkpoint.best_model_score is not None:
                scores = [h.get(checkpoint.monitor) for h in self.history]
                target = float(checkpoint.best_model_score)
                matches = [i for i, s in enumerate(scores) if s is not None and abs(s - target) <= 1e-6 * max(1.0, abs(target))]
                if matches:
                    best_epoch = matches[-1] + 1
                    best = self.history[matches[-1]]
            width = max(len(k) for k in last)
            lines.append(f"  {'metric':<{width}}  {'last':>10}  {'best':>10}   (best: validation {best_epoch} of {len(self.history)})")
            for key in sorted(last):
                lines.append(f"  {key:<{width}}  {last[key]:>10.4f}  {best.get(key, float('nan')):>10.4f}")
        if checkpoint is not None and checkpoint.best_model_path:
            lines.append(f"  best checkpoint: {checkpoint.best_model_path} ({checkpoint.monitor} = {float(checkpoint.best_model_score):.4f})")
        if checkpoint is not None and checkpoint.last_model_path:
            lines.append(f"  last checkpoint: {checkpoint.last_model_path}")
        return "\n".join(lines)

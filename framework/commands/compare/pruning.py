"""A search's pruner (:mod:`.search`) as its fits in the workers meet it: the fit's CLI with
Optuna's Lightning pruning callback for its trial.

The pruner has a warm-up, declared here (:class:`PrunerSettings`): a trial reports its monitored
metric after every validation (the epoch is Optuna's step) and is never pruned in its first
``warmup`` epochs (``--pruner_warmup``; default a quarter of ``max_epochs``, at least one), nor,
by the median pruner, before ``startup`` trials have finished (``--pruner_startup_trials``,
default 5): early epochs and the first trials say too little to stop a trial on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional

from ...errors import ConfigError

#: A trial's first ``max_epochs // WARMUP_SHARE`` epochs (at least one) are its default warm-up.
WARMUP_SHARE = 4
#: Trials that finish before the median pruner prunes any, by default (Optuna's own default).
STARTUP_TRIALS = 5


@dataclass(frozen=True)
class PrunerSettings:
    """``--pruner`` and its warm-up; plain data, handed to the workers' fits."""

    name: Literal["median", "hyperband", "none"]
    warmup: int  # epochs a trial reports before it can be pruned (Optuna's n_warmup_steps, hyperband's min_resource)
    startup: int  # trials that finish before any is pruned (the median pruner's n_startup_trials)
    max_epochs: Optional[int] = None  # hyperband's max_resource (None: Optuna's "auto")

    @classmethod
    def of(cls, name: str, warmup: Optional[int], startup: Optional[int], max_epochs: Optional[int]) -> PrunerSettings:
        """The settings of the flags (None: the defaults above); a ConfigError for a flag the
        pruner has no use for."""
        if name == "hyperband" and startup is not None:
            raise ConfigError(
                "--pruner_startup_trials: the hyperband pruner has no startup trials (its brackets start "
                "pruning at --pruner_warmup epochs); give it to --pruner median"
            )
        if name == "none" and (warmup is not None or startup is not None):
            raise ConfigError(
                "--pruner_warmup and --pruner_startup_trials set a pruner's warm-up; --pruner none has none"
            )
        default_warmup = max(1, max_epochs // WARMUP_SHARE) if max_epochs else 1
        return cls(
            name,  # type: ignore[arg-type]
            default_warmup if warmup is None else warmup,
            STARTUP_TRIALS if startup is None else startup,
            max_epochs,
        )

    def build(self) -> Any:
        """Optuna's pruner of these settings."""
        import optuna

        if self.name == "median":
            return optuna.pruners.MedianPruner(n_startup_trials=self.startup, n_warmup_steps=self.warmup)
        if self.name == "hyperband":
            most = self.max_epochs or "auto"
            least = max(1, min(self.warmup, self.max_epochs) if self.max_epochs else self.warmup)
            return optuna.pruners.HyperbandPruner(min_resource=least, max_resource=most)
        return optuna.pruners.NopPruner()

    def said(self) -> str:
        """In words, for the search's first line."""
        if self.name == "none":
            return "no pruning"
        after = f" after {self.startup} finished trial(s)" if self.name == "median" else ""
        return f"{self.name} pruning{after}, each trial's first {self.warmup} epoch(s) a warm-up"


def pruning_cli(pruning: dict):
    """The CLI class of a pruned fit (in a worker): FrameworkCLI with Optuna's Lightning pruning
    callback for the trial ``pruning`` names; and the exception a pruned fit ends with."""
    import optuna
    from optuna_integration import PyTorchLightningPruningCallback

    from ..fit import FrameworkCLI

    study = optuna.load_study(
        study_name=pruning["study"], storage=pruning["storage"], pruner=PrunerSettings(**pruning["pruner"]).build()
    )
    callback = PyTorchLightningPruningCallback(optuna.trial.Trial(study, pruning["trial"]), monitor=pruning["monitor"])

    class Pruned(FrameworkCLI):
        def instantiate_trainer(self, **kwargs: Any):
            trainer = super().instantiate_trainer(**kwargs)
            trainer.callbacks.append(callback)
            return trainer

    return Pruned, (optuna.TrialPruned,)

"""A search's pruner (:mod:`.search`) as its fits in the workers meet it: the fit's CLI with
Optuna's Lightning pruning callback for its trial."""

from __future__ import annotations

from typing import Any


def make_pruner(name: str):
    """Optuna's pruner named by ``--pruner``: median, hyperband or none."""
    import optuna

    return {
        "median": optuna.pruners.MedianPruner,
        "hyperband": optuna.pruners.HyperbandPruner,
        "none": optuna.pruners.NopPruner,
    }[name]()


def pruning_cli(pruning: dict):
    """The CLI class of a pruned fit (in a worker): FrameworkCLI with Optuna's Lightning pruning
    callback for the trial ``pruning`` names; and the exception a pruned fit ends with."""
    import optuna
    from optuna_integration import PyTorchLightningPruningCallback

    from ..fit import FrameworkCLI

    study = optuna.load_study(
        study_name=pruning["study"], storage=pruning["storage"], pruner=make_pruner(pruning["pruner"])
    )
    callback = PyTorchLightningPruningCallback(optuna.trial.Trial(study, pruning["trial"]), monitor=pruning["monitor"])

    class Pruned(FrameworkCLI):
        def instantiate_trainer(self, **kwargs: Any):
            trainer = super().instantiate_trainer(**kwargs)
            trainer.callbacks.append(callback)
            return trainer

    return Pruned, (optuna.TrialPruned,)

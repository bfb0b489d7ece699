"""Ablation per block and mode: the task's test metrics with a block's weights replaced, against
the plain run (Brauwers & Frasincar's first evaluation of an attention model).

Modes: the library's ``uniform``, ``random`` and ``permute`` (:func:`framework.attention.ablation`),
and ``none``, the block skipped: its output replaced by its input, which only a block whose
output has its input's shape allows (feature-map blocks, sequence blocks, a memory read whose
state has the query's shape); other blocks (pooling, graph layers that change the width) are
reported as not applicable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, Optional, get_args

import lightning.pytorch as pl
import torch
from torch import Tensor, nn

from ..attention import ablation, blocks_in
from ..attention.ablation import Ablation
from ..attention.base import AttentionOutput
from .protocol import first_tensor
from .table import Row

#: What ``--ablation`` takes: the library's replacements of the weights, and ``none`` (skip the block).
AblationMode = Literal[Ablation, "none"]
MODES: tuple[str, ...] = get_args(AblationMode)


def _skip_hook(name: str) -> Callable:
    def hook(module: nn.Module, args: tuple, output: Any) -> Any:
        given, result = first_tensor(args), output.output if isinstance(output, AttentionOutput) else output
        if isinstance(given, Tensor) and isinstance(result, Tensor) and given.shape == result.shape:
            return output._replace(output=given) if isinstance(output, AttentionOutput) else given
        raise ValueError(
            f"ablation none: block {name} ({module.block_name}) gives "
            f"{tuple(result.shape) if isinstance(result, Tensor) else type(result).__name__} from "
            f"{tuple(given.shape) if isinstance(given, Tensor) else 'no tensor input'}; only a block "
            "whose output has its input's shape can be skipped"
        )

    return hook


@contextmanager
def skipped(model: nn.Module, *patterns: str) -> Iterator[list[str]]:
    """Within the context, the chosen blocks (all by default) are skipped: each returns its
    (first) input instead of its output; a chosen block whose output has another shape raises
    a ``ValueError`` when it is called. Yields the names of the chosen blocks."""
    chosen = blocks_in(model, *patterns)
    hooks = [block.register_forward_hook(_skip_hook(name)) for name, block in chosen.items()]
    try:
        yield list(chosen)
    finally:
        for hook in hooks:
            hook.remove()


@contextmanager
def ablated(model: nn.Module, mode: Optional[str], *patterns: str) -> Iterator[list[str]]:
    """:func:`framework.attention.ablation` for the library's modes, :func:`skipped` for ``none``."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"ablation must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "none":
        with skipped(model, *patterns) as names:
            yield names
        return
    if mode is None:
        yield []
        return
    blocks_in(model, *patterns)  # the same message for every mode when nothing matches
    with ablation(model, mode, *patterns) as names:
        yield names


def skippable(model: nn.Module, run: Callable[[], Any]) -> dict[str, Optional[str]]:
    """Which blocks ``none`` applies to: one forward pass ``run()`` with every block watched. A block
    whose output had its input's shape at every call maps to None; the others to why not."""
    modules = blocks_in(model)
    fits: dict[str, bool] = {}

    def watch(name: str) -> Callable:
        def hook(module: nn.Module, args: tuple, output: Any) -> None:
            given = first_tensor(args)
            result = output.output if isinstance(output, AttentionOutput) else output
            same = isinstance(given, Tensor) and isinstance(result, Tensor) and given.shape == result.shape
            fits[name] = fits.get(name, True) and same

        return hook

    hooks = [module.register_forward_hook(watch(name)) for name, module in modules.items()]
    try:
        with torch.no_grad():
            run()
    finally:
        for hook in hooks:
            hook.remove()
    return {
        name: None
        if fits.get(name)
        else "output shape differs"
        if name in fits
        else "not called as a module (its parent runs it)"
        for name in modules
    }


def quiet_trainer(trainer: pl.Trainer) -> pl.Trainer:
    """A trainer on ``trainer``'s device and precision that logs, saves and prints nothing: the
    ablated test runs, whose metrics go into the table rather than under ``test/``."""
    device = trainer.strategy.root_device
    return pl.Trainer(
        accelerator="gpu" if device.type == "cuda" else device.type,
        devices=[device.index or 0] if device.type == "cuda" else 1,
        precision=trainer.precision,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[],
        limit_test_batches=trainer.limit_test_batches,
        default_root_dir=trainer.default_root_dir,
    )


def test_metrics(trainer: pl.Trainer, module: pl.LightningModule, datamodule: Any) -> dict[str, float]:
    """The test metrics of one run of ``trainer.test`` (numbers only)."""
    results = trainer.test(module, datamodule=datamodule, verbose=False)
    return {key: float(value) for key, value in (results[0] if results else {}).items()}


def ablation_rows(
    trainer: pl.Trainer,
    module: pl.LightningModule,
    datamodule: Any,
    plain: dict[str, float],
    metrics: Sequence[str],
    blocks: Sequence[str],
    modes: Sequence[str],
    probe: Callable[[], Any],
    seed: int = 0,
    say: Callable[[str], None] = print,
) -> list[Row]:
    """One row per block (and ``all``) x mode x metric: the metric under the ablation against the
    plain run's. ``probe()`` runs one forward pass to find the blocks ``none`` applies to."""
    why_not = skippable(module.model, probe) if "none" in modes else {}
    rows = []
    targets = [(name, (name,)) for name in blocks] + ([("all", tuple(blocks))] if len(blocks) > 1 else [])
    for label, chosen in targets:
        for mode in modes:
            reasons = {why_not.get(name) for name in chosen} - {None}
            if mode == "none" and reasons:
                rows += [
                    Row("ablation", label, mode, metric, None, plain.get(metric), f"n/a: {', '.join(sorted(reasons))}")
                    for metric in metrics
                ]
                continue
            say(f"evaluate: ablation {mode} of {label}")
            torch.manual_seed(seed)
            with ablated(module.model, mode, *chosen):
                figures = test_metrics(trainer, module, datamodule)
            rows += [
                Row("ablation", label, mode, metric, figures.get(metric), plain.get(metric), "plain")
                for metric in metrics
            ]
    return rows

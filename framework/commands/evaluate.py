"""``python -m framework evaluate``: the evaluation of a trained model's attention on its test split.

    python -m framework evaluate --config runs/demo/<run>/config.yaml --ckpt_path runs/demo/<run>/checkpoints/best.ckpt
    python -m framework evaluate --config ... --ckpt_path ... --tests='[ablation, intrinsic]' \\
        --ablation_modes='[uniform]'

The config and checkpoint are read as ``test`` reads them (the model and task come from the
checkpoint, ``--task.*`` flags win, ``--model.*`` flags that would change the model are
refused). The run gets its own folder beside the checkpoint's run, ``<time>_evaluate``, with
``evaluation.csv``, the pictures under ``evaluation/`` and the loggers' files; the table is
printed and, with W&B, logged as the table ``evaluation`` with the pictures. While the tests
run, a status line (:class:`Steps`) shows the steps done of those planned, the one running and
an ETA.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Optional, get_args

import torch
from lightning.pytorch.utilities import move_data_to_device

from .. import runs
from ..attention import blocks_in
from ..checkpoint import config_from_checkpoint
from ..errors import ConfigError
from ..evaluation import standard
from ..evaluation.block_ablation import (
    MODES,
    AblationMode,
    ablation_rows,
    quiet_trainer,
    test_metrics,
)
from ..evaluation.eraser import FRACTIONS
from ..evaluation.faithfulness import METHODS, Method, faithfulness_rows
from ..evaluation.intrinsic import intrinsic_rows
from ..evaluation.maps import map_rows
from ..evaluation.protocol import probe_forward
from ..evaluation.rollout import rollout_picture, rollouts
from ..evaluation.standard import StandardTest
from ..evaluation.table import Row, format_table, log_table, write_csv
from ..loggers import CSVLogger
from ..pictures import as_image
from ..values import NonNegativeInt, OpenFraction, PositiveFloat, PositiveInt, declare
from .fit import FrameworkCLI, check_machine, run_command
from .status_line import StatusLine, duration

#: The tests of ``--tests``: these (the default) and the standard measures.
EvaluationTest = Literal["ablation", "faithfulness", "intrinsic", "rollout", "maps", StandardTest]
TESTS: tuple[str, ...] = get_args(EvaluationTest)[:5]
AttributionSteps = declare("AttributionSteps", int, "an int >= 2", low=2)


class EvaluateCLI(FrameworkCLI):
    """The CLI's parser and set-up without a subcommand, plus the evaluation's options."""

    command = "evaluate"
    description = (
        "Evaluate a checkpoint's attention on the test split: ablation, faithfulness, gold attention, "
        "rollout, maps and their statistics (one table, evaluation.csv, W&B)."
    )
    examples = (
        "--config runs/<experiment>/<run>/config.yaml --ckpt_path runs/<experiment>/<run>/checkpoints/best.ckpt",
        "--config runs/<experiment>/<run>/config.yaml --ckpt_path runs/<experiment>/<run>/checkpoints/best.ckpt"
        " \\\n--tests='[ablation, intrinsic]' --ablation_modes='[uniform]'",
    )

    def __init__(self, args: list[str]) -> None:
        super().__init__(args=args, run=False)

    def add_arguments_to_parser(self, parser: Any) -> None:
        super().add_arguments_to_parser(parser)
        parser.add_argument(
            "--ckpt_path",
            type=Optional[str],
            default=None,
            help="The checkpoint to evaluate (a fit's best.ckpt or last.ckpt).",
        )
        parser.add_argument(
            "--weights_only",
            type=Optional[bool],
            default=None,
            help="As for test: load the checkpoint with torch.load(weights_only=...).",
        )
        parser.add_argument(
            "--tests",
            type=list[EvaluationTest],
            default=list(TESTS),
            help=f"Which tests: any of {', '.join(TESTS + standard.TESTS)} (default: {', '.join(TESTS)}).",
        )
        parser.add_argument(
            "--ablation_modes",
            type=list[AblationMode],
            default=list(MODES),
            help=f"Ablation modes: any of {', '.join(MODES)} (none: the block skipped, where its "
            "output has its input's shape).",
        )
        parser.add_argument(
            "--metrics",
            type=list[str],
            default=[],
            help="Test metrics of the ablation rows (default: the one that picks the best checkpoint).",
        )
        parser.add_argument(
            "--examples",
            type=PositiveInt,
            default=500,
            help="Test examples of the faithfulness and intrinsic tests (at least; whole batches).",
        )
        parser.add_argument("--permutations", type=NonNegativeInt, default=10, help="Permutations per example.")
        parser.add_argument(
            "--erase_k", type=list[PositiveInt], default=[1], help="Items erased: top-k attended vs k random."
        )
        parser.add_argument(
            "--attributions",
            type=list[Method],
            default=list(METHODS),
            help=f"Attribution methods compared with the attention: any of {', '.join(METHODS)}.",
        )
        parser.add_argument(
            "--attribution_steps", type=AttributionSteps, default=16, help="Steps of integrated gradients."
        )
        add_standard_arguments(parser)
        parser.add_argument(
            "--probes",
            type=PositiveInt,
            default=64,
            help="Probe queries per block of the maps test: their exact rows, not the N x N map.",
        )

    def _parse_ckpt_path(self) -> None:
        """The model and task configs come from the checkpoint, as for ``test`` (see FrameworkCLI)."""
        ckpt_path = self.config.get("ckpt_path")
        if not ckpt_path:
            return
        self.config = config_from_checkpoint(self.parser, self.config, Path(ckpt_path), self.argv, "evaluate")

    def before_instantiate_classes(self) -> None:
        config = self.config
        if not config.get("ckpt_path") and not config.untrained:
            raise ConfigError(
                "evaluate needs --ckpt_path: a checkpoint of a fit, for example "
                "runs/<experiment>/<run>/checkpoints/best.ckpt (add --untrained=true to evaluate the "
                "model as configured, without training)"
            )
        check_options(config)
        check_machine(config)
        runs.place_run(config, "evaluate")


def check_options(config: Any) -> None:
    """The evaluation's own options, each error naming its flag (``--ablation_blocks``, the blocks
    ablated one by one, is the CLI's; ``--ablation``, one mode for ``test``, is ``--ablation_modes`` here)."""
    if config.get("ablation") is not None:
        raise ConfigError("--ablation: evaluate takes a list of modes, --ablation_modes='[uniform, none]'")
    if not config.fractions:
        raise ConfigError("--fractions: give at least one share, as [0.1, 0.2]")


def add_standard_arguments(parser: Any) -> None:
    """The options of the standard measures (:mod:`framework.evaluation.standard`)."""
    parser.add_argument(
        "--fractions",
        type=list[OpenFraction],
        default=list(FRACTIONS),
        help="Shares of the items in a rationale (eraser, graph_fidelity): ERASER's bins by default.",
    )
    parser.add_argument(
        "--perturb_samples",
        type=PositiveInt,
        default=10,
        help="Perturbations per example of infidelity and sensitivity.",
    )
    parser.add_argument(
        "--perturb_radius",
        type=PositiveFloat,
        default=0.02,
        help="Sensitivity's perturbations: uniform in an L-infinity ball of this radius (Captum's default).",
    )


def test_loader(cli: EvaluateCLI) -> Iterable[Any]:
    """The loader of the faithfulness and intrinsic tests. A data module whose test batches can
    carry gold attention gives them from ``evaluation_dataloader()`` (the digit scenes); the
    others' test batches carry it already (bAbI's supporting facts, the dates' alignments) or
    have none."""
    data = cli.datamodule
    return (
        data.evaluation_dataloader()
        if callable(getattr(data, "evaluation_dataloader", None))
        else data.test_dataloader()
    )


def test_batches(cli: EvaluateCLI, device: torch.device, examples: int) -> Iterator[Any]:
    """The batches of :func:`test_loader` as the tests take them, on ``device``, until
    ``examples`` examples were given."""
    task, model = cli.model.task, cli.model.model
    given = 0
    for batch in test_loader(cli):
        batch = task.evaluation_batch(model, move_data_to_device(batch, device))
        yield batch
        given += len(task.split(batch)[1])
        if given >= examples:
            return


class Steps:
    """The evaluation's live status (:class:`~framework.commands.status_line.StatusLine`, a plain line every
    ``every`` seconds in a log): the steps done of the ``total`` planned (an ablated test run, a
    batch of the faithfulness or intrinsic tests), the one running, and an ETA from the mean
    time of a step so far. Lines go to ``say`` (default: printed above the bar)."""

    def __init__(self, total: int, say: Any = None, every: float = 30.0) -> None:
        self.total, self.done, self.current, self._running = total, 0, "", False
        self.started = time.monotonic()
        self.line = StatusLine(self.describe, total, every)
        self._say = say or self.line.print

    def begin(self, what: str) -> None:
        """A step starts (the one before it ended)."""
        self.end()
        self.current, self._running = what, True

    def end(self) -> None:
        if self._running:
            self.done += 1
            self.line.advance()
            self._running = False

    def say(self, line: str) -> None:
        """A line of the evaluation's output; an ablation announces its step with one."""
        self._say(line)
        if line.startswith("evaluate: ablation "):
            self.begin(line.removeprefix("evaluate: "))

    def batches(self, test: str, batches: Iterable[Any]) -> Iterator[Any]:
        """``batches``, each a step of ``test``."""
        for number, batch in enumerate(batches, 1):
            self.begin(f"{test}, batch {number}")
            yield batch
        self.end()

    def describe(self) -> str:
        parts = [f"evaluate: {self.done}/{self.total} steps", self.current]
        if self.done:
            elapsed = time.monotonic() - self.started
            parts.append(f"ETA {duration(elapsed / self.done * max(self.total - self.done, 0))}")
        return " · ".join(part for part in parts if part)

    def __enter__(self) -> Steps:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()
        self.line.close()


def planned_steps(cli: EvaluateCLI, blocks: list[str]) -> int:
    """The steps of :class:`Steps`: the ablated test runs, and the batches of the faithfulness and
    intrinsic tests (``--examples`` at the loader's batch size, at most the loader's length)."""
    config = cli.config
    steps = (len(blocks) + (len(blocks) > 1)) * len(config.ablation_modes) if "ablation" in config.tests else 0
    tests = sum(test in config.tests for test in ("faithfulness", "intrinsic")) + len(standard.passes(config.tests))
    if tests:
        loader = test_loader(cli)
        size, length = getattr(loader, "batch_size", None), getattr(loader, "__len__", None)
        count = length() if callable(length) else None
        needed = math.ceil(config.examples / size) if size else count or 1
        steps += tests * (min(needed, count) if count else needed)
    return steps


def evaluate(cli: EvaluateCLI, say: Any = None) -> list[Row]:
    """Run the chosen tests; print (or ``say``), write and log the table. Returns its rows."""
    given, say = say, say or (lambda line: print(line, flush=True))
    config, trainer, module, data = cli.config, cli.trainer, cli.model, cli.datamodule
    run_dir = Path(config.run_dir)
    model, task = module.model, module.task
    for logger in trainer.loggers:  # one W&B run for the plain test and the table, finished at the end
        if hasattr(logger, "finish_with_stage"):
            logger.finish_with_stage = False
    say(f"evaluate: plain test of {config.ckpt_path or 'the untrained model'}")
    plain = (
        test_metrics(trainer, module, data)
        if not config.ckpt_path
        else _plain(trainer, module, data, config.ckpt_path, config.weights_only)
    )
    metrics = list(config.metrics) or _primary(task, plain)
    missing = [m for m in metrics if m not in plain]
    if missing:
        raise ConfigError(f"--metrics: the test gives no {', '.join(missing)}; it gives {', '.join(sorted(plain))}")
    rows = [Row("test", "-", "plain", metric, plain.get(metric)) for metric in metrics]
    blocks: list[str] = []
    if "ablation" in config.tests:
        blocks = list(blocks_in(model, *config.ablation_blocks))
    with Steps(planned_steps(cli, blocks), given) as steps:
        found, drawn = run_tests(cli, plain, metrics, blocks, steps)
    rows += found
    report(rows, drawn, run_dir, trainer.loggers, say)
    for logger in trainer.loggers:
        if hasattr(logger, "finish_with_stage"):
            logger.finish_with_stage = True
            logger.finalize("success")
    return rows


def run_tests(
    cli: EvaluateCLI, plain: dict[str, float], metrics: list[str], blocks: list[str], steps: Steps
) -> tuple[list[Row], dict[str, Any]]:
    """The rows of the chosen tests after the plain test, and their pictures by name (figures of
    :mod:`framework.pictures`); ``steps`` shows how far they got."""
    config, trainer, module, data = cli.config, cli.trainer, cli.model, cli.datamodule
    model, task, say = module.model, module.task, steps.say
    device = trainer.strategy.root_device
    rows: list[Row] = []
    drawn: dict[str, Any] = {}
    if "ablation" in config.tests:
        if not blocks:
            rows.append(Row("ablation", "-", "-", "-", None, None, "n/a: the model has no attention block"))
        else:
            probe_batch = next(iter(test_batches(cli, device, 1)))
            model.to(device).eval()
            rows += ablation_rows(
                quiet_trainer(trainer),
                module,
                data,
                plain,
                metrics,
                blocks,
                config.ablation_modes,
                probe=lambda: probe_forward(task, model.to(device), probe_batch),
                seed=config.seed_everything or 0,
                say=say,
            )
    model.to(device).eval()
    if "faithfulness" in config.tests:
        say("evaluate: faithfulness (permutation, erasure, attribution)")
        rows += faithfulness_rows(
            model,
            task,
            steps.batches("faithfulness", test_batches(cli, device, config.examples)),
            config.permutations,
            config.erase_k,
            config.attributions,
            config.attribution_steps,
            seed=config.seed_everything or 0,
            say=say,
        )
    if "intrinsic" in config.tests:
        say("evaluate: intrinsic measures against gold attention")
        found, pictures = intrinsic_rows(
            model,
            task,
            steps.batches("intrinsic", test_batches(cli, device, config.examples)),
            seed=config.seed_everything or 0,
            say=say,
        )
        rows += found or [Row("intrinsic", "-", "-", "-", None, None, "n/a: no gold attention in this data")]
        drawn.update({f"gold/{name}": picture for name, picture in pictures.items()})
    rows += standard.standard_rows(
        model, task, lambda name: steps.batches(name, test_batches(cli, device, config.examples)), config, say
    )
    if "rollout" in config.tests:
        batch = next(iter(test_batches(cli, device, 1)))
        for stack, (last, rolled) in rollouts(model, lambda: probe_forward(task, model, batch)).items():
            drawn[f"rollout/{stack}"] = rollout_picture(last, rolled, stack)
    if "maps" in config.tests:
        say(f"evaluate: every block's maps and their statistics, from {config.probes} probe rows per block")
        batch = next(iter(test_batches(cli, device, 1)))
        found, pictures = map_rows(model, lambda: probe_forward(task, model, batch), config.probes)
        rows += found or [Row("maps", "-", "-", "-", None, None, "n/a: no block weighs a grid of keys")]
        drawn.update(pictures)
    return rows, drawn


def _plain(trainer: Any, module: Any, data: Any, ckpt_path: str, weights_only: Optional[bool]) -> dict[str, float]:
    results = trainer.test(module, datamodule=data, ckpt_path=ckpt_path, verbose=False, weights_only=weights_only)
    return {key: float(value) for key, value in (results[0] if results else {}).items()}


def _primary(task: Any, plain: dict[str, float]) -> list[str]:
    """The test twin of the metric that picks the task's best checkpoint (``val/acc`` -> ``test/acc``)."""
    monitor = str(getattr(task, "monitor", "")).replace("val/", "test/", 1)
    if monitor in plain:
        return [monitor]
    return [name for name in sorted(plain) if name != "test/loss"][:1] or sorted(plain)[:1]


def report(rows: list[Row], drawn: dict[str, Any], run_dir: Path, loggers: list, say: Any) -> None:
    """Print the table, write ``evaluation.csv`` and the pictures, log both to the loggers that take them."""
    from PIL import Image

    say(format_table(rows))
    path = write_csv(rows, run_dir / "evaluation.csv")
    folder = run_dir / "evaluation"
    for name, picture in drawn.items():
        target = folder / f"{name.replace('*', 'x').replace('/', '_')}.png"
        with runs.atomic_file(target) as file:
            Image.fromarray(as_image(picture)).save(file, format="PNG")
    log_table(rows, loggers)
    for logger in loggers:  # the CSV logger's pictures would be these files again, elsewhere in the run folder
        if hasattr(logger, "log_image") and drawn and not isinstance(logger, CSVLogger):
            for name, picture in drawn.items():
                logger.log_image(key=f"evaluation/{name}", images=[as_image(picture)])
    say(f"evaluation table: {path}" + (f"; pictures: {folder}" if drawn else ""))


def main(argv: Optional[list[str]] = None) -> Optional[list[Row]]:
    """``python -m framework evaluate ...`` (see :func:`framework.commands.fit.run_command`)."""
    argv = sys.argv[2:] if argv is None else [str(a) for a in argv]
    return run_command(argv, lambda: evaluate(EvaluateCLI(argv)))

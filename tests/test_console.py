"""What the commands print: every command's help in one shape, the validate and test tables in the
task's reading order, plain progress lines in a log, a model summary without a column of zeros."""

from __future__ import annotations

import io
import logging
import random
import re

import lightning.pytorch as pl
import pytest
import torch
from lightning.pytorch.utilities.model_summary import summarize
from torch import nn

from domains.demo import SequenceClassification
from domains.vision.task import Segmentation
from framework.__main__ import COMMANDS, main
from framework.callbacks import ModelSummary, PlainProgress, ProgressBar, progress_bar
from framework.commands.fit.help_groups import TITLES
from framework.commands.fit.results_table import print_results
from framework.commands.help import EXAMPLES, Layout, style
from framework.tasks import Classification

SMALL = [
    "--config",
    "domains/demo/demo.yaml",
    "--config",
    "configs/logger/csv.yaml",
    "--data.train_size=64",
    "--data.val_size=32",
    "--data.test_size=32",
    "--data.batch_size=16",
]


# --- help -------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_commands_help_has_the_one_shape(command, capsys):
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    lines = text.rstrip("\n").splitlines()
    usage = lines[0]
    assert usage.startswith(f"usage: python -m framework {command}") and usage.endswith("[options]"), usage
    assert lines[1] == "", "the usage is one line"
    paragraph = lines[2 : lines.index("", 2)]
    assert paragraph and not any(line.endswith(":") for line in paragraph), "a one-paragraph description"
    headings = [line for line in lines[3 + len(paragraph) :] if re.match(r"^\S.*:$", line)]
    assert headings[0] in ("options:", "positional arguments:"), "the option groups follow the description"
    assert "options:" in headings and headings[-1] == EXAMPLES and headings.count(EXAMPLES) == 1
    titles = {"options", "positional arguments", *TITLES.values()}
    assert {heading[:-1] for heading in headings[:-1]} <= titles, "every group has a declared title (help_groups)"
    examples = lines[lines.index(EXAMPLES) + 1 :]
    assert examples and examples[0].startswith(f"  python -m framework {command}"), "examples end the help"
    for line in examples:
        assert line.startswith((f"  python -m framework {command}", "  ...", "      ")), line


def test_a_help_without_examples_or_with_a_formatter_of_another_shape_is_refused():
    with pytest.raises(ValueError, match="needs an example"):
        style("fit", "Train.", ())
    with pytest.raises(TypeError, match="must mix in help.Layout"):
        style("fit", "Train.", ("--config x.yaml",), formatter=__import__("argparse").HelpFormatter)
    kwargs = style("blocks", "The\n  catalogue.", ("", "sequence \\\n--wide", "... --markdown"), arguments="[KIND]")
    assert kwargs["usage"] == "python -m framework blocks [KIND] [options]"
    assert kwargs["description"] == "The catalogue." and issubclass(kwargs["formatter_class"], Layout)
    assert kwargs["epilog"].splitlines() == [
        EXAMPLES,
        "  python -m framework blocks",
        "  python -m framework blocks sequence \\",
        "      --wide",
        "  ... --markdown",
    ]


# --- the reading order of validate and test ---------------------------------------------------


def groups(task, names):
    """Each name's group, from the declarations: 0 the task's metrics, 1 its losses (``logged``),
    2 anything else, 3 the attention statistics."""
    metrics = {f"{stage}/{name}" for stage in ("val", "test") for name in task.metrics().keys(keep_base=True)}
    metrics |= {f"train/{name}" for name in task.training_metrics().keys(keep_base=True)}
    losses = {f"{stage}/{name}" for stage in ("train", "val", "test") for name in task.logged_scalars()}
    return [
        3 if name.startswith("attention/") else 0 if name in metrics else 1 if name in losses else 2 for name in names
    ]


@pytest.mark.parametrize(
    "task",
    [SequenceClassification(num_classes=10), Segmentation(num_classes=3), Classification(num_classes=4)],
    ids=lambda task: type(task).__name__,
)
def test_the_reading_order_is_metrics_then_losses_then_the_rest_then_attention(task):
    names = [*task.directions(), "val/unlisted", "attention/block0/entropy", "attention/block0/head1/top5_mass"]
    shuffled = random.Random(0).sample(names, len(names))
    ordered = task.reading_order(shuffled)
    assert sorted(ordered) == sorted(names)
    assert groups(task, ordered) == sorted(groups(task, ordered))
    declared = [name for name in task.directions() if name in ordered[: groups(task, ordered).count(0)]]
    assert ordered[: len(declared)] == declared, "the metrics keep the order the task declares"


def test_the_results_table_is_printed_in_the_given_order(capsys):
    results = [
        {"attention/b/entropy": torch.tensor(1.5), "test/loss": 0.25, "test/acc/dataloader_idx_0": 0.75},
        {"test/acc/dataloader_idx_1": torch.tensor(0.5), "nested": {"x": 1}},
    ]
    order = SequenceClassification(num_classes=10).reading_order
    print_results(results, "test", order)
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if not set(line) <= set("─-")]
    assert rows[0] == ["Test", "metric", "DataLoader", "0", "DataLoader", "1"]
    assert [row[0] for row in rows[1:]] == ["test/acc", "test/loss", "nested:x", "attention/b/entropy"]
    assert rows[1][1:] == ["0.75", "0.5"] and rows[3][1:] == ["1"]


@pytest.mark.parametrize("command", ["validate", "test"])
def test_validate_and_test_print_the_metrics_first_and_the_attention_statistics_last(command, capfd):
    main([command, *SMALL, "--untrained=true", "--trainer.enable_progress_bar=false"])
    out = capfd.readouterr().out
    heading = next(line for line in out.splitlines() if line.startswith(f"{command.capitalize()} metric"))
    table = out.split(heading)[1].splitlines()[2:]
    names = [line.split()[0] for line in table if line and not set(line) <= set("─-")]
    stage = "val" if command == "validate" else "test"
    assert names[:3] == [f"{stage}/acc", f"{stage}/f1", f"{stage}/loss"]
    assert all(name.startswith("attention/") for name in names[3:])
    if command == "validate":
        assert len(names) > 10, "a validation logs the attention statistics"


# --- progress in a log --------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_is_a_bar_on_a_terminal_and_plain_lines_elsewhere():
    assert type(progress_bar(Terminal())) is ProgressBar
    assert type(progress_bar(io.StringIO())) is PlainProgress


def test_a_fit_piped_to_a_log_prints_one_plain_line_per_epoch(capfd, caplog):
    with caplog.at_level(logging.INFO, logger="lightning.pytorch"):
        main(["fit", *SMALL, "--trainer.max_epochs=2"])  # the test's stdout is no terminal
    captured = capfd.readouterr()
    out = captured.out + captured.err
    assert "\r" not in out and "it/s" not in out, "no progress-bar frames"
    epochs = [line for line in out.splitlines() if line.startswith("epoch ")]
    assert [line.split()[:4] for line in epochs] == [["epoch", "1/2", "step", "4"], ["epoch", "2/2", "step", "8"]]
    for line in epochs:
        assert re.fullmatch(
            r"epoch \d/2  step \d+  loss [\d.]+  val/acc [\d.]+  val/f1 [\d.]+  val/loss [\d.]+  \d+ s", line
        ), line
    # the model summary: Lightning counts no FLOPs without an example input, so it shows no column of zeros
    assert "Params" in caplog.text and "FLOPs" not in caplog.text and "Total Flops" not in caplog.text


def test_plain_lines_within_an_epoch_every_so_many_seconds(capfd):
    plain = '[{"class_path": "framework.callbacks.PlainProgress", "init_args": {"every": 1e-9}}]'
    main(["fit", *SMALL, "--trainer.max_epochs=1", f"--trainer.callbacks={plain}"])
    lines = capfd.readouterr().out.splitlines()
    batches = [line for line in lines if line.startswith("epoch 1/1") and "  batch " in line]
    assert [line.split("  batch ")[1].split()[0] for line in batches] == ["1/4", "2/4", "3/4", "4/4"]
    assert sum(line.startswith("validation  batch ") for line in lines) == 2, "validation's batches too"


# --- the model summary ------------------------------------------------------------------------


class Linear(pl.LightningModule):
    def __init__(self, example: bool) -> None:
        super().__init__()
        self.layer = nn.Linear(8, 4)
        self.example_input_array = torch.zeros(2, 8) if example else None

    def forward(self, x):
        return self.layer(x)


@pytest.mark.parametrize("example", [True, False])
def test_the_summary_shows_real_flops_or_none(example, caplog):
    summary = summarize(Linear(example))
    with caplog.at_level(logging.INFO, logger="lightning.pytorch.callbacks.model_summary"):
        ModelSummary.summarize(
            summary._get_summary_data(),
            summary.total_parameters,
            summary.trainable_parameters,
            summary.model_size,
            summary.total_training_modes,
            summary.total_flops,
        )
    text = caplog.text
    assert "Params" in text
    flops = 2 * 2 * 8 * 4  # a multiply and an add per weight, per example
    if example:
        assert "FLOPs" in text and re.search(rf"^{flops}\s+Total Flops$", text, re.MULTILINE)
    else:
        assert "FLOPs" not in text and "Total Flops" not in text

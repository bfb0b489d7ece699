"""`python -m framework parity` and `--attention_backend` on the command line: the demo's blocks on
each path against eager, the chosen path recorded in the run's summary, a bad choice in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from framework.__main__ import main
from framework.errors import ConfigError
from tests.test_cli import SMALL

DEMO = [
    "--config",
    "domains/demo/demo.yaml",
    "--data.train_size=64",
    "--data.val_size=32",
    "--data.test_size=32",
    "--data.batch_size=16",
]


def test_parity_on_the_demo(capsys: pytest.CaptureFixture) -> None:
    rows = main(["parity", *DEMO, "--backends=[eager, sdpa]", "--repeats=1", "--device=cpu"])
    blocks = ["encoder.layers.0.attention", "encoder.layers.1.attention"]
    assert [(row.block, row.backend) for row in rows] == [(b, p) for b in blocks for p in ("eager", "sdpa")]
    for row in rows:
        assert row.output_diff is not None and row.grad_diff is not None, row
        assert row.output_diff < 1e-10 and row.grad_diff < 1e-10, row  # float64 on the CPU
        assert (row.output_diff, row.grad_diff) == (0.0, 0.0) or row.backend != "eager", row
        assert row.ms > 0 and row.tflops > 0 and row.peak_mb > 0 and not row.note, row
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == [
        "block",
        "class",
        "backend",
        "max|d",
        "out|",
        "max|d",
        "grad|",
        "ms",
        "TFLOP/s",
        "peak",
        "MB",
        "note",
    ]
    assert [line.split()[:3] for line in out[2:]] == [
        [b, "MultiHeadSelfAttention", p] for b in blocks for p in ("eager", "sdpa")
    ]


def test_parity_refuses_an_unknown_backend(capsys, monkeypatch) -> None:
    monkeypatch.delenv("FRAMEWORK_TRACEBACK")
    with pytest.raises(SystemExit) as stop:
        main(["parity", *DEMO, "--backends=[eager, fast]"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.startswith(
        "error: backends: expected null or a list, each one of 'eager', 'sdpa', 'linear', 'flex', 'triton', "
        "'portable', 'compiled', got 'fast'"
    )


@pytest.mark.slow
def test_fit_runs_and_records_the_chosen_backend() -> None:
    cli = main(
        [
            "fit",
            *SMALL,
            "--trainer.limit_train_batches=1",
            "--trainer.limit_val_batches=1",
            "--attention_backend={encoder.layers.0.attention: eager}",
        ]
    )
    summary = json.loads((Path(cli.trainer.default_root_dir) / "summary.json").read_text())
    blocks = summary["fit"]["provenance"]["blocks"]
    assert {name: entry["backend"] for name, entry in blocks.items()} == {
        "encoder.layers.0.attention": "eager",
        "encoder.layers.1.attention": "sdpa",
    }


def test_a_backend_the_model_lacks_is_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        main(["fit", *SMALL, "--attention_backend=triton"])
    assert str(caught.value) == (
        "--attention_backend: attention backend 'triton': no block of the model has it (its "
        "blocks' paths: eager, sdpa, compiled)"
    )

"""Every kind of damaged or foreign checkpoint, given to every command that reads one: exit
status 1, one or two lines naming the file and saying what it is (never torch's advice to load it
unsafely), no run folder left behind, the file untouched.

The cases are generated from two tables, damage kinds x commands; the kinds of file are those of
tests/test_checkpoint_reader.py (one of each way a file is no checkpoint), and the damage only
the framework sees. A write that fails (a full disk, here a file-size limit, which fails the same
write() calls for real) keeps the previous checkpoint and says why in the operating system's words.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import pytest
import torch

from framework.__main__ import main
from framework.commands.parity import ParityCLI
from tests.conftest import small_demo
from tests.test_checkpoint_reader import ADVICE, KINDS, edited, first_weight

pytestmark = pytest.mark.slow  # every test here trains, or runs the command line end to end

DEMO = small_demo()
COMMANDS = {
    "fit": ["fit", *DEMO, "--trainer.max_epochs=2"],
    "test": ["test", *DEMO],
    "predict": ["predict", *DEMO],
    "evaluate": ["evaluate", *DEMO, "--tests=[ablation]", "--ablation_modes=[uniform]"],
    "parity": ["parity", "--config", "domains/demo/demo.yaml", "--backends=[sdpa]", "--device=cpu", "--repeats=1"],
}


def given(build: Callable[[Path, Path], Optional[Path]]) -> Callable[[Path, Path, Path], Optional[Path]]:
    """A way of making a file from a good checkpoint (tests/test_checkpoint_reader.py), as a damage of this table."""
    return lambda good, foreign, out: build(good, out)


#: The kinds of file given to every command: one of each way a file is no checkpoint (missing
#: content, no file, another format, cut short, code, another program's, diverged weights).
FILE_KINDS = (
    "empty",
    "/dev/null",
    "folder",
    "YAML config",
    "text",
    "truncated",
    "broken zip",
    "malicious pickle",
    "another program's",
    "non-finite weights",
)
#: damage kind -> (how to make the file from a good and a foreign checkpoint, returning another path
#: to give where it is no file there; what the message says)
DAMAGES = {
    **{kind: (given(KINDS[kind][0]), KINDS[kind][1]) for kind in FILE_KINDS},
    "model class gone": (
        given(edited(lambda c: c["hyper_parameters"]["model"].update(class_path="domains.demo.Gone"))),
        "domains.demo.Gone",
    ),
    "tensor of another shape": (
        given(edited(lambda c: c["state_dict"].update({first_weight(c): torch.zeros(3, 3)}))),
        "does not fit the model its config builds",
    ),
    "tensor missing": (
        given(edited(lambda c: c["state_dict"].pop(first_weight(c)))),
        "does not fit the model its config builds",
    ),
    "another experiment's": (lambda good, foreign, out: out.write_bytes(foreign.read_bytes()), "is a checkpoint of"),
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A good demo checkpoint and one of another experiment (a graph model on Karate Club)."""
    runs = tmp_path_factory.mktemp("fitted")
    old = os.environ.get("FRAMEWORK_RUNS_DIR")
    os.environ["FRAMEWORK_RUNS_DIR"] = str(runs)
    try:
        good = Path(main(["fit", *DEMO]).trainer.checkpoint_callback.best_model_path)
        foreign = Path(
            main(
                [
                    "fit",
                    "--config",
                    "domains/graph/gcn.yaml",
                    "--config",
                    "configs/logger/csv.yaml",
                    "--trainer.max_epochs=1",
                    "--trainer.enable_progress_bar=false",
                ]
            ).trainer.checkpoint_callback.best_model_path
        )
    finally:
        os.environ["FRAMEWORK_RUNS_DIR"] = old or ""
    return good, foreign


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_or_foreign_checkpoint_is_one_line_naming_it(
    checkpoints, tmp_path, capsys, monkeypatch, damage, command
):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)
    make, expected = DAMAGES[damage]
    path = tmp_path / "damaged.ckpt"
    made = make(*checkpoints, path)
    path = made if isinstance(made, Path) else path
    expected = expected.format(first_weight=first_weight(torch.load(checkpoints[0], weights_only=True)))
    content = path.read_bytes() if path.is_file() else None
    with pytest.raises(SystemExit) as stop:
        main([*COMMANDS[command], "--ckpt_path", str(path)])
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "pwned" not in err and not any(advice in err for advice in ADVICE)
    lines = err[err.index("error: ") :].strip().splitlines()
    assert len(lines) <= 2 and str(path) in lines[0] and expected in lines[0], err
    assert (path.read_bytes() if path.is_file() else None) == content
    runs = Path(os.environ["FRAMEWORK_RUNS_DIR"])
    assert not [p for p in runs.rglob("*") if p.is_file()], "a failed run left files behind"


def test_a_write_that_fails_keeps_the_previous_checkpoint_and_says_why(tmp_path):
    """The file-size limit makes the checkpoint's write() calls fail as a full disk does."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("FRAMEWORK_TRACEBACK", None)
    run = tmp_path / "run"
    main(["fit", *DEMO, f"--run_dir={run}"])  # the limited process below resumes it
    last = run / "checkpoints" / "last.ckpt"
    before = last.read_bytes()
    limited = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({len(before) // 2}, {len(before) // 2})); "
        "from framework.__main__ import main; main(sys.argv[1:])"
    )
    done = subprocess.run(
        [sys.executable, "-c", limited, "fit", *DEMO, "--trainer.max_epochs=2", "--ckpt_path", str(last)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    error = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert error and error[0].startswith("error: could not write the checkpoint ") and "File too large" in error[0]
    assert "unexpected pos" not in done.stderr
    assert last.read_bytes() == before and not list(last.parent.glob(".*.partial"))


def test_parity_takes_the_checkpoints_model_and_weights(checkpoints, tmp_path):
    """The checkpoint's model, not the config's (here one of another width), with its weights."""
    good = checkpoints[0]
    wider = tmp_path / "wider.yaml"
    demo = Path("domains/demo/demo.yaml").resolve()
    text = demo.read_text().replace("dim: 64", "dim: 96").replace("datasets/", f"{demo.parent}/datasets/")
    wider.write_text(text)
    cli = ParityCLI(["--config", str(wider), "--ckpt_path", str(good)])
    state = torch.load(good, weights_only=True)["state_dict"]
    assert cli.network.state_dict().keys() == {k.removeprefix("model.") for k in state if k.startswith("model.")}
    assert all(torch.equal(v, state[f"model.{k}"]) for k, v in cli.network.state_dict().items())

"""A run folder belongs to one run: a used one is refused unless a fit resumes it, a second
process on a folder in use stops at once, and experiment names stay inside the runs folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from framework.__main__ import main

DEMO = [
    "--config",
    "domains/demo/demo.yaml",
    "--config",
    "configs/logger/csv.yaml",
    "--data.train_size=64",
    "--data.val_size=32",
    "--data.batch_size=32",
    "--trainer.max_epochs=1",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


@pytest.fixture(autouse=True)
def as_a_user(monkeypatch):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)


def message(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1
    return lines[0]


def fitted(*extra: str) -> Path:
    return Path(main(["fit", *DEMO, *extra]).trainer.default_root_dir)


def test_a_used_run_folder_is_refused_and_left_as_it_was(capsys):
    run = fitted()
    before = {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()}
    for command in (["fit", *DEMO], ["test", *DEMO, "--untrained=true"]):
        assert message(capsys, [*command, f"--run_dir={run}"]) == (
            f"error: --run_dir {run} already holds a run: name a new folder, or resume that run with "
            f"`fit --ckpt_path {run / 'checkpoints' / 'last.ckpt'}`"
        )
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()} == before


@pytest.mark.slow
def test_a_fit_may_resume_its_own_folder_but_not_write_another_runs(capsys, tmp_path):
    run = fitted()
    resumed = main(
        [
            "fit",
            *DEMO,
            "--trainer.max_epochs=2",
            f"--run_dir={run}",
            "--ckpt_path",
            str(run / "checkpoints" / "last.ckpt"),
        ]
    )
    assert Path(resumed.trainer.default_root_dir) == run
    other = fitted()
    assert "already holds a run" in message(
        capsys, ["fit", *DEMO, f"--run_dir={other}", "--ckpt_path", str(run / "checkpoints" / "last.ckpt")]
    )


@pytest.mark.slow
def test_a_second_process_on_a_folder_in_use_stops_at_once(tmp_path):
    folder = tmp_path / "shared"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("FRAMEWORK_TRACEBACK", None)
    command = [sys.executable, "-m", "framework", "fit", *DEMO, f"--run_dir={folder}"]
    first = subprocess.Popen(
        [*command, "--trainer.max_epochs=100000"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (folder / "config.yaml").exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)
        assert first.poll() is None, first.stderr.read()
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    finally:
        first.kill()
        first.wait()
    assert second.returncode == 1
    assert second.stderr.strip().splitlines()[-2] == (
        f"error: the run folder {folder.resolve()} is in use by another process: wait for it to end, or choose "
        "another folder with --run_dir"
    )


@pytest.mark.parametrize("name", ["../../x", "/tmp/elsewhere", "a/../../b", "~/runs"])
def test_an_experiment_name_never_leaves_the_runs_folder(capsys, name):
    assert message(capsys, ["fit", *DEMO, f"--experiment={name}"]).startswith(
        "error: --experiment must name a folder inside the runs folder"
    )
    root = Path(os.environ["FRAMEWORK_RUNS_DIR"])
    assert not (root.parent / "x").exists() and not Path("/tmp/elsewhere").exists()


def test_a_nested_experiment_name_is_a_folder_inside(capsys):
    run = fitted("--experiment=ablations/heads")
    assert run.parent == Path(os.environ["FRAMEWORK_RUNS_DIR"]) / "ablations" / "heads"


def test_a_run_dir_that_is_a_file_is_named(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    assert message(capsys, ["fit", *DEMO, f"--run_dir={tmp_path / 'notes.txt'}"]) == (
        f"error: --run_dir {tmp_path / 'notes.txt'} is a file, not a folder: name a new folder"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_run_folder_on_resume_is_one_line(capsys):
    run = fitted()
    run.chmod(0o555)
    try:
        assert "cannot be written" in message(
            capsys, ["fit", *DEMO, "--trainer.max_epochs=2", "--ckpt_path", str(run / "checkpoints" / "last.ckpt")]
        )
    finally:
        run.chmod(0o755)


NAME_MAX = os.pathconf("/", "PC_NAME_MAX")
PATH_MAX = os.pathconf("/", "PC_PATH_MAX")


@pytest.mark.parametrize(
    "flag, value, limit",
    [
        ("--experiment", "x" * (NAME_MAX + 1), "NAME_MAX"),
        ("--experiment", "ablations/" + "é" * (NAME_MAX // 2 + 1), "NAME_MAX"),  # bytes count, not characters
        ("--experiment", "/".join(["x" * 200] * (PATH_MAX // 200)), "PATH_MAX"),
        ("--run_dir", "{tmp}/" + "y" * (NAME_MAX + 1), "NAME_MAX"),
        ("--run_dir", "{tmp}/" + "/".join(["y" * 200] * (PATH_MAX // 200)), "PATH_MAX"),
    ],
)
def test_a_folder_name_too_long_for_the_file_system_is_one_line_naming_the_option(capsys, tmp_path, flag, value, limit):
    said = message(capsys, ["fit", *DEMO, f"{flag}={value.format(tmp=tmp_path)}"])
    assert said.startswith(f"error: {flag}: ") and f"({limit})" in said, said
    assert not list(tmp_path.iterdir()) and not any(Path(os.environ["FRAMEWORK_RUNS_DIR"]).iterdir())

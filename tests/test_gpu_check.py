"""The GPU check (``make test-gpu``) runs end to end; on the CPU as a dry run, so that it cannot rot
between the sessions that have a GPU."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

pytestmark = pytest.mark.slow  # every test here trains, or runs the command line end to end


def gpu_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.gpu_check", *args], capture_output=True, text=True, timeout=600)


def test_a_dry_run_on_the_cpu_sweeps_a_config_and_ends_with_the_table():
    done = gpu_check("--device", "cpu", "--sections", "env", "configs", "--configs", "domains/demo/demo.yaml")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| section | item | result | figure |" in done.stdout
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("| configs |")]
    assert re.fullmatch(r"\| configs \| domains/demo/demo\.yaml \| ok \| \d+\.\d s \|", row), row
    assert done.stdout.strip().endswith("3 rows, 0 failed")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: make test-gpu runs for real")
def test_without_a_gpu_it_says_so_in_one_line():
    done = gpu_check("--sections", "env")
    assert done.returncode == 2 and done.stderr.strip() == (
        "gpu_check: no CUDA device on this machine (use --device cpu for a dry run)"
    )

"""``compare`` as a long study needs it: the threads the user chose, new cells added to a finished
comparison, an ETA that follows early stopping, a search that says what it does, and
``--early_stopping.*`` flags (framework/commands/compare/, framework/commands/fit/)."""

from __future__ import annotations

import pytest

from framework.commands.compare import executors
from framework.errors import ConfigError


def test_a_runs_threads_are_the_flag_then_the_exported_omp_num_threads_then_the_cores_shared(monkeypatch):
    monkeypatch.setattr(executors, "cpu_count", lambda: 8)
    monkeypatch.delenv(executors.THREADS_ENV, raising=False)
    assert executors.threads_per_run(2) == 4 and executors.threads_per_run(16) == 1
    monkeypatch.setenv(executors.THREADS_ENV, "1")
    assert executors.threads_per_run(2) == 1  # what the user exported, not cores // jobs
    assert executors.threads_per_run(2, given=3) == 3  # --threads first
    monkeypatch.setattr(executors, "free_gpus", lambda: [])
    assert executors.local_slots(2) == ([None, None], 1)
    monkeypatch.setenv(executors.THREADS_ENV, "two")
    with pytest.raises(ConfigError, match="OMP_NUM_THREADS='two': expected an int >= 1"):
        executors.threads_per_run(1)

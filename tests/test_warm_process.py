"""The warm process over a pipe (framework/warm_process.py) that the drawing process and compare's
workers stand on: answers in order and whole, however large; the end of the child seen with its
exit status, whether the parent closed it or it died; a busy child told that its parent is gone."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from framework.warm_process import WarmProcess

ROOT = Path(__file__).resolve().parents[1]


def test_answers_come_back_in_order_several_to_a_message_and_large_ones_whole():
    process = WarmProcess("tests.warm_echo").start()
    big = bytes(range(100)) * 30_000  # 3 MB (no "|"): beyond a pipe's buffer, both ways at once
    process.send(b"ab|cd")
    process.send(big)
    process.send(b"")
    assert [process.receive() for _ in range(4)] == [b"ba", b"dc", big[::-1], b""]
    assert process.close() == 0, "it ends at the end of its input"
    assert process.receive() is None and process.receive() is None and not process.alive()


def test_a_child_that_dies_is_seen_with_the_signal_that_ended_it():
    answers, ended, done = [], [], threading.Event()
    process = WarmProcess(
        "tests.warm_echo", on_message=answers.append, on_exit=lambda status: (ended.append(status), done.set())
    ).start()
    process.send(b"one")
    process.send(b"die")
    assert done.wait(60)
    assert answers == [b"eno"] and ended == [-signal.SIGKILL] and process.returncode == -signal.SIGKILL
    process.send(b"lost")  # nobody reads it, and sending does not fail
    assert process.close() == -signal.SIGKILL


def test_a_busy_child_whose_parent_dies_is_told(tmp_path):
    marker = tmp_path / "orphaned"
    parent = (
        "import time; from framework.warm_process import WarmProcess; "
        f"child = WarmProcess('tests.warm_echo', [{str(marker)!r}]).start(); child.send(b'sleep'); "
        "time.sleep(1)"
    )  # then this process ends, its child busy
    subprocess.run([sys.executable, "-c", parent], cwd=ROOT, check=True, timeout=60)
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline, "the child did not see its parent go"
        time.sleep(0.05)

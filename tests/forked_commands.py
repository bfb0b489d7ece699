"""Commands of the command line, each in a process of its own, started in a few milliseconds.

``python -m tests.forked_commands`` is a server: it imports the framework and its libraries once
(seconds), then forks one child per request, which runs ``python -m framework <argv>`` as the
interpreter would (:func:`framework.__main__.main`; a SystemExit's code is the exit status, any
other exception prints its traceback and exits 1) in the request's environment and folder, with
its stdout and stderr in files. A test signals a child by its process id and gets its exit status
from the server (:class:`Forks`, the test's end). The server stays single-threaded, so forking it
is safe; the children start what they start (``compare``'s workers) as programs of their own.

A request may name a function where the command pauses (``pause``, ``"module:Class.name"``, and
at which call): there the child writes its process id to ``marker`` and waits, a minute at most,
until its command got a stopping signal (:func:`framework.signals.received`), then goes on, so
that a signal sent once the marker is there finds the command at a chosen point of its work.

Protocol, JSON lines: requests on the server's stdin, ``{"argv", "env", "cwd", "out", "err",
"pause", "marker"}``; answers on its stdout, ``{"pid"}`` for each request in order, and
``{"ended": pid, "status": exit status}`` when a child ends (negative: the signal that ended it).
"""

from __future__ import annotations

import functools
import importlib
import itertools
import json
import os
import select
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Optional

#: What every command needs, imported once by the server.
WARM = (
    "framework.__main__",
    "framework.commands.fit",
    "framework.commands.evaluate",
    "framework.commands.parity",
    "framework.commands.compare.command",
    "framework.commands.compare.search",
    "framework.attention.backend_parity",
    "optuna",
    "matplotlib.pyplot",
)
#: The server's children that have not ended.
_children: set[int] = set()


def pause_at(target: str, call: int, marker: Path) -> None:
    """Make the ``call``-th call of ``target`` (``"module:Class.name"``) write the process id to
    ``marker`` and wait until the command got a stopping signal (a minute at most)."""
    from framework import signals

    module, _, path = target.partition(":")
    *parents, name = path.split(".")
    owner = importlib.import_module(module)
    for part in parents:
        owner = getattr(owner, part)
    function, calls = getattr(owner, name), itertools.count(1)

    @functools.wraps(function)
    def paused(*args, **kwargs):
        if next(calls) == call:
            marker.write_text(str(os.getpid()))
            deadline = time.monotonic() + 60
            while signals.received() is None and time.monotonic() < deadline:
                time.sleep(0.01)
        return function(*args, **kwargs)

    setattr(owner, name, paused)


def child(request: dict) -> None:
    """The forked child: the command of ``request``, then its exit status, as the interpreter ends."""
    status = 1
    try:
        for fd, path in ((0, os.devnull), (1, request["out"]), (2, request["err"])):
            opened = os.open(path, os.O_RDONLY if fd == 0 else os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(opened, fd)
            os.close(opened)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        if request.get("pause"):
            pause_at(request["pause"][0], request["pause"][1], Path(request["marker"]))
        from framework.__main__ import main

        try:
            main(request["argv"])
            status = 0
        except SystemExit as exit:
            code = exit.code
            status = 0 if code is None else code if isinstance(code, int) else 1
            if not isinstance(code, (int, type(None))):
                print(code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(status)


def serve() -> None:
    for module in WARM:
        importlib.import_module(module)
    assert threading.active_count() == 1, f"threads before forking: {threading.enumerate()}"
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    pending = b""
    open_input = True
    while open_input or _children:
        ready, _, _ = select.select([0] if open_input else [], [], [], 0.02)
        if ready:
            data = os.read(0, 1 << 16)
            open_input = bool(data)
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    answers.close()
                    child(json.loads(line))
                _children.add(pid)
                answers.write(json.dumps({"pid": pid}) + "\n")
        for pid in list(_children):
            done, wait_status = os.waitpid(pid, os.WNOHANG)
            if done:
                _children.discard(pid)
                answers.write(json.dumps({"ended": pid, "status": os.waitstatus_to_exitcode(wait_status)}) + "\n")


class Forks:
    """The test's end of a server: :meth:`start` a command, :meth:`wait` for its exit status."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.server = subprocess.Popen(
            [sys.executable, "-m", "tests.forked_commands"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._lock = threading.Condition()
        self._sent = 0
        self._started: list[int] = []
        self._ended: dict[int, int] = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.server.stdout:
            answer = json.loads(line)
            with self._lock:
                if "pid" in answer:
                    self._started.append(answer["pid"])
                else:
                    self._ended[answer["ended"]] = answer["status"]
                self._lock.notify_all()

    def start(
        self,
        argv: list[str],
        folder: Path,
        env: dict[str, str],
        pause: Optional[tuple[str, int]] = None,
    ) -> int:
        """Start ``python -m framework <argv>`` in ``env`` (less ``WANDB_SERVICE``: a command never
        shares the W&B service of the process that asked for it, which may have ended), its output in
        ``folder/out`` and ``folder/err`` (and the pause's marker ``folder/marker``); its process id."""
        folder.mkdir(parents=True, exist_ok=True)
        request = {
            "argv": argv,
            "env": {key: value for key, value in env.items() if key != "WANDB_SERVICE"},
            "cwd": str(self.cwd),
            "out": str(folder / "out"),
            "err": str(folder / "err"),
            "pause": pause,
            "marker": str(folder / "marker"),
        }
        with self._lock:
            index, self._sent = self._sent, self._sent + 1  # answered in the order of the requests
            self.server.stdin.write(json.dumps(request) + "\n")
            self.server.stdin.flush()
            assert self._lock.wait_for(lambda: len(self._started) > index, timeout=60), "the fork server is gone"
            return self._started[index]

    def ended(self, pid: int) -> bool:
        with self._lock:
            return pid in self._ended

    def wait(self, pid: int, timeout: float = 180) -> int:
        """The exit status of the command ``pid`` (negative: the signal that ended it)."""
        with self._lock:
            assert self._lock.wait_for(lambda: pid in self._ended, timeout=timeout), f"command {pid} still runs"
            return self._ended[pid]

    def close(self) -> None:
        self.server.stdin.close()
        self.server.wait(timeout=60)


if __name__ == "__main__":
    serve()

"""A warm process over a pipe: a long-lived Python child that imports what it needs once, then
handles the messages of the process that started it one after another, and answers them.

Two pieces of the framework stand on it, each with its own policy: the drawing process
(:mod:`framework.drawing`: pictures in, PNG files out; a dead process means drawing in the
training process) and the warm workers of ``compare`` (:mod:`framework.commands.compare.pool`
and ``.worker``: runs in, their stages and results out; a dead worker fails its run, whose log
says why, and is replaced). This module imports the standard library alone, so that the drawing
process starts without torch.

The standard library's process pools (:class:`concurrent.futures.ProcessPoolExecutor`,
:class:`multiprocessing.Pool`) do not serve them: they fork where the parent may hold CUDA and
threads (or spawn a bare interpreter without the imports warmed), they say that a worker died
but not which job it was doing nor let the parent read that job's log, a dead worker breaks the
whole executor, and they give one answer per job where a run answers at each stage.

The protocol
------------

:class:`WarmProcess` (the parent's end) starts ``python -m MODULE R,W ARGS...`` with two private
pipes: the child reads its messages from the file descriptor ``R`` and writes its answers to
``W`` (:class:`Child`, the child's end, reads ``R,W`` and leaves ``ARGS`` to the module). The
child's stdin is ``/dev/null``, its stdout ``/dev/null`` (unless the parent says otherwise) and
its stderr the parent's: nothing the child or its libraries print is taken for an answer, and a
child that sends its file descriptors 1 and 2 elsewhere (a ``compare`` run's log) leaves the
pipes alone.

Frames, both ways: an 8-byte little-endian length, then that many bytes; what the bytes mean
(a pickle, JSON) is the users' business. Parent to child: the messages, written by a writer
thread of the parent in the order :meth:`WarmProcess.send` queued them (sending never blocks).
Child to parent: any number of answers to each message (:meth:`Child.reply`), read by a reader
thread of the parent, which hands each to ``on_message`` or, without one, queues it for
:meth:`WarmProcess.receive`.

How the end is seen:

* the parent closes (:meth:`WarmProcess.close`): after the messages queued, the writer closes
  the parent's end of the request pipe; the child handles what it has and sees the end of its
  input (:meth:`Child.messages` ends), and ends. The parent waits ``grace`` seconds for it, then
  kills it (SIGKILL).
* the child dies (exits, crashes, is killed): the reply pipe reaches its end (a frame cut short
  counts as its end); the reader thread waits for the exit status (negative: the signal that
  ended it) and reports it: ``on_exit(status)`` is called, :meth:`WarmProcess.receive` gives
  None, :attr:`WarmProcess.returncode` has it.
* the parent dies: its end of the request pipe closes with it, so an idle child sees the end of
  its input; a busy child learns it from :meth:`Child.watch_parent` (its parent process id
  changes), which does what the module says (the ``compare`` worker stops its run as SIGTERM
  does).

The child's pipe descriptors are not inherited by the programs it starts (a process it forks
without starting a program holds them until it ends).
"""

from __future__ import annotations

import os
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Optional

LENGTH = struct.Struct("<Q")
#: The folder that holds the ``framework`` package: the child finds its module where this process found it.
ROOT = Path(__file__).resolve().parents[1]


def send(stream: IO[bytes], payload: bytes) -> None:
    """Write one frame and flush it."""
    stream.write(LENGTH.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def receive(stream: IO[bytes]) -> Optional[bytes]:
    """The next frame; None at the end of the stream (a frame cut short included)."""
    head = stream.read(LENGTH.size)
    if len(head) < LENGTH.size:
        return None
    size = LENGTH.unpack(head)[0]
    payload = stream.read(size)
    return payload if len(payload) == size else None


class WarmProcess:
    """The parent's end: one child process, ``python -m module R,W *args``, and the two threads
    that write its messages and read its answers (see the module's docstring for the protocol).

    ``on_message(payload)`` takes each answer in the reader thread; without it they queue for
    :meth:`receive`. ``on_exit(status)`` is called in the reader thread once the child has ended
    and every answer before its end was delivered. An exception raised by ``on_message`` kills
    the child (an answer it cannot take is the end of the conversation).

    ``env``: the child's environment (this process's by default), with the folder of the
    ``framework`` package put first on ``PYTHONPATH``; ``own_group``: the child in a process
    group of its own (Ctrl-C at the terminal does not reach it; the parent signals it itself).

    One object is one child, started once: to restart, close it and start a new one.
    """

    def __init__(
        self,
        module: str,
        args: Sequence[str] = (),
        *,
        env: Optional[dict[str, str]] = None,
        on_message: Optional[Callable[[bytes], None]] = None,
        on_exit: Optional[Callable[[int], None]] = None,
        stdout: Any = subprocess.DEVNULL,
        own_group: bool = False,
        name: str = "warm-process",
    ) -> None:
        self.module, self.args, self.name = module, list(args), name
        self._env, self._stdout, self._own_group = env, stdout, own_group
        self._on_message, self._on_exit = on_message, on_exit
        self._popen: Optional[subprocess.Popen] = None
        self._outbox: queue.Queue[Optional[bytes]] = queue.Queue()  # None closes the child's input
        self._inbox: Optional[queue.Queue[Optional[bytes]]] = None if on_message else queue.Queue()
        self._closing = False

    def start(self) -> WarmProcess:
        """Start the child and the two threads; OSError when it cannot start."""
        if self._popen is not None:
            raise RuntimeError(f"{self.name}: started already (one object, one child)")
        child_in, parent_out = os.pipe()
        parent_in, child_out = os.pipe()
        try:
            self._popen = subprocess.Popen(
                [sys.executable, "-m", self.module, f"{child_in},{child_out}", *self.args],
                stdin=subprocess.DEVNULL,
                stdout=self._stdout,
                pass_fds=(child_in, child_out),
                env=self.environment(),
                process_group=0 if self._own_group else None,
            )
        except BaseException:
            os.close(parent_in)
            os.close(parent_out)
            raise
        finally:
            os.close(child_in)
            os.close(child_out)
        threading.Thread(
            target=self._write, args=(os.fdopen(parent_out, "wb"),), name=f"{self.name}-writer", daemon=True
        ).start()
        threading.Thread(
            target=self._read, args=(os.fdopen(parent_in, "rb"),), name=f"{self.name}-reader", daemon=True
        ).start()
        return self

    def environment(self) -> dict[str, str]:
        env = dict(os.environ if self._env is None else self._env)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        return env

    def send(self, payload: bytes) -> None:
        """Queue one message for the child (never blocks; lost when the child has ended)."""
        if self._closing:
            raise RuntimeError(f"{self.name}: closed")
        self._outbox.put(payload)

    def receive(self) -> Optional[bytes]:
        """The child's next answer, waiting for it; None once the child has ended (only without
        ``on_message``)."""
        if self._inbox is None:
            raise RuntimeError(f"{self.name}: its answers go to on_message")
        payload = self._inbox.get()
        if payload is None:
            self._inbox.put(None)  # and every later call
        return payload

    def _write(self, stream: IO[bytes]) -> None:
        try:
            with stream:  # closing it is the end of the child's input
                while (payload := self._outbox.get()) is not None:
                    send(stream, payload)
        except (OSError, ValueError):
            pass  # the child ended: the reader sees it

    def _read(self, stream: IO[bytes]) -> None:
        with stream:
            try:
                while (payload := receive(stream)) is not None:
                    if self._inbox is not None:
                        self._inbox.put(payload)
                    else:
                        try:
                            self._on_message(payload)
                        except Exception:  # noqa: BLE001 - an answer the parent cannot take: the child is ended
                            self.signal(signal.SIGKILL)
                            break
            except (OSError, ValueError):
                pass
        status = self._popen.wait()
        if self._inbox is not None:
            self._inbox.put(None)
        if self._on_exit is not None:
            self._on_exit(status)

    @property
    def pid(self) -> Optional[int]:
        return None if self._popen is None else self._popen.pid

    @property
    def returncode(self) -> Optional[int]:
        """The child's exit status (negative: the signal that ended it); None while it runs."""
        return None if self._popen is None else self._popen.poll()

    def poll(self) -> Optional[int]:
        return self.returncode

    def alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def wait(self, timeout: Optional[float] = None) -> int:
        """The exit status, once the child has ended (:class:`subprocess.TimeoutExpired` after ``timeout``)."""
        if self._popen is None:
            raise RuntimeError(f"{self.name}: not started")
        return self._popen.wait(timeout)

    def signal(self, number: int) -> None:
        """Send the child a signal (nothing when it has ended)."""
        if self.alive():
            try:
                self._popen.send_signal(number)
            except (ProcessLookupError, OSError):  # it ended meanwhile
                pass

    def close(self, grace: float = 10.0) -> Optional[int]:
        """Close the child's input after the messages queued, wait up to ``grace`` seconds for it
        to end, then kill it; its exit status (None when it never started)."""
        if self._popen is None:
            return None
        if not self._closing:
            self._closing = True
            self._outbox.put(None)
        try:
            return self._popen.wait(grace)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            return self._popen.wait()


class Child:
    """The child's end: ``Child()`` in ``python -m module R,W *args`` reads ``R,W`` from
    ``sys.argv`` (or ``argv``, the arguments after the module) and keeps ``args`` for the module.

        child = Child()
        for message in child.messages():     # until the parent closes its end
            child.reply(answer(message))      # any number of answers to a message
    """

    def __init__(self, argv: Optional[Sequence[str]] = None) -> None:
        argv = sys.argv[1:] if argv is None else list(argv)
        read, write = (int(fd) for fd in argv[0].split(","))
        self.args: list[str] = argv[1:]
        for fd in (read, write):
            os.set_inheritable(fd, False)  # not held open by the programs the child starts
        self._input = os.fdopen(read, "rb")
        self._output = os.fdopen(write, "wb")
        self._lock = threading.Lock()

    def messages(self) -> Iterator[bytes]:
        """The parent's messages, one at a time, until it closes its end (or dies)."""
        while (payload := receive(self._input)) is not None:
            yield payload

    def reply(self, payload: bytes) -> None:
        """Send one answer (from any thread); BrokenPipeError when the parent is gone."""
        with self._lock:
            send(self._output, payload)

    def watch_parent(self, then: Callable[[], None], every: float = 1.0) -> None:
        """Call ``then()`` (in a thread of its own) when the process that started this one is gone."""
        parent = os.getppid()

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(every)
            then()

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()

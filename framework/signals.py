"""One contract for every command stopped from outside: SIGTERM (what SLURM, Kubernetes and
``kill`` send) and SIGINT (Ctrl-C), the same for fit, validate, test, predict, evaluate, compare
and parity.

* The command stops cleanly. Inside a stage of Lightning's (fit's training and validation,
  validate, test, predict), at the end of the batch it is in: Lightning's own stop, which fit
  ends by writing ``last.ckpt`` at the step just finished (SIGINT is handed to it as SIGTERM;
  predict, which Lightning lets run on, stops there too, :class:`framework.callbacks.StopAtBatchEnd`).
  Anywhere else, at once. A second signal while the first one's stop is under way stops it at once.
* What finished is kept: checkpoints, ``summary.json`` (its status ``interrupted``), the
  predictions written, a comparison's finished runs and their table.
* It exits with the status :data:`STOPS` declares, 128 + the signal's number, as a shell reports a
  process that the signal ended: 143 for SIGTERM, 130 for SIGINT.
* Its last line on stderr says so, and how to resume where the command can be resumed:
  ``stopped by SIGINT; resume it with `fit --config <run>/config.yaml --ckpt_path <run>/checkpoints/last.ckpt```.
  Never a traceback.

:func:`run` holds a command to it. ``python -m framework`` runs every command under it, and so do
:func:`framework.commands.fit.run_command` (every command built on the training CLI) and
``compare``'s ``main``, for the callers that start those directly (tests, ``compare``'s workers);
nested, the outermost says the line, with the resuming of the outermost command that knows one.
The standard library alone: the dispatcher imports this module before anything heavy.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Optional, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Stop:
    """How a command that ``signal`` stopped ends: its exit status and the start of its last line."""

    signal: signal.Signals
    status: int
    said: str

    def line(self, resume: Optional[str]) -> str:
        """The command's last line on stderr; ``resume``: how to resume it, where it can be."""
        return self.said + (f"; {resume}" if resume else "")


#: The contract: the signals that stop a command, each with its exit status and what is said.
STOPS: dict[int, Stop] = {
    stop.signal: stop
    for stop in (
        Stop(signal.SIGTERM, 128 + signal.SIGTERM, "stopped by SIGTERM"),
        Stop(signal.SIGINT, 128 + signal.SIGINT, "stopped by SIGINT"),
    )
}

_depth = 0  # the commands under the contract, nested
_owner: Optional[int] = None  # the process that holds the contract (a child forked from it does not)
_received: Optional[int] = None  # the first stopping signal the command got
_forwarding = False  # a SIGINT is being handed to Lightning as SIGTERM


class Stopped(SystemExit):
    """A command stopped by a signal (``signum``; default the one received): a SystemExit with the
    signal's status, so that whatever does not know it still exits as the contract says.
    ``resume`` is how to resume the command, where it can be (set by :func:`run`)."""

    def __init__(self, signum: Optional[int] = None) -> None:
        self.stop = STOPS[signum or _received or signal.SIGTERM]
        self.resume: Optional[str] = None
        super().__init__(self.stop.status)


def received() -> Optional[int]:
    """The stopping signal the running command got (None: none, or no command runs under the contract)."""
    return _received


def from_outside(error: BaseException) -> bool:
    """Whether ``error`` ends a run that was stopped from outside (a rerun resumes it): the contract's
    :class:`Stopped`, Lightning's stop at a batch's end (``SIGTERMException``) or a KeyboardInterrupt."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    return isinstance(error, (Stopped, SIGTERMException, KeyboardInterrupt))


def _on_signal(signum: int, frame: Optional[FrameType]) -> None:
    global _received, _forwarding
    if os.getpid() != _owner:  # a child forked without a program of its own (a data loader's worker)
        if signum == signal.SIGINT:
            signal.default_int_handler(signum, frame)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if _forwarding:  # the SIGINT handed over, back from Lightning's handler, which calls this one last
        return
    first = _received is None
    _received = _received or signum
    lightning = signal.getsignal(signal.SIGTERM)  # a stage of Lightning's holds SIGTERM while it runs
    if first and lightning is not _on_signal and callable(lightning):  # it stops at the end of its batch
        if signum != signal.SIGTERM:
            _forwarding = True
            try:
                lightning(signal.SIGTERM, frame)
            finally:
                _forwarding = False
        return
    raise Stopped()


def run(action: Callable[[], T], resume: Optional[Callable[[], Optional[str]]] = None) -> T:
    """``action()``, a command, under the contract (see the module's docstring). ``resume()`` says
    how to resume the command after a stop (None where it cannot be); nested, the outermost
    command that gives one is the one resumed. In a thread other than the main one (which alone
    receives signals), ``action()`` as it is."""
    global _depth, _owner, _received
    outermost = _depth == 0
    if outermost and threading.current_thread() is not threading.main_thread():
        return action()
    if outermost:
        _owner, _received = os.getpid(), None
        previous = {number: signal.signal(number, _on_signal) for number in STOPS}
    _depth += 1
    try:
        result = action()
        if _received is not None:  # a stage of Lightning's that got the signal in its last batch ended
            raise Stopped()
        return result
    except Stopped as stop:
        if resume is not None:
            stop.resume = resume()
        if outermost:
            print(stop.stop.line(stop.resume), file=sys.stderr, flush=True)
        raise
    finally:
        _depth -= 1
        if outermost:
            for number, handler in previous.items():
                signal.signal(number, handler)
            _received = None

"""A warm worker: ``python -m framework.commands.compare.worker FD``, started by :class:`.pool.Pool`.

It imports torch, Lightning, W&B and the framework once, then takes runs one after another:
a :class:`~.runner.RunPlan` as one JSON line on its stdin, each run done in this process by
:func:`.runner.execute` (fit, then test; their output in the run's ``fit.log`` and
``test.log``). On the file descriptor ``FD`` it answers one JSON line when a stage starts,
``{"stage": "fit", "log": ".../fit.log", "offset": 0}``, and one when the run ends,
``{"result": {...RunResult...}}``. A run's failure is its result; the worker goes on. If the
worker itself dies (a segfault, kill -9, the OOM killer), the pool reads the stage's log and
starts another. It ends when its stdin closes; if the process that started it dies, it stops
its run as SIGTERM does (a fit writes a resumable ``last.ckpt``) and ends.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import json
import os
import signal
import sys
import threading
import time
from dataclasses import asdict
from typing import Optional


def _watch(parent: int) -> None:
    """SIGTERM to this process when ``parent`` is gone (its runs must not outlive the comparison)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: Optional[list[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    channel = os.fdopen(int(argv[0]), "w", buffering=1)
    threading.Thread(target=_watch, args=(os.getppid(),), daemon=True).start()
    faulthandler.enable()  # a crash's Python stack goes to the run's log (file descriptor 2 during a run)

    for module in ("wandb", "framework.commands.fit"):  # the imports every run needs, once
        importlib.import_module(module)
    gc.freeze()  # the libraries' objects live as long as the worker: the collection after each stage skips them (0.24 -> 0.01 s)
    from .runner import RunPlan, RunResult, execute

    def send(message: dict) -> None:
        channel.write(json.dumps(message) + "\n")

    for line in sys.stdin:
        plan = RunPlan(**json.loads(line))
        try:
            result = execute(plan, lambda stage, log, offset: send({"stage": stage, "log": log, "offset": offset}))
        except Exception as err:  # not the run's failure (those are results): the worker's own, e.g. a full disk
            result = RunResult(plan.key, False, "", error=f"worker: {type(err).__name__}: {err}"[:500])
        send({"result": asdict(result)})


if __name__ == "__main__":
    main()

"""A warm worker: ``python -m framework.commands.compare.worker R,W``, started by :class:`.pool.Pool`
as a :class:`~framework.warm_process.WarmProcess` (``R,W``: its pipes; see that module for the frames).

It imports torch, Lightning, W&B and the framework once, then takes runs one after another:
a :class:`~.runner.RunPlan` as one frame of JSON, each run done in this process by
:func:`.runner.execute` (fit, then test; their output, file descriptors 1 and 2, in the run's
``fit.log`` and ``test.log``: the pipes are other descriptors). It answers one frame of JSON
when a stage starts, ``{"stage": "fit", "log": ".../fit.log", "offset": 0}``, and one when the
run ends, ``{"result": {...RunResult...}}``. A run's failure is its result; the worker goes on.
If the worker itself dies (a segfault, kill -9, the OOM killer), the pool reads the stage's log
and starts another. It ends when the pool closes its end of the pipe; if the process that
started it dies, it stops its run as SIGTERM does (a fit writes a resumable ``last.ckpt``) and
ends.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import json
import os
import signal
from dataclasses import asdict
from typing import Optional

from ...warm_process import Child


def main(argv: Optional[list[str]] = None) -> None:
    child = Child(argv)
    # SIGTERM to this process when the pool's is gone: its runs must not outlive the comparison
    child.watch_parent(lambda: os.kill(os.getpid(), signal.SIGTERM))
    faulthandler.enable()  # a crash's Python stack goes to the run's log (file descriptor 2 during a run)

    for module in ("wandb", "framework.commands.fit"):  # the imports every run needs, once
        importlib.import_module(module)
    # the libraries' objects live as long as the worker: the collection after each stage skips them (0.24 -> 0.01 s)
    gc.freeze()
    from .runner import RunPlan, RunResult, execute

    def send(message: dict) -> None:
        child.reply(json.dumps(message).encode())

    for frame in child.messages():
        plan = RunPlan(**json.loads(frame))
        try:
            result = execute(plan, lambda stage, log, offset: send({"stage": stage, "log": log, "offset": offset}))
        except Exception as err:  # not the run's failure (those are results): the worker's own, e.g. a full disk
            result = RunResult(plan.key, False, "", error=f"worker: {type(err).__name__}: {err}"[:500])
        send({"result": asdict(result)})


if __name__ == "__main__":
    main()

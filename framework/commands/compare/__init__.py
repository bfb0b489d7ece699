"""Compare blocks in one command: a grid of configs over seeds, run in parallel, tabulated.

    python -m framework compare --config domains/vision/ccnet.yaml \\
        --grid model.attention=[criss_cross,danet,non_local,none] --seeds 5 --jobs 4

The package, one purpose per module:

* :mod:`.command`: the command line, its options and what it does with them;
* :mod:`.grid`: ``--grid KEY=[...]`` flags and ``--cells``, their product, the cells;
* :mod:`.comparison`: the comparison's spec and folder (``runs/compare/<name>/spec.json``), resuming;
* :mod:`.resolve`: every cell's config checked by the CLI's parser before anything runs;
* :mod:`.runner`: one run, a ``fit`` and a ``test`` of its checkpoint, and what a run still needs;
* :mod:`.pool` and :mod:`.worker`: warm worker processes that take runs one after another;
* :mod:`.executors`: local worker slots (GPUs or CPU threads), or a submitit job array (SLURM);
* :mod:`.grid_status`: the live status line of the runs, with an ETA;
* :mod:`.search` and :mod:`.pruning`: an Optuna search instead of a grid, and its pruner in the fits;
* :mod:`.results`: mean +- std, the paired t-test, best-of-N, ``results.csv``/``.md``;
* :mod:`.plots`: ``metric.png`` and ``curves.png``, logged to W&B;
* :mod:`.verify`: ``--verify``, a recorded run done again and compared;
* :mod:`.sweep` and :mod:`.agent`: the comparison as a W&B grid sweep, and a sweep run.
"""

from __future__ import annotations

import sys
from typing import Optional

from ... import signals
from ...errors import explained

#: How a stopped comparison or search is resumed (the last line of a stop, :mod:`framework.signals`).
RESUME = {
    "grid": "run the same command again to resume: finished runs are not run again, stopped fits resume "
    "from their last.ckpt",
    "search": "run the same command again to resume: its study (study.db) is kept, finished trials are not "
    "run again, stopped fits resume from their last.ckpt",
}


def main(argv: Optional[list[str]] = None):
    """``python -m framework compare ...``; an error the framework explains is one line, status 1;
    SIGTERM and SIGINT stop it as :mod:`framework.signals` says."""
    from .command import main as run

    argv = sys.argv[2:] if argv is None else [str(a) for a in argv]
    said = RESUME["search" if any(arg.split("=", 1)[0] == "--search" for arg in argv) else "grid"]
    return signals.run(lambda: explained(argv, lambda: run(argv)), lambda: said)


__all__ = ["main"]

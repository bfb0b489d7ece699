"""The measures the explainability literature reports by default, as tests of ``evaluate``.

    python -m framework evaluate --config ... --ckpt_path ... --tests='[eraser, plausibility, infidelity, sensitivity]'
    python -m framework evaluate ... --tests='[graph_fidelity]' --fractions='[0.1, 0.2]'

One module per measure: :mod:`.eraser` (ERASER's comprehensiveness, sufficiency and AOPC),
:mod:`.plausibility` (token F1, IOU F1 and AUPRC against gold evidence), :mod:`.captum_metrics`
(Captum's infidelity and max-sensitivity), :mod:`.graph_fidelity` (PyG's fidelity+ and -, the
characterization score). This module names them for the command: their ``--tests`` names,
their options and their rows. They are not in the default ``--tests``: ask for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable

from torch import nn

from ..errors import ConfigError
from .eraser import FRACTIONS
from .table import Row

#: The tests of this module, by their ``--tests`` names.
TESTS = ("eraser", "plausibility", "infidelity", "sensitivity", "graph_fidelity")


def add_arguments(parser: Any) -> None:
    """The options of these tests on ``evaluate``'s parser."""
    parser.add_argument("--fractions", type=list[float], default=list(FRACTIONS),
                        help="Shares of the items in a rationale (eraser, graph_fidelity): ERASER's bins by default.")
    parser.add_argument("--perturb_samples", type=int, default=10,
                        help="Perturbations per example of infidelity and sensitivity.")
    parser.add_argument("--perturb_radius", type=float, default=0.02,
                        help="Sensitivity's perturbations: uniform in an L-infinity ball of this radius (Captum's default).")


def check(config: Any) -> None:
    """These tests' options, each error naming its flag."""
    if not config.fractions or any(not 0 < f < 1 for f in config.fractions):
        raise ConfigError(f"--fractions: shares in (0, 1) expected, got {config.fractions}")
    if config.perturb_samples < 1:
        raise ConfigError(f"--perturb_samples must be at least 1, got {config.perturb_samples}")
    if config.perturb_radius <= 0:
        raise ConfigError(f"--perturb_radius must be above 0, got {config.perturb_radius}")


def passes(tests: Iterable[str]) -> list[str]:
    """The passes over the test batches that the chosen ``tests`` make (infidelity and
    sensitivity share one), by name."""
    chosen = [test for test in TESTS if test in tests]
    captum = [test for test in chosen if test in ("infidelity", "sensitivity")]
    return [test for test in chosen if test not in captum] + (["+".join(captum)] if captum else [])


def standard_rows(model: nn.Module, task: Any, batches: Callable[[str], Iterable[Any]], config: Any,
                  say: Callable[[str], None] = print) -> list[Row]:
    """The rows of the chosen tests of this module; ``batches(name)`` gives a pass over the test
    batches (named for the status line)."""
    from .captum_metrics import captum_rows
    from .eraser import eraser_rows
    from .graph_fidelity import graph_fidelity_rows
    from .plausibility import plausibility_rows

    seed, rows = config.seed_everything or 0, []
    for name in passes(config.tests):
        if name == "eraser":
            say("evaluate: ERASER comprehensiveness and sufficiency of the attention")
            rows += eraser_rows(model, task, batches(name), config.fractions, seed=seed, say=say)
        elif name == "plausibility":
            say("evaluate: plausibility of the attention and attributions against gold evidence")
            rows += plausibility_rows(model, task, batches(name), config.attributions, config.attribution_steps,
                                      seed=seed, say=say)
        elif name == "graph_fidelity":
            say("evaluate: graph fidelity of the attention's edges (torch_geometric.explain)")
            rows += graph_fidelity_rows(model, task, batches(name), config.fractions, seed=seed, say=say)
        else:
            say(f"evaluate: Captum's {name.replace('+', ' and ')} of the attention and attributions")
            rows += captum_rows(model, task, batches(name), name.split("+"), config.attributions,
                                config.attribution_steps, config.perturb_samples, config.perturb_radius, seed=seed,
                                say=say)
    return rows

"""The measures the explainability literature reports by default, as tests of ``evaluate``.

    python -m framework evaluate --config ... --ckpt_path ... --tests='[eraser, plausibility, infidelity, sensitivity]'
    python -m framework evaluate ... --tests='[graph_fidelity]' --fractions='[0.1, 0.2]'

One module per measure: :mod:`.eraser` (ERASER's comprehensiveness, sufficiency and AOPC),
:mod:`.plausibility` (token F1, IOU F1 and AUPRC against gold evidence), :mod:`.captum_metrics`
(Captum's infidelity and max-sensitivity), :mod:`.graph_fidelity` (PyG's fidelity+ and -, the
characterization score). This module gathers them: their ``--tests`` names and their rows (the
command, :mod:`framework.commands.evaluate`, gives their options). They are not in the default
``--tests``: ask for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, get_args

from torch import nn

from .table import Row

#: The tests of this module, by their ``--tests`` names.
StandardTest = Literal["eraser", "plausibility", "infidelity", "sensitivity", "graph_fidelity"]
TESTS: tuple[str, ...] = get_args(StandardTest)


def passes(tests: Iterable[str]) -> list[str]:
    """The passes over the test batches that the chosen ``tests`` make (infidelity and
    sensitivity share one), by name."""
    chosen = [test for test in TESTS if test in tests]
    captum = [test for test in chosen if test in ("infidelity", "sensitivity")]
    return [test for test in chosen if test not in captum] + (["+".join(captum)] if captum else [])


def standard_rows(
    model: nn.Module,
    task: Any,
    batches: Callable[[str], Iterable[Any]],
    config: Any,
    say: Callable[[str], None] = print,
) -> list[Row]:
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
            rows += plausibility_rows(
                model, task, batches(name), config.attributions, config.attribution_steps, seed=seed, say=say
            )
        elif name == "graph_fidelity":
            say("evaluate: graph fidelity of the attention's edges (torch_geometric.explain)")
            rows += graph_fidelity_rows(model, task, batches(name), config.fractions, seed=seed, say=say)
        else:
            say(f"evaluate: Captum's {name.replace('+', ' and ')} of the attention and attributions")
            rows += captum_rows(
                model,
                task,
                batches(name),
                name.split("+"),
                config.attributions,
                config.attribution_steps,
                config.perturb_samples,
                config.perturb_radius,
                seed=seed,
                say=say,
            )
    return rows

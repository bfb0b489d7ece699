"""Is the attention right? The evaluation of attention models, for every domain.

``python -m framework evaluate --config <run config> --ckpt_path <checkpoint>`` runs, on the
test split, the surveys' evaluations of attention (Brauwers & Frasincar 2021, §4; the
catalogue's section A) and prints one table (also ``evaluation.csv`` in the run folder and a
W&B table), with pictures where they help. One purpose per module:

* :mod:`.measures`: the measures as functions of tensors (TVD, JS distance, Kendall's tau,
  attention correctness, alignment error rate);
* :mod:`.ablation`: each block's weights replaced (uniform, random, permute) or the block
  skipped (none), the task's test metrics against the plain run; ``test --ablation``;
* :mod:`.faithfulness`: permutation (Jain & Wallace), erasure (Serrano & Smith) and the rank
  correlation with Captum's attributions, on the tasks' input items;
* :mod:`.intrinsic`: attention correctness and AER against gold attention (bAbI supporting
  facts, dates alignments, the digit scenes' drawn digit, graph label agreement);
* :mod:`.rollout`: attention rollout (Abnar & Zuidema) of stacked self-attention, drawn;
* :mod:`.maps`: every block's maps and their statistics (entropy, top-k mass ...) from the exact
  rows of probe queries, which large maps need (no N x N matrix);
* :mod:`.eraser`, :mod:`.plausibility`, :mod:`.captum_metrics`, :mod:`.graph_fidelity`: the measures
  the explainability literature reports by default (ERASER's comprehensiveness, sufficiency and
  AOPC; token F1, IOU F1 and AUPRC against gold evidence; Captum's infidelity and max-sensitivity;
  PyG's fidelity+/- and characterization), named for the command by :mod:`.standard`;
* :mod:`.supervision`: the attention-training families that tasks offer (``task.attention_supervision``,
  ``task.decouple_attention``, ``task.random_attention``);
* :mod:`.table`: the table, printed, as CSV and for W&B; :mod:`.command`: the command;
* :mod:`.protocol`: what a task offers the tests, its evaluation hooks (:class:`.EvaluationHooks`,
  which :class:`framework.tasks.Task` inherits), and the types they return.

Importing the package imports none of them (its modules are imported where they are used), so
that ``framework.tasks`` can implement the protocol without loading the tests.
"""

from __future__ import annotations

import sys
from typing import Optional


def main(argv: Optional[list[str]] = None):
    """``python -m framework evaluate ...`` (see :mod:`.command`)."""
    from .command import main as run

    return run(sys.argv[2:] if argv is None else argv)


__all__ = ["main"]

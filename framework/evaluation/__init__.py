"""Is the attention right? The evaluation of attention models, for every domain, as a library of
measures over a model and a task (``python -m framework evaluate``, :mod:`framework.commands.evaluate`,
runs them on a checkpoint's test split and prints one table). The surveys' evaluations of
attention (Brauwers & Frasincar 2021, §4; the catalogue's section A), one purpose per module:

* :mod:`.measures`: the measures as functions of tensors (TVD, JS distance, Kendall's tau,
  attention correctness, alignment error rate);
* :mod:`.block_ablation`: each block's weights replaced (uniform, random, permute) or the block
  skipped (none), the task's test metrics against the plain run;
* :mod:`.faithfulness`: permutation (Jain & Wallace), erasure (Serrano & Smith) and the rank
  correlation with Captum's attributions, on the tasks' input items;
* :mod:`.intrinsic`: attention correctness and AER against gold attention (bAbI supporting
  facts, dates alignments, the digit scenes' drawn digit, graph label agreement);
* :mod:`.rollout`: attention rollout (Abnar & Zuidema) of stacked self-attention, drawn;
* :mod:`.maps`: every block's maps and their statistics (entropy, top-k mass ...) from the exact
  rows of probe queries, which large maps need (no N x N matrix), and the mass on gold keys;
* :mod:`.eraser`, :mod:`.plausibility`, :mod:`.captum_metrics`, :mod:`.graph_fidelity`: the measures
  the explainability literature reports by default (ERASER's comprehensiveness, sufficiency and
  AOPC; token F1, IOU F1 and AUPRC against gold evidence; Captum's infidelity and max-sensitivity;
  PyG's fidelity+/- and characterization), gathered by :mod:`.standard`;
* :mod:`.table`: the rows, printed, as CSV and for W&B;
* :mod:`.protocol`: what a task offers the measures, its evaluation hooks (:class:`.EvaluationHooks`,
  which :class:`framework.tasks.Task` inherits), and the types they return.

The package sits beneath the tasks: it imports no task, and a task imports of it what it
implements. Importing the package imports none of its modules.
"""

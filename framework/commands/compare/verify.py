"""``compare <the comparison's arguments> --verify CELL [--seed S]``: is a recorded figure reproducible?

The run of ``CELL`` and seed ``S`` is done again, as ``compare`` did it (a warm worker, the
same flags and thread count), into ``<comparison>/verify/<cell>/seed<S>``, and its test
metrics are set beside the recorded ones (``summary.json``), with what the two runs'
provenance records say (:mod:`framework.provenance`), part by part (:data:`PARTS`): the resolved
config's hash, the data's content key, the seed, the code's commit, the library versions, the
device, the numerics (threads, CPU instructions, precision, TF32 ...) and the blocks' backends; a
part that differs is named with the entries that changed, and a mismatch says which parts differ.

The verdict: a run recorded as deterministic (``trainer.deterministic``) and rerun so on the
same device with the same numerics must give exactly the same test metrics; otherwise each may differ by at most
``--tolerance`` (default 1e-3), which the output states. The rerun's folder is removed when it
matches and kept otherwise. A mismatch, or a rerun that fails, exits with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
from typing import Any, Optional

from ...errors import ConfigError
from ...runs import read_summary
from .comparison import Spec
from .executors import local_slots
from .pool import Pool
from .results import primary_metric
from .runner import TEST_FOLDER, RunPlan, fit_arguments, state


def recorded_threads(provenance: dict) -> Optional[int]:
    """The torch threads of a run, from its provenance's numerics, or (a record without them) its
    CPU device (``cpu (x86_64, 2 threads)``)."""
    if (provenance.get("numerics") or {}).get("threads"):
        return int(provenance["numerics"]["threads"])
    found = re.search(r"(\d+) threads", str(provenance.get("device", "")))
    return int(found.group(1)) if found else None


def verify(spec: Spec, options: argparse.Namespace) -> dict[str, Any]:
    """Rerun one run of the comparison and compare it with the record; what was found (a
    SystemExit(1) after the report when it does not match)."""
    cell = spec.cell(options.verify, "--verify")
    seed = spec.seeds[0] if options.seed is None else options.seed
    recorded = spec.run_dir(cell, seed)
    if state(recorded) != "done":
        raise ConfigError(
            f"--verify {cell.label} --seed {seed}: {recorded} holds no finished run (fit and test); "
            "run the comparison first"
        )
    fit, test = read_summary(recorded)["fit"], read_summary(recorded / TEST_FOLDER)["test"]
    folder = spec.folder / "verify" / cell.name / f"seed{seed}"
    shutil.rmtree(folder, ignore_errors=True)
    slots, threads = local_slots(1, options.threads or recorded_threads(fit.get("provenance", {})))
    plan = RunPlan(
        cell=cell.name,
        label=cell.label,
        seed=seed,
        run_dir=str(folder),
        fit_args=fit_arguments(cell.config_args, spec.run_args, cell.args),
        test_args=spec.test_args,
        test_ckpt=spec.test_ckpt,
        group=spec.name,
        threads=threads,
    )
    print(f"verify {cell.label} seed {seed}: rerunning {recorded} into {folder} ({threads} thread(s))", flush=True)
    with Pool(slots[:1], threads) as pool:
        result = pool.submit(plan).result()
    if not result.ok:
        raise ConfigError(f"--verify {cell.label} --seed {seed}: the rerun failed: {result.error} (log: {result.log})")
    found = compare(
        fit,
        test,
        read_summary(folder)["fit"],
        read_summary(folder / TEST_FOLDER)["test"],
        options.metric,
        options.tolerance,
    )
    print(report(found), flush=True)
    if found["match"]:
        shutil.rmtree(folder, ignore_errors=True)
        for empty in (folder.parent, folder.parent.parent):  # verify/<cell>/, verify/ when nothing else is there
            with contextlib.suppress(OSError):
                empty.rmdir()
        return found
    print(
        f"error: the rerun of {cell.label} seed {seed} does not give the recorded test metrics; it is kept in {folder}",
        flush=True,
    )
    raise SystemExit(1)


#: The parts of a provenance record that decide a run's numbers (:mod:`framework.provenance`), in the order shown.
PARTS = ("config_hash", "data", "seed", "code", "versions", "device", "numerics", "blocks")


def compare(
    fit: dict, test: dict, fit_again: dict, test_again: dict, metric: Optional[str], tolerance: float
) -> dict[str, Any]:
    """The recorded run (``fit``, ``test`` summaries) against its rerun: every test metric's
    difference, whether they must be equal or within ``tolerance``, and each part of the two
    provenance records (:data:`PARTS`) side by side, with the parts that differ."""
    before, after = fit.get("provenance", {}), fit_again.get("provenance", {})
    exact = (
        bool(before.get("deterministic") and after.get("deterministic"))
        and before.get("device") == after.get("device")
        and before.get("numerics") == after.get("numerics")
    )
    metrics, again = test.get("metrics", {}), test_again.get("metrics", {})
    metric = metric or primary_metric(fit.get("monitor"), list(metrics))
    differences = {name: abs(again[name] - value) for name, value in metrics.items() if name in again}
    allowed = 0.0 if exact else tolerance
    match = set(metrics) == set(again) and all(d <= allowed for d in differences.values())
    facts = {what: (before.get(what), after.get(what)) for what in PARTS}
    facts["data"] = ((before.get("data") or {}).get("content_key"), (after.get("data") or {}).get("content_key"))
    return {
        "match": match,
        "exact": exact,
        "tolerance": allowed,
        "metric": metric,
        "recorded": metrics.get(metric),
        "rerun": again.get(metric),
        "differences": differences,
        "provenance": facts,
        "differing": [what for what, (one, other) in facts.items() if one != other],
    }


def report(found: dict[str, Any]) -> str:
    """The verdict and its grounds, a few lines: a line per part of the provenance, the entries of
    a part that differ named with both values."""
    rule = (
        "deterministic on the same device and numerics: the test metrics must be equal"
        if found["exact"]
        else f"not recorded as deterministic with this device and numerics: each test metric within "
        f"{found['tolerance']:g}"
    )
    largest = max(found["differences"].values(), default=0.0)
    lines = [
        f"{'MATCH' if found['match'] else 'MISMATCH'} ({rule})",
        f"  {found['metric']}: recorded {found['recorded']!r}, rerun {found['rerun']!r}",
        f"  all {len(found['differences'])} test metrics: largest difference {largest:.3g}",
    ]
    for what, (before, after) in found["provenance"].items():
        if isinstance(before, dict) and isinstance(after, dict) and what != "code":
            changed = [
                f"{k} {before.get(k)!r} -> {after.get(k)!r}"
                for k in sorted(set(before) | set(after))
                if before.get(k) != after.get(k)
            ]
            lines.append(f"  {what}: DIFFERENT ({', '.join(changed)})" if changed else f"  {what}: same")
            continue
        shown = [_shown(what, value) for value in (before, after)]
        lines.append(
            f"  {what}: same ({shown[0]})" if before == after else f"  {what}: DIFFERENT ({shown[0]} -> {shown[1]})"
        )
    if not found["match"]:
        lines.append(
            f"  what differs: {', '.join(found['differing'])}"
            if found["differing"]
            else "  what differs: nothing recorded (the same config, data, seed, code, versions, device and "
            "numerics): a source of randomness the record does not capture"
        )
    return "\n".join(lines)


def _shown(what: str, value: Any) -> Any:
    if what == "code" and value:
        return f"{value.get('commit') or 'no commit'}{'' if value.get('clean') else ' with uncommitted changes'}"
    if what == "data" and value is None:
        return "generated data, no files: its class, arguments and seed are in the config"
    return value

"""Reading a W&B offline run's record log (``run-<id>.wandb``) without network or wandb internals.

The file is a LevelDB-style log: a 7-byte header (":W&B", magic 0xBEE1, version), then 32 KiB
blocks of records, each framed by a CRC (4 bytes), a length (2 bytes, little endian) and a
type (1 = full, 2 = first, 3 = middle, 4 = last). Each payload is a ``wandb_internal`` Record.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

from google.protobuf.message import DecodeError
from wandb.proto import wandb_internal_pb2

BLOCK = 32 * 1024
HEADER = 7


def records(path: Path) -> list[wandb_internal_pb2.Record]:
    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B record log"
    out, pending, pos = [], b"", HEADER
    while pos + HEADER <= len(data):
        if BLOCK - pos % BLOCK < HEADER:  # the rest of a block too short for a header is padding
            pos += BLOCK - pos % BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        payload = data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        if kind in (1, 2):
            pending = payload
        elif kind in (3, 4):
            pending += payload
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            out.append(record)
    return out


def _key(item) -> str:
    return item.key or "/".join(item.nested_key)


def history(path: Path) -> list[dict[str, str]]:
    """One dict per logged step: metric name -> JSON value."""
    return [
        {_key(i): i.value_json for i in r.history.item}
        for r in records(path)
        if r.WhichOneof("record_type") == "history"
    ]


def config(path: Path) -> dict[str, str]:
    """The run's config: top-level key -> JSON value (what ``wandb.init`` was given, then each update)."""
    items = {}
    for r in records(path):
        kind = r.WhichOneof("record_type")
        if kind in ("run", "config"):
            items.update({_key(i): i.value_json for i in (r.run.config if kind == "run" else r.config).update})
    items.pop("_wandb", None)
    return items


def summary(path: Path) -> dict[str, str]:
    """The run's summary as its record log last set it: key -> JSON value."""
    items = {}
    for r in records(path):
        if r.WhichOneof("record_type") == "summary":
            items.update({_key(i): i.value_json for i in r.summary.update})
    return items


def run_of(path: Path):
    """The run record (id, name, job type, group ...) of a record log."""
    return next(r.run for r in records(path) if r.WhichOneof("record_type") == "run")


def metric_summaries(path: Path) -> dict[str, list[str]]:
    """Per metric defined with ``define_metric``, which summaries it asked for (max, min, last ...)."""
    found = {}
    for r in records(path):
        if r.WhichOneof("record_type") == "metric" and r.metric.name:
            summary = r.metric.summary
            found[r.metric.name] = [
                kind for kind in ("min", "max", "mean", "best", "last") if getattr(summary, kind, False)
            ]
    return found


def _collapsed(keys: set[str]) -> set[str]:
    """Keys with a picture's or a table's parts (``<key>/_type``, ``<key>/path`` ...) as its one ``<key>``."""
    media = {key[: -len("/_type")] for key in keys if key.endswith("/_type")}
    return {next((m for m in media if key.startswith(m + "/")), key) for key in keys}


def outline(path: Path) -> dict:
    """A run's record in brief: its id, group, job type and the fit it belongs to (``fit`` in its config),
    the keys logged at each ``trainer/global_step`` and its summary's keys (a picture or a table as its one
    key, W&B's own keys and ``trainer/global_step`` left out), and its artifacts (type, aliases)."""
    run = run_of(path)
    own = {"trainer/global_step"}
    steps: dict[int, set[str]] = {}
    for row in history(path):
        keys = {key for key in _collapsed(set(row)) if not key.startswith("_")} - own
        steps.setdefault(json.loads(row["trainer/global_step"]), set()).update(keys)
    return {
        "id": run.run_id,
        "group": run.run_group,
        "job_type": run.job_type,
        "fit": json.loads(config(path).get("fit", "null")),
        "steps": steps,
        "summary": {key for key in _collapsed(set(summary(path))) if not key.startswith("_")} - own,
        "artifacts": [
            (r.artifact.type, sorted(r.artifact.aliases))
            for r in records(path)
            if r.WhichOneof("record_type") == "artifact"
        ],
    }


def written(folder: Path, within: float = 10.0) -> Path:
    """The one offline run's record log under ``folder``, once it is closed (:func:`closed`)."""
    (log,) = folder.glob("wandb/offline-run-*/run-*.wandb")
    return closed(log, within)


def closed(log: Path, within: float = 10.0) -> Path:
    """``log`` once it ends with the exit record: wandb's service writes the log's tail after ``finish()``
    has returned."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if records(log)[-1].WhichOneof("record_type") == "exit":
                return log
        except (DecodeError, IndexError):  # a record cut by the reader catching up with the writer
            pass
        time.sleep(0.1)
    raise AssertionError(f"{log} has no exit record {within:g} s after the run finished")


def as_table(outlines: dict[str, dict], leave_out: str = "attention/") -> str:
    """Runs' outlines (:func:`outline`) as a Markdown table: one row per run and step, with the keys
    logged there (those starting with ``leave_out`` counted, not named)."""
    lines = ["| run | W&B id | job type | group | fit (config) | step | keys |", "|---|---|---|---|---|---|---|"]
    for name, run in outlines.items():
        fit = f"{run['fit']['run']} @ {run['fit']['step']}" if run["fit"] else "-"
        for step, found in sorted(run["steps"].items()) or [(None, set())]:
            shown = sorted(key for key in found if not key.startswith(leave_out))
            hidden = len(found) - len(shown)
            said = ", ".join(shown) + (f" (+{hidden} {leave_out}*)" if hidden else "")
            lines.append(f"| {name} | {run['id']} | {run['job_type']} | {run['group']} | {fit} | {step} | {said} |")
    return "\n".join(lines)

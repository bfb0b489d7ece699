"""The GPU check's scheduler: independent sections as concurrent processes, each within its cap,
all within one deadline, their rows gathered into one table as they come.

A section is a :class:`Job`: a command whose output holds its rows, one per line, as
``ROW_MARK`` followed by a JSON list ``[section, item, result, figure]`` (:func:`emit` writes
them). :func:`schedule` starts jobs in the order given while their cores fit beside the running
ones (a job wider than the machine runs alone), gives each ``min(cap, time left before the
deadline)``, kills a job's whole process group when it runs past that (its row: "timed out after
N s", the rows it had already written kept), and does not start a job once less than
``min_start_s`` (10 s) is left (its row: skipped, with the reason). With ``out``, the table file is
rewritten whenever a row arrives, so a machine taken back mid-way still leaves the rows so far.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

Row = tuple[str, str, str, str]  # section, item, result (ok / FAILED / timed out / skipped ...), figure
ROW_MARK = "gpu_check row: "
#: Results that make the check fail (exit status 1).
FAILING = ("FAILED", "timed out")
#: A job is not started with less than this left before the deadline.
MIN_START_S = 10.0
POLL_S = 0.1


def emit(row: Row) -> None:
    """Write one row for the scheduler (from inside a section's process)."""
    print(ROW_MARK + json.dumps(list(row)), flush=True)


@dataclass(frozen=True)
class Job:
    """One section's process: ``command`` run with ``env`` added, ``cores`` its processes x
    threads, at most ``cap_s`` seconds."""

    name: str
    command: list[str]
    cap_s: float
    cores: int = 1
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Timing:
    """How a section ran: its wall seconds, the cap it was given and how it ended."""

    section: str
    wall_s: float
    cap_s: float
    end: str  # finished / timed out / not started / exit status N


class _Running:
    """A started job: its process, its log (stdout and stderr together) read as it grows."""

    def __init__(self, job: Job, cap_s: float, log: Path, cwd: Path) -> None:
        self.job, self.cap_s, self.log, self.start = job, cap_s, log, time.monotonic()
        self._out = open(log, "wb")
        self.process = subprocess.Popen(
            job.command,
            cwd=cwd,
            env={**os.environ, **job.env},
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: killed whole at its cap
        )
        self._reader, self._partial = open(log, "rb"), b""

    def new_rows(self) -> list[Row]:
        text = self._partial + self._reader.read()
        *lines, self._partial = text.split(b"\n")
        return [
            tuple(json.loads(line.decode(errors="replace")[len(ROW_MARK) :]))
            for line in lines
            if line.startswith(ROW_MARK.encode())
        ]

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def close(self) -> None:
        self._out.close()
        self._reader.close()

    def last_line(self) -> str:
        lines = [line for line in self.log.read_text(errors="replace").splitlines() if not line.startswith(ROW_MARK)]
        return lines[-1][:160] if lines else ""


def schedule(
    jobs: list[Job],
    budget_s: float,
    cores: int,
    logs: Path,
    out: Optional[Path] = None,
    cwd: Optional[Path] = None,
    min_start_s: float = MIN_START_S,
) -> tuple[list[Row], list[Timing]]:
    """Run ``jobs`` concurrently on ``cores`` within ``budget_s``: their rows in the jobs' order,
    and each job's :class:`Timing`. Each job's output is kept in ``logs/<name>.log``."""
    logs.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    deadline = start + budget_s
    rows: dict[str, list[Row]] = {job.name: [] for job in jobs}
    timings: dict[str, Timing] = {}
    pending, running = list(jobs), []

    def publish() -> None:
        from framework.runs import write_text_atomically  # here: a section imports this module for emit() alone

        if out is not None:
            write_text_atomically(out, table([row for job in jobs for row in rows[job.name]], list(timings.values())))

    while pending or running:
        now = time.monotonic()
        for job in list(pending):
            left = deadline - now
            if left < min_start_s:
                pending.remove(job)
                rows[job.name].append(
                    (job.name, job.name, "skipped", f"not started: {left:.0f} s of the {budget_s:.0f} s budget left")
                )
                timings[job.name] = Timing(job.name, 0.0, 0.0, "not started")
                publish()
            elif not running or sum(r.job.cores for r in running) + job.cores <= cores:
                pending.remove(job)
                running.append(_Running(job, min(job.cap_s, left), logs / f"{job.name}.log", cwd or Path.cwd()))
                _say(f"{job.name} started (cap {min(job.cap_s, left):.0f} s, {job.cores} cores)")
        for run in list(running):
            code, wall = run.process.poll(), time.monotonic() - run.start
            late = code is None and wall > run.cap_s
            if late:
                run.kill()
            new = run.new_rows()
            rows[run.job.name] += new
            if code is None and not late:
                if new:
                    publish()
                continue
            running.remove(run)
            timings[run.job.name] = _ended(run, code, wall, rows[run.job.name])
            run.close()
            _say(f"{run.job.name} {timings[run.job.name].end} in {wall:.0f} s")
            publish()
        time.sleep(POLL_S)
    publish()
    return [row for job in jobs for row in rows[job.name]], [timings[job.name] for job in jobs]


def _ended(run: _Running, code: Optional[int], wall: float, rows: list[Row]) -> Timing:
    """The job's timing, with a row added to ``rows`` when it timed out or failed without saying so."""
    if code is None:
        rows.append((run.job.name, run.job.name, "timed out", f"timed out after {run.cap_s:.0f} s (log: {run.log})"))
        return Timing(run.job.name, wall, run.cap_s, "timed out")
    if code != 0 and not any(row[2] in FAILING for row in rows):
        rows.append((run.job.name, run.job.name, "FAILED", f"exit status {code}: {run.last_line()}"))
    return Timing(run.job.name, wall, run.cap_s, "finished" if code == 0 else f"exit status {code}")


def _say(message: str) -> None:
    print(f"gpu_check: {message}", file=sys.stderr, flush=True)


def table(rows: list[Row], timings: list[Timing]) -> str:
    """The rows, then each section's wall time, as markdown."""
    lines = ["", "| section | item | result | figure |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    lines += ["", "| section | wall s | cap s | end |", "|---|---|---|---|"]
    lines += [f"| {t.section} | {t.wall_s:.0f} | {t.cap_s:.0f} | {t.end} |" for t in timings]
    failed = sum(row[2] in FAILING for row in rows)
    return "\n".join(lines + ["", f"{len(rows)} rows, {failed} failed"])

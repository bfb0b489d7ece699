"""Backends side by side: every path of every block with several, on the inputs one batch gave it.

For block b, path p and the inputs x that b got from the model on one batch::

    d output   = max |b_p(x) - b_eager(x)|                 float64, CPU, eval mode
    d gradient = max |g_p - g_eager|,  g = d<b(x), c>/d(x, parameters)   c: fixed random cotangents

then on ``device``, in the block's own dtype: the median time of a forward and backward pass
over ``repeats`` (after one warm-up, which compiles), the achieved TFLOP/s (the FLOPs that
``torch.utils.flop_counter`` counts on the eager path, over that time: the same work for
every path) and the peak memory of the pass beyond its inputs (CUDA's peak allocated memory;
on the CPU, the peak of the profiler's allocation events). A path the device or PyTorch lacks
(triton on the CPU) gets a note instead of its figures; one whose backward fails (FlexAttention
on the CPU; in torch 2.11, a compiled SDPA with a mask in float64 on the CPU, whose backward
meets a float32 mask) its output difference and the backward's error as its note.
"""

from __future__ import annotations

import contextlib
import copy
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor, nn
from torch.utils._pytree import tree_flatten, tree_map

from .backends import choose, multi_path_blocks, paths
from .base import AttentionBlock

#: The default device of the timings.
CPU = torch.device("cpu")


@dataclass
class Row:
    """One path of one block: its differences to eager, time, TFLOP/s and peak memory."""

    block: str
    kind: str
    backend: str
    output_diff: Optional[float] = None
    grad_diff: Optional[float] = None
    ms: Optional[float] = None
    tflops: Optional[float] = None
    peak_mb: Optional[float] = None
    note: str = ""


def block_inputs(model: nn.Module, run: Callable[[], Any]) -> dict[str, tuple[tuple, dict]]:
    """The (args, kwargs) of the first call of each block with several paths while ``run()`` runs
    the model, detached copies."""
    seen: dict[str, tuple[tuple, dict]] = {}
    handles = []
    for name, block in multi_path_blocks(model).items():

        def keep(module: nn.Module, args: tuple, kwargs: dict, name: str = name) -> None:
            if name not in seen:
                seen[name] = tree_map(lambda t: t.detach().clone() if isinstance(t, Tensor) else t, (args, kwargs))

        handles.append(block.register_forward_pre_hook(keep, with_kwargs=True))
    try:
        with torch.no_grad():
            run()
    finally:
        for handle in handles:
            handle.remove()
    return seen


def _moved(inputs: Any, device: torch.device, dtype: Optional[torch.dtype]) -> Any:
    """Tensors on ``device``, floating ones in ``dtype`` (None: theirs) and needing gradients."""

    def move(t: Any) -> Any:
        if not isinstance(t, Tensor):
            return t
        t = t.detach().to(device)  # a leaf of its own, whatever the stored input went through
        return (t.to(dtype) if dtype else t).requires_grad_() if t.is_floating_point() else t

    return tree_map(move, inputs)


def _copy(block: AttentionBlock, backend: str, device: torch.device, dtype: Optional[torch.dtype]) -> AttentionBlock:
    """A copy of ``block`` on ``device`` (in ``dtype``), in eval mode, set to ``backend``; a
    ValueError naming what is missing when the device lacks it."""
    block = copy.deepcopy(block).to(device)
    block = (block.to(dtype) if dtype else block).eval()
    choose(block, backend)
    missing = backend != "compiled" and block.backend_missing(backend, device)
    if missing:
        raise ValueError(missing)
    return block


def _outputs(block: AttentionBlock, inputs: tuple[tuple, dict]) -> list[Tensor]:
    """The floating tensors of the block's output for ``inputs`` = (args, kwargs)."""
    args, kwargs = inputs
    return [t for t in tree_flatten(block(*args, **kwargs))[0] if isinstance(t, Tensor) and t.is_floating_point()]


def _pass(
    block: AttentionBlock, inputs: tuple[tuple, dict], cotangents: Optional[list[Tensor]] = None
) -> tuple[list[Tensor], list[Optional[Tensor]], list[Tensor]]:
    """One forward pass and, with cotangents, the backward of <output, cotangents>: (outputs,
    gradients of the floating inputs and parameters, the cotangents used)."""
    outputs = _outputs(block, inputs)
    if cotangents is None:
        generator = torch.Generator().manual_seed(0)
        cotangents = [torch.randn(t.shape, generator=generator, dtype=torch.float64).to(t) for t in outputs]
    leaves = [t for t in tree_flatten(inputs)[0] if isinstance(t, Tensor) and t.requires_grad] + list(
        block.parameters()
    )
    for leaf in leaves:
        leaf.grad = None
    sum(
        (o * c.to(o)).sum() for o, c in zip(outputs, cotangents)
    ).backward()  # (not autograd.grad: FlopCounterMode's hooks)
    grads = [leaf.grad for leaf in leaves]
    return [o.detach() for o in outputs], grads, cotangents


def _max_diff(a: list[Optional[Tensor]], b: list[Optional[Tensor]]) -> float:
    return max(
        [float((x - y).abs().max()) for x, y in zip(a, b) if x is not None and y is not None and x.numel()], default=0.0
    )


@contextlib.contextmanager
def _native_stderr_dropped() -> Iterator[None]:
    """The process's file descriptor 2 goes to /dev/null: the profiler's C++ notes (blocks
    allocated before it began; no GPU to count on a CPU machine) are not the user's business."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _peak_cpu_mb(step: Callable[[], Any]) -> float:
    """The peak of the tensors ``step`` allocates, from the profiler's memory events."""
    from torch.profiler import ProfilerActivity, profile

    with warnings.catch_warnings(), _native_stderr_dropped():
        warnings.simplefilter("ignore")  # its notes on events before the profile began
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            step()
    events = sorted(prof.events(), key=lambda e: e.time_range.start)
    held = peak = 0
    for event in events:  # allocations of ops where they happen (self), frees as [memory] events
        held += event.cpu_memory_usage if event.name == "[memory]" else max(event.self_cpu_memory_usage, 0)
        peak = max(peak, held)
    return peak / 2**20


def _measure(
    block: AttentionBlock, inputs: tuple[tuple, dict], device: torch.device, repeats: int
) -> tuple[float, float]:
    """(median ms of a forward and backward pass, peak MB of one)."""
    outputs, _, cotangents = _pass(block, inputs)  # warm-up: compilation, autotuning, cached masks
    cotangents = [c.to(o) for c, o in zip(cotangents, outputs)]

    def step() -> None:
        _pass(block, inputs, cotangents)
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    if device.type == "cuda":
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        step()
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    else:
        peak = _peak_cpu_mb(step)
    return 1000 * statistics.median(times), peak


def _flops(block: AttentionBlock, inputs: tuple[tuple, dict], device: torch.device) -> int:
    """The FLOPs of a forward and backward pass on the eager path, counted by PyTorch."""
    from torch.utils.flop_counter import FlopCounterMode

    eager = _copy(block, "eager", device, None)
    with FlopCounterMode(display=False) as counter:
        _pass(eager, _moved(inputs, device, None))
    return counter.get_total_flops()


def _first_line(err: BaseException) -> str:
    return (str(err).splitlines() or [type(err).__name__])[0][:120]


def compare_block(
    name: str,
    block: AttentionBlock,
    inputs: tuple[tuple, dict],
    backends: Optional[list[str]] = None,
    device: torch.device = CPU,
    repeats: int = 5,
) -> list[Row]:
    """The rows of ``block``'s paths (those of ``backends`` it has; default all), eager first."""
    cpu, kind = torch.device("cpu"), type(block).__name__
    chosen = [p for p in paths(block) if backends is None or p in backends or p == "eager"]
    chosen.sort(key=lambda p: p != "eager")
    reference = _pass(_copy(block, "eager", cpu, torch.float64), _moved(inputs, cpu, torch.float64))
    flops = _flops(block, inputs, device)
    rows = []
    for backend in chosen:
        row = Row(name, kind, backend)
        notes = []
        try:
            twin, moved = _copy(block, backend, cpu, torch.float64), _moved(inputs, cpu, torch.float64)
            try:
                outputs, grads, _ = _pass(twin, moved, reference[2])
                row.grad_diff = _max_diff(grads, reference[1])
            except (NotImplementedError, RuntimeError) as err:  # no backward here: FlexAttention on the CPU,
                notes.append(f"float64 cpu backward: {_first_line(err)}")  # inductor's SDPA with a mask in float64
                with torch.no_grad():
                    outputs = _outputs(twin, moved)
            row.output_diff = _max_diff(outputs, reference[0])
        except (ValueError, NotImplementedError, RuntimeError) as err:
            notes.append(f"float64 cpu: {_first_line(err)}")
        try:
            timed = _copy(block, backend, device, None)
            row.ms, row.peak_mb = _measure(timed, _moved(inputs, device, None), device, repeats)
            row.tflops = flops / (row.ms / 1000) / 1e12
        except (ValueError, NotImplementedError, RuntimeError) as err:
            notes.append(f"{device.type}: {_first_line(err)}")
        reasons = {note.split(": ", 1)[1] for note in notes}
        row.note = reasons.pop() if len(notes) > 1 and len(reasons) == 1 else "; ".join(notes)  # the same: said once
        rows.append(row)
    return rows


def parity(
    model: nn.Module,
    run: Callable[[], Any],
    backends: Optional[list[str]] = None,
    device: torch.device = CPU,
    repeats: int = 5,
) -> list[Row]:
    """Every block with several paths, on what ``run()`` (one batch through ``model``) gave it."""
    inputs = block_inputs(model, run)
    blocks = multi_path_blocks(model)
    return [
        row
        for name, given in inputs.items()
        for row in compare_block(name, blocks[name], given, backends, device, repeats)
    ]


def format_table(rows: list[Row], device: str) -> str:
    """The rows as a text table, a line per block and path."""

    def number(value: Optional[float], spec: str) -> str:
        return "-" if value is None else format(value, spec)

    head = ("block", "class", "backend", "max|d out|", "max|d grad|", "ms", "TFLOP/s", "peak MB", "note")
    lines = [
        (
            r.block,
            r.kind,
            r.backend,
            number(r.output_diff, ".1e"),
            number(r.grad_diff, ".1e"),
            number(r.ms, ".2f"),
            number(r.tflops, ".4f"),
            number(r.peak_mb, ".1f"),
            r.note,
        )
        for r in rows
    ]
    widths = [max(len(str(line[i])) for line in [head, *lines]) for i in range(len(head))]
    text = ["  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip() for line in [head, *lines]]
    return "\n".join(
        [
            f"differences: float64 on the CPU against eager; ms, TFLOP/s (eager's FLOPs) and peak MB: "
            f"forward + backward on {device}",
            *text,
        ]
    )

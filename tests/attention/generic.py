"""The checks every registered block passes, on its case (``cases.py``): the generic tests
(``test_compile.py``, ``test_ablation.py``, ``test_blocks.py``, ``test_fully_masked.py``) run
each on every name of ``framework.attention.available()``, so a new block is swept by all of
them as soon as it is registered. Whether a block computes the right thing is for its own test against a reference
formula; these check the contract every block keeps (``framework.attention.base``).
"""

from __future__ import annotations

import copy
import inspect

import torch
from torch import Tensor, nn

from framework.attention import AttentionOutput, Record, ablation, backends, capture, info, probe_index
from tests.attention.cases import case
from tests.attention.reference import randomize_


def tensors(out: object) -> list[Tensor]:
    """The floating tensors of a block's output (a tensor, or tuples and dicts of them)."""
    if isinstance(out, Tensor):
        return [out] if out.is_floating_point() else []
    if isinstance(out, dict):
        out = out.values()
    if isinstance(out, (tuple, list)):
        return [t for part in out for t in tensors(part)]
    return []


def forward_backward(block: nn.Module, args: tuple, kwargs: dict) -> tuple[list[Tensor], list[Tensor]]:
    """Outputs, then the gradients of the floating inputs and the parameters, of one forward
    and backward (loss: the sum of the squared outputs)."""
    torch.manual_seed(0)  # the same samples for stochastic blocks (hard attention)
    args = tuple(a.detach().requires_grad_() if isinstance(a, Tensor) and a.is_floating_point() else a for a in args)
    outputs = tensors(block(*args, **kwargs))
    leaves = [a for a in args if isinstance(a, Tensor) and a.requires_grad] + list(block.parameters())
    loss = sum(out.square().sum() for out in outputs)
    return outputs, list(torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True))


def compiles_like_eager(name: str) -> None:
    """``torch.compile(block, fullgraph=True)`` traces forward and backward in one graph each
    (no graph breaks) and matches eager in outputs and in the gradients of inputs and parameters."""
    torch.manual_seed(0)
    block, args, kwargs = case(name)
    randomize_(block, scale=0.3)  # no zero gate or scale that would hide a wrong gradient
    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    got_out, got_grads = forward_backward(compiled, args, kwargs)
    want_out, want_grads = forward_backward(block, args, kwargs)
    assert len(got_out) == len(want_out) > 0
    for got, want in zip(got_out + got_grads, want_out + want_grads):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def _ablated_weights(name: str, weights: object) -> list[Tensor]:
    """The weight tensors of a record (not the affinity matrix of co-attention, not edge indices)."""
    if name in ("gat", "gatv2"):
        return []  # checked per target node in test_ablation.py
    parts = weights if isinstance(weights, (tuple, list)) else (weights,)
    if name == "parallel_co_attention":
        parts = parts[1:]
    return [p for p in parts if isinstance(p, Tensor) and p.is_floating_point()]


def ablates_to_uniform(name: str) -> None:
    """Under ``ablation(block, "uniform")`` the output changes, every recorded row of weights is
    uniform over the keys it keeps (a gate: constant), and the block is restored afterwards."""
    torch.manual_seed(0)
    block, args, kwargs = case(name)
    randomize_(block, scale=0.3).eval()
    with torch.no_grad():
        plain = block(*args, **kwargs)
        with ablation(block, "uniform") as ablated_blocks, capture(block) as maps:
            changed = block(*args, **kwargs)
    assert ablated_blocks[0] == "" and block.ablation is None, "the whole block was ablated, and is restored"
    assert not torch.allclose(tensors(plain)[0], tensors(changed)[0]), f"{name}: the ablation changed nothing"
    dim = -2 if name == "multi_dimensional" else -1
    checked = 0
    for record in (r for records in maps.values() for r in records):
        for weights in _ablated_weights(name, record.weights):
            rows = weights.movedim(dim, -1).reshape(-1, weights.shape[dim])
            for row in rows:
                kept = row[row != 0]
                if len(kept):
                    torch.testing.assert_close(kept, kept[:1].expand_as(kept), msg=f"{name}: not uniform")
                    checked += 1
    assert checked or name in ("gat", "gatv2"), f"{name}: no weights were recorded"


def records_and_returns_its_weights(name: str) -> None:
    """A capture receives one or more :class:`Record` s of floating weights and changes nothing
    in the output; ``need_weights=True`` (where the block takes it) returns an
    :class:`AttentionOutput` with weights and the same output."""
    torch.manual_seed(0)
    block, args, kwargs = case(name)
    randomize_(block, scale=0.3).eval()
    with torch.no_grad():
        torch.manual_seed(0)
        plain = tensors(block(*args, **kwargs))
        with capture(block) as maps:
            torch.manual_seed(0)
            captured = tensors(block(*args, **kwargs))
        records = [r for records in maps.values() for r in records]
        assert records and all(isinstance(r, Record) for r in records), f"{name}: a capture received no record"
        assert all(tensors(r.weights) for r in records), f"{name}: a record holds no floating weights"
        for got, want in zip(captured, plain, strict=True):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4, msg=lambda m: f"{name}: captured output: {m}")
        if "need_weights" in inspect.signature(block.forward).parameters:
            torch.manual_seed(0)
            asked = block(*args, need_weights=True, **kwargs)
            assert isinstance(asked, AttentionOutput) and tensors(asked.weights), f"{name}: need_weights=True"
            for got, want in zip(tensors(asked.output), plain, strict=True):
                torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4, msg=lambda m: f"{name}: need_weights: {m}")


def _to(value: object, device: str) -> object:
    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_to(v, device) for v in value)
    return value


def runs_on(name: str, device: str) -> None:
    """On ``device``, the block (a copy, moved) gives the CPU's outputs and gradients."""
    torch.manual_seed(0)
    block, args, kwargs = case(name)
    randomize_(block, scale=0.3).eval()
    moved = copy.deepcopy(block).to(device)
    got_out, got_grads = forward_backward(moved, _to(args, device), _to(kwargs, device))
    want_out, want_grads = forward_backward(block, args, kwargs)
    assert len(got_out) == len(want_out) > 0
    for got, want in zip(got_out + got_grads, want_out + want_grads):
        assert got.device.type == torch.device(device).type
        torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-3, msg=lambda m: f"{name} on {device}: {m}")


def probe_rows_match_the_full_map(name: str, device: str = "cpu", probes: int = 3) -> list[str]:
    """A capture with ``probes`` records, for every call of every block of the case (on
    ``device``), the rows of the probe queries equal (to 1e-5) to those of the full map that a
    capture without probes records on the CPU, zero outside their ``valid`` keys, and changes
    nothing in the output; where the block computes its rows itself, it computes no full
    weights. Returns the names of the records kept whole (weights relating no grids)."""
    torch.manual_seed(0)
    block, args, kwargs = case(name)
    randomize_(block, scale=0.3).eval()
    moved, moved_args, moved_kwargs = copy.deepcopy(block).to(device), _to(args, device), _to(kwargs, device)
    with torch.no_grad():
        torch.manual_seed(0)
        with capture(moved) as full:
            plain = tensors(moved(*moved_args, **moved_kwargs))
        torch.manual_seed(0)
        with capture(moved, probes=probes) as rows:
            own = [m for m in moved.modules() if getattr(m, "gives_probe_rows", False)]
            assert not any(m.wants_weights() for m in own), (
                f"{name}: a block that gives probe rows computes its full map"
            )
            probed = tensors(moved(*moved_args, **moved_kwargs))
    for got, want in zip(probed, plain, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4, msg=lambda m: f"{name}: probed output: {m}")
    assert set(rows) == set(full), f"{name}: the capture with probes recorded other blocks"
    modules, whole = dict(moved.named_modules()), []
    for key, records in full.items():
        assert len(rows[key]) == len(records), (
            f"{name}: {key} recorded {len(rows[key])} calls with probes, {len(records)} without"
        )
        for call, (fully, probed_record) in enumerate(zip(records, rows[key])):
            said = f"{name}: {key}, call {call + 1}"
            grid = modules.get(key, block).grid_weights(fully)
            if grid is None:
                assert probed_record.probes is None, f"{said}: probe rows of weights that relate no grids"
                whole.append(key)
                continue
            index = probe_index(fully.queries, probes)
            index = index.to(device)
            assert torch.equal(probed_record.probes, index), f"{said}: probes {probed_record.probes} != {index}"
            got = probed_record.weights
            torch.testing.assert_close(
                got, grid.index_select(-2, index), atol=1e-5, rtol=0, msg=lambda m, said=said: f"{said}: {m}"
            )
            if probed_record.valid is not None:
                assert not (got * ~probed_record.valid).any(), f"{said}: weight on a key that is not valid"
    return whole


def _masks(args: tuple, kwargs: dict) -> list[Tensor]:
    """The padding masks of a case: its boolean tensors, batch first."""
    return [value for value in (*args, *kwargs.values()) if isinstance(value, Tensor) and value.dtype == torch.bool]


def _each(value: object, change) -> object:
    """``value`` with ``change`` applied to every tensor in it (tuples, lists and dicts followed)."""
    if isinstance(value, Tensor):
        return change(value)
    if isinstance(value, dict):
        return {key: _each(part, change) for key, part in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_each(part, change) for part in value)
    return value


#: Paths the fully-masked check leaves out: ``compiled`` is the default path traced (the compile
#: tests hold it to eager), ``triton`` belongs to a block without masks (criss-cross).
NOT_MASK_PATHS = ("compiled", "triton")


def mask_backends(name: str) -> list[str]:
    """The paths of a block's case and of the blocks inside it (``framework.attention.backends``),
    but :data:`NOT_MASK_PATHS`; ``["default"]`` for a block with one path."""
    block = case(name)[0]
    found = {path for inner in backends.multi_path_blocks(block).values() for path in backends.paths(inner)}
    return sorted(found - set(NOT_MASK_PATHS)) or ["default"]


def takes_masks(name: str) -> bool:
    """Whether a block's case hands it a padding mask (sequence, pooling, cross and memory blocks)."""
    _, args, kwargs = case(name)
    return bool(_masks(args, kwargs))


def fully_masked_example(name: str, backend: str = "default", device: str = "cpu") -> None:
    """The block's case with every position of example 0 masked in every mask it takes, on
    ``backend`` (every inner block that has it) and ``device``, in float32 (where the fused
    kernels run) and float64 (where gradients can be checked):

    * outputs, the inputs' and the parameters' gradients are finite (the gradients where the
      path has a backward on the device: FlexAttention has none on the CPU), and so are the
      weights that ``need_weights=True`` returns (eager path);
    * the other examples get what they get without example 0 in the batch;
    * in float64, the gradient of example 0's outputs with respect to its inputs is the right
      one: equal to central differences (``torch.autograd.gradcheck``), so a path that keeps the
      forward finite with a ``where`` but sends NaN or garbage backward fails; and no masked
      position reaches another position of the output (:func:`_crossing`);
    * a sequence block that ends in an output projection gives example 0 its bias: a zero
      context, no gradient reaching its tokens.
    """
    for dtype in (torch.float32, torch.float64):
        _fully_masked(name, backend, device, dtype)


def _fully_masked(name: str, backend: str, device: str, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    block, args, kwargs = case(name)
    randomize_(block, scale=0.3).eval()
    batch = _masks(args, kwargs)[0].shape[0]

    def first_masked(value: Tensor) -> Tensor:
        if value.dtype == torch.bool and value.shape[0] == batch:
            value = value.clone()
            value[0] = False
        return value.to(dtype) if value.is_floating_point() else value

    block = block.to(device, dtype)
    args, kwargs = _each((args, kwargs), lambda t: first_masked(t).to(device))
    if backend != "default":
        backends.use(block, backend)
    inner = backends.multi_path_blocks(block).values()
    if any(b.backend_missing(backend, torch.device(device)) for b in inner if b.chosen_backend == backend):
        return  # the path does not run on this device at all (its own tests say so)
    backward = not any(
        b.backend_missing(backend, torch.device(device), training=True) for b in inner if b.chosen_backend == backend
    )
    said = f"{name} on {backend} ({device}, {dtype}), example 0 fully masked"

    def run(*call_args: object, **call_kwargs: object) -> list[Tensor]:
        torch.manual_seed(0)  # the same draws for the stochastic blocks
        return tensors(block(*call_args, **call_kwargs))

    if backward:
        outputs, grads = forward_backward(block, args, kwargs)
    else:
        with torch.no_grad():
            outputs, grads = run(*args, **kwargs), []
    assert outputs and all(torch.isfinite(out).all() for out in outputs), f"{said}: an output is not finite"
    assert all(torch.isfinite(grad).all() for grad in grads), f"{said}: a gradient is not finite"

    rest_args, rest_kwargs = _each((args, kwargs), lambda t: t[1:] if t.dim() and t.shape[0] == batch else t)
    with torch.no_grad():
        alone = run(*rest_args, **rest_kwargs)
    for got, want in zip(outputs, alone, strict=True):
        if got.dim() and got.shape[0] == batch:
            torch.testing.assert_close(got[1:], want, msg=lambda m: f"{said}: the other examples changed: {m}")

    projection = getattr(block, "out_proj", None) or getattr(block, "out", None)
    if info(name).kind == "sequence" and isinstance(projection, nn.Linear):
        assert torch.equal(outputs[0][0], projection.bias.expand_as(outputs[0][0])), f"{said}: not the bias"
    if backend in ("default", "eager") and "need_weights" in inspect.signature(block.forward).parameters:
        with torch.no_grad():  # the weights are the eager path's (the fused paths compute none)
            torch.manual_seed(0)
            asked = block(*args, need_weights=True, **kwargs)
        assert all(torch.isfinite(t).all() for t in tensors(asked.weights)), f"{said}: weights not finite"
        torch.testing.assert_close(tensors(asked.output)[0], outputs[0], msg=lambda m: f"{said}, need_weights: {m}")
    if not backward or dtype != torch.float64:
        return
    floating = [
        i for i, a in enumerate(args) if isinstance(a, Tensor) and a.is_floating_point() and a.shape[0] == batch
    ]

    def example_0(*firsts: Tensor) -> tuple[Tensor, ...]:
        joined = list(args)
        for i, first in zip(floating, firsts):
            joined[i] = torch.cat([first, args[i][1:]])
        return tuple(out[:1] for out in run(*joined, **kwargs) if out.dim() and out.shape[0] == batch)

    firsts = [args[i][:1].detach().clone().requires_grad_() for i in floating]
    assert torch.autograd.gradcheck(example_0, firsts, eps=1e-6, atol=1e-6, rtol=1e-4), said
    masks = [m[:1] for m in _masks(args, kwargs)]
    jacobians = torch.autograd.functional.jacobian(example_0, tuple(firsts))
    for out, per_input in zip(example_0(*firsts), jacobians):
        for first, jacobian in zip(firsts, per_input):
            for mask in (m for m in masks if first.shape[: m.dim()] == m.shape):
                flows = _crossing(jacobian, out.shape, first.shape, mask.dim())
                assert not flows.any(), f"{said}: a masked position of an input reaches another position"


def _crossing(jacobian: Tensor, out_shape: torch.Size, in_shape: torch.Size, positions: int) -> Tensor:
    """The entries of ``jacobian`` (out_shape + in_shape) through which a masked input position
    reaches another position of the output: every entry for an output without those positions (a
    pooled vector, cross-attention's queries), else those off the diagonal of the positions (an
    output of the same positions may depend on its own position's input, as a residual does)."""
    count = in_shape[:positions].numel()
    if out_shape[:positions] != in_shape[:positions]:
        return jacobian != 0
    square = jacobian.reshape(count, -1, count, in_shape[positions:].numel())
    return (square != 0) & ~torch.eye(count, dtype=torch.bool, device=jacobian.device)[:, None, :, None]


#: The generic checks of one block; ``runs_on`` also takes a device.
CHECKS = {
    "compile": compiles_like_eager,
    "ablation": ablates_to_uniform,
    "capture": records_and_returns_its_weights,
    "device": runs_on,
}

"""The Triton kernels of criss-cross against the portable path in float64: outputs, the
log-sum-exp and the three gradients, float32 (tight) and bfloat16 (loose), at tiny sizes
(one pixel wide or high included, lines longer than a block, several value channel blocks).

Triton runs kernels on CPU tensors only in its interpreter, which must be switched on before
Triton is first imported. The CPU lane therefore runs every check in one subprocess of this
module (``python -m tests.attention.test_criss_cross_triton``, TRITON_INTERPRET=1), whose
results the tests read; the CUDA lane, where a GPU is present, runs the compiled kernels in
this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import torch

pytest.importorskip("triton")

from framework.attention.feature_map import _criss_cross_triton, criss_cross_op  # noqa: E402
from framework.attention.feature_map.criss_cross import CrissCrossAttention  # noqa: E402
from tests.attention.reference import randomize_  # noqa: E402
from tools.ccnet_reference import criss_cross_einsum  # noqa: E402

pytestmark = pytest.mark.slow  # every test here trains, or runs the command line end to end

ROOT = Path(__file__).resolve().parents[2]

#: (B, C', C, H, W); the interpreter runs 16-wide blocks: lines of 17 span two, as do C = 24 channels.
SHAPES = {
    "5x7": (2, 4, 8, 5, 7),
    "1x6": (1, 4, 8, 1, 6),
    "6x1": (2, 4, 8, 6, 1),
    "1x1": (1, 3, 5, 1, 1),
    "17x2": (1, 3, 24, 17, 2),
    "2x17": (1, 5, 8, 2, 17),
}
#: Tolerances against float64, relative to the largest reference value of each tensor.
TOLERANCES = {torch.float32: 1e-5, torch.bfloat16: 6e-2, torch.float16: 1e-2}


def check_kernels(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> None:
    """Forward and backward kernels on channels-last views of one (B, H, W, 2C' + C) tensor."""
    batch, inner, channels, height, width = shape
    gen = torch.Generator().manual_seed(0)
    qkv = torch.randn(batch, height, width, 2 * inner + channels, generator=gen)
    grad = torch.randn(batch, height, width, channels, generator=gen)
    qkv, grad = qkv.to(device, dtype), grad.to(device, dtype)
    q, k, v = qkv.split([inner, inner, channels], dim=-1)
    out, lse = _criss_cross_triton.forward(q, k, v)
    got = (out, lse, *_criss_cross_triton.backward(grad, q, k, v, out, lse))

    q64, k64, v64, grad64 = (t.cpu().double() for t in (q, k, v, grad))
    out64, lse64 = criss_cross_op.portable_forward(q64, k64, v64)
    want = (out64, lse64, *criss_cross_op.portable_backward(grad64, q64, k64, v64, out64, lse64))
    for name, g, w, t in zip(("y", "lse", "dq", "dk", "dv"), got, want, (v, q, q, k, v)):
        assert g.shape == w.shape and g.dtype == (torch.float32 if name == "lse" else t.dtype), name
        tol = TOLERANCES[dtype] * max(w.abs().max().item(), 1.0)
        torch.testing.assert_close(
            g.cpu().double(), w, atol=tol, rtol=TOLERANCES[dtype], msg=lambda m, n=name: f"{n}: {m}"
        )


def check_operator(device: str) -> None:
    """The block, compiled with fullgraph=True, reaches the kernels through ``framework::criss_cross``."""
    calls = []
    forward, backward = _criss_cross_triton.forward, _criss_cross_triton.backward

    def counted(name, fn):
        return lambda *args: (calls.append(name), fn(*args))[1]

    block = randomize_(CrissCrossAttention(8, reduction=2, recurrence=2), scale=0.3).to(device)
    x = torch.randn(2, 8, 5, 7, device=device, requires_grad=True)
    _criss_cross_triton.forward, _criss_cross_triton.backward = (
        counted("forward", forward),
        counted("backward", backward),
    )
    try:
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):  # float32 1 x 1 convolutions on CUDA
            out = torch.compile(block, fullgraph=True, backend="aot_eager")(x)
            (grad,) = torch.autograd.grad(out.square().sum(), x)
    finally:
        _criss_cross_triton.forward, _criss_cross_triton.backward = forward, backward
    assert sorted(calls) == ["backward"] * 2 + ["forward"] * 2, calls

    block, x64 = block.cpu().double(), x.detach().cpu().double().requires_grad_()
    want = x64
    for _ in range(block.recurrence):
        want = want + block.gamma * criss_cross_einsum(
            block.query_conv(want), block.key_conv(want), block.value_conv(want)
        )
    (want_grad,) = torch.autograd.grad(want.square().sum(), x64)
    torch.testing.assert_close(out.cpu().double(), want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(grad.cpu().double(), want_grad, atol=1e-4, rtol=1e-4)


CHECKS = {
    f"{name}-{str(dtype)[6:]}": (check_kernels, shape, dtype)
    for name, shape in SHAPES.items()
    for dtype in (torch.float32, torch.bfloat16)
}
CHECKS["5x7-float16"] = (check_kernels, SHAPES["5x7"], torch.float16)
CHECKS["operator"] = (check_operator,)


def _run(name: str, device: str) -> None:
    fn, *args = CHECKS[name]
    fn(*args, device)


@pytest.fixture(scope="module")
def interpreted() -> dict[str, str | None]:
    """Every check on the CPU, in one interpreted subprocess: name -> None, or the failure."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", "tests.attention.test_criss_cross_triton"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(CHECKS))
def test_triton_kernels_match_the_portable_path(name, device, request):
    if device == "cpu":
        failure = request.getfixturevalue("interpreted")[name]
        assert failure is None, failure
    else:
        _run(name, device)


def _main() -> None:
    assert _criss_cross_triton.INTERPRETED, "run with TRITON_INTERPRET=1"
    results = {}
    for name in CHECKS:
        try:
            _run(name, "cpu")
            results[name] = None
        except Exception:  # reported to the test of that name
            results[name] = traceback.format_exc(limit=-3)
    print(json.dumps(results))


if __name__ == "__main__":
    _main()

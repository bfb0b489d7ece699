"""Triton kernels of the criss-cross core (``criss_cross_op``), forward and backward.

The keys of pixel (i, j) fall into two *families of lines*: its row, a line of W pixels, and its
column, a line of H pixels without the pixel itself. Within a line the problem is ordinary
attention of the line's pixels to each other, so one set of kernels serves both families: a
tensor (B, H, W, c) is read through (batch, line, position, channel) strides, (sb, sh, sw, sc)
for rows and (sb, sw, sh, sc) for columns. The joint softmax couples the families only through
each pixel's log-sum-exp.

Forward, flash-attention style (online softmax, nothing of size O(HW (H + W)) in memory), one
launch per family, programs over (query block, line, value channel block):

1. rows: y_row = softmax over the row (normalised), and lse_row (B, H, W);
2. columns: the column's online softmax (own pixel masked), merged with the row part read
   back from y: with the row sum s_r = exp(lse_row) and the column's running max m, sum l and
   weighted sum acc (both relative to exp(m)), y = (y_row s_r + acc exp(m)) / (s_r + l exp(m))
   and lse = log(s_r + l exp(m)), computed relative to max(lse_row, m).

Backward, programs over key blocks, recomputing A = exp(q.k - lse) from the saved float32 lse:
D_u = dy_u . y_u first (one kernel), then per family dv (programs over key block and value
channel block, accumulating sum_u A dy_u), and dk with dq (programs over key blocks: dA = dy.v
over all value channels, de = A (dA - D); dk accumulated in registers, dq added atomically to
a float32 buffer shared by both families). The column launches add to what the row launches
stored. Accumulation is float32 throughout; half-precision inputs give half-precision outputs.

Extra memory: lse and lse_row (B, H, W) float32 in the forward; D (B, H, W) and the float32
dq (B, H, W, c) in the backward. Float32 inputs multiply in TF32 where
``torch.backends.cuda.matmul.allow_tf32`` is set, else in plain float32 (see :func:`_precision`).
Each kernel is compiled, and autotuned among a few block sizes, per line length and value width.

With ``TRITON_INTERPRET=1`` set before Triton is imported, the kernels run on CPU tensors
(slowly: for tests), and the operator routes CPU tensors here.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor
from triton import knobs

#: Kernels interpreted on the CPU (TRITON_INTERPRET=1 when Triton was first used).
INTERPRETED = bool(knobs.runtime.interpret)
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_LOG2E = tl.constexpr(1.4426950408889634)  # the kernels work in base 2 (exp2); lse is saved in base e
_LN2 = tl.constexpr(0.6931471805599453)


def runs_on(t: Tensor) -> bool:
    """Whether the kernels handle this tensor: CUDA, or CPU when interpreted; fp32/fp16/bf16."""
    return t.dtype in _DTYPES and (t.is_cuda or (INTERPRETED and t.device.type == "cpu"))


def _configs(shapes: list[tuple[int, ...]], names: tuple[str, ...]) -> list[triton.Config]:
    """Autotuning candidates (a single small one when interpreted): (block sizes..., warps, stages)."""
    if INTERPRETED:
        shapes = [(16,) * len(names) + (1, 1)]
    return [triton.Config(dict(zip(names, s[: len(names)])), num_warps=s[-2], num_stages=s[-1]) for s in shapes]


# (block sizes, warps, stages); compiled for sm_90 at L = 97, C = 512, none spills registers in bf16.
_FORWARD_CONFIGS = _configs(
    [(64, 64, 128, 8, 2), (32, 64, 128, 4, 2), (128, 64, 64, 8, 2)], ("BLOCK_M", "BLOCK_N", "BLOCK_C")
)
_DV_CONFIGS = _configs(
    [(64, 64, 128, 8, 2), (32, 64, 128, 4, 2), (64, 64, 64, 4, 2)], ("BLOCK_N", "BLOCK_M", "BLOCK_C")
)
_DKDQ_CONFIGS = _configs(
    [(64, 64, 64, 8, 2), (64, 32, 64, 4, 2), (64, 128, 64, 8, 2)], ("BLOCK_N", "BLOCK_M", "BLOCK_C")
)


@triton.jit
def _dot(a, b, PRECISION: tl.constexpr):
    """a @ b in float32; "upcast" multiplies bfloat16 as float32 (exact products), for the
    interpreter, whose dot does not read bfloat16."""
    if PRECISION == "upcast":
        return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    return tl.dot(a, b, input_precision=PRECISION)


@triton.jit
def _probabilities(q, k, lse2, offs_m, offs_n, L, COLUMN: tl.constexpr, PRECISION: tl.constexpr):
    """A (BLOCK_M, BLOCK_N) = exp2(q.k log2(e) - lse2), 0 for padding and, in a column, the own pixel."""
    s = _dot(q, tl.trans(k), PRECISION) * _LOG2E
    valid = (offs_m[:, None] < L) & (offs_n[None, :] < L)
    if COLUMN:
        valid = valid & (offs_m[:, None] != offs_n[None, :])
    return tl.where(valid, tl.exp2(s - lse2[:, None]), 0.0)


@triton.autotune(configs=_FORWARD_CONFIGS, key=["L", "C_QK", "C_V", "COLUMN"], restore_value=["OUT"])
@triton.jit
def _forward_kernel(
    Q,
    K,
    V,
    OUT,
    LSE_IN,
    LSE_OUT,
    sqb,
    sql,
    sqp,
    sqc,
    skb,
    skl,
    skp,
    skc,
    svb,
    svl,
    svp,
    svc,
    sob,
    sol,
    sop,
    soc,
    slb,
    sll,
    slp,
    n_lines,
    C_QK,
    L: tl.constexpr,
    C_V: tl.constexpr,
    COLUMN: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    """y (query block, channel block) of one line by online softmax; columns merge with the row part."""
    pid_m, pid_line, pid_c = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, line = (pid_line // n_lines).to(tl.int64), (pid_line % n_lines).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    offs_c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    q = tl.load(
        Q + b * sqb + line * sql + offs_m[:, None] * sqp + offs_d[None, :] * sqc,
        mask=(offs_m[:, None] < L) & (offs_d[None, :] < C_QK),
        other=0.0,
    )
    m_i = tl.full([BLOCK_M], -1.0e30, tl.float32)  # running max (log2 units), finite: a column may have no key
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_C], tl.float32)
    for start in range(0, L, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        k = tl.load(
            K + b * skb + line * skl + offs_n[:, None] * skp + offs_d[None, :] * skc,
            mask=(offs_n[:, None] < L) & (offs_d[None, :] < C_QK),
            other=0.0,
        )
        s = _dot(q, tl.trans(k), PRECISION) * _LOG2E
        valid = offs_n[None, :] < L
        if COLUMN:
            valid = valid & (offs_m[:, None] != offs_n[None, :])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(
            V + b * svb + line * svl + offs_n[:, None] * svp + offs_c[None, :] * svc,
            mask=(offs_n[:, None] < L) & (offs_c[None, :] < C_V),
            other=0.0,
        )
        acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, PRECISION)
        m_i = m_new
    o_ptrs = OUT + b * sob + line * sol + offs_m[:, None] * sop + offs_c[None, :] * soc
    o_mask = (offs_m[:, None] < L) & (offs_c[None, :] < C_V)
    lse_offs = b * slb + line * sll + offs_m * slp
    if COLUMN:  # merge with the row part: its sum exp(lse_row), its normalised output in OUT
        lse_row = tl.load(LSE_IN + lse_offs, mask=offs_m < L, other=0.0) * _LOG2E
        top = tl.maximum(lse_row, m_i)
        row_scale, col_scale = tl.exp2(lse_row - top), tl.exp2(m_i - top)
        total = row_scale + l_i * col_scale
        row = tl.load(o_ptrs, mask=o_mask, other=0.0).to(tl.float32)
        out = (row * row_scale[:, None] + acc * col_scale[:, None]) / total[:, None]
        lse2 = top + tl.log2(total)
    else:
        out = acc / l_i[:, None]
        lse2 = m_i + tl.log2(l_i)
    tl.store(o_ptrs, out.to(OUT.dtype.element_ty), mask=o_mask)
    if pid_c == 0:
        tl.store(LSE_OUT + lse_offs, lse2 * _LN2, mask=offs_m < L)


@triton.jit
def _delta_kernel(DO, OUT, DELTA, P, C: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    """D = rowsum(dy * y) over the C channels of P contiguous pixels."""
    offs_p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    total = tl.zeros([BLOCK_P], tl.float32)
    for start in range(0, C, BLOCK_C):
        offs_c = start + tl.arange(0, BLOCK_C)
        offs = offs_p[:, None].to(tl.int64) * C + offs_c[None, :]
        mask = (offs_p[:, None] < P) & (offs_c[None, :] < C)
        do = tl.load(DO + offs, mask=mask, other=0.0).to(tl.float32)
        o = tl.load(OUT + offs, mask=mask, other=0.0).to(tl.float32)
        total += tl.sum(do * o, 1)
    tl.store(DELTA + offs_p, total, mask=offs_p < P)


@triton.autotune(configs=_DV_CONFIGS, key=["L", "C_QK", "C_V", "COLUMN"], restore_value=["DV"])
@triton.jit
def _dv_kernel(
    Q,
    K,
    DO,
    LSE,
    DV,
    sqb,
    sql,
    sqp,
    sqc,
    skb,
    skl,
    skp,
    skc,
    sdb,
    sdl,
    sdp,
    sdc,
    slb,
    sll,
    slp,
    svb,
    svl,
    svp,
    svc,
    n_lines,
    C_QK,
    L: tl.constexpr,
    C_V: tl.constexpr,
    COLUMN: tl.constexpr,
    ACCUMULATE: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    """dv (key block, channel block) = sum over the line's queries u of A_u,v dy_u."""
    pid_n, pid_line, pid_c = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, line = (pid_line // n_lines).to(tl.int64), (pid_line % n_lines).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    offs_c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    k = tl.load(
        K + b * skb + line * skl + offs_n[:, None] * skp + offs_d[None, :] * skc,
        mask=(offs_n[:, None] < L) & (offs_d[None, :] < C_QK),
        other=0.0,
    )
    acc = tl.zeros([BLOCK_N, BLOCK_C], tl.float32)
    for start in range(0, L, BLOCK_M):
        offs_m = start + tl.arange(0, BLOCK_M)
        q = tl.load(
            Q + b * sqb + line * sql + offs_m[:, None] * sqp + offs_d[None, :] * sqc,
            mask=(offs_m[:, None] < L) & (offs_d[None, :] < C_QK),
            other=0.0,
        )
        lse2 = tl.load(LSE + b * slb + line * sll + offs_m * slp, mask=offs_m < L, other=0.0) * _LOG2E
        p = _probabilities(q, k, lse2, offs_m, offs_n, L, COLUMN, PRECISION)
        do = tl.load(
            DO + b * sdb + line * sdl + offs_m[:, None] * sdp + offs_c[None, :] * sdc,
            mask=(offs_m[:, None] < L) & (offs_c[None, :] < C_V),
            other=0.0,
        )
        acc += _dot(tl.trans(p.to(do.dtype)), do, PRECISION)
    dv_ptrs = DV + b * svb + line * svl + offs_n[:, None] * svp + offs_c[None, :] * svc
    dv_mask = (offs_n[:, None] < L) & (offs_c[None, :] < C_V)
    if ACCUMULATE:
        acc += tl.load(dv_ptrs, mask=dv_mask, other=0.0).to(tl.float32)
    tl.store(dv_ptrs, acc.to(DV.dtype.element_ty), mask=dv_mask)


@triton.autotune(configs=_DKDQ_CONFIGS, key=["L", "C_QK", "C_V", "COLUMN"], restore_value=["DK", "DQ"])
@triton.jit
def _dkdq_kernel(
    Q,
    K,
    V,
    DO,
    LSE,
    DELTA,
    DK,
    DQ,
    sqb,
    sql,
    sqp,
    sqc,
    skb,
    skl,
    skp,
    skc,
    svb,
    svl,
    svp,
    svc,
    sdb,
    sdl,
    sdp,
    sdc,
    slb,
    sll,
    slp,
    sfb,
    sfl,
    sfp,
    sfc,
    sgb,
    sgl,
    sgp,
    sgc,
    n_lines,
    C_QK,
    L: tl.constexpr,
    C_V: tl.constexpr,
    COLUMN: tl.constexpr,
    ACCUMULATE: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    """dk (key block) = sum_u de_u,v q_u, stored; dq_u += sum_v de_u,v k_v, atomically (float32).

    Strides: sf* of DK, sg* of DQ."""
    pid_n, pid_line = tl.program_id(0), tl.program_id(1)
    b, line = (pid_line // n_lines).to(tl.int64), (pid_line % n_lines).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    k_mask = (offs_n[:, None] < L) & (offs_d[None, :] < C_QK)
    k = tl.load(K + b * skb + line * skl + offs_n[:, None] * skp + offs_d[None, :] * skc, mask=k_mask, other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    for start in range(0, L, BLOCK_M):
        offs_m = start + tl.arange(0, BLOCK_M)
        q_mask = (offs_m[:, None] < L) & (offs_d[None, :] < C_QK)
        q = tl.load(Q + b * sqb + line * sql + offs_m[:, None] * sqp + offs_d[None, :] * sqc, mask=q_mask, other=0.0)
        lse_offs = b * slb + line * sll + offs_m * slp
        lse2 = tl.load(LSE + lse_offs, mask=offs_m < L, other=0.0) * _LOG2E
        delta = tl.load(DELTA + lse_offs, mask=offs_m < L, other=0.0)
        p = _probabilities(q, k, lse2, offs_m, offs_n, L, COLUMN, PRECISION)
        dp = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for c_start in range(0, C_V, BLOCK_C):
            offs_c = c_start + tl.arange(0, BLOCK_C)
            do = tl.load(
                DO + b * sdb + line * sdl + offs_m[:, None] * sdp + offs_c[None, :] * sdc,
                mask=(offs_m[:, None] < L) & (offs_c[None, :] < C_V),
                other=0.0,
            )
            v = tl.load(
                V + b * svb + line * svl + offs_n[:, None] * svp + offs_c[None, :] * svc,
                mask=(offs_n[:, None] < L) & (offs_c[None, :] < C_V),
                other=0.0,
            )
            dp += _dot(do, tl.trans(v), PRECISION)
        ds = (p * (dp - delta[:, None])).to(q.dtype)
        dk += _dot(tl.trans(ds), q, PRECISION)
        dq = _dot(ds, k, PRECISION)
        tl.atomic_add(DQ + b * sgb + line * sgl + offs_m[:, None] * sgp + offs_d[None, :] * sgc, dq, mask=q_mask)
    dk_ptrs = DK + b * sfb + line * sfl + offs_n[:, None] * sfp + offs_d[None, :] * sfc
    if ACCUMULATE:
        dk += tl.load(dk_ptrs, mask=k_mask, other=0.0).to(tl.float32)
    tl.store(dk_ptrs, dk.to(DK.dtype.element_ty), mask=k_mask)


def _families(*tensors: Tensor) -> list[tuple[bool, list[int]]]:
    """Per family (rows, then columns): COLUMN and the (batch, line, position[, channel]) strides."""
    rows, columns = [], []
    for t in tensors:
        s = t.stride()
        rows += [s[0], s[1], s[2], *s[3:]]
        columns += [s[0], s[2], s[1], *s[3:]]
    return [(False, rows), (True, columns)]


def _lines(t: Tensor) -> list[tuple[int, int]]:
    """(n_lines, L) per family: rows are H lines of W, columns W lines of H."""
    _, height, width = t.shape[:3]
    return [(height, width), (width, height)]


def _precision(t: Tensor) -> str:
    """tl.dot's input precision. Float32 on CUDA: TF32 where PyTorch's matmuls use it
    (``torch.backends.cuda.matmul.allow_tf32``), else plain float32 ("ieee", without tensor
    cores). Not 3xTF32: on an H100 (Triton 3.6) its dq and dk were wrong by up to 90% at some
    shapes (a 17 x 2 map), where "ieee" agrees with float64 to 3e-7. Exact on the CPU (interpreter)."""
    if not t.is_cuda:
        return "upcast" if t.dtype == torch.bfloat16 else "ieee"
    if t.dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32:
        return "ieee"
    return "tf32"


def _block_d(c: int) -> int:
    return max(16, triton.next_power_of_2(c))


def forward(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """y (B, H, W, C) and lse (B, H, W) float32; inputs in any strides."""
    batch, height, width, c_v = v.shape
    out = v.new_empty(v.shape)
    lse_row, lse = (q.new_empty(q.shape[:3], dtype=torch.float32) for _ in range(2))
    families = _families(q, k, v, out, lse)
    lse_pairs = [(lse, lse_row), (lse_row, lse)]  # rows write lse_row; columns read it and write lse
    for (column, strides), (n_lines, length), (lse_in, lse_out) in zip(families, _lines(q), lse_pairs):
        grid = lambda meta, n=n_lines, L=length: (
            triton.cdiv(L, meta["BLOCK_M"]),
            batch * n,
            triton.cdiv(c_v, meta["BLOCK_C"]),
        )
        _forward_kernel[grid](
            q,
            k,
            v,
            out,
            lse_in,
            lse_out,
            *strides,
            n_lines,
            q.shape[-1],
            length,
            c_v,
            COLUMN=column,
            PRECISION=_precision(q),
            BLOCK_D=_block_d(q.shape[-1]),
        )
    return out, lse


def backward(grad: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(dq, dk, dv), contiguous, from a contiguous dy."""
    batch, height, width, c_v = v.shape
    pixels = batch * height * width
    delta = torch.empty_like(lse)
    _delta_kernel[(triton.cdiv(pixels, 64),)](grad, out.contiguous(), delta, pixels, c_v, BLOCK_P=64, BLOCK_C=64)
    dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    dk, dv = k.new_empty(k.shape), v.new_empty(v.shape)
    options = dict(PRECISION=_precision(q), BLOCK_D=_block_d(q.shape[-1]))
    dv_strides = _families(q, k, grad, lse, dv)
    dkdq_strides = _families(q, k, v, grad, lse, dk, dq)
    for (column, dv_s), (_, dkdq_s), (n_lines, length) in zip(dv_strides, dkdq_strides, _lines(q)):
        dv_grid = lambda meta, n=n_lines, L=length: (
            triton.cdiv(L, meta["BLOCK_N"]),
            batch * n,
            triton.cdiv(c_v, meta["BLOCK_C"]),
        )
        _dv_kernel[dv_grid](
            q,
            k,
            grad,
            lse,
            dv,
            *dv_s,
            n_lines,
            q.shape[-1],
            length,
            c_v,
            COLUMN=column,
            ACCUMULATE=column,
            **options,
        )
        dkdq_grid = lambda meta, n=n_lines, L=length: (triton.cdiv(L, meta["BLOCK_N"]), batch * n)
        _dkdq_kernel[dkdq_grid](
            q,
            k,
            v,
            grad,
            lse,
            delta,
            dk,
            dq,
            *dkdq_s,
            n_lines,
            q.shape[-1],
            length,
            c_v,
            COLUMN=column,
            ACCUMULATE=column,
            **options,
        )
    return dq.to(q.dtype), dk, dv

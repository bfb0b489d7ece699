"""Backends side by side (framework.attention.backends, parity): every block with several paths
gives the eager path's output and gradients on each of its other paths, in float64 on the CPU;
a chosen path that a block or the device lacks is one line naming it."""

from __future__ import annotations

import pytest
import torch

from framework.attention import available, backends, create
from framework.attention.backend_parity import compare_block
from framework.provenance import blocks_record
from tests.attention.cases import case

#: Paths a test on this CPU runs: compiled is covered by the generic compile tests, triton needs CUDA.
CPU_PATHS = ["eager", "sdpa", "linear", "portable", "flex"]


def _multi_path() -> list[str]:
    """The registered blocks with several paths (composites, such as the set blocks, have them in
    their inner blocks, which are registered themselves)."""
    return [name for name in available() if backends.paths(case(name)[0])]


MULTI_PATH = _multi_path()


def test_the_multi_path_blocks_are_found() -> None:
    assert {"mhsa", "non_local", "criss_cross", "sparse_strided", "performer", "danet", "axial"} <= set(MULTI_PATH)


@pytest.mark.parametrize("name", MULTI_PATH)
def test_every_path_gives_the_eager_output_and_gradients(name: str) -> None:
    torch.manual_seed(0)
    block, args, kwargs = case(name)
    with torch.no_grad():  # away from the identity some blocks start as (gamma = 0, a zero BatchNorm weight)
        for parameter in block.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    rows = compare_block(name, block, (args, kwargs), CPU_PATHS, repeats=1)
    assert [row.backend for row in rows] == ["eager", *(p for p in backends.paths(block) if p in CPU_PATHS[1:])]
    assert backends.paths(block)[0] in [row.backend for row in rows]  # the default path is compared
    for row in rows:
        assert row.output_diff is not None and row.output_diff < 1e-10, row
        if row.backend == "flex":  # forward only on the CPU in torch 2.11: said in the note
            assert "backward" in row.note, row
            continue
        assert row.grad_diff is not None and row.grad_diff < 1e-10, row
        assert row.ms is not None and row.ms > 0 and row.peak_mb is not None and row.peak_mb > 0, row


def test_a_chosen_path_is_used_and_recorded() -> None:
    model = torch.nn.Sequential(create("mhsa", 16, num_heads=2), create("criss_cross", 16))
    assert blocks_record(model)["0"]["backend"] == "sdpa" and blocks_record(model)["1"]["backend"] == "portable"
    assert backends.use(model, "eager") == {"0": "eager", "1": "eager"}
    assert {entry["backend"] for entry in blocks_record(model).values()} == {"eager"}
    assert backends.use(model, {"0": "sdpa"}) == {"0": "sdpa"}
    assert blocks_record(model)["0"]["backend"] == "sdpa"


def test_eager_computes_weights_and_sdpa_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    block = create("mhsa", 16, num_heads=2)
    calls = []
    monkeypatch.setattr(
        torch.nn.functional,
        "scaled_dot_product_attention",
        lambda *a, **k: calls.append(1) or torch.zeros(a[0].shape[:-1] + a[2].shape[-1:]),
    )
    x = torch.randn(2, 5, 16)
    block(x)
    assert calls == [1]
    backends.use(block, "eager")
    block(x)
    assert calls == [1]


@pytest.mark.parametrize(
    "choice, message",
    [
        (
            "triton",
            "attention backend 'triton': no block of the model has it (its blocks' paths: eager, sdpa, compiled)",
        ),
        (
            "fast",
            "attention backend 'fast': not one of eager, sdpa, linear, flex, triton, portable, compiled (or auto)",
        ),
        (
            {"head.*": "eager"},
            "attention backend for 'head.*': no block with several paths matches it (those of the model: 0)",
        ),
        ({"0": "flex"}, "attention backend 'flex': block 0 (mhsa) has sdpa, eager, compiled"),
    ],
)
def test_a_path_the_model_lacks_is_one_line(choice: object, message: str) -> None:
    model = torch.nn.Sequential(create("mhsa", 16, num_heads=2), create("se", 16))
    with pytest.raises(ValueError) as caught:
        backends.use(model, choice)
    assert str(caught.value) == message


def test_a_path_the_device_lacks_is_one_line() -> None:
    block = create("criss_cross", 16)
    backends.use(block, "triton")
    expected = (
        "attention backend 'triton' of block (the model) (criss_cross): the Triton kernels run on CUDA "
        "(and under TRITON_INTERPRET=1), not on cpu"
    )
    with pytest.raises(ValueError, match=r"^attention backend 'triton' of block \(the model\)") as caught:
        backends.check(block, torch.device("cpu"))
    assert str(caught.value) == expected
    with pytest.raises(ValueError, match="criss_cross: backend 'triton': the Triton kernels run on CUDA"):
        block(torch.randn(1, 16, 4, 4))
    torch.manual_seed(0)
    rows = compare_block("head", create("criss_cross", 16), ((torch.randn(1, 16, 4, 4),), {}), ["triton"], repeats=1)
    assert [(row.backend, row.output_diff, row.ms, row.note) for row in rows][1:] == [
        ("triton", None, None, "the Triton kernels run on CUDA (and under TRITON_INTERPRET=1), not on cpu")
    ]


def test_flex_trains_nowhere_on_the_cpu_but_runs_forward() -> None:
    block = create("sparse_strided", 16, num_heads=2, stride=3)
    backends.use(block, "flex")
    backends.check(block, torch.device("cpu"))  # forward: validate, test, predict
    with pytest.raises(ValueError) as caught:
        backends.check(block, torch.device("cpu"), training=True)
    assert str(caught.value) == (
        "attention backend 'flex' of block (the model) (sparse_strided): FlexAttention has no "
        "backward on the CPU (torch 2.11): train with sdpa or eager, or on CUDA"
    )

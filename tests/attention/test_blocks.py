"""The generic checks of every registered block (``generic.py``) that have no file of their own:
captures and ``need_weights`` agree with the plain output, and the block runs on every device.
And the sweep itself: a block of each kind, registered from a module written at test time,
gets its case from its kind alone and passes every generic check; one whose inputs its kind
does not predict fails with a message that says where to add its case."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest
import torch

from framework.attention import KINDS, available, registry
from tests.attention.cases import CASES, CaseError, case
from tests.attention.generic import CHECKS, records_and_returns_its_weights, runs_on
from tests.conftest import DEVICES

#: Devices other than the CPU that this machine has (the CPU is where the cases' numbers come from).
OTHER_DEVICES = [device for device in DEVICES if device != "cpu"]


@pytest.mark.parametrize("name", available())
def test_captures_and_need_weights_give_the_plain_output(name):
    records_and_returns_its_weights(name)


@pytest.mark.parametrize(
    "name, other_device", [(name, device) for device in OTHER_DEVICES for name in available()], ids=lambda value: value
)
def test_every_block_gives_the_cpus_numbers_on_the_device(name, other_device, monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)  # full float32 convolutions, as on the CPU
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    runs_on(name, other_device)


THROWAWAY = '''
"""Blocks of every kind, as small as the block contract allows."""

import torch
from torch import nn

from framework.attention.base import AttentionBlock
from framework.attention.registry import register


def attend(block, q, k, v, valid):
    """softmax(q k^T / sqrt(d)) v over the valid keys, recorded and ablated as blocks do."""
    e = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if valid is not None:
        e = e.masked_fill(~valid, float("-inf"))
    weights = block.ablate(e.softmax(-1), valid)
    return weights @ v, weights


@register("throwaway_sequence", kind="sequence", category="test", paper="-")
class ThrowawaySequence(AttentionBlock):
    """Tokens attend to the real tokens."""

    def __init__(self, dim):
        super().__init__()
        self.query = nn.Linear(dim, dim)

    def forward(self, x, mask=None, *, need_weights=False):
        valid = None if mask is None else mask[:, None, :]
        out, weights = attend(self, self.query(x), x, x, valid)
        return self.finish(x + out, weights, need_weights, queries=(x.shape[1],), keys=(x.shape[1],))


@register("throwaway_cross", kind="cross", category="test", paper="-")
class ThrowawayCross(AttentionBlock):
    """A query attends to the real keys."""

    def __init__(self, dim):
        super().__init__()
        self.query = nn.Linear(dim, dim)

    def forward(self, query, key, key_padding_mask=None, *, need_weights=False):
        valid = None if key_padding_mask is None else key_padding_mask[:, None, :]
        out, weights = attend(self, self.query(query), key, key, valid)
        return self.finish(out, weights, need_weights, queries=(query.shape[1],), keys=(key.shape[1],))


@register("throwaway_pooling", kind="pooling", category="test", paper="-")
class ThrowawayPooling(AttentionBlock):
    """A learned query summarises the real tokens."""

    def __init__(self, dim):
        super().__init__()
        self.query = nn.Parameter(torch.randn(1, dim))

    def forward(self, x, mask=None, *, need_weights=False):
        valid = None if mask is None else mask[:, None, :]
        out, weights = attend(self, self.query.expand(len(x), 1, -1), x, x, valid)
        return self.finish(out[:, 0], weights, need_weights, keys=(x.shape[1],))


@register("throwaway_feature_map", kind="feature_map", placement="block", category="test", paper="-")
class ThrowawayGate(AttentionBlock):
    """A channel gate from the channels' means."""

    def __init__(self, channels):
        super().__init__()
        self.gate = nn.Linear(channels, channels)

    def forward(self, x, *, need_weights=False):
        gate = self.ablate(torch.sigmoid(self.gate(x.mean((2, 3)))), normalised=False)
        return self.finish(x * gate[:, :, None, None], gate, need_weights)


@register("throwaway_graph", kind="graph", category="test", paper="-")
class ThrowawayGraph(AttentionBlock):
    """Each node attends to itself and the nodes with an edge into it, densely."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.value = nn.Linear(in_channels, out_channels)

    def forward(self, x, edge_index, *, need_weights=False):
        n = len(x)
        valid = torch.eye(n, dtype=torch.bool, device=x.device)
        valid = valid.index_put((edge_index[1], edge_index[0]), torch.ones_like(edge_index[0], dtype=torch.bool))
        out, weights = attend(self, x, x, self.value(x), valid)
        return self.finish(out, weights, need_weights, queries=(n,), keys=(n,))


@register("throwaway_memory", kind="memory", category="test", paper="-")
class ThrowawayMemory(AttentionBlock):
    """A query reads the real slots of a memory."""

    def __init__(self, dim):
        super().__init__()
        self.query = nn.Linear(dim, dim)

    def forward(self, query, memory, mask=None, *, need_weights=False):
        valid = None if mask is None else mask[:, None, :]
        out, weights = attend(self, self.query(query)[:, None], memory, memory, valid)
        return self.finish(query + out[:, 0], weights[:, 0], need_weights, keys=(memory.shape[1],))


@register("throwaway_odd_memory", kind="memory", category="test", paper="-")
class ThrowawayOddMemory(ThrowawayMemory):
    """Reads keys and values given apart: inputs the memory kind's generic case does not give."""

    def forward(self, query, keys, values, mask=None, *, need_weights=False):
        return super().forward(query, keys + values, mask, need_weights=need_weights)
'''


@pytest.fixture
def throwaway(tmp_path, monkeypatch):
    """The throwaway blocks registered from a module in a temporary folder, for one test."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # what the test registers goes with it
    path = tmp_path / "throwaway_blocks.py"
    path.write_text(textwrap.dedent(THROWAWAY))
    spec = importlib.util.spec_from_file_location("throwaway_blocks", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "throwaway_blocks", module)
    spec.loader.exec_module(module)
    return [name for name in available() if name.startswith("throwaway_")]


@pytest.mark.slow
def test_a_new_block_of_each_kind_is_swept_by_the_generic_checks(throwaway):
    fitting = [name for name in throwaway if name != "throwaway_odd_memory"]
    assert {registry.info(name).kind for name in fitting} == set(KINDS)
    for name in fitting:
        assert name not in CASES, "no case written for it"
        for check, run in CHECKS.items():
            if check == "device":
                for device in DEVICES:
                    run(name, device)
            else:
                run(name)


def test_a_block_its_kind_cannot_run_says_where_to_add_its_case(throwaway):
    assert "throwaway_odd_memory" in throwaway
    with pytest.raises(CaseError) as failure:
        case("throwaway_odd_memory")
    message = str(failure.value)
    assert message.startswith(
        "throwaway_odd_memory: the generic memory case (create('throwaway_odd_memory', 8) "
        "called with (2, 8), (2, 5, 8) and the mask by keyword) fails: TypeError: "
    )
    assert "Add its case to CASES in tests/attention/cases.py or a tests/attention/cases_<family>.py" in message

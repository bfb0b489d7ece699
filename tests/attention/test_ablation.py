"""Ablation: every block's weights can be replaced at inference, and the replacements are what
they claim (uniform over the valid keys, a random point of the simplex, a permutation of the
block's own weights; for gates a constant, random values, a shuffle)."""

from __future__ import annotations

import pytest
import torch

from framework.attention import ablation, available, blocks_in, capture, create
from framework.attention.ablation import ablated
from framework.attention.graph.gat import ablated_coefficients
from tests.attention.cases import case
from tests.attention.generic import ablates_to_uniform
from tests.attention.reference import randomize_

WEIGHTS = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.6, 0.0, 0.3]])
VALID = torch.tensor([[True, True, True, False], [True, True, False, True]])


def test_uniform_weights_are_the_unweighted_average_of_the_valid_keys():
    expected = torch.tensor([[1 / 3, 1 / 3, 1 / 3, 0.0], [1 / 3, 1 / 3, 0.0, 1 / 3]])
    torch.testing.assert_close(ablated(WEIGHTS, "uniform", VALID), expected)
    torch.testing.assert_close(ablated(WEIGHTS.T, "uniform", VALID.T, dim=0), expected.T)


def test_random_weights_are_a_point_of_the_simplex_over_the_valid_keys():
    torch.manual_seed(0)
    draws = torch.stack([ablated(WEIGHTS, "random", VALID) for _ in range(2000)])
    torch.testing.assert_close(draws.sum(-1), torch.ones(2000, 2))
    assert (draws[:, ~VALID] == 0).all() and (draws[:, VALID] > 0).all()
    torch.testing.assert_close(draws.mean(0), ablated(WEIGHTS, "uniform", VALID), atol=0.02, rtol=0)  # Dirichlet(1)


def test_permuted_weights_shuffle_each_query_among_its_valid_keys():
    torch.manual_seed(0)
    seen = set()
    for _ in range(60):
        permuted = ablated(WEIGHTS, "permute", VALID)
        assert (permuted[~VALID] == 0).all()
        for row, original in zip(permuted, WEIGHTS):
            assert sorted(row.tolist()) == sorted(original.tolist())
        seen.add(tuple(permuted[0, :3].tolist()))
    assert len(seen) == 6, "every order of the first query's three keys occurs"


def test_gates_become_a_constant_random_values_or_a_shuffle():
    gate = torch.tensor([[0.9, 0.1, 0.5, 0.3]])
    torch.testing.assert_close(ablated(gate, "uniform", normalised=False), torch.full((1, 4), 0.45))
    torch.manual_seed(0)
    random = ablated(gate, "random", normalised=False)
    assert ((random >= 0) & (random <= 1)).all() and not torch.allclose(random, gate)
    assert sorted(ablated(gate, "permute", normalised=False)[0].tolist()) == sorted(gate[0].tolist())
    with pytest.raises(ValueError, match="ablation must be one of uniform, random, permute, got 'zero'"):
        ablated(gate, "zero")


def test_graph_coefficients_are_replaced_per_target_node():
    target = torch.tensor([0, 0, 0, 1, 1, 2])
    alpha = torch.tensor([[0.7], [0.2], [0.1], [0.6], [0.4], [1.0]])
    torch.testing.assert_close(
        ablated_coefficients(target, alpha, "uniform"), torch.tensor([[1 / 3], [1 / 3], [1 / 3], [0.5], [0.5], [1.0]])
    )
    torch.manual_seed(0)
    random = ablated_coefficients(target, alpha, "random")
    torch.testing.assert_close(torch.zeros(3, 1).index_add_(0, target, random), torch.ones(3, 1))
    permuted = ablated_coefficients(target, alpha, "permute")
    assert sorted(permuted[:3, 0].tolist()) == sorted(alpha[:3, 0].tolist()) and permuted[5, 0] == 1.0


@pytest.mark.parametrize("name", available())
def test_every_block_runs_ablated_and_its_weights_are_uniform(name):
    ablates_to_uniform(name)


@pytest.mark.parametrize("name", ["mhsa", "non_local", "danet_position", "criss_cross", "memory_read", "gat"])
def test_permuted_weights_keep_each_querys_values(name):
    torch.manual_seed(0)
    block, args, kwargs = case(name)
    randomize_(block, scale=0.3).eval()
    with torch.no_grad(), capture(block) as plain:
        block(*args, **kwargs)
    with torch.no_grad(), ablation(block, "permute"), capture(block) as permuted:
        block(*args, **kwargs)
    original, shuffled = plain[name][0].weights, permuted[name][0].weights
    if name == "gat":
        (edges, original), (_, shuffled) = original, shuffled
        for node in edges[1].unique():
            incoming = edges[1] == node
            assert sorted(shuffled[incoming, 0].tolist()) == pytest.approx(sorted(original[incoming, 0].tolist()))
        return
    torch.testing.assert_close(shuffled.sort(-1).values, original.sort(-1).values)
    assert not torch.equal(shuffled, original)


def test_ablation_picks_blocks_by_pattern_and_reaches_blocks_inside_them():
    model = torch.nn.ModuleDict({"first": create("hierarchical", 8), "second": create("mhsa", 8, num_heads=2)})
    with ablation(model, "random", "first") as names:
        assert names == ["first", "first.sentences", "first.words"]
        assert model["first"].words.ablation == "random" and model["second"].ablation is None
    assert model["first"].words.ablation is None
    with pytest.raises(ValueError, match="ablation: no attention block matches"):
        with ablation(model, "uniform", "third"):
            pass


def test_blocks_in_finds_every_block_or_the_outermost_and_chooses_by_module_or_registry_name():
    model = torch.nn.ModuleDict({"set": create("isab", 8), "second": create("mhsa", 8, num_heads=2)})
    assert list(blocks_in(model)) == [
        "set",
        "set.induce",
        "set.induce.attention",
        "set.read",
        "set.read.attention",
        "second",
    ]
    assert list(blocks_in(model, outermost=True)) == ["set", "second"]
    assert list(blocks_in(model, "set.*")) == ["set.induce", "set.induce.attention", "set.read", "set.read.attention"]
    assert list(blocks_in(model, "mhsa", outermost=True)) == ["second"]
    assert list(blocks_in(model["set"], outermost=True)) == [""]  # a block is its own outermost block
    with pytest.raises(ValueError, match=r"no attention block matches \['third'\]; blocks in the model: set \(isab\)"):
        blocks_in(model, "third")

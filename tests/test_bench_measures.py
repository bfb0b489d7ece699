"""The statistics of the benchmark of the measures (tools/bench_measures.py) on hand-made numbers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import somersd, spearmanr

from tools.bench_measures import MEASURES, agreement, bootstrap, ceiling, interval, mean_sd, oriented, rank_correlations


def test_rank_correlations_by_hand_with_a_tie():
    # values 0.9, 0.5, 0.5, 0.1 against the order 4, 3, 2, 1: ranks 4, 2.5, 2.5, 1, centred
    # (1.5, 0, 0, -1.5) against (1.5, 0.5, -0.5, -1.5): rho = 4.5 / sqrt(4.5 * 5); of the 6
    # pairs, all ordered by the truth, 5 concordant and 1 tied in the values: D = 5 / 6
    rho, d = rank_correlations(np.array([0.9, 0.5, 0.5, 0.1]), np.array([4, 3, 2, 1]))
    assert rho == pytest.approx(4.5 / math.sqrt(22.5)) and d == pytest.approx(5 / 6)
    rho, d = rank_correlations(np.array([0.1, 0.2, 0.3, 0.4]), np.array([4, 3, 2, 1]))
    assert rho == pytest.approx(-1) and d == pytest.approx(-1)
    rho, d = rank_correlations(np.full(4, 0.3), np.array([4, 3, 2, 1]))
    assert math.isnan(rho) and d == 0, "equal values order nothing"


def test_rank_correlations_equal_scipy_on_rows_with_ties_in_both():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 4, (6, 12)).astype(float)  # ties within rows
    truth = np.repeat([4, 3, 2, 1], 3)  # the families' order, tied within a family
    rho, d = rank_correlations(values, truth)
    np.testing.assert_allclose(rho, [spearmanr(row, truth).statistic for row in values])
    np.testing.assert_allclose(d, [somersd(truth, row).statistic for row in values])


def test_an_infinite_value_ranks_beyond_the_finite_ones_and_ties_with_its_equal():
    with np.errstate(all="raise"):
        rho, d = rank_correlations(np.array([math.inf, 0.5, -math.inf, -math.inf]), np.array([4, 3, 2, 1]))
    # ranks 4, 3, 1.5, 1.5 against 4, 3, 2, 1: of the 6 pairs 5 concordant and 1 tied in the values
    assert d == pytest.approx(5 / 6)
    assert rho == pytest.approx(spearmanr([4, 3, 1.5, 1.5], [4, 3, 2, 1]).statistic)


def test_a_familys_mean_says_how_many_runs_were_infinite():
    assert mean_sd([0.5, None, 0.7]) == "0.600 ± 0.141"
    assert mean_sd([0.5, math.inf, 0.7]) == "0.600 ± 0.141 (1 of 3 infinite)"
    assert mean_sd([math.inf]) == "inf (1 of 1 infinite)" and mean_sd([None]) == "-"


def test_separated_families_give_one_and_rho_its_ceiling():
    found = {
        "supervised": [0.9, 0.8, 0.85],
        "plain": [0.6, 0.7, 0.65],
        "decoupled": [0.3, 0.4, 0.35],
        "random": [0.1, 0.0, 0.05],
    }
    # the truth is tied within a family, so rho stays below 1: ranks 1..12 centred against
    # (-4.5, -1.5, 1.5, 4.5) three times each: rho = 135 / sqrt(143 * 135)
    assert ceiling(3) == pytest.approx(math.sqrt(135 / 143))
    result = agreement(found, draws=200)
    assert result.d == pytest.approx(1) and result.rho == pytest.approx(math.sqrt(135 / 143)) and result.runs == 12
    assert result.d_interval == pytest.approx((1, 1)), "a resample repeats runs but never orders families otherwise"
    reversed_ = agreement({family: [-v for v in values] for family, values in found.items()}, draws=200)
    assert reversed_.d == pytest.approx(-1) and reversed_.d_interval == pytest.approx((-1, -1))
    same = agreement({family: [1.0, 2.0, 3.0] for family in found}, draws=200)
    assert same.d == pytest.approx(0) and same.rho == pytest.approx(0), "no family ahead of another"


def test_the_bootstrap_draws_each_familys_runs_with_replacement():
    # 2 runs per family: each family's resample is one of 4 equally likely ordered pairs, so
    # the bootstrap's distribution of D is the one over the 4^4 = 256 combinations
    found = {"supervised": [0.9, 0.2], "plain": [0.7, 0.5], "decoupled": [0.6, 0.1], "random": [0.3, 0.4]}
    truth = np.repeat([4, 3, 2, 1], 2)
    exact: dict[float, float] = {}
    for picks in itertools.product(itertools.product(range(2), repeat=2), repeat=4):
        sample = [values[i] for values, pick in zip(found.values(), picks) for i in pick]
        d = round(float(rank_correlations(np.array(sample), truth)[1]), 6)
        exact[d] = exact.get(d, 0) + 1 / 256
    drawn = np.round(bootstrap(found, draws=40000, seed=1), 6)
    assert drawn.shape == (40000,) and set(np.unique(drawn)) <= set(exact)
    for value, probability in exact.items():
        assert np.mean(drawn == value) == pytest.approx(probability, abs=0.01), value
    # the point estimate: of the 24 pairs across families, 16 concordant and 8 discordant
    assert agreement(found, draws=10).d == pytest.approx(8 / 24)


def test_the_interval_is_the_percentile_interval_without_nans():
    drawn = np.concatenate([np.arange(1, 101, dtype=float), [math.nan] * 5])
    low, high = interval(drawn)
    assert (low, high) == pytest.approx(tuple(np.percentile(np.arange(1, 101), [2.5, 97.5])))
    assert all(math.isnan(b) for b in interval(np.array([math.nan])))


def test_a_family_without_values_gives_no_correlation():
    result = agreement(
        {
            "supervised": [0.9, 0.8, 0.7],
            "plain": [None, None, None],
            "decoupled": [0.1, 0.2, 0.3],
            "random": [0.0, 0.1, 0.2],
        },
        draws=50,
    )
    assert math.isnan(result.rho) and math.isnan(result.d) and math.isnan(result.d_interval[0])
    assert result.runs == 9


def test_the_measures_are_read_off_a_table_and_oriented():
    rows = [
        {"test": "test", "block": "-", "setting": "plain", "measure": "test/acc", "value": "0.9", "baseline": ""},
        {
            "test": "ablation",
            "block": "a",
            "setting": "uniform",
            "measure": "test/acc",
            "value": "0.5",
            "baseline": "0.9",
        },
        {
            "test": "ablation",
            "block": "all",
            "setting": "uniform",
            "measure": "test/acc",
            "value": "0.2",
            "baseline": "0.9",
        },
        {
            "test": "intrinsic",
            "block": "hop1",
            "setting": "all",
            "measure": "attention correctness",
            "value": "0.6",
            "baseline": "0.2",
        },
        {
            "test": "intrinsic",
            "block": "hop2",
            "setting": "all",
            "measure": "attention correctness",
            "value": "0.8",
            "baseline": "0.2",
        },
        {
            "test": "eraser",
            "block": "a",
            "setting": "AOPC over 1%, 64 examples",
            "measure": "AOPC sufficiency",
            "value": "0.25",
            "baseline": "0.7",
        },
        {
            "test": "infidelity",
            "block": "a",
            "setting": "gradient_x_input, 5 erasures",
            "measure": "infidelity",
            "value": "0.01",
            "baseline": "",
        },
        {
            "test": "infidelity",
            "block": "a",
            "setting": "attention, 5 erasures",
            "measure": "infidelity",
            "value": "0.08",
            "baseline": "",
        },
    ]
    found = oriented(rows)
    assert set(found) == {m.name for m in MEASURES}
    assert found["ablation: test metric drop, uniform weights"] == pytest.approx(0.7), "all blocks at once"
    assert found["attention correctness (gold mass)"] == pytest.approx(0.7), "the mean over the hops"
    assert found["ERASER AOPC sufficiency (lower)"] == pytest.approx(-0.25), "lower is more faithful: negated"
    assert found["Captum infidelity (lower)"] == pytest.approx(-0.08), "the attention's row, negated"
    assert found["permutation: median output TVD"] is None

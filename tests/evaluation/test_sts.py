import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from bertsent.data.sts import SentencePairs, STSDataset
from bertsent.evaluation import aggregate, cosine_rows, evaluate_sts, spearman_x100


def toy_dataset():
    # Two subsets: in "a" the similarity ranks the pairs perfectly, in "b" exactly backwards.
    a = SentencePairs(["a1", "a2", "a3"], ["x", "x", "x"], np.array([1.0, 2.0, 3.0]))
    b = SentencePairs(["b1", "b2", "b3", "b4"], ["x"] * 4, np.array([4.0, 3.0, 2.0, 1.0]))
    return STSDataset("toy", "test", {"a": a, "b": b})


SIMILARITY = {"a1": 0.1, "a2": 0.2, "a3": 0.3, "b1": 0.4, "b2": 0.5, "b3": 0.6, "b4": 0.7}


def test_both_aggregations_on_a_toy_case():
    scores = evaluate_sts(toy_dataset(), lambda first, _: np.array([SIMILARITY[s] for s in first]))
    assert scores.subsets == {"a": 100.0, "b": -100.0}
    # wmean: (3 * 100 + 4 * -100) / 7
    assert math.isclose(scores["wmean"], -100 / 7)
    # all: one Spearman over the seven concatenated pairs
    predicted = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    gold = [1, 2, 3, 4, 3, 2, 1]
    assert math.isclose(scores["all"], spearmanr(predicted, gold).statistic * 100)
    assert scores["all"] != scores["wmean"]


def test_constant_similarity_is_undefined_not_zero():
    assert math.isnan(spearman_x100(np.full(5, 0.3), np.arange(5)))
    # a tiny but real variation is a ranking, not an undefined score
    assert math.isclose(spearman_x100(0.3 + 1e-8 * np.arange(5), np.arange(5)), 100.0)
    scores = evaluate_sts(toy_dataset(), lambda first, _: np.ones(len(first)))
    assert math.isnan(scores["all"]) and math.isnan(scores["wmean"])


def test_aggregate_weights_by_size():
    assert aggregate({"x": 10.0, "y": 40.0}, {"x": 3, "y": 1}, 0.0)["wmean"] == 17.5


def test_cosine_rows():
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    b = np.array([[0.0, 2.0], [2.0, 2.0], [1.0, 0.0]])
    assert np.allclose(cosine_rows(a, b), [0.0, 1.0, 0.0])


def test_paired_bootstrap_se_matches_a_brute_force_loop():
    from bertsent.evaluation.sts import paired_bootstrap_se

    rng = np.random.default_rng(3)
    gold = rng.normal(size=400)
    a, b = gold + rng.normal(size=400), gold + 2 * rng.normal(size=400)
    draws = np.random.default_rng(0)  # the function's own draws, replayed one resample at a time
    loop = []
    for start in range(0, 300, 100):
        for row in draws.integers(0, 400, size=(100, 400)):
            loop.append(spearmanr(a[row], gold[row]).statistic - spearmanr(b[row], gold[row]).statistic)
    assert math.isclose(paired_bootstrap_se(gold, a, b, resamples=300, seed=0), 100 * np.std(loop, ddof=1), rel_tol=1e-9)


def test_paired_bootstrap_pairs_the_readouts():
    from bertsent.evaluation.sts import paired_bootstrap_se

    rng = np.random.default_rng(4)
    gold = rng.normal(size=300)
    noisy = gold + rng.normal(size=300)
    assert paired_bootstrap_se(gold, noisy, noisy) == 0.0  # same readout: the difference never moves
    # a readout and a monotone transform of it rank every draw alike: paired, they never differ
    assert paired_bootstrap_se(gold, noisy, np.exp(noisy)) == 0.0
    with pytest.raises(ValueError, match="same pairs"):
        paired_bootstrap_se(gold, noisy, noisy[:-1])


def test_average_difference_se_adds_independent_sets_in_quadrature():
    from bertsent.evaluation.sts import average_difference_se

    assert math.isclose(average_difference_se([3.0, 4.0]), 2.5)  # sqrt(9 + 16) / 2


def test_docstring_examples_run():
    import doctest

    import bertsent.evaluation.sts as sts

    assert doctest.testmod(sts).failed == 0

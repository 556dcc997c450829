"""GLUE scores beside the majority-class classifier."""
import numpy as np
import pandas as pd
import pytest

from bertsent.data.glue import load_glue
from bertsent.evaluation.glue import (decision_diagnosis, format_glue_cell, majority_class_scores,
                                     mark_majority_class)


def test_majority_class_scores_by_hand():
    train, dev = load_glue("MRPC", "train"), load_glue("MRPC", "dev")
    majority = train["label"].value_counts().idxmax()
    assert majority_class_scores("MRPC")["accuracy"] == pytest.approx(100 * (dev["label"] == majority).mean())
    assert majority_class_scores("CoLA") == {"mcc": 0.0}


def test_a_cell_at_the_majority_class_is_marked():
    floor = majority_class_scores("RTE")["accuracy"]
    table = pd.DataFrame({"task": ["RTE", "RTE", "CoLA"], "accuracy": [floor, floor + 1.1, None],
                          "mcc": [None, None, 0.0]})
    assert list(mark_majority_class(table)["at_majority_class"]) == [True, False, True]
    assert format_glue_cell(floor, True) == f"{floor:.1f} (majority class)"
    assert format_glue_cell(55.0, False) == "55.0"


def test_the_floor_of_a_dev_subsample_is_that_subsample_s():
    from bertsent.training.glue import dev_subset

    train, dev = load_glue("RTE", "train"), dev_subset(load_glue("RTE", "dev"), 32)
    majority = train["label"].value_counts().idxmax()
    by_hand = 100 * (dev["label"] == majority).mean()
    assert majority_class_scores("RTE", dev_examples=32)["accuracy"] == pytest.approx(by_hand)
    assert by_hand != pytest.approx(majority_class_scores("RTE")["accuracy"])  # the subsample's floor differs
    table = pd.DataFrame({"task": ["RTE", "RTE"], "accuracy": [by_hand, by_hand], "dev_examples": [32, 277]})
    assert list(mark_majority_class(table)["at_majority_class"]) == [True, False]


def test_a_misplaced_threshold_is_told_apart_from_lost_classes():
    """Both models predict class 1 everywhere (the majority class's score); one ranks the classes perfectly."""
    labels = np.array([0] * 3 + [1] * 7)
    misplaced = np.stack([np.zeros(10), np.where(labels == 1, 3.0, 0.5)], axis=1)
    lost = np.stack([np.zeros(10), np.full(10, 1.0)], axis=1)
    for logits in (misplaced, lost):
        diagnosis = decision_diagnosis("RTE", labels, logits)
        assert diagnosis["score"] == pytest.approx(70.0) and diagnosis["predicted_share"] == [0.0, 1.0]
    ranked, flat = decision_diagnosis("RTE", labels, misplaced), decision_diagnosis("RTE", labels, lost)
    assert ranked["auc"] == 1.0 and ranked["best_threshold_score"] == pytest.approx(100.0)
    assert flat["auc"] == 0.5 and flat["best_threshold_score"] == pytest.approx(70.0)  # tied margins: one side
    p1 = 1 / (1 + np.exp(-0.5))  # the misplaced model's class-0 examples: just over the boundary
    assert ranked["probability_of_class_1"]["0"] == pytest.approx(p1)
    assert ranked["cross_entropy"]["0"] == pytest.approx(-np.log(1 - p1))
    assert decision_diagnosis("CoLA", labels, misplaced)["best_threshold_score"] == pytest.approx(100.0)


@pytest.mark.parametrize("task, metric", [("RTE", "accuracy"), ("CoLA", "mcc")])
def test_the_best_threshold_score_is_the_best_over_every_cut(task, metric):
    from bertsent.training.glue import glue_metrics

    generator = np.random.default_rng(0)
    labels = generator.integers(0, 2, 60)
    logits = np.stack([np.zeros(60), np.round(labels + generator.normal(0, 1.2, 60), 1)], axis=1)  # with ties
    margin = logits[:, 1]
    by_hand = max(glue_metrics(task, labels, (margin > cut).astype(int))[metric]
                  for cut in np.concatenate([np.unique(margin), [margin.min() - 1]]))
    assert decision_diagnosis(task, labels, logits)["best_threshold_score"] == pytest.approx(by_hand)


def test_a_diagnosis_needs_two_class_logits():
    with pytest.raises(ValueError, match="two-class"):
        decision_diagnosis("RTE", [0, 1], np.zeros((2, 3)))

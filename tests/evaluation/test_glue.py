"""GLUE scores beside the majority-class classifier."""
import pandas as pd
import pytest

from bertsent.data.glue import load_glue
from bertsent.evaluation.glue import format_glue_cell, majority_class_scores, mark_majority_class


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

"""BERT's pre-training ablations in miniature (``bertsent.experiments.bert_ablations``): rows and claims."""
import pytest


def test_ablation_rows_share_everything_but_size_and_objective():
    from dataclasses import asdict

    from bertsent.experiments.bert_ablations import ablation_config

    a, b = asdict(ablation_config("tiny", "mlm_nsp", 265)), asdict(ablation_config("mini", "ltr", 265))
    assert {k for k in a if a[k] != b[k]} == {"size", "objective"}
    assert a["max_steps"] == 265 and a["eval_every"] == 53


def test_glue_claims_are_read_against_the_dev_set_noise():
    import pandas as pd

    from bertsent.experiments.bert_ablations import compare_rows, glue_scores
    from bertsent.report.claims import CLAIM_COLUMNS, dev_set_noise

    searches = pd.DataFrame([
        {"model": "big", "task": "RTE", "accuracy": 70.0, "dev_examples": 277, "chosen": True},
        {"model": "big", "task": "RTE", "accuracy": 60.0, "dev_examples": 277, "chosen": False},
        {"model": "small", "task": "RTE", "accuracy": 55.0, "dev_examples": 277, "chosen": True},
        {"model": "big", "task": "SST-2", "accuracy": 80.0, "dev_examples": 872, "chosen": True},
        {"model": "small", "task": "SST-2", "accuracy": 79.0, "dev_examples": 872, "chosen": True},
    ])
    scores = glue_scores(searches)
    assert scores.loc["big", "RTE"] == 70.0 and scores.loc["big", "glue"] == 75.0  # the chosen run only
    # two standard errors of a difference of two accuracies near 62.5% on 277 examples
    # no seeds: the normal quantile, 1.96
    assert dev_set_noise(277, 62.5).tolerance == pytest.approx(100 * 1.959964 * (2 * 0.625 * 0.375 / 277) ** 0.5)
    checks = compare_rows(scores, searches, "big", "small")
    assert list(checks.columns) == ["claim", "task", "score", "compared_with", *CLAIM_COLUMNS[1:]]
    checks = checks.set_index("task")
    assert checks.loc["RTE", "tolerance"] == pytest.approx(dev_set_noise(277, 62.5).tolerance)
    assert checks.loc["RTE", "verdict"] == "reproduced"        # 15 points > 8.2, the paper's direction
    assert checks.loc["SST-2", "verdict"] == "within noise"    # 1 point < 3.9
    assert checks.loc["RTE", "our_effect"] == 15.0
    assert checks["paper_effect"].isna().all() and checks["ratio"].isna().all()  # a direction without a number
    assert "277 dev examples" in checks.loc["RTE", "noise_source"]
    reverse = compare_rows(scores, searches, "small", "big").set_index("task")
    assert reverse.loc["RTE", "verdict"] == "not reproduced"


def test_both_runs_at_the_majority_class_are_judged_at_floor():
    import pandas as pd

    from bertsent.experiments.bert_ablations import compare_rows, glue_scores

    searches = pd.DataFrame([
        {"model": "big", "task": "MRPC", "accuracy": 68.38, "dev_examples": 408, "chosen": True, "at_majority_class": True},
        {"model": "small", "task": "MRPC", "accuracy": 31.62, "dev_examples": 408, "chosen": True, "at_majority_class": True},
        {"model": "big", "task": "RTE", "accuracy": 70.0, "dev_examples": 277, "chosen": True, "at_majority_class": False},
        {"model": "small", "task": "RTE", "accuracy": 52.71, "dev_examples": 277, "chosen": True, "at_majority_class": True},
    ])
    checks = compare_rows(glue_scores(searches), searches, "big", "small").set_index("task")
    assert checks.loc["MRPC", "verdict"] == "at floor"  # 36.76 points between two constant predictors: no learning
    assert checks.loc["MRPC", "noise_source"].startswith("both sides at the majority class")
    # only the worse side at the floor: a clear win, but over a constant predictor
    assert checks.loc["RTE", "verdict"] == "against a floor"
    assert checks.loc["RTE", "noise_source"].startswith("the side claimed worse at the majority class")
    reverse = compare_rows(glue_scores(searches), searches, "small", "big").set_index("task")
    assert reverse.loc["RTE", "verdict"] == "not reproduced"  # the side at the floor is the claimed winner


def test_run_label_names_size_and_objective():
    from bertsent.experiments.bert_ablations import run_label

    assert run_label("tiny", "mlm_nsp") == "tiny mlm_nsp"


def test_seeded_glue_claims_weigh_the_seed_spread_with_t_and_the_dev_set():
    import pandas as pd

    from bertsent.experiments.bert_ablations import compare_seeded
    from bertsent.report.claims import Side, binomial_evaluation, seed_noise

    rows = [{"model": "big", "task": "RTE", "accuracy": a, "dev_examples": 277, "at_majority_class": False}
            for a in (60.0, 62.0, 64.0)]
    rows += [{"model": "small", "task": "RTE", "accuracy": a, "dev_examples": 277, "at_majority_class": False}
             for a in (55.0, 56.0, 57.0)]
    rows += [{"model": m, "task": "MRPC", "accuracy": 68.38, "dev_examples": 408, "at_majority_class": True}
             for m in ("big", "small") for _ in range(2)]
    claims = compare_seeded(pd.DataFrame(rows), "big", "small").set_index("task")
    expected = seed_noise(Side(2.0, 3), Side(1.0, 3), evaluation=binomial_evaluation(277, 59.0)).tolerance
    assert claims.loc["RTE", "our_effect"] == pytest.approx(6.0)
    assert claims.loc["RTE", "tolerance"] == pytest.approx(expected)
    assert expected > 1.96 * (4 / 3 + 1 / 3) ** 0.5  # the t quantile at about 3 df, not the normal one
    # RTE's 277 dev examples alone give a standard error of about 4.2 points: 6 points is within the noise
    assert 12 < expected < 16 and claims.loc["RTE", "verdict"] == "within noise"
    assert claims.loc["RTE", "seeds"] == "3 vs 3" and claims.loc["RTE", "score_sd"] == pytest.approx(2.0)
    assert claims.loc["MRPC", "verdict"] == "at floor"  # every seed of both sides predicts one class

"""SG / SG-OPT experiments (``bertsent.experiments.self_guided``): verdicts, claims, ablations and the tables."""
import pandas as pd
import pytest

from bertsent.experiments import self_guided
from bertsent.experiments.self_guided import claim_checks, verdict
from bertsent.training import SelfGuidedConfig


def test_verdict():
    assert verdict(2.0, 10.0) == "reproduced"
    assert verdict(-2.0, 10.0) == "not reproduced"
    assert verdict(0.3, 10.0) == "inconclusive"
    assert verdict(-0.3, -1.0) == "inconclusive"
    assert verdict(-1.0, -1.0) == "reproduced"


def test_claim_checks_compare_differences_not_levels():
    ours = pd.Series({"sg_opt": 78.0, "cls": 74.0, "mean": 79.0})
    paper = pd.Series({"sg_opt": 74.62, "cls": 31.40, "mean": 52.57})
    table = claim_checks(ours, paper, [("sg_opt", "cls"), ("sg_opt", "mean"), ("sg_opt", "sg")])
    assert table["verdict"].tolist() == ["reproduced", "not reproduced"]  # the claim with a missing row is skipped
    assert table["ours"].tolist() == [4.0, -1.0]


def test_seed_mean_table_averages_each_seed_then_the_seeds():
    from bertsent.experiments.self_guided import averages_for_claims, seed_mean_table

    datasets = ["stsb", "sickr", "sts12", "sts13", "sts14", "sts15", "sts16"]
    rows = []
    for method, data, seed, base in [("cls", "-", "-", 50.0), ("whitening", "stsb_all", "-", 60.0),
                                     ("sg_opt", "stsb_all", 1, 70.0), ("sg_opt", "stsb_all", 2, 72.0),
                                     ("sg_opt", "stsb_train", 1, 65.0)]:
        for k, dataset in enumerate(datasets):
            rows.append(("m", method, data, seed, dataset, "all", base + k))
            rows.append(("m", method, data, seed, dataset, "wmean", 0.0))
    scores = pd.DataFrame(rows, columns=["backbone", "method", "train_data", "seed", "dataset", "aggregation", "spearman"])
    table = seed_mean_table(scores, "all", datasets)
    assert table.loc[("m", "sg_opt", "stsb_all"), "seeds"] == 2
    assert table.loc[("m", "sg_opt", "stsb_all"), "stsb"] == pytest.approx(71.0)
    assert table.loc[("m", "sg_opt", "stsb_all"), "avg"] == pytest.approx(74.0)  # (70+72)/2 + mean(0..6)
    assert table.loc[("m", "cls", "-"), "avg"] == pytest.approx(53.0)
    averages = averages_for_claims(table, "m", "stsb_train")
    assert averages.to_dict() == pytest.approx({"cls": 53.0, "whitening": 63.0, "sg_opt": 68.0})


STS_SEVEN = ["stsb", "sickr", "sts12", "sts13", "sts14", "sts15", "sts16"]


def _ablation_scores(averages: dict[tuple[str, int], float]) -> pd.DataFrame:
    """Per-seed rows whose seven-set average is the given value (datasets spread around it)."""
    rows = []
    for (variant, seed), average in averages.items():
        for k, dataset in enumerate(STS_SEVEN):
            rows.append(("b", variant, "stsb_train", seed, dataset, "all", average + k - 3))
            rows.append(("b", variant, "stsb_train", seed, dataset, "wmean", 0.0))
    return pd.DataFrame(rows, columns=["backbone", "variant", "train_data", "seed", "dataset", "aggregation", "spearman"])


def test_ablation_table_reads_changes_against_the_seed_spread():
    from bertsent.experiments.self_guided import ablation_table

    scores = _ablation_scores({("sg_opt", 1): 70.0, ("sg_opt", 2): 71.0, ("sg_opt", 3): 72.0,
                               ("opt1", 1): 67.0, ("lambda_0", 1): 70.0, ("tau_0.1", 1): 75.0,
                               ("mean_views", 1): 60.0})
    table = ablation_table(scores).set_index("variant")
    assert table.loc["sg_opt", "avg"] == pytest.approx(71.0) and table.loc["sg_opt", "seeds"] == 3
    assert table.loc["sg_opt", "std"] == pytest.approx(1.0)
    assert table.loc["opt1", "change"] == pytest.approx(-4.0)
    # tolerance: two standard deviations of SG-OPT over its seeds (2.0 points here)
    assert table.loc["opt1", "verdict"] == "reproduced"       # 4 points worse, as the paper's -2.01
    assert table.loc["lambda_0", "verdict"] == "inconclusive"  # -1.0 is within the spread
    assert table.loc["tau_0.1", "verdict"] == "not reproduced"  # better, the paper says worse
    assert table.loc["mean_views", "verdict"] == "-"           # the paper has no such row
    assert table.loc["opt1", "paper_change"] == pytest.approx(-2.01)


def test_ablation_configs_change_one_thing():
    from dataclasses import asdict

    from bertsent.experiments.self_guided import ABLATIONS, ablation_config

    reference = asdict(ablation_config("sg_opt", seed=3))
    assert reference == asdict(SelfGuidedConfig(seed=3))
    for variant in ABLATIONS:
        changed = {k for k, v in asdict(ablation_config(variant, seed=3)).items() if reference[k] != v}
        assert len(changed) == (variant != "sg_opt"), variant
    with pytest.raises(ValueError, match="Unknown ablation"):
        ablation_config("no_such_variant", seed=1)


def test_domain_changes_are_source_minus_reference_per_backbone_and_method():
    rows = []
    for method, base in (("sg_opt", 50.0), ("whitening", 60.0)):
        for train_data, shift in (("stsb_all", 0.0), ("snli", -3.0)):
            seeds = [1, 2] if method == "sg_opt" else ["-"]
            for seed in seeds:
                for i, dataset in enumerate(["stsb", "sickr", "sts12", "sts13", "sts14", "sts15", "sts16"]):
                    noise = 1.0 if seed == 1 else -1.0 if seed == 2 else 0.0
                    rows.append({"backbone": "b", "method": method, "train_data": train_data, "seed": seed,
                                 "dataset": dataset, "aggregation": "all", "spearman": base + shift + i + noise})
    # a method seen on one training set only has no change to report
    rows.append({"backbone": "b", "method": "sg", "train_data": "snli", "seed": 1, "dataset": "stsb",
                 "aggregation": "all", "spearman": 1.0})
    table = self_guided.domain_table(pd.DataFrame(rows))
    assert table.loc[("b", "sg_opt", "stsb_all"), "stsb"] == pytest.approx(50.0)  # seeds +-1 cancel
    assert table.loc[("b", "whitening", "snli"), "avg"] == pytest.approx(57.0 + 3.0)
    paper = pd.DataFrame({"stsb": [-1.83, -12.16], "avg": [-1.63, -4.19]}, index=["sg_opt", "whitening"])
    changes = self_guided.domain_changes(table, paper).set_index(["method", "score"])
    assert set(changes.index.get_level_values("method")) == {"sg_opt", "whitening"}
    assert changes.loc[("sg_opt", "avg"), "change"] == pytest.approx(-3.0)
    assert changes.loc[("whitening", "stsb"), "paper_change"] == pytest.approx(-12.16)

"""SG / SG-OPT experiments (``bertsent.experiments.self_guided``): verdicts, claims, ablations and the tables."""
import math

import numpy as np
import pandas as pd
import pytest

from bertsent.experiments import self_guided
from bertsent.report.claims import CLAIM_COLUMNS, NO_CLAIM, Spread, t_quantile
from bertsent.training import SelfGuidedConfig


@pytest.fixture(autouse=True)
def _seed_noise_only(monkeypatch):
    """The hand-made scores below check the seed part of the tolerance; the test sets' own part is checked on its
    own (test_sts_tolerances_carry_the_test_sets_noise), so here the test-set sizes are unknown."""
    monkeypatch.setattr(self_guided, "sts_test_pairs", lambda data_dir=None: {})


def test_sts_tolerances_carry_the_test_sets_noise(monkeypatch):
    from bertsent.report.claims import correlation_evaluation

    sizes = {name: 1000 + 100 * k for k, name in enumerate(["stsb", "sickr", "sts12", "sts13", "sts14", "sts15",
                                                           "sts16"])}
    monkeypatch.setattr(self_guided, "sts_test_pairs", lambda data_dir=None: sizes)
    scores = _sts_scores({("cls", "-", "-"): 74.0, ("sg_opt", "stsb_train", 1): 78.0,
                          ("sg_opt", "stsb_train", 2): 78.4, ("sg_opt", "stsb_train", 3): 77.6})
    paper = pd.Series({"sg_opt": 74.62, "cls": 31.40})
    row = self_guided.sts_claims(scores, paper, [("sg_opt", "cls")], ["stsb_train"]).iloc[0]
    # per set: the Fisher SE of two correlations at the two rows' mean on that set's pairs; averaged over the seven
    per_set = [correlation_evaluation(sizes[name], 76.0 + k - 3).se for k, name in enumerate(sizes)]
    test_se = math.sqrt(sum(se ** 2 for se in per_set)) / 7
    assert row["tolerance"] == pytest.approx(t_quantile(2) * math.sqrt(0.4 ** 2 / 3 + test_se ** 2))
    assert "Spearman SE (Fisher z) per set, averaged over 7 STS test sets" in row["noise_source"]


def _sts_scores(averages: dict[tuple[str, str, object], float]) -> pd.DataFrame:
    """Per-seed rows of one backbone whose seven-set average is the given value, for (method, train_data, seed)."""
    rows = []
    for (method, data, seed), average in averages.items():
        for k, dataset in enumerate(["stsb", "sickr", "sts12", "sts13", "sts14", "sts15", "sts16"]):
            rows.append(("m", method, data, seed, dataset, "all", average + k - 3))
    return pd.DataFrame(rows, columns=["backbone", "method", "train_data", "seed", "dataset", "aggregation", "spearman"])


def test_sts_claims_compare_differences_against_the_seed_noise():
    from bertsent.experiments.self_guided import sts_claims

    scores = _sts_scores({("cls", "-", "-"): 74.0, ("mean", "-", "-"): 79.0, ("whitening", "stsb_all", "-"): 74.6,
                          ("sg_opt", "stsb_train", 1): 78.0, ("sg_opt", "stsb_train", 2): 78.4,
                          ("sg_opt", "stsb_train", 3): 77.6, ("sg", "stsb_train", 1): 74.3})
    paper = pd.Series({"sg_opt": 74.62, "sg": 72.17, "cls": 31.40, "mean": 52.57, "whitening": 68.77})
    spreads = {"other": Spread(0.5, 3, "sg_opt over 3 seeds on other")}
    table = sts_claims(scores, paper, [("sg_opt", "cls"), ("sg_opt", "mean"), ("sg", "cls"), ("sg_opt", "whitening"),
                                       ("sg_opt", "missing")], ["stsb_train"], spreads).set_index("claim")
    assert list(table.reset_index().columns) == ["claim", "backbone", "train_data", *CLAIM_COLUMNS[1:]]
    assert "sg_opt > missing" not in table.index                     # a claim with a missing row is left out
    # SG-OPT: three seeds, sd 0.4, against a deterministic row: t at 2 df x 0.4 / sqrt(3)
    assert table.loc["sg_opt > cls", "tolerance"] == pytest.approx(t_quantile(2) * 0.4 / 3 ** 0.5)
    assert table.loc["sg_opt > cls", "seeds"] == "3 vs deterministic"
    assert table.loc["sg_opt > cls", "our_effect"] == pytest.approx(4.0)
    assert table.loc["sg_opt > cls", "verdict"] == "direction only"   # 4 of the paper's 43.22
    assert table.loc["sg_opt > mean", "verdict"] == "not reproduced"  # -1.0, beyond noise
    assert table.loc["sg_opt > whitening", "verdict"] == "reproduced"  # +3.4 of the paper's 5.85: ratio 0.58
    # SG: one seed, so it borrows SG-OPT's spread over the three seeds on the same backbone: t at 2 df x 0.4
    assert table.loc["sg > cls", "seeds"] == "one seed"
    assert table.loc["sg > cls", "tolerance"] == pytest.approx(t_quantile(2) * 0.4)
    assert table.loc["sg > cls", "verdict"] == "within noise"         # +0.3
    assert "sg_opt over 3 seeds on m (stsb_train), STS page" in table.loc["sg > cls", "noise_source"]
    # a backbone with no multi-seed run of its own is not lent another backbone's spread: no verdict
    single = _sts_scores({("cls", "-", "-"): 74.0, ("sg", "stsb_train", 1): 74.3}).assign(backbone="n")
    lent = sts_claims(pd.concat([scores, single]), paper, [("sg", "cls")], ["stsb_train"], spreads)
    lent = lent.set_index("backbone").loc["n"]
    assert np.isnan(lent["tolerance"]) and lent["verdict"] == "noise not measured"


def test_spreads_come_from_the_reference_seeds_and_are_never_lent_to_another_backbone():
    from bertsent.experiments.self_guided import seed_spreads, spread_for

    scores = _ablation_scores({("sg_opt", 1): 70.0, ("sg_opt", 2): 71.0, ("sg_opt", 3): 72.0, ("opt1", 1): 67.0})
    spreads = seed_spreads(scores)
    assert list(spreads) == ["b"] and spreads["b"].sd == pytest.approx(1.0) and spreads["b"].seeds == 3
    assert spread_for(spreads, "b") is spreads["b"]
    assert spread_for(spreads, "other") is None  # another backbone's spread is no yardstick here
    assert spread_for({}, "b") is None


def test_seed_mean_table_averages_each_seed_then_the_seeds():
    from bertsent.experiments.self_guided import claim_sides, seed_mean_table, seed_statistics

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
    sides = claim_sides(seed_statistics(scores, ["backbone", "method", "train_data"]), "m", "stsb_train")
    assert sides["avg"].to_dict() == pytest.approx({"cls": 53.0, "whitening": 63.0, "sg_opt": 68.0})
    assert sides["seeds"].to_dict() == {"cls": 0, "whitening": 0, "sg_opt": 1}


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
    from bertsent.experiments.self_guided import ablation_claims, ablation_table

    scores = _ablation_scores({("sg_opt", 1): 70.0, ("sg_opt", 2): 71.0, ("sg_opt", 3): 72.0,
                               ("opt1", 1): 67.0, ("lambda_0", 1): 70.0, ("tau_0.1", 1): 75.0,
                               ("mean_views", 1): 60.0})
    table = ablation_table(scores).set_index("variant")
    assert table.loc["sg_opt", "avg"] == pytest.approx(71.0) and table.loc["sg_opt", "seeds"] == 3
    assert table.loc["sg_opt", "std"] == pytest.approx(1.0)
    assert table.loc["opt1", "change"] == pytest.approx(-4.0)
    # tolerance: a t quantile times the SE of a difference, SG-OPT (sd 1 over 3 seeds) lending its sd to one-seed
    # variants; Welch-Satterthwaite over the parts (1/3, 2 df) and (1, 2 df)
    df = (1 / 3 + 1) ** 2 / ((1 / 3) ** 2 / 2 + 1 / 2)
    assert table.loc["opt1", "tolerance"] == pytest.approx(t_quantile(df) * (1 / 3 + 1) ** 0.5)
    assert table.loc["opt1", "verdict"] == "reproduced"        # 4 points worse, twice the paper's -2.01
    assert table.loc["opt1", "ratio"] == pytest.approx(4.0 / 2.01)
    assert table.loc["lambda_0", "verdict"] == "within noise"  # -1.0 is within 2.31
    assert table.loc["tau_0.1", "verdict"] == "not reproduced"  # better, the paper says worse
    assert table.loc["mean_views", "verdict"] == NO_CLAIM      # the paper has no such row
    assert table.loc["sg_opt", "verdict"] == NO_CLAIM
    assert table.loc["opt1", "paper_change"] == pytest.approx(-2.01)
    assert "sg_opt over 3 seeds on b" in table.loc["opt1", "noise_source"]
    claims = ablation_claims(scores).set_index("variant")
    assert set(claims.index) == {"opt1", "lambda_0", "tau_0.1"}  # the rows the paper has
    assert claims.loc["opt1", "claim"] == "opt1 < sg_opt" and claims.loc["opt1", "seeds"] == "one seed"
    assert claims.loc["opt1", "our_effect"] == pytest.approx(-4.0)
    assert (claims["verdict"] == table.loc[claims.index, "verdict"]).all()


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
    claims = self_guided.domain_claims(pd.DataFrame(rows), paper).set_index("claim")
    # whitening is deterministic: no seed noise; -3 points of the paper's -4.19 (avg)
    assert claims.loc["whitening: snli - stsb_all (avg)", "tolerance"] == 0
    assert claims.loc["whitening: snli - stsb_all (avg)", "verdict"] == "reproduced"
    # SG-OPT: two seeds a side with sd sqrt(2) on stsb (+-1): t at 1 + 1 df (4.30) x sqrt(2/2 + 2/2) = 6.1 against -3
    assert claims.loc["sg_opt: snli - stsb_all (stsb)", "tolerance"] == pytest.approx(t_quantile(2) * 2 ** 0.5)
    assert claims.loc["sg_opt: snli - stsb_all (stsb)", "verdict"] == "within noise"  # two seeds cannot tell
    # the robustness claim: SG-OPT's change minus whitening's, 0 here against the paper's +10.33
    robust = claims.loc["sg_opt more robust than whitening (stsb)"]
    assert robust["our_effect"] == pytest.approx(0.0) and robust["paper_effect"] == pytest.approx(10.33)
    assert robust["verdict"] == "within noise" and robust["method"] == "sg_opt vs whitening"
    assert "sg" not in set(claims["method"])  # trained on one set only


def test_trained_pairs_default_to_every_method_on_every_set():
    from bertsent.experiments.self_guided import trained_pairs

    runs = {"big": [["sg_opt", "stsb_train"]]}
    assert trained_pairs(runs, "big", ["sg", "sg_opt"], ["a", "b"]) == [["sg_opt", "stsb_train"]]
    assert trained_pairs(runs, "small", ["sg", "sg_opt"], ["a", "b"]) == [("sg", "a"), ("sg", "b"),
                                                                           ("sg_opt", "a"), ("sg_opt", "b")]
    assert trained_pairs({}, "small", ["sg"], []) == []


def test_labelled_scores_mark_untrained_readouts_with_dashes():
    from bertsent.experiments.self_guided import labelled_scores

    scores = pd.DataFrame({"dataset": ["stsb", "sickr"], "aggregation": "all", "spearman": [70.0, 60.0]})
    untrained = labelled_scores(scores, "m", "cls")
    assert untrained[["backbone", "method", "train_data", "seed"]].drop_duplicates().values.tolist() == [["m", "cls", "-", "-"]]
    trained = labelled_scores(scores, "m", "sg_opt", "stsb_all", 42)
    assert trained["seed"].tolist() == [42, 42] and (trained["train_data"] == "stsb_all").all()
    assert trained["spearman"].tolist() == [70.0, 60.0] and "backbone" not in scores  # the input is left alone


def test_transfer_claim_averages_the_tasks_and_their_test_set_noise():
    import math

    import pandas as pd

    from bertsent.experiments.self_guided import transfer_claims
    from bertsent.report import reported

    rows = [("m", "mean", "mr", 80.0), ("m", "sg_opt", "mr", 81.0), ("m", "mean", "trec", 90.0),
            ("m", "sg_opt", "trec", 92.0)]
    scores = pd.DataFrame(rows, columns=["backbone", "method", "task", "accuracy"])
    claim = transfer_claims(scores, {"mr": 10000, "trec": 500}, reported.sg_opt_transfer_table()).iloc[0]
    assert claim["our_effect"] == 1.5
    assert math.isclose(claim["paper_effect"], ((82.47 - 81.46) + (91.60 - 90.30)) / 2)
    z = t_quantile(math.inf)  # no seeds: the normal quantile
    per_task = [z * math.sqrt(2 * p * (1 - p) / n) * 100 for p, n in ((0.805, 10000), (0.91, 500))]
    assert math.isclose(claim["tolerance"], math.sqrt(sum(t * t for t in per_task)) / 2)
    assert claim["seeds"].startswith("one seed")


def test_untrained_rows_are_computed_once_then_read_back_without_the_backbone(tiny_gemma_dir, tmp_path, monkeypatch):
    import itertools

    from bertsent.encode import backbones
    from bertsent.encode.encoder import Encoder
    from bertsent.experiments.self_guided import score_encoder, untrained_rows
    from tests.experiments.test_sentence_token import tiny_sts

    datasets = tiny_sts()
    fit = [" ".join(words) for words in itertools.permutations(["a", "man", "plays", "guitar", "dogs"], 3)][:40]
    first = untrained_rows(tiny_gemma_dir, datasets, fit, "stsb_all", tmp_path, batch_size=4)
    assert first[["method", "train_data", "seed"]].drop_duplicates().values.tolist() == [
        ["cls", "-", "-"], ["mean", "-", "-"], ["whitening", "stsb_all", "-"]]
    # a causal LM's "cls" row is its last token
    last = score_encoder(Encoder(backbones.load_backbone(tiny_gemma_dir)), datasets, "last")
    assert first[first["method"] == "cls"]["spearman"].tolist() == pytest.approx(last["spearman"].tolist())
    record = next((tmp_path / "runs" / "untrained").iterdir())
    assert (record / "identity.json").is_file() and len(list(record.glob("sts_*.csv"))) == 3

    def no_loading(*_):
        raise AssertionError("the backbone was loaded although its scores are committed")

    monkeypatch.setattr(backbones, "load_backbone", no_loading)
    pd.testing.assert_frame_equal(untrained_rows(tiny_gemma_dir, datasets, fit, "stsb_all", tmp_path, batch_size=4),
                                  first)
    with pytest.raises(AssertionError, match="committed"):  # other fit sentences: whitening is computed again
        untrained_rows(tiny_gemma_dir, datasets, fit[:-1], "stsb_all", tmp_path, batch_size=4)

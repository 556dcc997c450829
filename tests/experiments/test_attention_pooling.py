"""The layer-wise attention pooling chapter's experiments (``bertsent.experiments.attention_pooling``) on hand-made
inputs, and its runs in the run cache (``bertsent.experiments.runs.attention_run``): key, record, reuse."""
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bertsent.data.nli import Triplets
from bertsent.experiments import attention_pooling as ap
from bertsent.experiments.runs import attention_identity, attention_run, attention_run_key
from bertsent.report.claims import (DIRECTION_ONLY, LARGER, NOT_REPRODUCED, REPRODUCED, WITHIN_NOISE,
                                    correlation_evaluation, t_quantile)
from bertsent.training.attention_pooling import AttentionPoolingConfig

SEVEN = ["stsb", "sickr", "sts12", "sts13", "sts14", "sts15", "sts16"]


def _scores(values: dict) -> pd.DataFrame:
    """values: (pooling, readout, seed) -> (stsb, other six sets' common score)."""
    rows = []
    for (pooling, readout, seed), (stsb, rest) in values.items():
        for dataset in SEVEN:
            for aggregation in ("all", "wmean"):
                rows.append({"backbone": "m", "pooling": pooling, "readout": readout, "seed": seed, "dataset": dataset,
                             "aggregation": aggregation, "spearman": stsb if dataset == "stsb" else rest})
    return pd.DataFrame(rows)


SCORES = _scores({
    ("att_both_cls", "pooled", 1): (80.0, 70.0), ("att_both_cls", "pooled", 2): (82.0, 70.0),
    ("att_both_cls", "cls_last", 1): (75.0, 60.0), ("att_both_cls", "cls_last", 2): (77.0, 60.0),
    ("att_both_cls", "mean_last", 1): (70.0, 60.0), ("att_both_cls", "mean_last", 2): (70.0, 60.0),
    ("cls_mean_last", "pooled", 1): (70.0, 63.0), ("cls_mean_last", "pooled", 2): (72.0, 63.0),
    ("cls_last", "pooled", 1): (74.0, 61.0),
    ("mean_last", "pooled", 1): (71.0, 61.0),
})


def test_per_seed_scores_average_all_seven_sets_only():
    per_seed = ap.per_seed_scores(SCORES)
    row = per_seed[(per_seed["pooling"] == "att_both_cls") & (per_seed["readout"] == "pooled") & (per_seed["seed"] == 1)]
    assert row["stsb"].item() == 80.0
    assert row["avg"].item() == pytest.approx((80 + 6 * 70) / 7)
    partial = ap.per_seed_scores(SCORES[SCORES["dataset"] != "sts16"])
    assert partial["avg"].isna().all()


def test_ablation_table_means_sd_seeds_and_paper_column():
    table = ap.ablation_table(SCORES, pd.Series({"att_both_cls": 86.76, "cls_mean_last": 85.11})).set_index("pooling")
    assert list(table.index) == ["cls_last", "mean_last", "cls_mean_last", "att_both_cls"]  # POOLINGS order
    assert table.loc["att_both_cls", "stsb"] == 81.0
    assert table.loc["att_both_cls", "stsb_sd"] == pytest.approx(np.sqrt(2))
    assert table.loc["att_both_cls", "seeds"] == 2
    assert table.loc["cls_last", "seeds"] == 1 and np.isnan(table.loc["cls_last", "stsb_sd"])
    assert table.loc["att_both_cls", "paper_stsb"] == 86.76
    assert np.isnan(table.loc["mean_last", "paper_stsb"])


# a side of 2 seeds (variance v, 1 df) against a one-seed side lent that spread (variance 2v, 1 df): Welch-Satterthwaite
# (3v)^2 / (v^2 + 4v^2) = 1.8 degrees of freedom
ONE_LENT = t_quantile(9 / 5)


def test_pooling_claims_effects_tolerance_and_verdicts():
    paper = pd.Series({"att_both_cls": 86.76, "cls_mean_last": 85.11, "att_both": 86.57})
    claims = ap.pooling_claims(SCORES, paper).set_index("claim")
    row = claims.loc["att_both_cls > cls_mean_last (stsb)"]
    assert row["our_effect"] == pytest.approx(10.0)  # 81 - 71
    assert row["paper_effect"] == pytest.approx(1.65)
    # sd sqrt(2) over 2 seeds on each side: 1 + 1 degrees of freedom
    assert row["tolerance"] == pytest.approx(t_quantile(2) * np.sqrt(2 / 2 + 2 / 2))
    assert row["verdict"] == LARGER  # 10 points against the paper's 1.65: six times its size
    assert np.isnan(claims.loc["att_both_cls > cls_last (stsb)", "paper_effect"])  # a direction only
    # cls_last has one seed: it borrows att_both_cls's spread (sd sqrt(2) over 2 seeds)
    assert claims.loc["att_both_cls > cls_last (stsb)", "tolerance"] == pytest.approx(ONE_LENT * np.sqrt(2 / 2 + 2))
    assert "lent: att_both_cls over 2 seeds on m" in claims.loc["att_both_cls > cls_last (stsb)", "noise_source"]
    assert "att_both_cls > att_both (stsb)" not in claims.index  # att_both not trained here


def test_rq4_compares_the_fixed_readout_with_the_same_readout_trained_alone():
    table = ap.rq4_table(SCORES)
    cls = table[table["readout"] == "cls_last"].set_index("trained_with")
    assert cls.loc["att_both_cls", "stsb"] == 76.0 and cls.loc["cls_last", "stsb"] == 74.0
    claims = ap.rq4_claims(table).set_index("claim")
    assert claims["our_effect"].tolist() == pytest.approx([2.0, -1.0])
    assert claims["paper_effect"].isna().all()
    # the one-seed side borrows the pooler-trained readout's spread: sd sqrt(2) (cls_last), 0 (mean_last)
    assert claims["tolerance"].tolist() == pytest.approx([ONE_LENT * np.sqrt(2 / 2 + 2), 0.0])
    assert claims["verdict"].tolist() == [WITHIN_NOISE, NOT_REPRODUCED]


def test_alpha_weights_sum_to_one_and_round_trip():
    alpha = np.array([[0.5, 0.25, 0.25], [0.2, 0.2, 0.6], [0.1, 0.1, 0.8]])
    weights = ap.layer_weights(alpha)
    assert weights == pytest.approx([0.8 / 3, 0.55 / 3, 1.65 / 3])
    assert weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(ap.alpha_matrix(ap.alpha_frame(alpha)), alpha)
    summary = ap.alpha_summary(alpha)
    assert summary["heaviest_state"] == 2 and summary["last_weight"] == pytest.approx(0.55)
    assert summary["uniform_weight"] == pytest.approx(1 / 3)
    assert ap.alpha_summary(np.full((4, 4), 0.25))["entropy_ratio"] == pytest.approx(1.0)


def test_encoding_overhead_is_the_ratio_of_medians():
    times = {"pooled": iter([1.10, 1.30, 1.05]), "cls_last": iter([1.0, 1.2, 0.9])}

    def timer(model, tokenizer, sentences, readout, max_length):
        return None, next(times[readout])

    out = ap.encoding_overhead(None, None, ["a", "b"], repeats=3, timer=timer)
    assert out["pooled_seconds"] == pytest.approx(1.10) and out["fixed_seconds"] == pytest.approx(1.0)
    assert out["overhead_ratio"] == pytest.approx(1.10) and out["overhead_percent"] == pytest.approx(10.0)


def test_step_time_table_ratios_within_each_run_and_medians_of_the_stored_runs():
    first = {"reference": "small", "median_step_seconds": {"small": 2.0, "big": 7.0},
             "trained_parameters": {"small": 10, "big": 40}}
    second = {"median_step_seconds": {"small": 4.0, "mid": 6.0}}  # a busier machine: its own reference
    runs = pd.DataFrame({"backbone": ["small", "small", "small", "big"], "seconds_per_step": [9.0, 11.0, 30.0, 50.0]})
    table = ap.step_time_table({"a": first, "b": second}, runs).set_index(["benchmark", "backbone"])
    assert table.loc[("a", "big"), "ratio_to_reference"] == pytest.approx(3.5)
    assert table.loc[("b", "mid"), "ratio_to_reference"] == pytest.approx(1.5)  # 6 / 4, not 6 / 2
    assert table.loc[("b", "mid"), "reference"] == "small" and table.loc[("a", "small"), "ratio_to_reference"] == 1.0
    assert table.loc[("a", "small"), "stored_runs_seconds_per_step"] == pytest.approx(11.0)  # median, not mean
    assert table.loc[("a", "small"), "stored_runs"] == 3 and table.loc[("a", "big"), "trained_parameters"] == 40
    assert table.loc[("b", "mid"), "stored_runs"] == 0 and np.isnan(table.loc[("b", "mid"), "stored_runs_seconds_per_step"])
    assert "stored_runs" not in ap.step_time_table({"a": first})


def test_step_benchmarks_reads_every_stored_run_by_name(tmp_path):
    (tmp_path / "attention_pooling_step.json").write_text(json.dumps({"median_step_seconds": {"a": 1.0}}))
    (tmp_path / "attention_pooling_step_mpnet.json").write_text(json.dumps({"median_step_seconds": {"b": 2.0}}))
    (tmp_path / "acl_step.json").write_text("{}")  # another benchmark's: not read
    found = ap.step_benchmarks(tmp_path)
    assert list(found) == ["attention_pooling_step", "attention_pooling_step_mpnet"]
    assert found["attention_pooling_step_mpnet"]["median_step_seconds"] == {"b": 2.0}


def test_geometry_and_search_claims_means_over_seeds_with_lent_spread():
    from bertsent.report.claims import Spread, judge, seed_noise

    geometry = pd.DataFrame({"backbone": "m", "method": ["att_both_cls", "att_both_cls", "cls_last"],
                             "seed": [1, 2, 1], "anisotropy": [0.2, 0.4, 0.5], "uniformity": [-2.0, -2.0, -1.5]})
    claims = ap.geometry_claims(geometry).set_index("quantity")
    assert claims.loc["anisotropy", "our_effect"] == pytest.approx(-0.2)  # mean 0.3 against 0.5
    sd = np.std([0.2, 0.4], ddof=1)
    assert claims.loc["anisotropy", "tolerance"] == pytest.approx(ONE_LENT * np.sqrt(sd ** 2 / 2 + sd ** 2))
    expected = judge("x", -0.2, None, seed_noise((sd, 2), (0.0, 1), reference=Spread(sd, 2, "lent")), direction=-1)
    assert claims.loc["anisotropy", "verdict"] == expected["verdict"] == WITHIN_NOISE
    assert claims.loc["uniformity", "tolerance"] == 0.0  # no spread over the pooler's seeds
    assert claims.loc["uniformity", "verdict"] == REPRODUCED  # lower is the paper's direction
    retrieval = pd.DataFrame({"backbone": "m", "set": "stsb", "seed": [1, 2, 1, 1],
                              "pooling": ["att_both_cls", "att_both_cls", "att_both_cls", "cls_last"],
                              "readout": ["pooled", "pooled", "cls_last", "pooled"], "mrr@10": [60.1, 60.1, 59.0, 60.0]})
    search = ap.search_claims(retrieval, 0.47)
    assert search["our_effect"].item() == pytest.approx(0.1) and search["paper_effect"].item() == 0.47
    assert search["verdict"].item() == DIRECTION_ONLY  # beyond the (zero) spread, under half the paper's
    equal = retrieval.assign(**{"mrr@10": [60.0, 60.0, 59.0, 60.0]})
    assert ap.search_claims(equal, 0.47)["verdict"].item() == WITHIN_NOISE


def test_ablation_runs_give_main_poolings_their_own_seeds():
    runs = ap.ablation_runs(["m"], ["cls_last", "att_both_cls"], [42], ["att_both_cls"], [1, 2, 3],
                            training={"max_steps": 4})
    assert [(r.config.pooling, r.config.seed) for r in runs] == [("cls_last", 42), ("att_both_cls", 1),
                                                                   ("att_both_cls", 2), ("att_both_cls", 3)]
    assert all(r.config.max_steps == 4 and r.config.objective == "supervised" for r in runs)


def test_the_layers_and_search_pages_read_the_ablations_runs_of_their_pooler_and_baseline():
    runs = ap.ablation_runs(["m"], ["cls_last", "att_both_cls"], [42], ["att_both_cls"], [1, 2],
                            training={"max_steps": 4})
    pooler, baselines = ap.pooler_and_baseline_runs(["m"], "att_both_cls", [1, 2], "cls_last", 42, ap.TrainingData(),
                                                    {"max_steps": 4})
    assert sorted(pooler) == [("m", 1), ("m", 2)] and list(baselines) == ["m"]
    assert {r.key for r in [*pooler.values(), *baselines.values()]} == {r.key for r in runs}


def test_layers_page_inputs_take_the_first_pairs_and_the_alpha_sentences_among_them():
    pairs, sentences = ap.layers_page_inputs(max_pairs=3, alpha_sentences=4)
    assert all(len(subset.scores) == 3 for subset in pairs.subsets.values())
    assert sentences == pairs.sentences()[:4] and len(sentences) == 4


def test_the_overhead_is_timed_on_the_first_retrieval_sets_first_candidates():
    sets = ap.load_retrieval_sets(["mrpc", "stsb"], max_pairs=5)
    assert ap.timed_sentences(sets, 3) == sets["mrpc"].sentences[:3]


def test_a_backbone_recipe_changes_only_that_backbones_scale():
    recipes = {"tiny": {"max_triplets": None, "training": {"max_steps": None, "eval_every": 50}}}
    data = ap.TrainingData(max_triplets=1024, dev_pairs=200)
    runs = ap.ablation_runs(["m", "tiny"], ["att_both_cls"], [42], data=data,
                            training={"max_steps": 16, "eval_every": 8}, recipes=recipes)
    m, tiny = runs
    assert (m.data.max_triplets, m.config.max_steps, m.config.eval_every) == (1024, 16, 8)
    assert (tiny.data.max_triplets, tiny.config.max_steps, tiny.config.eval_every) == (None, None, 50)
    assert tiny.data.dev_pairs == 200 and tiny.config.seed == 42  # the selection set stays the page's
    single = ap.page_run("tiny", "att_both_cls", 42, data, {"max_steps": 16, "eval_every": 8}, recipes)
    assert single.config == tiny.config and single.data == tiny.data


def test_a_recipe_with_an_unknown_field_is_refused():
    with pytest.raises(ValueError, match="recipe of 'tiny': unknown field.*'steps'.*max_triplets and training"):
        ap.backbone_recipe("tiny", ap.TrainingData(), {}, {"tiny": {"steps": 300}})


def test_training_data_subset_is_seeded_and_independent_of_the_run(monkeypatch):
    full = Triplets([f"a{i}" for i in range(10)], [f"p{i}" for i in range(10)], [f"n{i}" for i in range(10)])
    monkeypatch.setattr("bertsent.data.nli.nli_triplets", lambda sources, data_dir=None: full)
    first = ap.TrainingData(max_triplets=4).triplets()
    assert len(first) == 4 and first == ap.TrainingData(max_triplets=4).triplets()
    assert [a[1:] for a in first.anchors] == [p[1:] for p in first.positives]  # rows kept together
    assert ap.TrainingData().triplets() is full


# --- the run cache -------------------------------------------------------------------------------------------------

def test_attention_run_key_changes_with_config_and_data_and_is_stable_otherwise():
    base = AttentionPoolingConfig()
    key = attention_run_key("m", base)
    assert key == attention_run_key("m", AttentionPoolingConfig())
    assert key.startswith("m-supervised-att_both_cls-s42-")
    for other in (AttentionPoolingConfig(seed=1), AttentionPoolingConfig(pooling="cls_last"),
                  AttentionPoolingConfig(learning_rate=3e-5), AttentionPoolingConfig(max_steps=16),
                  AttentionPoolingConfig(hard_negative_weight=1.0), AttentionPoolingConfig(objective="hybrid")):
        assert attention_run_key("m", other) != key
    assert attention_run_key("m", base, ("snli", "sick")) != key
    assert attention_run_key("m", base, max_triplets=1024) != key
    assert attention_run_key("m", base, dev_pairs=200) != key
    assert attention_run_key("other", base) != key
    assert attention_identity("m", base)["kind"] == "attention_pooling"


class _Dev:
    def __len__(self):
        return 24


def _fake_training(calls):
    def train(backbone, output_dir, config, triplets=None, dev=None, show_progress=True):
        calls.append(len(triplets))
        (output_dir / "model").mkdir(parents=True, exist_ok=True)
        (output_dir / "best.pt").write_bytes(b"weights")
        history = [{"step": 0, "dev": 50.0, "loss": None}, {"step": 2, "dev": 55.0, "loss": 1.5}]
        (output_dir / "train.json").write_text(json.dumps({
            "backbone": backbone, "config": {"objective": config.objective, "pooling": config.pooling,
                                             "seed": config.seed},
            "triplets": len(triplets), "sentences": 0, "step": 2, "best_step": 2, "best_dev": 55.0, "seconds": 8.0,
            "history": history, "torch_threads": 1}))
    return train


def test_attention_run_records_once_and_reuses_without_weights(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr("bertsent.training.attention_pooling.train_attention_pooling", _fake_training(calls))
    config = AttentionPoolingConfig(max_steps=2)
    triplets = Triplets(["a", "b"], ["c", "d"], ["e", "f"])
    stored, directory = attention_run("m", config, lambda: triplets, _Dev(), root=tmp_path / "cache",
                                      results_dir=tmp_path / "results")
    assert calls == [2] and stored.exists
    train = stored.train()
    assert train["summary"]["seconds_per_step"] == 4.0 and train["summary"]["pooling"] == "att_both_cls"
    assert train["dev_step0"] == 50.0
    assert stored.history()["best"].tolist() == [False, True]
    assert (tmp_path / "results" / "runs" / "attention_pooling" / "index.csv").is_file()
    # weights gone: the committed results are enough for a page that does not need the model
    (directory / "best.pt").unlink()
    attention_run("m", config, lambda: pytest.fail("must not load data"), _Dev(), root=tmp_path / "cache",
                  results_dir=tmp_path / "results", log=lambda _: None)
    assert calls == [2]
    # a page that needs the model retrains, and keeps the first record
    messages = []
    attention_run("m", config, lambda: triplets, _Dev(), root=tmp_path / "cache", results_dir=tmp_path / "results",
                  need_model=True, log=messages.append)
    assert calls == [2, 2] and "retraining" in messages[0]


def test_run_evaluation_is_computed_once_then_read_back(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr("bertsent.training.attention_pooling.train_attention_pooling", _fake_training(calls))
    monkeypatch.setattr(ap.TrainingData, "dev", lambda self: _Dev())
    monkeypatch.setattr(ap.TrainingData, "triplets", lambda self: Triplets(["a", "b"], ["c", "d"], ["e", "f"]))
    run = ap.Run("m", AttentionPoolingConfig(max_steps=2), ap.TrainingData(), tmp_path / "cache", tmp_path / "results")
    monkeypatch.setattr(ap.Run, "load", lambda self: ("model", "tokenizer"))
    computed = []

    def compute(model, tokenizer):
        computed.append((model, tokenizer))
        return pd.DataFrame({"x": [1.5]})

    first = run.evaluation("toy", {"n": 1}, compute)
    again = run.evaluation("toy", {"n": 1}, compute)
    assert computed == [("model", "tokenizer")] and first.equals(again) and again["x"].item() == 1.5
    run.evaluation("toy", {"n": 2}, compute)
    assert len(computed) == 2


def test_paired_bootstrap_cancels_what_two_sides_share():
    rng = np.random.default_rng(1)
    gold = rng.normal(size=400)
    shared = gold + rng.normal(scale=1.0, size=400)
    same = ap.paired_bootstrap_se(gold, [shared], [shared], resamples=200)
    assert same == 0.0
    close = ap.paired_bootstrap_se(gold, [shared + rng.normal(scale=0.1, size=400)], [shared], resamples=200)
    r = 100 * stats.spearmanr(gold, shared)[0]
    independent = correlation_evaluation(400, r).se
    assert 0 < close < independent / 3  # the pairs' shared difficulty cancels in a paired comparison


def test_claims_take_the_paired_bootstrap_where_it_has_the_difference():
    rng = np.random.default_rng(2)
    gold = rng.normal(size=300)
    rows = []
    for pooling, noise in (("att_both_cls", 0.8), ("cls_mean_last", 0.9)):
        for seed in (1, 2):
            cosine = gold + rng.normal(scale=noise, size=300)
            rows.append(pd.DataFrame({"backbone": "m", "pooling": pooling, "seed": seed, "readout": "pooled",
                                      "pair": np.arange(300), "gold": gold, "cosine": cosine}))
    cosines = pd.concat(rows, ignore_index=True)
    paired = ap.paired_noise(cosines, ap.judged_sides(), resamples=100)
    assert list(paired[["better_pooling", "worse_pooling"]].itertuples(index=False, name=None)) == [
        ("att_both_cls", "cls_mean_last")]  # the sides this backbone has
    scores = pd.DataFrame([{"backbone": "m", "pooling": p, "seed": s, "readout": "pooled", "dataset": "stsb",
                            "aggregation": "all", "spearman": v}
                           for p, s, v in (("att_both_cls", 1, 80.0), ("att_both_cls", 2, 80.2),
                                           ("cls_mean_last", 1, 78.0), ("cls_mean_last", 2, 78.1))])
    paper = pd.Series({"att_both_cls": 86.76, "cls_mean_last": 85.11})
    with_paired = ap.pooling_claims(scores, paper, pairs=300, paired=paired)
    fisher = ap.pooling_claims(scores, paper, pairs=300)
    assert "paired bootstrap" in with_paired["noise_source"].item()
    assert "Fisher" in fisher["noise_source"].item()
    assert with_paired["tolerance"].item() < fisher["tolerance"].item()


def test_a_recipe_is_said_in_words_on_the_page():
    from bertsent.experiments.attention_pooling import recipe_in_words

    assert recipe_in_words({"max_triplets": None, "training": {"max_steps": None, "eval_every": 50}}) == \
        "all the triplets, 3 epochs with no step cap, dev every 50 steps"
    assert recipe_in_words({"max_triplets": 1024, "training": {"max_steps": 300, "batch_size": 32}}) == \
        "a seeded subset of 1,024 triplets, at most 300 steps, batch_size 32"

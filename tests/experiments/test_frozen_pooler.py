"""The frozen-encoder arm's runs: each one recorded whole in the run store, with its steps, seconds, selected step,
test scores and layer weights; a recorded run is not trained again; an interrupted one resumes."""
import json

import numpy as np
import pandas as pd
import pytest
import torch

from bertsent.data.sts import SentencePairs, STSDataset

from tests.toy_nli import DEV, TRIPLETS

TESTS = {"stsb": STSDataset("stsb", "test", {"test": SentencePairs(
    TRIPLETS.anchors[:4] + ["A dog barks."], TRIPLETS.negatives[:4] + ["A dog makes noise."],
    np.array([1.0, 0.5, 0.0, 1.5, 4.0]))}),
         "sickr": STSDataset("sickr", "test", {"test": SentencePairs(
             TRIPLETS.positives[2:], TRIPLETS.negatives[2:], np.array([0.5, 2.0, 1.0, 3.0]))})}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, minilm):
    from transformers import BertConfig, BertModel

    from bertsent.encode.backbones import load_backbone

    torch.manual_seed(0)
    config = BertConfig(vocab_size=minilm.tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    path = tmp_path_factory.mktemp("tiny-bert")
    BertModel(config, add_pooling_layer=False).save_pretrained(path)
    minilm.tokenizer.save_pretrained(path)
    return str(path), load_backbone(str(path))


@pytest.fixture
def arm(tiny, tmp_path, monkeypatch):
    """(module, states, run factory) on the tiny model, its caches and checkpoints under tmp_path."""
    import bertsent.experiments.frozen_pooler as fp
    from bertsent.experiments.layer_states import cache_layer_states

    name, source = tiny
    monkeypatch.setattr(fp, "CHECKPOINT_ROOT", tmp_path / "checkpoints")
    caches = {}
    sets = {"nli": list(dict.fromkeys(TRIPLETS.anchors + TRIPLETS.positives + TRIPLETS.negatives)),
            "stsb-dev": DEV.sentences(), "sts-test": fp.test_sentences(TESTS)}
    for key, sentences in sets.items():
        caches[key] = cache_layer_states(source, name, key, sentences, 32, root=tmp_path / "states",
                                         log=lambda _: None)
    rows = tuple(caches["nli"].rows(p) for p in (TRIPLETS.anchors, TRIPLETS.positives, TRIPLETS.negatives))
    states = fp.BackboneStates(name, caches["nli"], caches["stsb-dev"], caches["sts-test"], rows)

    def run(pooling, seed=42, **overrides):
        config = fp.run_config(pooling, seed, **{"batch_size": 4, "steps": 8, "eval_every": 4,
                                                  "learning_rate": 1e-2, **overrides})
        return fp.FrozenRun(name, config, fp.Data(), len(DEV), {k: len(v) for k, v in TESTS.items()},
                            tmp_path / "results")
    return fp, states, run


def test_a_trained_run_is_recorded_whole_and_verifies(arm):
    fp, states, run = arm
    first = run("att_both_cls")
    stored = fp.execute(first, states, DEV, TESTS, log=lambda _: None)
    assert stored.exists and stored.directory.parent.name == "attention_pooling_frozen"
    stored.verify()
    train = stored.train()
    assert train["step"] == 8 and train["best_step"] in (0, 4, 8) and train["seconds"] > 0
    assert train["summary"]["steps"] == 8 and train["summary"]["best_step"] == train["best_step"]
    assert len(train["layer_weights"]) == 3 and sum(train["layer_weights"]) == pytest.approx(1.0)
    assert 0 < train["entropy_ratio"] <= 1 and train["weight_change"] >= 0  # of the selected weights
    history = stored.history()
    assert history["weight_change"].iloc[-1] > 0
    assert history.loc[history["best"], "weight_change"].iloc[0] == pytest.approx(train["weight_change"])
    assert list(history["step"]) == [0, 4, 8] and history["best"].sum() == 1
    assert {"dev", "loss", "dev_entropy_ratio", "weight_change"} <= set(history.columns)
    scores = pd.read_csv(next(stored.directory.glob("sts_test-*.csv")))
    assert set(scores["dataset"]) == {"stsb", "sickr"} and set(scores["aggregation"]) == {"all", "wmean"}
    stsb = scores[(scores["dataset"] == "stsb") & (scores["aggregation"] == "all")]["spearman"].iloc[0]
    assert train["stsb_test"] == pytest.approx(stsb) and train["avg7"] is None  # 2 of the 7 sets here
    cosines = stored.scores(fp.PAIR_COSINES, fp.pair_cosine_settings(first))  # what a paired bootstrap reads
    from scipy.stats import spearmanr
    assert list(cosines["pair"]) == [0, 1, 2, 3, 4] and list(cosines["gold"]) == [1.0, 0.5, 0.0, 1.5, 4.0]
    assert 100 * spearmanr(cosines["gold"], cosines["cosine"])[0] == pytest.approx(stsb)
    alpha = pd.read_csv(next(stored.directory.glob("alpha_test-*.csv")))
    matrix = alpha.pivot(index="query", columns="key", values="alpha").to_numpy()
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(matrix.mean(axis=0), train["layer_weights"], rtol=1e-6)
    assert not first.checkpoint.exists()  # recorded: the checkpoint is gone
    index = pd.read_csv(stored.directory.parent / "index.csv")
    assert list(index["key"]) == [first.key]
    # a recorded run is read, not trained again
    again = fp.execute(first, states, DEV, TESTS, log=lambda _: (_ for _ in ()).throw(AssertionError))
    assert again.train() == train
    # another seed, another key
    assert run("att_both_cls", seed=43).key != first.key


def test_the_test_scores_are_those_of_the_selected_weights(arm):
    fp, states, run = arm
    stored = fp.execute(run("att_mean", steps=8), states, DEV, TESTS, log=lambda _: None)
    train = stored.train()
    from bertsent.training.frozen_pooler import FrozenPoolerConfig, train_frozen_pooler

    result = train_frozen_pooler(FrozenPoolerConfig(**train["config"]), states.train.s, states.train.t,
                                 *states.triplet_rows, dev_score=fp.dev_scorer(states.dev, DEV))
    vectors, _ = fp.encode_states(result.pooler, states.test.s, states.test.t)
    assert fp.summarise_scores(fp.sts_scores(vectors, states.test, TESTS))["stsb_test"] == pytest.approx(
        train["stsb_test"])


def test_an_interrupted_run_resumes_and_a_leftover_folder_is_rewritten(arm):
    fp, states, run = arm
    interrupted = run("att_both")
    interrupted.stored.directory.mkdir(parents=True)
    (interrupted.stored.directory / "sts_test-0000.csv").write_text("half\n")  # a crash before train.json
    assert fp.execute(interrupted, states, DEV, TESTS, stop_after=5, log=lambda _: None) is None
    assert interrupted.checkpoint.is_file() and not interrupted.stored.exists
    messages = []
    stored = fp.execute(interrupted, states, DEV, TESTS, log=messages.append)
    assert messages == [f"resuming at step 5 from {interrupted.checkpoint}"]
    stored.verify()
    assert not (stored.directory / "sts_test-0000.csv").exists()
    straight = run("att_both")  # uninterrupted, recorded elsewhere: the same numbers
    straight.results_dir = stored.root.parent / "other"
    other = fp.execute(straight, states, DEV, TESTS, log=lambda _: None)
    assert other.train()["layer_weights"] == pytest.approx(stored.train()["layer_weights"])
    assert other.train()["best_dev"] == pytest.approx(stored.train()["best_dev"])


def test_a_fixed_readout_is_scored_once_without_training(arm):
    fp, states, run = arm
    for pooling in ("cls_last", "cls_mean_last", "mean_layers", "concat_layers"):
        fixed = run(pooling)
        assert fixed.config.seed == 0 and fixed.config.steps == 0 and "-s" not in fixed.key.split(pooling)[1][:2]
        train = fp.execute(fixed, states, DEV, TESTS, log=lambda _: None).train()
        assert train["step"] == 0 and train["best_step"] == 0 and train["layer_weights"] is None
        assert train["best_dev"] == train["dev_step0"]
    index = pd.read_csv(fixed.stored.directory.parent / "index.csv")
    assert len(index) == 4 and set(index["trained"]) == {False}


def test_the_plan_lists_every_variant_with_its_seeds():
    import bertsent.experiments.frozen_pooler as fp

    runs = fp.plan(["all-minilm-l6-v2"], data=fp.Data())
    trained = [r for r in runs if r.config.trainable]
    assert len(trained) == 4 * 5 and len(runs) == 4 * 5 + 5
    assert {r.config.pooling for r in runs} == set(fp.TRAINED + fp.FIXED)
    first = trained[0]
    assert first.config.steps >= 3000 and first.config.batch_size == 64 and first.config.init == "release"
    assert first.config.temperature == 0.05 and first.test_pairs["stsb"] == 1379  # the full test set
    assert json.dumps(first.identity)  # serialisable


def test_the_cache_state_says_complete_partial_or_missing(tiny, tmp_path, monkeypatch):
    import bertsent.experiments.frozen_pooler as fp
    from bertsent.experiments.layer_states import cache_layer_states

    name, source = tiny
    sets = {"nli": TRIPLETS.anchors + TRIPLETS.positives, "stsb-dev": DEV.sentences(),
            "sts-test": fp.test_sentences(TESTS)}
    monkeypatch.setattr(fp, "sentence_sets", lambda data=None: sets)
    root = tmp_path / "states"
    cache_layer_states(source, name, "nli", sets["nli"], fp.MAX_LENGTH, root=root, log=lambda _: None)
    cache_layer_states(source, name, "sts-test", sets["sts-test"], fp.MAX_LENGTH, batch_size=64, root=root,
                       flush_every=1, stop_after=1, log=lambda _: None)  # one batch holds them all: complete
    state = fp.cache_state(name, root=root)
    assert state["nli"].startswith("complete, 12 sentences")
    assert state["stsb-dev"] == f"missing ({len(sets['stsb-dev'])} sentences)"
    assert state["sts-test"].startswith("complete")


def test_the_summary_weights_and_findings_come_from_the_recorded_runs(arm):
    fp, states, run = arm
    runs = [run("att_both", 42), run("att_both", 43), run("cls_mean_last"), run("mean_last")]
    for r in runs[:3]:
        fp.execute(r, states, DEV, TESTS, log=lambda _: None)
    missing = fp.missing_runs(runs)
    assert missing[["pooling", "seed"]].values.tolist() == [["mean_last", "-"]]
    assert "--poolings mean_last" in missing["command"].iloc[0] and "--seeds" not in missing["command"].iloc[0]

    summary = fp.summary_table(runs)
    assert summary.set_index("pooling")["seeds"].to_dict() == {"att_both": 2, "cls_mean_last": 1}
    assert (summary["stsb_pairs"] == len(TESTS["stsb"])).all()
    per_seed = [r.stored.train()["stsb_test"] for r in runs[:2]]
    assert summary.set_index("pooling").loc["att_both", "stsb_test"] == pytest.approx(np.mean(per_seed))
    view = fp.ablation_view(summary, pd.Series({"att_both": 86.57}))
    assert view.set_index("pooling")["seeds"].to_dict() == {"att_both": 2, "cls_mean_last": 0}  # a readout: no seed
    assert view.set_index("pooling").loc["att_both", "paper_stsb"] == 86.57

    alphas = fp.mean_alpha(runs, "att_both")
    name = runs[0].backbone
    layers = states.test.s.shape[1]
    assert alphas[name].shape == (layers, layers)
    np.testing.assert_allclose(alphas[name].sum(axis=1), 1.0, atol=1e-4)  # each query's attention sums to one
    weights = fp.layer_weight_table(alphas, "att_both")
    assert len(weights) == layers and weights["weight"].sum() == pytest.approx(1.0, abs=1e-4)
    assert weights["uniform"].iloc[0] == pytest.approx(1 / layers)

    text = fp.frozen_findings(summary, weights)
    best = summary.set_index("pooling").loc["att_both", "stsb_test"]
    assert f"{best:.2f}" in text and "cls_mean_last" in text and "over 2 seeds" in text


def test_frozen_claims_weigh_the_trained_side_against_a_deterministic_readout():
    import bertsent.experiments.frozen_pooler as fp

    summary = pd.DataFrame({"backbone": ["m", "m"], "pooling": ["att_both", "cls_mean_last"], "seeds": [5, 1],
                            "stsb_test": [84.0, 80.0], "stsb_test_sd": [0.5, np.nan], "stsb_pairs": [1379, 1379]})
    claims = fp.frozen_claims(summary, pd.Series({"att_both": 86.57, "cls_mean_last": 85.11}))
    row = claims.iloc[0]
    assert row["claim"] == "att_both > cls_mean_last (stsb)" and row["arm"] == "frozen encoder"
    assert row["our_effect"] == pytest.approx(4.0) and row["paper_effect"] == pytest.approx(1.46)
    assert row["seeds"] == "5 vs deterministic" and "1,379 STS-B test pairs" in row["noise_source"]
    assert row["tolerance"] > 2.78 * 0.5 / np.sqrt(5)  # the test pairs' noise adds to the seed spread
    assert 3.0 < row["tolerance"] < 4.0 and row["verdict"] == "larger than the paper's"  # 4.0 beyond it, ratio 2.7
    close = fp.frozen_claims(summary.assign(stsb_test=[81.0, 80.0]), pd.Series({"att_both": 86.57,
                                                                              "cls_mean_last": 85.11}))
    assert close["verdict"].iloc[0] == "within noise"  # +1.0 against a tolerance of about 3.9
    assert len(fp.frozen_claims(summary.assign(pooling=["att_mean", "cls_last"]), pd.Series(dtype=float))) == 0


def test_findings_say_whether_a_gap_is_beyond_the_noise_and_name_a_pooler_one_hot_before_training():
    import bertsent.experiments.frozen_pooler as fp

    def summary(trained: float, sd: float, entropy_step0: float) -> pd.DataFrame:
        return pd.DataFrame({"backbone": ["m", "m"], "pooling": ["att_both_cls", "cls_mean_last"], "seeds": [5, 1],
                             "stsb_test": [trained, 50.0], "stsb_test_sd": [sd, np.nan], "stsb_pairs": [1379, 1379],
                             "steps": [3000, 0], "entropy_step0": [entropy_step0, np.nan]})

    weights = pd.DataFrame(columns=["backbone", "pooling", "state", "weight", "uniform", "entropy_ratio"])
    near = summary(50.5, 0.7, 0.9)
    tolerance = fp.difference_noise(near.iloc[0], "att_both_cls", near.iloc[1], "cls_mean_last").tolerance
    assert 0.5 < tolerance
    text = fp.frozen_findings(near, weights)
    assert f"scores above, within the noise, the best fixed readout (cls_mean_last, 50.00: +0.50, tolerance " \
           f"{tolerance:.2f})" in text and "one-hot" not in text
    far = fp.frozen_findings(summary(70.0, 0.7, 1e-30), weights)
    assert "beats the best fixed readout" in far and "one-hot before its first step" in far
    assert "below" in fp.frozen_findings(summary(30.0, 0.7, 0.9), weights)
    # with the paired noise of every backbone's difference (read afresh for each backbone)
    two = pd.concat([near, near.assign(backbone="n")], ignore_index=True)
    noise = pd.DataFrame({"backbone": ["m", "n"], "better_pooling": "att_both_cls", "better_readout": "pooled",
                          "worse_pooling": "cls_mean_last", "worse_readout": "pooled", "pairs": 1379,
                          "resamples": 1000, "se": [0.01, 0.01]})
    paired = fp.difference_noise(near.iloc[0], "att_both_cls", near.iloc[1], "cls_mean_last",
                                 fp._paired(noise, "m", "att_both_cls", "cls_mean_last")).tolerance
    assert paired < tolerance
    text = fp.frozen_findings(two, weights, noise)
    assert text.count(f"+0.50, tolerance {paired:.2f}") == 2


def _recorded_without_pair_cosines(fp, stored):
    """A run as recorded before the per-pair cosines existed: their file and entry removed, the manifest rewritten."""
    from bertsent.experiments.store import write_manifest

    described = json.loads((stored.directory / "evaluations.json").read_text())
    name = next(n for n, entry in described.items() if entry["evaluation"] == fp.PAIR_COSINES)
    (stored.directory / name).unlink()
    (stored.directory / "evaluations.json").write_text(json.dumps({k: v for k, v in described.items() if k != name}))
    write_manifest(stored.directory)
    stored.verify()


def test_per_pair_cosines_are_added_to_an_older_record_only_where_training_again_reproduces_it(arm):
    fp, states, run = arm
    trained, fixed = run("att_both_cls"), run("mean_last")
    first = {}
    for one in (trained, fixed):
        stored = fp.execute(one, states, DEV, TESTS, log=lambda _: None)
        first[one.key] = stored.scores(fp.PAIR_COSINES, fp.pair_cosine_settings(one))
        _recorded_without_pair_cosines(fp, stored)
    assert not fp.has_pair_cosines(trained) and fp.pair_cosines([trained, fixed]).empty
    log = []
    added = fp.add_pair_cosines([trained, fixed], log=log.append, loaded={trained.backbone: states}, dev=DEV,
                                test_sets=TESTS)
    assert [r.key for r in added] == [trained.key, fixed.key] and "reproduced exactly" in log[-1]
    for one in (trained, fixed):
        one.stored.verify()
        cosines = one.stored.scores(fp.PAIR_COSINES, fp.pair_cosine_settings(one))
        if one is trained:
            assert set(cosines["record_gap"]) == {0.0}  # the same numbers as its record
            cosines = cosines.drop(columns="record_gap")
        pd.testing.assert_frame_equal(cosines, first[one.key])
    assert fp.add_pair_cosines([trained, fixed]) == []  # nothing left to add
    # a record that training again does not reproduce keeps no cosines
    other = run("att_mean")
    stored = fp.execute(other, states, DEV, TESTS, log=lambda _: None)
    _recorded_without_pair_cosines(fp, stored)
    train = json.loads((stored.directory / "train.json").read_text())
    train["best_dev"] += 0.02  # further from the record than another kind of CPU lands
    train["summary"]["best_dev"] += 0.02
    stored.record(train, stored.history())
    log = []
    assert fp.add_pair_cosines([other], log=log.append, loaded={other.backbone: states}, dev=DEV,
                               test_sets=TESTS) == []
    assert "does not reproduce" in log[-1] and not fp.has_pair_cosines(other)
    assert fp.add_pair_cosines([other], log=log.append, loaded={other.backbone: states}, dev=DEV, test_sets=TESTS,
                               tolerance=0.05) == [other]
    assert "reproduced within 0.0200 points" in log[-1]
    gaps = other.stored.scores(fp.PAIR_COSINES, fp.pair_cosine_settings(other))["record_gap"]
    assert set(gaps.round(6)) == {0.02}


def test_a_paired_bootstrap_replaces_fishers_z_only_where_every_seed_of_both_sides_has_its_cosines():
    import bertsent.experiments.frozen_pooler as fp

    rng = np.random.default_rng(0)
    gold = rng.normal(size=300)
    rows = [("b", "att_both_cls", seed, gold + rng.normal(scale=0.5, size=300)) for seed in (42, 43)]
    rows += [("b", "cls_mean_last", 0, gold + rng.normal(scale=1.0, size=300)),
             ("b", "att_both", 42, gold + rng.normal(scale=0.7, size=300))]  # att_both: one of its two seeds
    cosines = pd.concat([pd.DataFrame({"backbone": b, "pooling": p, "seed": s, "pair": np.arange(300), "gold": gold,
                                       "cosine": c}) for b, p, s, c in rows], ignore_index=True)
    summary = pd.DataFrame({"backbone": "b", "pooling": ["att_both_cls", "att_both", "cls_mean_last"],
                            "seeds": [2, 2, 1], "stsb_test": [80.0, 78.0, 70.0], "stsb_test_sd": [0.5, 0.5, np.nan],
                            "stsb_pairs": 300})
    noise = fp.frozen_paired_noise(cosines, summary, resamples=200)
    judged = set(zip(noise["better_pooling"], noise["worse_pooling"]))
    assert ("att_both_cls", "cls_mean_last") in judged and not any("att_both" in pair for pair in judged)
    claims = fp.frozen_claims(summary, pd.Series(dtype=float), noise=noise).set_index("claim")
    paired = claims.loc["att_both_cls > cls_mean_last (stsb)"]
    unpaired = claims.loc["att_both > cls_mean_last (stsb)"]
    assert "bootstrap" in paired["noise_source"] and "300 STS-B test pairs" in paired["noise_source"]
    assert "bootstrap" not in unpaired["noise_source"]
    assert paired["tolerance"] < fp.frozen_claims(summary, pd.Series(dtype=float)).set_index("claim").loc[
        "att_both_cls > cls_mean_last (stsb)", "tolerance"]

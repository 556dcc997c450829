"""Training the attention-pooling ablation's runs ahead of the page (``bertsent.experiments.attention_pooling_runs``):
the page's own runs and readouts, scored once where the page reads them, then reused without a model."""
import pytest

from bertsent.experiments import attention_pooling_runs as ahead
from bertsent.experiments.attention_pooling import PAPER_POOLER, READOUTS, run_sts_scores


def test_the_runs_are_the_ablation_pages_with_its_seeds_and_readouts():
    parameters, runs, sts = ahead.page_runs("smoke")
    got = [(run.backbone, run.config.pooling, run.config.seed) for run in runs]
    assert got == [("bert-mini-wiki", "cls_last", 42), ("bert-mini-wiki", "att_both_cls", 42),
                   ("bert-mini-wiki", "att_both_cls", 43)]
    assert all(run.config.max_steps == parameters["training"]["max_steps"] for run in runs)
    assert [ahead.page_readouts(run) for run in runs] == [("pooled",), READOUTS, READOUTS]
    assert set(sts) == set(parameters["datasets"]) and all(len(d) <= 8 * len(d.subsets) for d in sts.values())


def test_an_unknown_backbone_or_key_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="gemma-3-270m: not a backbone of attention_pooling_ablation.*bert-mini-wiki"):
        ahead.page_runs("smoke", backbones=["gemma-3-270m"])
    with pytest.raises(ValueError, match="no-such-run: not a run of attention_pooling_ablation.*--list"):
        ahead.train_page_runs("smoke", keys=["no-such-run"], log=lambda _: None)


def test_runs_are_scored_once_then_read_by_the_page_without_a_model(tmp_path):
    overrides = {"runs_dir": str(tmp_path / "runs"), "poolings": ["att_both_cls"], "main_seeds": [42]}
    results = tmp_path / "results"
    _, runs, sts = ahead.page_runs("smoke", overrides, results_dir=results)
    assert not ahead.is_scored(runs[0], sts)
    skipped = []
    assert ahead.train_page_runs("smoke", overrides, results_dir=results, max_runs=0, log=skipped.append) == []
    assert "left for a later call" in skipped[0]
    done = ahead.train_page_runs("smoke", overrides, results_dir=results, log=lambda _: None)
    assert [d["key"] for d in done] == [runs[0].key] and ahead.is_scored(runs[0], sts)
    assert ahead.train_page_runs("smoke", overrides, results_dir=results, log=lambda _: None) == []
    for weights in (tmp_path / "runs").rglob("*.pt"):
        weights.unlink()  # the page must read the stored scores, not retrain
    scores = run_sts_scores(runs[0], sts, READOUTS)
    assert set(scores["readout"]) == set(READOUTS) and scores["pooling"].eq(PAPER_POOLER).all()
    assert not list((tmp_path / "runs").rglob("*.pt"))


def test_a_run_trained_ahead_carries_what_the_layers_and_search_pages_ask_of_it(tmp_path):
    from bertsent.experiments.attention_pooling import (layers_page_inputs, load_retrieval_sets, run_alpha,
                                                        run_geometry, run_overhead, run_pair_cosines, run_retrieval,
                                                        timed_sentences)

    overrides = {"runs_dir": str(tmp_path / "runs"), "poolings": ["att_both_cls"], "main_seeds": [42]}
    results = tmp_path / "results"
    logged = []
    ahead.train_page_runs("smoke", overrides, results_dir=results, log=logged.append)
    assert "pair_cosines, geometry, alpha, retrieval, overhead" in logged[0]
    for weights in (tmp_path / "runs").rglob("*.pt"):
        weights.unlink()  # what follows must be read from the store, not computed from a retrained model
    _, runs, sts = ahead.page_runs("smoke", overrides, results_dir=results)
    run_pair_cosines(runs[0], sts["stsb"], READOUTS)
    layers, pooler_runs, _ = ahead.companion_runs("attention_pooling_layers", "smoke", overrides, results)
    stored = pooler_runs[("bert-mini-wiki", 42)]
    assert stored.key == runs[0].key
    # the layers and search notebooks' own calls, with their inputs built as the notebooks build them
    stsb, alpha_sentences = layers_page_inputs(layers["max_pairs"], layers["alpha_sentences"])
    run_geometry(stored, stsb)
    run_alpha(stored, alpha_sentences)
    search, pooler_runs, _ = ahead.companion_runs("attention_pooling_search", "smoke", overrides, results)
    sets = load_retrieval_sets(search["retrieval_sets"], search["max_pairs"])
    run_retrieval(pooler_runs[("bert-mini-wiki", 42)], sets)
    run_overhead(pooler_runs[("bert-mini-wiki", 42)], timed_sentences(sets, search["overhead_sentences"]),
                 search["repeats"])
    assert not list((tmp_path / "runs").rglob("*.pt"))


def test_a_companion_page_takes_only_the_overrides_it_declares():
    parameters, pooler_runs, baselines = ahead.companion_runs(
        "attention_pooling_layers", "smoke", {"poolings": ["att_both_cls"], "recipes": {}})
    assert parameters["recipes"] == {} and "poolings" not in parameters
    assert sorted(seed for _, seed in pooler_runs) == parameters["seeds"]
    assert all(run.config.pooling == parameters["baseline"] for run in baselines.values())

"""The run cache (``bertsent.experiments.runs``) and the committed per-run results (``bertsent.experiments.store``):
run keys, reuse without weights, retraining only when a page needs the model, what a run writes."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from bertsent import versions
from bertsent.experiments import runs
from bertsent.experiments.runs import run_id
from bertsent.experiments.store import StoredRun
from bertsent.paths import REPO_ROOT
from bertsent.training import SelfGuidedConfig


def test_run_id_depends_on_every_setting():
    base = SelfGuidedConfig()
    assert run_id("m", "stsb_all", base) == run_id("m", "stsb_all", SelfGuidedConfig())
    assert run_id("m", "stsb_all", base) != run_id("m", "stsb_all", SelfGuidedConfig(seed=1))
    assert run_id("m", "stsb_all", base) != run_id("m", "stsb_train", base)
    assert run_id("m", "stsb_all", base) != run_id("m", "stsb_all", SelfGuidedConfig(view_pooling="mean"))
    assert run_id("m", "stsb_all", base).startswith("m-opt3-stsb_all-s42-")
    assert run_id("m", "stsb_all", base, dev_pairs=24) != run_id("m", "stsb_all", base, dev_pairs=1500)


def _bump(module: Path) -> None:
    module.write_text(module.read_text().replace("METHOD_VERSION = 1", "METHOD_VERSION = 2"))


def test_run_id_follows_the_method_versions_of_the_training_path_only(library_copy):
    base = run_id("m", "stsb_all", SelfGuidedConfig())
    (library_copy / "losses" / "self_guided" / "opt3.py").write_text(
        '"""A docstring edit."""\n' + (library_copy / "losses" / "self_guided" / "opt3.py").read_text())
    _bump(library_copy / "experiments" / "sts_tables.py")  # scoring, not training
    _bump(library_copy / "evaluation" / "transfer.py")
    assert run_id("m", "stsb_all", SelfGuidedConfig()) == base
    _bump(library_copy / "losses" / "self_guided" / "opt3.py")
    assert run_id("m", "stsb_all", SelfGuidedConfig()) != base


def test_run_id_follows_the_data_manifest_and_the_weights_of_a_repository_model(monkeypatch, tmp_path):
    base = run_id("bert-mini-wiki", "stsb_all", SelfGuidedConfig())
    manifest = tmp_path / "manifest.csv"
    manifest.write_text((REPO_ROOT / "data" / "manifest.csv").read_text().replace("downstream/CR/custrev.neg,ec", "downstream/CR/custrev.neg,ff"))
    monkeypatch.setattr(runs, "manifest_digest", lambda: versions.manifest_digest(manifest))
    assert run_id("bert-mini-wiki", "stsb_all", SelfGuidedConfig()) != base
    monkeypatch.undo()
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"one")
    first = run_id(str(model), "stsb_all", SelfGuidedConfig())
    (model / "model.safetensors").write_bytes(b"two")
    assert run_id(str(model), "stsb_all", SelfGuidedConfig()) != first
    assert "weights" in runs.backbone_identity("bert-mini-wiki")  # kept in models/: its weights are part of the key
    assert runs.backbone_identity("all-minilm-l6-v2") == {"backbone": "all-minilm-l6-v2"}  # pinned by its package


DEV = ["pair 1", "pair 2", "pair 3"]  # stands for an STS-B dev subset of three pairs


def test_a_finished_run_commits_its_results(fake_training, tmp_path):
    config = SelfGuidedConfig(max_steps=4)
    directory = runs.train_or_reuse("m", "stsb_all", config, dev=DEV, root=tmp_path / "cache",
                                    results_dir=tmp_path / "results")
    stored = runs.stored_run("m", "stsb_all", config, tmp_path / "results", len(DEV))
    assert stored.directory == tmp_path / "results" / "runs" / "sg" / run_id("m", "stsb_all", config, len(DEV))
    assert directory == tmp_path / "cache" / stored.key
    train = stored.train()
    assert (train["best_step"], train["best_dev"], train["dev_step0"]) == (2, 71.5, 70.0)
    assert (train["seconds"], train["torch_threads"], train["step"]) == (12.5, 1, 4)
    assert train["identity"]["config"]["max_steps"] == 4 and train["identity"]["train_data"] == "stsb_all"
    assert "bertsent.losses.self_guided.opt3" in train["method_versions"]
    history = stored.history()
    assert history["best"].tolist() == [False, True, False] and history["loss"].isna().tolist() == [True, False, False]
    index = pd.read_csv(tmp_path / "results" / "runs" / "sg" / "index.csv")
    assert index.loc[0, ["key", "best_step", "best_dev", "dev_step0"]].tolist() == [stored.key, 2, 71.5, 70.0]
    assert len(fake_training) == 1


def test_committed_results_are_used_without_weights(fake_training, tmp_path):
    config = SelfGuidedConfig(max_steps=4)
    settings = {"datasets": {"stsb": 24}}
    scores = pd.DataFrame({"dataset": ["stsb", "stsb"], "aggregation": ["all", "wmean"],
                           "spearman": [71.23456789012345, float("nan")]})
    first = runs.run_scores("m", "stsb_all", config, "sts_cls", settings, lambda model: scores, dev=DEV,
                            runs_dir=tmp_path / "cache", results_dir=tmp_path / "results")
    pd.testing.assert_frame_equal(first, scores)  # written in full: read back exactly
    shutil.rmtree(tmp_path / "cache")  # another machine: the weights are gone, the results are committed

    def no_model(model):
        raise AssertionError("scored again")

    again = runs.run_scores("m", "stsb_all", config, "sts_cls", settings, no_model, dev=DEV,
                            runs_dir=tmp_path / "cache", results_dir=tmp_path / "results")
    pd.testing.assert_frame_equal(again, scores)
    history = runs.run_history("m", "stsb_all", config, tmp_path / "cache", tmp_path / "results", dev=DEV)
    assert history["dev"].max() == 71.5
    assert len(fake_training) == 1 and not (tmp_path / "cache").exists()


def test_a_rerun_elsewhere_reads_the_books_runs_and_writes_only_its_own(fake_training, tmp_path, monkeypatch):
    from bertsent.experiments import store

    book, rerun = tmp_path / "book", tmp_path / "rerun"
    monkeypatch.setattr(store, "RESULTS_DIR", book)  # stands for the book's results/
    config = SelfGuidedConfig(max_steps=4)
    scores = pd.DataFrame({"dataset": ["stsb"], "aggregation": ["all"], "spearman": [71.25]})
    runs.run_scores("m", "stsb_all", config, "sts_cls", {"n": 24}, lambda model: scores, dev=DEV,
                    runs_dir=tmp_path / "cache")                        # the book's own run and scores
    shutil.rmtree(tmp_path / "cache")                                     # a fresh clone: no weights
    before = sorted(p.relative_to(book) for p in book.rglob("*"))

    def no_model(model):
        raise AssertionError("scored again")

    again = runs.run_scores("m", "stsb_all", config, "sts_cls", {"n": 24}, no_model, dev=DEV,
                            runs_dir=tmp_path / "cache", results_dir=rerun)
    pd.testing.assert_frame_equal(again, scores)
    assert runs.run_history("m", "stsb_all", config, tmp_path / "cache", rerun, dev=DEV)["dev"].max() == 71.5
    assert len(fake_training) == 1 and not rerun.exists()                 # read from the book, nothing trained
    runs.run_scores("m", "stsb_all", config, "sts_cls", {"n": 48}, lambda model: scores, dev=DEV,
                    runs_dir=tmp_path / "cache", results_dir=rerun)      # new settings need the model
    assert len(fake_training) == 2
    assert runs.stored_run("m", "stsb_all", config, rerun, len(DEV)).scores("sts_cls", {"n": 48}) is not None
    assert sorted(p.relative_to(book) for p in book.rglob("*")) == before  # the book's store untouched


def test_a_page_that_needs_the_model_retrains_and_says_so(fake_training, tmp_path):
    config = SelfGuidedConfig(max_steps=4)
    runs.train_or_reuse("m", "stsb_all", config, dev=DEV, root=tmp_path / "cache", results_dir=tmp_path / "results")
    committed = runs.stored_run("m", "stsb_all", config, tmp_path / "results", len(DEV)).train()
    shutil.rmtree(tmp_path / "cache")
    said = []
    runs.run_scores("m", "stsb_all", config, "sts_cls", {"other": "settings"},
                    lambda model: pd.DataFrame({"dataset": ["stsb"], "spearman": [1.0]}), dev=DEV,
                    runs_dir=tmp_path / "cache", results_dir=tmp_path / "results")  # scores not committed: the model
    assert len(fake_training) == 2
    shutil.rmtree(tmp_path / "cache")
    runs.train_or_reuse("m", "stsb_all", config, dev=DEV, root=tmp_path / "cache", results_dir=tmp_path / "results",
                        log=said.append)
    assert len(said) == 1 and said[0].startswith(f"retraining {run_id('m', 'stsb_all', config, len(DEV))}: its results are committed")
    assert runs.stored_run("m", "stsb_all", config, tmp_path / "results", len(DEV)).train() == committed  # the record stays


def test_store_keeps_one_file_per_evaluation_setting(tmp_path):
    stored = StoredRun.at("sg", "k", tmp_path)
    stored.record({"summary": {"steps": 1}, "identity": {}, "method_versions": {}, "best_step": 0, "best_dev": 1.0,
                   "dev_step0": None, "seconds": 1.0, "backbone": "m", "config": {}, "step": 1},
                  pd.DataFrame({"step": [0]}))  # the fields every SG run's train.json has (store.TRAIN_SCHEMA)
    stored.add_scores("sts_cls", {"pairs": 24}, pd.DataFrame({"spearman": [1.0]}))
    stored.add_scores("sts_cls", {"pairs": 1379}, pd.DataFrame({"spearman": [2.0]}))
    assert stored.scores("sts_cls", {"pairs": 24})["spearman"].tolist() == [1.0]
    assert stored.scores("sts_cls", {"pairs": 1379})["spearman"].tolist() == [2.0]
    assert stored.scores("sts_cls", {"pairs": 5}) is None
    described = json.loads((stored.directory / "evaluations.json").read_text())
    assert sorted(v["settings"]["pairs"] for v in described.values()) == [24, 1379]
    with pytest.raises(ValueError, match="Unknown run kind"):
        StoredRun.at("weights", "k", tmp_path)


def test_glue_fine_tunings_are_reused_without_the_model(monkeypatch, tmp_path):
    import bertsent.training.glue as glue

    calls = []

    def finetune(model_path, task, config, data_dir=None, history=None, **_):
        calls.append(model_path)
        history += [{"step": 0, "loss": None, "dev": 50.0}, {"step": 3, "loss": 0.6, "dev": 60.0 + config.learning_rate * 1e5}]
        return {"task": task, "learning_rate": config.learning_rate, "accuracy": 60.0 + config.learning_rate * 1e5,
                "train_seconds": 1.5, "dev_examples": 277}

    monkeypatch.setattr(glue, "finetune_glue", finetune)
    made = []
    model = runs.ModelSource("pretraining-bert-tiny-x", lambda: made.append(1) or tmp_path / "weights")
    first = runs.glue_search(model, "RTE", [5e-5, 2e-5], results_dir=tmp_path, epochs=1)
    assert first["chosen"].tolist() == [True, False] and len(calls) == 2 and len(made) == 2
    again = runs.glue_search(runs.ModelSource(model.key, lambda: pytest.fail("weights needed")), "RTE", [5e-5, 2e-5],
                             results_dir=tmp_path, epochs=1)
    pd.testing.assert_frame_equal(again, first)
    assert len(calls) == 2
    index = pd.read_csv(tmp_path / "runs" / "glue" / "index.csv")
    assert sorted(index["dev_step0"]) == [50.0, 50.0] and sorted(index["best_dev"]) == [62.0, 65.0]
    other = runs.glue_search(runs.ModelSource("untrained-tiny", lambda: tmp_path), "RTE", [5e-5], results_dir=tmp_path,
                             epochs=1)
    assert len(calls) == 3 and len(other) == 1


def test_a_glue_objective_is_part_of_the_fine_tuning_key(monkeypatch, tmp_path):
    import bertsent.training.glue as glue
    from bertsent.training.aligned_contrastive import AclConfig, ContrastiveObjective

    received = []

    def finetune(model_path, task, config, data_dir=None, history=None, objective=None, run_dir=None):
        received.append(objective)
        history += [{"step": 0, "loss": None, "dev": 50.0}, {"step": 1, "loss": 0.6, "dev": 55.0, "angle": 95.0}]
        return {"task": task, "accuracy": 55.0, "train_seconds": 1.0}

    monkeypatch.setattr(glue, "finetune_glue", finetune)
    model = runs.ModelSource("weights-x", lambda: tmp_path)
    config = glue.GlueConfig(epochs=1)
    runs.glue_finetuning(model, "RTE", config, results_dir=tmp_path)
    acl = ContrastiveObjective(AclConfig())
    runs.glue_finetuning(model, "RTE", config, results_dir=tmp_path, objective=acl)
    runs.glue_finetuning(model, "RTE", config, results_dir=tmp_path, objective=ContrastiveObjective(AclConfig(weight=0.1)))
    runs.glue_finetuning(model, "RTE", config, results_dir=tmp_path, objective=ContrastiveObjective(AclConfig()))
    assert received == [None, acl, received[2]] and received[2].config.weight == 0.1  # the last one reused
    keys = sorted(path.name for path in (tmp_path / "runs" / "glue").iterdir() if path.is_dir())
    assert len(keys) == 3 and sum("acl_embed_grad" in key for key in keys) == 2
    stored = next(tmp_path.glob("runs/glue/*acl_embed_grad*/train.json"))
    identity = json.loads(stored.read_text())["identity"]
    assert identity["objective"]["name"] == "acl_embed+grad"
    assert "bertsent.training.aligned_contrastive" in json.loads(stored.read_text())["method_versions"]


def test_pretraining_results_are_reused_without_the_weights(monkeypatch, tmp_path):
    import bertsent.training.pretraining as pretraining
    from bertsent.training.pretraining import PretrainingConfig, PretrainingResult

    calls = []

    def pretrain(output_dir, config, **_):
        calls.append(output_dir)
        output_dir = Path(output_dir)
        (output_dir / "model").mkdir(parents=True, exist_ok=True)
        history = [{"step": 0, "tokens": 0, "train_loss": None, "heldout_mlm_accuracy": 0.01},
                   {"step": 6, "tokens": 300, "train_loss": 9.5, "heldout_mlm_accuracy": 0.05}]
        (output_dir / "train.json").write_text(json.dumps(
            {"config": json.loads(json.dumps(pretraining.asdict(config))), "steps": 6, "tokens": 300,
             "seconds": 3.0, "torch_threads": 1, "device": "cpu", "train_pairs": 10, "final": history[-1]}))
        return PretrainingResult(output_dir, 6, 300, 3.0, history)

    monkeypatch.setattr(pretraining, "pretrain", pretrain)
    config = PretrainingConfig(size="tiny", max_steps=6, mixed_precision="no")
    run = runs.pretraining_run(tmp_path / "cache", config, results_dir=tmp_path)
    assert (run.steps, run.tokens, run.seconds) == (6, 300, 3.0)
    assert (run.summary["best_step"], run.summary["dev_step0"], run.summary["best_dev"]) == (6, 0.01, 0.05)
    shutil.rmtree(tmp_path / "cache")
    again = runs.pretraining_run(tmp_path / "cache", config, results_dir=tmp_path)
    pd.testing.assert_frame_equal(again.history, run.history)
    assert len(calls) == 1
    said = []
    assert again.model_dir(log=said.append) == tmp_path / "cache" / "model"  # the weights, made again on demand
    assert len(calls) == 2 and said[0].startswith(f"pre-training {run.key} again")
    assert runs.pretraining_key(config) != runs.pretraining_key(PretrainingConfig(size="tiny", max_steps=7,
                                                                                  mixed_precision="no"))


def test_the_masked_lm_evaluation_is_kept_with_the_run_and_read_back_without_the_weights(monkeypatch, tmp_path):
    import bertsent.evaluation.mlm as mlm
    from bertsent.training.pretraining import PretrainingConfig

    evaluated = []

    def evaluate_checkpoint(model_dir, pairs, **kwargs):
        evaluated.append((model_dir, pairs, kwargs["files"]))
        return {"accuracy": pd.DataFrame({"positions": ["mask", "unchanged"], "count": [10, 2],
                                          "accuracy": [0.125, 1.0], "majority_token": [",", ","]}),
                "probes": pd.DataFrame({"sentence": ["A [MASK]."], "top_predictions": ["the , . of nan"]})}

    monkeypatch.setattr(mlm, "evaluate_checkpoint", evaluate_checkpoint)
    config = PretrainingConfig(size="tiny", max_steps=6, mixed_precision="no")
    key = runs.pretraining_key(config)
    stored = runs.StoredRun.at("pretraining", key, tmp_path)
    stored.directory.mkdir(parents=True)
    weights = []
    run = runs.PretrainingRun(key, stored, tmp_path / "cache", config)
    monkeypatch.setattr(runs.PretrainingRun, "model_dir", lambda self, log=print: weights.append(1) or tmp_path / "m")
    first = run.mlm_evaluation(64, files=("enwiki-2018.txt.xz",))
    assert evaluated == [(tmp_path / "m", 64, ("enwiki-2018.txt.xz",))] and weights == [1]
    again = run.mlm_evaluation(64, files=("enwiki-2018.txt.xz",))
    assert len(evaluated) == 1 and len(weights) == 1  # read back: no weights, no evaluation
    for part in ("accuracy", "probes"):
        pd.testing.assert_frame_equal(again[part], first[part])
    assert again["accuracy"]["majority_token"].tolist() == [",", ","]  # tokens are kept as text
    assert again["probes"]["top_predictions"].iloc[0] == "the , . of nan"
    run.mlm_evaluation(128, files=("enwiki-2018.txt.xz",))  # other held-out pairs: evaluated again
    assert [pairs for _, pairs, _ in evaluated] == [64, 128]
    from bertsent.experiments.store import manifest_problem, StoreError
    assert manifest_problem(stored.directory) is None  # the evaluation's files are listed with the run's
    (stored.directory / "mlm_accuracy.csv").write_text("edited")
    with pytest.raises(StoreError, match="mlm_accuracy.csv differs"):
        run.mlm_evaluation(256, files=("enwiki-2018.txt.xz",))  # an edited file is never listed anew


def test_a_dev_subsample_is_part_of_the_fine_tuning_key(monkeypatch, tmp_path):
    import bertsent.training.glue as glue

    def finetune(model_path, task, config, data_dir=None, history=None, **_):
        history += [{"step": 0, "loss": None, "dev": 50.0}, {"step": 1, "loss": 0.6, "dev": 55.0}]
        return {"task": task, "accuracy": 55.0, "train_seconds": 1.0,
                "dev_examples": min(277, config.max_dev_examples or 277)}

    monkeypatch.setattr(glue, "finetune_glue", finetune)
    model = runs.ModelSource("weights-x", lambda: tmp_path)
    full, small = glue.GlueConfig(epochs=1), glue.GlueConfig(epochs=1, max_dev_examples=32)
    assert runs._glue_identity(model, "RTE", full)[2] != runs._glue_identity(model, "RTE", small)[2]
    assert "max_dev_examples" not in runs._glue_identity(model, "RTE", full)[1]["config"]  # full-dev keys as before
    runs.glue_finetuning(model, "RTE", full, results_dir=tmp_path)
    runs.glue_finetuning(model, "RTE", small, results_dir=tmp_path)
    index = pd.read_csv(tmp_path / "runs" / "glue" / "index.csv")
    assert len(index) == 2 and sorted(index["max_dev_examples"].fillna(0)) == [0, 32]
    assert sorted(index["dev_examples"].fillna(0)) == [0, 32]
    assert "head_learning_rate" not in index
    runs.glue_finetuning(model, "RTE", glue.GlueConfig(epochs=1, head_learning_rate=1e-3), results_dir=tmp_path)
    index = pd.read_csv(tmp_path / "runs" / "glue" / "index.csv")  # its own run, listed with its head rate only
    assert sorted(index["head_learning_rate"].fillna(0)) == [0, 0, 1e-3]
    assert sorted(index["dev_examples"].fillna(0)) == [0, 0, 32]


def test_untrained_scores_are_read_from_the_books_store_and_written_only_where_asked(tmp_path, monkeypatch):
    from bertsent.experiments import store

    book_results, rerun_results = tmp_path / "book", tmp_path / "rerun"
    monkeypatch.setattr(store, "RESULTS_DIR", book_results)  # stands for the book's results/
    scores = pd.DataFrame({"dataset": ["stsb"], "aggregation": ["all"], "spearman": [61.25]})
    calls = []

    def compute():
        calls.append(1)
        return scores

    settings = {"readout": "cls", "datasets": {"stsb": 3}}
    first = runs.untrained_scores("m", "sts_cls", settings, compute, rerun_results)  # nothing committed: computed
    assert calls == [1] and first["spearman"].tolist() == [61.25]
    assert not book_results.exists() and (rerun_results / "runs" / "untrained").is_dir()
    runs.untrained_scores("m", "sts_cls", settings, compute)                          # the book's own store
    assert calls == [1, 1]
    other = tmp_path / "other"
    assert runs.untrained_scores("m", "sts_cls", settings, compute, other).equals(first)  # read from the book's
    assert calls == [1, 1] and not other.exists()
    runs.untrained_scores("m", "sts_cls", {**settings, "datasets": {"stsb": 4}}, compute, other)  # other settings
    assert calls == [1, 1, 1]


def test_a_verdict_rule_bump_changes_no_run_key_or_stored_measurement(monkeypatch):
    """The verdict modules judge results and change no weight or score: run keys and stored measurements read them
    at fixed versions, so bumping the rule re-judges pages instead of re-keying every stored run and measurement."""
    from bertsent.experiments import runs

    real = runs.method_versions

    def bumped(roots, *args, **kwargs):
        versions = real(roots, *args, **kwargs)
        return {name: (version + 5 if name in runs.VERDICT_MODULES_IN_KEYS else version)
                for name, version in versions.items()}

    module = "bertsent.experiments.self_guided"
    before = runs.evaluation_settings(module, pairs=10)["methods"], runs.path_versions(runs.SG_TRAINING_PATH)["digest"]
    monkeypatch.setattr(runs, "method_versions", bumped)
    after = runs.evaluation_settings(module, pairs=10)["methods"], runs.path_versions(runs.SG_TRAINING_PATH)["digest"]
    assert before == after
    assert set(runs.VERDICT_MODULES_IN_KEYS) & set(real([module]))  # the scoring code does reach a verdict module

    def other_bump(roots, *args, **kwargs):  # a bump of a module that computes numbers still re-keys
        versions = real(roots, *args, **kwargs)
        return {name: (version + 5 if name == "bertsent.encode.pooling" else version) for name, version in versions.items()}

    monkeypatch.setattr(runs, "method_versions", other_bump)
    assert runs.evaluation_settings(module, pairs=10)["methods"] != before[0]


def test_glue_seeds_rerun_the_chosen_learning_rate_and_reuse_the_search_seed(monkeypatch, tmp_path):
    import bertsent.evaluation.glue as glue_evaluation
    import bertsent.training.glue as glue

    calls = []

    def finetune(model_path, task, config, data_dir=None, history=None, **_):
        calls.append((config.learning_rate, config.seed, config.max_train_examples))
        score = 60.0 + config.learning_rate * 1e5 + config.seed
        history += [{"step": 0, "loss": None, "dev": 50.0}, {"step": 3, "loss": 0.6, "dev": score}]
        return {"task": task, "learning_rate": config.learning_rate, "seed": config.seed, "accuracy": score,
                "train_seconds": 1.0, "dev_examples": 277}

    monkeypatch.setattr(glue, "finetune_glue", finetune)
    monkeypatch.setattr(glue_evaluation, "majority_class_scores", lambda task, data_dir=None, n=None: {"accuracy": 52.7})
    models = {"pre-trained": runs.ModelSource("weights-a", lambda: tmp_path)}
    searches = runs.glue_searches(models, ["RTE"], [5e-5, 2e-5], results_dir=tmp_path, epochs=1,
                                  max_train_examples={"RTE": 100})
    assert len(calls) == 2
    seeded = runs.glue_seeded(models, searches, [0, 1, 2], results_dir=tmp_path, epochs=1,
                              max_train_examples={"RTE": 100})
    # seed 0 at 5e-5 is the search's own run, read back: only seeds 1 and 2 are trained, at the chosen rate
    assert calls[2:] == [(5e-5, 1, 100), (5e-5, 2, 100)]
    assert seeded["seed"].tolist() == [0, 1, 2] and set(seeded["model"]) == {"pre-trained"}
    assert seeded["accuracy"].tolist() == pytest.approx([65.0, 66.0, 67.0])
    assert not seeded["at_majority_class"].any()

"""GLUE fine-tuning: metrics, the recipe's learning-rate choice, a tiny end-to-end run."""
import pytest
import torch

from bertsent.training.glue import GlueConfig, finetune_glue, glue_learning_rate_search, glue_metrics


def test_glue_metrics_match_their_definitions():
    assert glue_metrics("CoLA", [0, 1, 1, 0], [0, 1, 1, 0]) == {"mcc": 100.0}
    assert glue_metrics("CoLA", [0, 1, 1, 0], [1, 0, 0, 1])["mcc"] == pytest.approx(-100.0)
    # MRPC: 3 of 4 right; precision 2/2, recall 2/3 -> F1 0.8
    assert glue_metrics("MRPC", [1, 1, 1, 0], [1, 1, 0, 0]) == pytest.approx({"accuracy": 75.0, "f1": 80.0})
    assert glue_metrics("RTE", [0, 1], [1, 1]) == {"accuracy": 50.0}


@pytest.fixture(scope="module")
def tiny_pretrained(tmp_path_factory):
    from bertsent.training.pretraining import PretrainingConfig, pretrain

    out = tmp_path_factory.mktemp("bert")
    pretrain(out, PretrainingConfig(size="tiny", batch_size=8, max_length=64, max_steps=2, eval_every=2,
                                    eval_instances=16, mixed_precision="no", corpus_files=("enwiki-2018.txt.xz",)),
             show_progress=False)
    return str(out / "model")


def test_finetune_and_choose_the_learning_rate(tiny_pretrained):
    table = glue_learning_rate_search(tiny_pretrained, "MRPC", learning_rates=(5e-5, 2e-5), max_train_examples=64,
                                      epochs=1)
    assert list(table["learning_rate"]) == [5e-5, 2e-5]
    assert table["chosen"].sum() == 1
    assert table.loc[table["chosen"], "accuracy"].item() == table["accuracy"].max()
    assert set(table["train_examples"]) == {64} and set(table["dev_examples"]) == {408}
    assert table[["accuracy", "f1"]].notna().all().all()


def test_unknown_task_is_refused(tiny_pretrained):
    with pytest.raises(ValueError, match="Unknown task"):
        finetune_glue(tiny_pretrained, "MNLI", GlueConfig())


def test_results_are_reused_from_the_cache(tiny_pretrained, tmp_path, monkeypatch):
    from bertsent.training import glue

    first = finetune_glue(tiny_pretrained, "RTE", GlueConfig(max_train_examples=16, epochs=1), cache_dir=tmp_path)
    class FineTunedAgain(Exception):
        pass

    def refuse(*args, **kwargs):
        raise FineTunedAgain("fine-tuned again")

    monkeypatch.setattr(glue, "_finetune", refuse)
    assert finetune_glue(tiny_pretrained, "RTE", GlueConfig(max_train_examples=16, epochs=1), cache_dir=tmp_path) == first
    with pytest.raises(FineTunedAgain):  # another configuration is another result
        finetune_glue(tiny_pretrained, "RTE", GlueConfig(max_train_examples=16, epochs=1, seed=1), cache_dir=tmp_path)


def test_max_dev_examples_scores_a_seeded_subset_and_says_so(tiny_pretrained, tmp_path):
    from bertsent.data.glue import load_glue
    from bertsent.training.glue import config_identity, dev_subset

    dev = load_glue("RTE", "dev")
    subset = dev_subset(dev, 32)
    assert len(subset) == 32 and subset.equals(dev_subset(dev, 32))  # the same rows every time
    assert set(subset["sentence1"]) <= set(dev["sentence1"])
    assert dev_subset(dev, None) is dev and dev_subset(dev, 10_000) is dev
    # unset, the field is in no key or result: full-dev runs keep the keys they had before it existed
    assert "max_dev_examples" not in config_identity(GlueConfig())
    assert config_identity(GlueConfig(max_dev_examples=32))["max_dev_examples"] == 32
    config = dict(max_train_examples=16, epochs=1)
    small = finetune_glue(tiny_pretrained, "RTE", GlueConfig(max_dev_examples=32, **config), cache_dir=tmp_path)
    assert small["dev_examples"] == 32 and small["max_dev_examples"] == 32
    full = finetune_glue(tiny_pretrained, "RTE", GlueConfig(**config), cache_dir=tmp_path)
    assert full["dev_examples"] == len(dev) and "max_dev_examples" not in full
    assert len(list(tmp_path.glob("RTE-*.json"))) == 2  # two cache entries: a subset score never stands for a full one


def test_a_head_learning_rate_is_its_own_run_and_is_recorded_only_when_set(tiny_pretrained, tmp_path):
    from bertsent.training.glue import config_identity

    assert "head_learning_rate" not in config_identity(GlueConfig())  # unset: the keys runs had before it existed
    config = dict(max_train_examples=16, epochs=1, max_dev_examples=32)
    plain = finetune_glue(tiny_pretrained, "RTE", GlueConfig(**config), cache_dir=tmp_path)
    fast_head = finetune_glue(tiny_pretrained, "RTE", GlueConfig(head_learning_rate=1e-2, **config), cache_dir=tmp_path)
    assert "head_learning_rate" not in plain and fast_head["head_learning_rate"] == 1e-2
    assert len(list(tmp_path.glob("RTE-*.json"))) == 2


# --- interruptions: a checkpoint in the run's folder, and a resumed run that ends as an uninterrupted one -------

RESUMABLE = dict(max_train_examples=40, batch_size=8, epochs=2, max_length=32, learning_rate=1e-3,
                 max_dev_examples=32)  # 5 steps an epoch, 10 in all; dropout on (tiny_bert's 0.1)


def _with_weights(objective_class, *args):
    """``objective_class``'s objective, whose result also holds the fine-tuned weights (to compare runs)."""
    class KeepsWeights(objective_class):
        def result(self, method, model):
            return {**super().result(method, model),
                    "weights": {name: value.detach().clone() for name, value in model.state_dict().items()}}

    return KeepsWeights(*args)


def assert_same_run(straight: dict, resumed: dict) -> None:
    """The same fine-tuned weights, bit for bit, and the same numbers (all but the seconds)."""
    a, b = straight.pop("weights"), resumed.pop("weights")
    assert a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a), \
        [name for name in a if not torch.equal(a[name], b[name])]
    straight.pop("train_seconds"), resumed.pop("train_seconds")
    assert resumed == straight


def test_an_interrupted_fine_tuning_resumes_from_its_checkpoint_and_ends_as_an_uninterrupted_one(
        tiny_bert, tmp_path, capsys):
    from bertsent.training.glue import FineTuningStopped, GlueObjective

    config = GlueConfig(**RESUMABLE)
    straight_history, resumed_history = [], []
    straight = finetune_glue(tiny_bert, "RTE", config, history=straight_history, run_dir=tmp_path / "straight",
                             objective=_with_weights(GlueObjective))
    assert not (tmp_path / "straight" / "best.pt").exists()  # no selection, so no best weights to keep
    with pytest.raises(FineTuningStopped, match="stopped at step 4 of 10"):
        finetune_glue(tiny_bert, "RTE", config, history=[], run_dir=tmp_path / "split", stop_after=4,
                      objective=_with_weights(GlueObjective))
    assert (tmp_path / "split" / "checkpoint.pt").is_file()
    capsys.readouterr()
    resumed = finetune_glue(tiny_bert, "RTE", config, history=resumed_history, run_dir=tmp_path / "split",
                            objective=_with_weights(GlueObjective))
    checkpoint = tmp_path / "split" / "checkpoint.pt"
    assert capsys.readouterr().err.count(f"resuming split from step 4 (checkpoint {checkpoint})") == 1
    assert_same_run(straight, resumed)
    assert resumed_history == straight_history  # the dev score at step 0, the running loss at step 10, the end
    with pytest.raises(ValueError, match="different configuration"):  # another seed never resumes this one
        finetune_glue(tiny_bert, "RTE", GlueConfig(**{**RESUMABLE, "seed": 1}), history=[],
                      run_dir=tmp_path / "split")


def test_a_run_directory_gets_a_checkpoint_every_few_minutes(tiny_bert, tmp_path, monkeypatch):
    """checkpoint_minutes reaches the loop (0: after every step but the last, which the caller records)."""
    from bertsent.training import glue, loop

    assert glue.CHECKPOINT_MINUTES <= 5
    saved = []
    monkeypatch.setattr(loop.Checkpoint, "save",
                        lambda self, weights, optimizer, scheduler, state: saved.append(state["step"]))
    finetune_glue(tiny_bert, "RTE", GlueConfig(**RESUMABLE), run_dir=tmp_path, checkpoint_minutes=0)
    assert saved == list(range(1, 10))

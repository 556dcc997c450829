"""Pre-training on another machine and bringing the run back (``bertsent.experiments.remote_pretraining``)."""
import json

import pytest
import torch
from transformers import AutoModel

from bertsent.experiments import remote_pretraining as remote
from bertsent.experiments.runs import pretraining_key, pretraining_run, pretraining_run_dir
from bertsent.experiments.store import StoredRun

TINY = dict(size="tiny", batch_size=8, max_length=64, eval_instances=32, mixed_precision="no", learning_rate=1e-3)


def test_steps_that_fit_take_the_largest_rung_within_the_budget():
    assert remote.steps_that_fit(0.05, 420) == 8000        # 8,000 x 50 ms = 400 s
    assert remote.steps_that_fit(0.05, 399) == 6000
    assert remote.steps_that_fit(10.0, 60) == min(remote.STEP_LADDER)  # nothing fits: the smallest


def test_pack_train_unpack_round_trip(tmp_path, monkeypatch):
    carry = remote.pack(tmp_path / "carry")
    assert sorted(p.name for p in (carry / "corpus").iterdir()) == ["enwiki-2018.txt.xz"]
    assert (carry / "tokenizer" / "vocab.txt").is_file()

    from bertsent.encode import backbones
    from bertsent.training.pretraining import TOKENIZER_SOURCE

    # train() points the tokenizer's name at the packed copy, as on the GPU machine: undone after this test
    monkeypatch.setitem(backbones.REGISTRY, TOKENIZER_SOURCE, backbones.REGISTRY[TOKENIZER_SOURCE])
    out = tmp_path / "out"
    done = remote.train(carry, out, budget_seconds=3600, work=tmp_path / "work", overrides=TINY, ladder=(4, 6),
                        probe_steps=4, probe_from=2)
    assert done["steps"] == 6  # an hour fits both rungs
    shards = list((out / "model").glob("*.safetensors"))
    assert shards and all(s.stat().st_size <= 16 * 2**20 for s in shards)
    assert json.loads((out / "run" / "train.json").read_text())["config"]["max_steps"] == 6

    runs_root, results = tmp_path / "runs", tmp_path / "results"
    run_dir = remote.unpack(out, runs_root, results, overrides=TINY)
    config = remote._config(**{**TINY, "max_steps": 6})
    assert run_dir == pretraining_run_dir(runs_root, config)
    stored = StoredRun.at("pretraining", pretraining_key(config), results)
    assert stored.exists and stored.train()["steps"] == 6
    assert "float16" in json.loads((run_dir / "train.json").read_text())["transport"]

    # the chapter's entry point now reads the run without training: pre-training again would fail here
    monkeypatch.setattr("bertsent.training.pretraining.pretrain",
                        lambda *a, **k: pytest.fail("the brought-back run was trained again"))
    run = pretraining_run(run_dir, config, results_dir=results)
    model = AutoModel.from_pretrained(run.model_dir())
    assert next(model.parameters()).dtype == torch.float32


def test_unpack_refuses_a_run_of_another_configuration(tmp_path):
    (tmp_path / "run").mkdir()
    summary = {"config": {**json.loads(json.dumps(remote._config().__dict__)), "max_steps": 6, "batch_size": 3}}
    (tmp_path / "run" / "train.json").write_text(json.dumps(summary))
    with pytest.raises(ValueError, match="another configuration"):
        remote.unpack(tmp_path, tmp_path / "runs", tmp_path / "results")

"""Each trainer reproduces stored numbers: a change to the shared loop (``bertsent.training.loop``) or to a trainer
that moves any number fails here, with the first differing value named.

Smoke-sized, deterministic runs (CPU, float32, one thread): SG-OPT and SG on a tiny random BERT (as in
``test_self_guided.py``), BERT pre-training's smoke configuration (as in ``test_pretraining.py``), GLUE
fine-tuning of that pre-trained model (MRPC and CoLA, with the history rows). Compared with
``tests/fixtures/training/<trainer>.json``: the dev history, the running losses, the selected step, the metrics,
and the sum and sum of squares of the final and selected weights (relative tolerance 1e-5: a changed update moves
them by far more; different CPUs' float32 kernels by less).

After an intended change of the numbers (one that comes with a ``METHOD_VERSION`` bump), regenerate the fixtures
and commit them with the change::

    BERTSENT_UPDATE_TRAINING_FIXTURES=1 .venv/bin/python -m pytest -q tests/training/test_reference_numbers.py
"""
import json
import math
import os
from pathlib import Path

import pytest
import torch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "training"
UPDATE = os.environ.get("BERTSENT_UPDATE_TRAINING_FIXTURES") == "1"
REL, ABS = 1e-5, 1e-7


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def weight_stats(state: dict) -> dict:
    """Sum and sum of squares (float64) of a state dict's floating-point tensors."""
    tensors = [v.detach().double() for v in state.values() if torch.is_tensor(v) and v.is_floating_point()]
    return {"sum": float(sum(t.sum() for t in tensors)), "sum_of_squares": float(sum((t ** 2).sum() for t in tensors))}


def differences(actual, expected, where="") -> list[str]:
    if isinstance(expected, dict) and isinstance(actual, dict):
        if actual.keys() != expected.keys():
            return [f"{where}: keys {sorted(actual)} != {sorted(expected)}"]
        return [d for key in expected for d in differences(actual[key], expected[key], f"{where}.{key}")]
    if isinstance(expected, list) and isinstance(actual, list):
        if len(actual) != len(expected):
            return [f"{where}: {len(actual)} items != {len(expected)}"]
        return [d for i, (a, e) in enumerate(zip(actual, expected)) for d in differences(a, e, f"{where}[{i}]")]
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        if math.isnan(expected) and math.isnan(actual):
            return []
        return [] if math.isclose(actual, expected, rel_tol=REL, abs_tol=ABS) else [f"{where}: {actual!r} != {expected!r}"]
    return [] if actual == expected else [f"{where}: {actual!r} != {expected!r}"]


def check(name: str, actual: dict) -> None:
    path = FIXTURES / f"{name}.json"
    actual = json.loads(json.dumps(actual))  # what the fixture holds: JSON types
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(actual, indent=1) + "\n")
    expected = json.loads(path.read_text())
    found = differences(actual, expected)
    assert not found, (f"{name}: {len(found)} numbers differ from {path} (first: {found[:5]}). If the change is "
                       f"intended, bump METHOD_VERSION and regenerate (see this file's docstring).")


def test_self_guided_trainer_reproduces_its_numbers(tiny_bert, tmp_path):
    from bertsent.data.sts import load_stsb
    from bertsent.training import SelfGuidedConfig, train_self_guided

    sentences = load_stsb("train").subsets["train"].sentences1[:96]
    dev = load_stsb("dev").head(40)
    base = dict(head_dim=64, batch_size=8, max_length=32, eval_every=3, max_steps=6, learning_rate=1e-3)
    runs = {"sg_opt": {}, "sg_frozen_dropout": dict(loss="base", frozen_dropout=True, eval_every=2)}
    actual = {}
    for name, overrides in runs.items():
        result = train_self_guided(tiny_bert, sentences, dev, tmp_path / name, SelfGuidedConfig(**{**base, **overrides}),
                                   show_progress=False, keep_checkpoints=True)
        checkpoint = torch.load(tmp_path / name / "checkpoint.pt", weights_only=False)
        actual[name] = {"best_step": result.best_step, "best_dev": result.best_dev, "steps": result.steps,
                        "history": result.history, "final_trainable": weight_stats(checkpoint["model"]),
                        "selected": weight_stats(torch.load(tmp_path / name / "best.pt"))}
    check("self_guided", actual)


PRETRAINING = dict(size="tiny", batch_size=8, max_length=64, eval_every=4, eval_instances=64, mixed_precision="no",
                   corpus_files=("enwiki-2018.txt.xz",), learning_rate=1e-3, max_steps=8)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    from bertsent.training.pretraining import PretrainingConfig, pretrain

    torch.set_num_threads(1)  # before the module's autouse fixture when this one runs first
    directory = tmp_path_factory.mktemp("bert")
    return directory, pretrain(directory, PretrainingConfig(**PRETRAINING), show_progress=False)


def test_pretraining_reproduces_its_numbers(pretrained):
    directory, result = pretrained
    checkpoint = torch.load(directory / "checkpoint.pt", weights_only=False)
    history = [{k: v for k, v in row.items() if k != "seconds"} for row in result.history]
    check("pretraining", {"steps": result.steps, "tokens": result.tokens, "history": history,
                          "final": weight_stats(checkpoint["model"])})


def test_glue_fine_tuning_reproduces_its_numbers(pretrained, monkeypatch):
    from bertsent.training import glue

    directory, _ = pretrained
    created = []
    original = glue.sequence_classifier
    monkeypatch.setattr(glue, "sequence_classifier", lambda *a, **k: created.append(original(*a, **k)) or created[-1])
    runs = {"MRPC": glue.GlueConfig(learning_rate=5e-5, max_train_examples=64, epochs=1),
            "CoLA": glue.GlueConfig(learning_rate=1e-4, batch_size=8, epochs=2, max_train_examples=100, seed=3)}
    actual = {}
    for task, config in runs.items():
        history = []
        result = glue.finetune_glue(str(directory / "model"), task, config, history=history)
        result.pop("train_seconds")
        actual[task] = {"result": result, "history": history, "final": weight_stats(created[-1].state_dict())}
    check("glue", actual)

"""Shared fixtures of the experiments tests."""
import json
from pathlib import Path

import pytest


def _fake_training(calls):
    """A stand-in for train_self_guided: writes what a finished run leaves in .cache."""

    def train(backbone, sentences, dev, output_dir, config, show_progress=True, **_):
        calls.append(output_dir)
        output_dir = Path(output_dir)
        (output_dir / "model").mkdir(parents=True, exist_ok=True)
        history = [{"step": 0, "dev": 70.0, "loss": None}, {"step": 2, "dev": 71.5, "loss": 3.25},
                   {"step": 4, "dev": 71.0, "loss": 3.0}]
        (output_dir / "train.json").write_text(json.dumps(
            {"backbone": backbone, "config": {"loss": config.loss}, "sentences": 10, "step": 4, "best_dev": 71.5,
             "best_step": 2, "history": history, "seconds": 12.5, "torch_threads": 1, "processes": 1}))

    return train


@pytest.fixture
def fake_training(monkeypatch):
    import bertsent.data.sentences
    import bertsent.training.self_guided

    calls = []
    monkeypatch.setattr(bertsent.training.self_guided, "train_self_guided", _fake_training(calls))
    monkeypatch.setattr(bertsent.data.sentences, "training_sentences", lambda *_: ["a", "b"])
    return calls

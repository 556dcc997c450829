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


def _committed_long_run(folder):
    """A long run's committed folder as ``bertsent.training.long_run`` leaves it: a random BERT-tiny (weights, config,
    tokenizer) and the smoke run's record and history."""
    import shutil

    from bertsent.training.pretraining import save_untrained

    save_untrained("tiny", folder)
    for name in ("record.json", "history.csv"):
        shutil.copy(Path(__file__).resolve().parents[1] / "fixtures" / "training" / "long_run" / "smoke" / name,
                    folder / name)
    return folder


@pytest.fixture
def committed_long_run():
    """Makes a long run's committed folder where it is asked (:func:`_committed_long_run`)."""
    return _committed_long_run

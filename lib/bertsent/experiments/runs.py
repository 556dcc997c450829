"""The run cache of SG / SG-OPT experiments: run directories, their keys, and reuse.

A run is identified by its backbone, training sentences and full configuration (seed included); its
files live in ``.cache/runs/<id>/`` (checkpoints and the trained model are large and stay out of git;
the scores go to ``results/``). Asking again for a finished run reuses it; an interrupted one resumes.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from ..data.sentences import training_sentences
from ..data.sts import STSDataset, load_stsb
from ..paths import CACHE_DIR
from ..training.self_guided import SelfGuidedConfig, train_self_guided

METHOD_VERSION = 1  # bump when the maths changes


def run_id(backbone: str, train_data: str, config: SelfGuidedConfig) -> str:
    key = json.dumps({"backbone": backbone, "train_data": train_data, **asdict(config)}, sort_keys=True)
    return f"{backbone.replace('/', '_')}-{config.loss}-{train_data}-s{config.seed}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def train_or_reuse(backbone: str, train_data: str, config: SelfGuidedConfig, data_dir=None,
                   dev: STSDataset | None = None, root: Path | None = None, show_progress: bool = True) -> Path:
    """The directory of a finished run (trained now, resumed, or reused); its model is in ``<dir>/model``."""
    directory = Path(root or CACHE_DIR / "runs") / run_id(backbone, train_data, config)
    if (directory / "train.json").is_file() and (directory / "model").is_dir():
        return directory
    dev = dev if dev is not None else load_stsb("dev", data_dir)
    train_self_guided(backbone, training_sentences(train_data, data_dir), dev, directory, config,
                      show_progress=show_progress)
    return directory


def run_history(backbone: str, train_data: str, config: SelfGuidedConfig, runs_dir: Path | None = None) -> pd.DataFrame:
    """A finished run's evaluations: ``step``, ``dev`` (STS-B dev Spearman x 100 of [CLS]) and the running
    ``loss``, with ``best`` marking the checkpoint that was kept."""
    directory = Path(runs_dir or CACHE_DIR / "runs") / run_id(backbone, train_data, config)
    summary = json.loads((directory / "train.json").read_text())
    history = pd.DataFrame(summary["history"])
    history["best"] = history["step"] == summary["best_step"]
    return history

"""Committed per-run results: what a trained run produced, kept in git so that no machine trains it twice.

Each finished run (an SG / SG-OPT training, a BERT pre-training, a GLUE fine-tuning) writes its small results to
``results/runs/<kind>/<key>/``:

- ``train.json``: what the run is (``identity``: method, backbone, configuration, training data and the data
  manifest's digest, seed, the method versions of its training path), how it went (``best_step`` and the dev score
  there, ``dev_step0``: the dev score of the untrained model, steps, wall ``seconds``, ``torch_threads``), and a flat
  ``summary`` of the same that ``index.csv`` lists;
- ``history.csv``: the dev curve and the training loss at every evaluation;
- ``<evaluation>-<digest>.csv``: the scores the book's pages read (e.g. ``sts_cls``: Spearman of the last layer's
  [CLS] on every STS set; ``transfer_cls``: the transfer accuracies), one file per evaluation setting, described in
  ``evaluations.json``.

A backbone's own scores, before any training, are kept the same way under ``results/runs/untrained/<key>/``
(:func:`bertsent.experiments.runs.untrained_scores`): ``identity.json`` in place of ``train.json``, then the same
``<evaluation>-<digest>.csv`` files and ``evaluations.json``.

``results/runs/<kind>/index.csv`` lists every run of a kind, one line each. The heavy files (checkpoints, weights)
stay in ``.cache``. The key is a readable prefix and a hash of the identity (see :func:`run_key`), never of the
library's files: a refactor leaves every key as it is; a bumped ``METHOD_VERSION`` on the training path changes it
(:mod:`bertsent.versions`). Every file is written atomically, ``train.json`` last: a run directory without it is
unfinished and ignored.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..paths import RESULTS_DIR
from ..report.io import write_csv_atomic, write_json_atomic

KINDS = ("sg", "pretraining", "glue", "attention_pooling", "untrained")


def store_root(results_dir=None) -> Path:
    """Where runs are recorded: ``<results_dir>/runs`` (default: the repository's ``results/runs``)."""
    return Path(results_dir or RESULTS_DIR) / "runs"


def digest_of(payload) -> str:
    """sha256 (hex) of a JSON-serialisable value, keys sorted."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def run_key(readable: str, identity: dict, length: int = 10) -> str:
    """``<readable>-<first length hex digits of the identity's sha256>``; ``readable`` made file-name safe."""
    return f"{re.sub(r'[^A-Za-z0-9_.=-]+', '_', readable)}-{digest_of(identity)[:length]}"


@dataclass(frozen=True)
class StoredRun:
    """One run's directory of committed results."""

    kind: str
    key: str
    root: Path

    @classmethod
    def at(cls, kind: str, key: str, results_dir=None) -> "StoredRun":
        if kind not in KINDS:
            raise ValueError(f"Unknown run kind {kind!r}. Known: {', '.join(KINDS)}.")
        return cls(kind, key, store_root(results_dir))

    @property
    def directory(self) -> Path:
        return self.root / self.kind / self.key

    @property
    def exists(self) -> bool:
        """Finished and recorded (``train.json`` is written last)."""
        return (self.directory / "train.json").is_file()

    def train(self) -> dict:
        return json.loads((self.directory / "train.json").read_text(encoding="utf-8"))

    def history(self) -> pd.DataFrame:
        return pd.read_csv(self.directory / "history.csv")

    def record(self, train: dict, history: pd.DataFrame) -> None:
        """Write ``history.csv`` then ``train.json`` (atomically each), then refresh the kind's ``index.csv``.

        Floats are written in full (shortest exact form), so a page that reads them back gets the numbers a page
        that computed them got.
        """
        write_csv_atomic(history, self.directory / "history.csv", index=False)
        write_json_atomic(self.directory / "train.json", train)
        write_index(self.root / self.kind)

    def _evaluation_file(self, name: str, settings: dict) -> Path:
        return self.directory / f"{name}-{digest_of(settings)[:8]}.csv"

    def scores(self, name: str, settings: dict) -> pd.DataFrame | None:
        """The stored scores of evaluation ``name`` under exactly these ``settings``, or None."""
        path = self._evaluation_file(name, settings)
        return pd.read_csv(path, keep_default_na=False, na_values=[""]) if path.is_file() else None

    def add_scores(self, name: str, settings: dict, scores: pd.DataFrame) -> pd.DataFrame:
        """Store an evaluation's scores (and its settings in ``evaluations.json``); returns them as read back."""
        path = self._evaluation_file(name, settings)
        write_csv_atomic(scores, path, index=False)
        described = self.directory / "evaluations.json"
        index = json.loads(described.read_text(encoding="utf-8")) if described.is_file() else {}
        index[path.name] = {"evaluation": name, "settings": settings}
        write_json_atomic(described, index)
        return self.scores(name, settings)


# the index's first columns, where a kind has them: what the run is, then whether training moved it from step 0
INDEX_COLUMNS = ("key", "backbone", "model", "size", "objective", "loss", "task", "train_data", "learning_rate",
                 "max_train_examples", "seed", "steps", "tokens", "best_step", "dev_metric", "best_dev", "dev_step0")


def write_index(kind_dir: Path) -> Path:
    """``<kind>/index.csv``: the ``summary`` of every finished run of the kind, one row each, by key."""
    rows = []
    for train_json in sorted(Path(kind_dir).glob("*/train.json")):
        train = json.loads(train_json.read_text(encoding="utf-8"))
        rows.append({"key": train_json.parent.name, **train.get("summary", {})})
    table = pd.DataFrame(rows)
    first = [c for c in INDEX_COLUMNS if c in table.columns]
    path = Path(kind_dir) / "index.csv"
    write_csv_atomic(table[first + [c for c in table.columns if c not in first]], path, index=False)
    return path

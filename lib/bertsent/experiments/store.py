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

Every run directory also holds ``manifest.csv``: each of its files with its sha256 and size (as
``data/manifest.csv`` lists the benchmark files), written with the run's files (:meth:`StoredRun.record`,
:meth:`StoredRun.add_scores`). Reading a run (``train()``, ``history()``, ``scores()``) first verifies it
(:meth:`StoredRun.verify`): every listed file present with its checksum, no file the manifest does not list,
``train.json`` of the right shape (:func:`check_train`: required fields and their types, no duplicate keys, the key's
hash equal to its identity's, ``summary`` agreeing with the fields it repeats) and its row in the kind's
``index.csv`` (once, with the values of ``summary``). A failure stops with :class:`StoreError`: one line naming the
run, the file and the fix. ``python -m bertsent.experiments.store verify`` checks every run;
``python -m bertsent.experiments.store manifest`` writes the manifests of runs without one.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..paths import REPO_ROOT, RESULTS_DIR
from ..report.io import sha256_of, write_csv_atomic, write_json_atomic

KINDS = ("sg", "pretraining", "glue", "attention_pooling", "attention_pooling_frozen", "untrained")


def store_root(results_dir=None) -> Path:
    """Where runs are recorded: ``<results_dir>/runs`` (default: the repository's ``results/runs``)."""
    return Path(results_dir or RESULTS_DIR) / "runs"


def digest_of(payload) -> str:
    """sha256 (hex) of a JSON-serialisable value, keys sorted."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@lru_cache(maxsize=None)
def _weights_digest(directory: str, stamp: str) -> str:
    weights = sorted(Path(directory).glob("*.safetensors")) or sorted(Path(directory).glob("*.bin"))
    return digest_of([(w.name, sha256_of(w)) for w in weights])[:16]


def weights_digest(directory: Path) -> str:
    """sha256 of a model directory's weight files (cached per process while the files are unchanged). It lives here,
    beside the other digests, so that the book runner can read it without importing the run helpers (which would
    put them on every training path that checks its parameters through the runner)."""
    weights = sorted(Path(directory).glob("*.safetensors")) + sorted(Path(directory).glob("*.bin"))
    stamp = ";".join(f"{w.name}:{w.stat().st_size}:{w.stat().st_mtime_ns}" for w in weights)
    return _weights_digest(str(directory), stamp)


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
        """Finished and recorded (``train.json`` is written last, then the manifest): a run whose manifest lists a
        ``train.json`` that is gone counts as recorded, so that reading it says the file is missing instead of
        training it again."""
        found = (self.directory / "train.json").is_file() or "train.json" in _listed(self.directory)
        if not found:
            _log_read(self.name, MISSING_RUN)
        return found

    @property
    def name(self) -> str:
        return f"{self.kind}/{self.key}"

    def train(self) -> dict:
        self.verify()
        return _read_json(self, "train.json")

    def history(self) -> pd.DataFrame:
        self.verify()
        return pd.read_csv(self.directory / "history.csv")

    def verify(self) -> str:
        """Check the run against its ``manifest.csv`` and ``train.json``'s shape (see the module doc); returns the
        manifest's sha256 (what a page that read the run records). Raises :class:`StoreError` (one line)."""
        return verify_run(self)

    def record(self, train: dict, history: pd.DataFrame) -> None:
        """Write ``history.csv`` then ``train.json`` (atomically each), then refresh the kind's ``index.csv``.

        Floats are written in full (shortest exact form), so a page that reads them back gets the numbers a page
        that computed them got.
        """
        write_csv_atomic(history, self.directory / "history.csv", index=False)
        write_json_atomic(self.directory / "train.json", train)
        write_index(self.root / self.kind)
        write_manifest(self.directory)

    def _evaluation_file(self, name: str, settings: dict) -> Path:
        return self.directory / f"{name}-{digest_of(settings)[:8]}.csv"

    def scores(self, name: str, settings: dict) -> pd.DataFrame | None:
        """The stored scores of evaluation ``name`` under exactly these ``settings``, or None."""
        path = self._evaluation_file(name, settings)
        if (self.directory / MANIFEST).is_file() or path.is_file():
            self.verify()
        return pd.read_csv(path, keep_default_na=False, na_values=[""]) if path.is_file() else None

    def add_scores(self, name: str, settings: dict, scores: pd.DataFrame) -> pd.DataFrame:
        """Store an evaluation's scores (and its settings in ``evaluations.json``); returns them as read back."""
        path = self._evaluation_file(name, settings)
        if (self.directory / MANIFEST).is_file():
            self.verify()  # never bless an altered file by listing it anew
        write_csv_atomic(scores, path, index=False)
        described = self.directory / "evaluations.json"
        index = _read_json(self, "evaluations.json") if described.is_file() else {}
        index[path.name] = {"evaluation": name, "settings": settings}
        write_json_atomic(described, index)
        write_manifest(self.directory)
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


# --- verification -------------------------------------------------------------------------------------------------

MANIFEST = "manifest.csv"
# a page run sets this to a file; every run verified in that process (the notebook's kernel) adds a line
# "<kind>/<key> <sha256 of its manifest>", which the runner records with the page (bertsent.book)
READ_LOG_VARIABLE = "BERTSENT_RUN_READ_LOG"
# what the log says of a run the page looked for and did not find: a page that renders the runs stored so far (and
# lists the others as missing) is out of date once one of them is stored
MISSING_RUN = "missing"


class StoreError(RuntimeError):
    """A stored run that fails verification: one line naming the run, the file and the fix."""


def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def _fix(run: StoredRun) -> str:
    """What to do about a run that fails verification."""
    folder = _shown(run.directory)
    retrain = {"sg": f"`python -m bertsent.experiments.sts_runs --key {run.key}`",
               "glue": "`python -m bertsent.experiments.acl_runs` (or the page that reads it)",
               "attention_pooling_frozen": "`python -m bertsent.experiments.frozen_pooler train`"}.get(
        run.kind, "the page that reads it")
    return (f"Fix: restore the committed files with `git checkout -- {folder}`, or delete {folder} and train the "
            f"run again with its key {run.key} ({retrain})")


def _fail(run: StoredRun, file: str, problem: str) -> StoreError:
    return StoreError(f"stored run {run.name}: {file} {problem}. {_fix(run)}")


def _files_of(directory: Path) -> list[str]:
    """The files a manifest lists: every file of the run directory but the manifest and temporary files."""
    return sorted(p.name for p in Path(directory).iterdir()
                  if p.is_file() and p.name != MANIFEST and not p.name.endswith(".tmp"))


def write_manifest(directory: Path) -> Path:
    """``<directory>/manifest.csv``: ``file,sha256,bytes`` of every file of a run directory, atomically."""
    directory = Path(directory)
    rows = [(name, sha256_of(directory / name), (directory / name).stat().st_size) for name in _files_of(directory)]
    path = directory / MANIFEST
    write_csv_atomic(pd.DataFrame(rows, columns=["file", "sha256", "bytes"]), path, index=False)
    _VERIFIED.clear()
    return path


def _listed(directory: Path) -> dict:
    """The manifest of a run directory as ``file -> (sha256, bytes)`` ({} without one; unreadable: {})."""
    try:
        table = pd.read_csv(Path(directory) / MANIFEST, dtype=str, keep_default_na=False)
        return {row.file: (row.sha256, int(row.bytes)) for row in table.itertuples()}
    except (OSError, ValueError, AttributeError, pd.errors.ParserError):
        return {}


def _no_duplicates(pairs):
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"duplicate key(s) {repeated}")
    return dict(pairs)


def _read_json(run: StoredRun, name: str):
    """A JSON file of a run, refusing duplicate keys and non-JSON; errors as :class:`StoreError`."""
    path = run.directory / name
    try:
        return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicates)
    except FileNotFoundError:
        raise _fail(run, name, "is missing") from None
    except ValueError as error:  # JSONDecodeError (truncated, edited) and duplicate keys
        raise _fail(run, name, f"is not valid JSON ({str(error).splitlines()[0]})") from None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# train.json's required fields and their types, per kind ("number": int or float; None allowed where listed)
_COMMON = {"identity": dict, "method_versions": dict, "summary": dict, "best_step": int, "best_dev": "number",
           "dev_step0": ("number", None), "seconds": "number"}
TRAIN_SCHEMA = {
    "sg": {**_COMMON, "backbone": str, "config": dict, "step": int},
    "attention_pooling": {**_COMMON, "backbone": str, "config": dict, "step": int},
    "attention_pooling_frozen": {**_COMMON, "backbone": str, "config": dict, "step": int},
    "pretraining": {**_COMMON, "config": dict, "steps": int, "tokens": int, "dev_metric": str},
    "glue": {**_COMMON, "result": dict, "steps": int, "dev_metric": str},
}
_TYPE_WORDS = {dict: "an object", int: "an integer", str: "a string", "number": "a number", None: "null"}


def _fits(value, expected) -> bool:
    options = expected if isinstance(expected, tuple) else (expected,)
    return any((value is None) if option is None else _number(value) if option == "number"
               else isinstance(value, int) and not isinstance(value, bool) if option is int
               else isinstance(value, option) for option in options)


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if _number(a) and _number(b):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b


def check_train(run: StoredRun, train: dict) -> None:
    """``train.json``'s shape: required fields of the right types (:data:`TRAIN_SCHEMA`), the key's hash equal to
    the identity's, and the fields ``summary`` (and a GLUE run's ``result``) repeat equal to the originals."""
    if not isinstance(train, dict):
        raise _fail(run, "train.json", "is not a JSON object")
    for field, expected in TRAIN_SCHEMA.get(run.kind, {}).items():
        if field not in train:
            raise _fail(run, "train.json", f"has no field {field!r}")
        if not _fits(train[field], expected):
            words = " or ".join(_TYPE_WORDS[e] for e in (expected if isinstance(expected, tuple) else (expected,)))
            raise _fail(run, "train.json", f"field {field!r} should be {words}, is {json.dumps(train[field])}")
    identity = train.get("identity")
    hashed = re.search(r"-([0-9a-f]{10})$", run.key)
    if isinstance(identity, dict) and hashed and digest_of(identity)[:10] != hashed.group(1):
        raise _fail(run, "train.json", f"'identity' does not hash to the key's {hashed.group(1)} (it was edited)")
    summary = train.get("summary") or {}
    for field, original in (("best_dev", "best_dev"), ("best_step", "best_step"), ("dev_step0", "dev_step0")):
        if field in summary and original in train and not _same(summary[field], train[original]):
            raise _fail(run, "train.json", f"summary.{field} {json.dumps(summary[field])} differs from {original} "
                                           f"{json.dumps(train[original])}")
    result, metric = train.get("result"), train.get("dev_metric")
    if isinstance(result, dict) and metric in result and not _same(result[metric], train.get("best_dev")):
        raise _fail(run, "train.json", f"result.{metric} {json.dumps(result[metric])} differs from best_dev "
                                       f"{json.dumps(train.get('best_dev'))}")


def _index_rows(kind_dir: Path) -> dict:
    """A kind's ``index.csv`` as ``key -> row`` (strings), cached per process while the file is unchanged;
    raises on duplicate keys."""
    path = Path(kind_dir) / "index.csv"
    stat = path.stat()
    stamp = (str(path), stat.st_size, stat.st_mtime_ns)
    if _INDEXES.get(str(path), (None,))[0] != stamp:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
        if "key" not in table.columns:
            raise ValueError("has no column 'key'")
        repeated = sorted(set(table["key"][table["key"].duplicated()]))
        if repeated:
            raise ValueError(f"lists {repeated[0]} {table['key'].tolist().count(repeated[0])} times")
        _INDEXES[str(path)] = (stamp, {row["key"]: row for row in table.to_dict("records")})
    return _INDEXES[str(path)][1]


def _check_index(run: StoredRun, train: dict) -> None:
    """The run's row in ``<kind>/index.csv``: there once, with ``summary``'s values."""
    index = run.root / run.kind / "index.csv"
    fix = (f"Fix: `git checkout -- {_shown(index)}`, or write it again from the runs' train.json with "
           f"`python -m bertsent.experiments.store index {run.kind}`")
    if not index.is_file():
        raise StoreError(f"stored run {run.name}: {_shown(index)} is missing. {fix}")
    try:
        rows = _index_rows(index.parent)
    except (ValueError, pd.errors.ParserError) as error:
        raise StoreError(f"stored run {run.name}: {_shown(index)} {str(error).splitlines()[0]}. {fix}") from None
    row = rows.get(run.key)
    if row is None:
        raise StoreError(f"stored run {run.name}: {_shown(index)} has no row for it. {fix}")
    for field, value in (train.get("summary") or {}).items():
        text = row.get(field)
        if text is None:
            raise StoreError(f"stored run {run.name}: {_shown(index)} has no column {field!r}. {fix}")
        if value is None or isinstance(value, (dict, list)):
            same = value is None and text == ""
            same = same or isinstance(value, (dict, list))
        elif _number(value):
            try:
                same = _same(float(text), float(value))
            except ValueError:
                same = False
        else:
            same = text == str(value)
        if not same:
            raise StoreError(f"stored run {run.name}: {_shown(index)} says {field} {text!r}, its train.json "
                             f"{json.dumps(value)}. {fix}")


_VERIFIED: dict = {}
_INDEXES: dict = {}
_LOGGED: set = set()


def _stamp(directory: Path) -> tuple:
    return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(Path(directory).iterdir())
                 if p.is_file())


def manifest_problem(directory: Path) -> str | None:
    """What is wrong with a run directory's files against its manifest, in words (None: nothing)."""
    directory = Path(directory)
    if not (directory / MANIFEST).is_file():
        return (f"{MANIFEST} is missing (if its files are as committed, write it with "
                f"`python -m bertsent.experiments.store manifest {directory.parent.name}/{directory.name}`)")
    listed = _listed(directory)
    if not listed:
        return f"{MANIFEST} is not a table of file,sha256,bytes"
    for name, (digest, size) in sorted(listed.items()):
        path = directory / name
        if not path.is_file():
            return f"{name} is missing (listed in its {MANIFEST})"
        if path.stat().st_size != size or sha256_of(path) != digest:
            return f"{name} differs from its {MANIFEST} (sha256 {sha256_of(path)[:12]}..., recorded {digest[:12]}...)"
    extra = sorted(set(_files_of(directory)) - set(listed))
    if extra:
        return f"{extra[0]} is not in its {MANIFEST}"
    return None


def verify_run(run: StoredRun) -> str:
    """See :meth:`StoredRun.verify`."""
    directory = run.directory
    if not directory.is_dir():
        raise _fail(run, "its folder", "is missing")
    stamp = _stamp(directory)
    known = _VERIFIED.get(str(directory))
    if known is None or known[0] != stamp:
        problem = manifest_problem(directory)
        if problem:
            if problem.startswith(f"{MANIFEST} is missing"):
                raise StoreError(f"stored run {run.name}: {problem}")
            raise _fail(run, *problem.split(" ", 1))
        if run.kind in TRAIN_SCHEMA or (directory / "train.json").is_file():
            train = _read_json(run, "train.json")
            check_train(run, train)
            _check_index(run, train)
            try:
                history = pd.read_csv(directory / "history.csv")
            except FileNotFoundError:
                raise _fail(run, "history.csv", "is missing") from None
            except (ValueError, pd.errors.ParserError) as error:
                raise _fail(run, "history.csv", f"is not a CSV table ({str(error).splitlines()[0]})") from None
            if "step" not in history.columns:
                raise _fail(run, "history.csv", "has no column 'step'")
        if (directory / "evaluations.json").is_file():
            described = _read_json(run, "evaluations.json")
            if not isinstance(described, dict) or not all(
                    isinstance(v, dict) and {"evaluation", "settings"} <= set(v) for v in described.values()):
                raise _fail(run, "evaluations.json", "is not an object of file -> {evaluation, settings}")
        known = (stamp, hashlib.sha256((directory / MANIFEST).read_bytes()).hexdigest())
        _VERIFIED[str(directory)] = known
    _log_read(run.name, known[1])
    return known[1]


def _log_read(name: str, digest: str) -> None:
    """Add ``<name> <digest>`` to the page run's read log (:data:`READ_LOG_VARIABLE`), once per process."""
    log = os.environ.get(READ_LOG_VARIABLE)
    if log and (name, digest) not in _LOGGED:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{name} {digest}\n")
        _LOGGED.add((name, digest))


def stored_run_digest(root: Path, name: str) -> str | None:
    """The sha256 of run ``<kind>/<key>``'s manifest under ``root`` (``results/runs``) when the run's files match it,
    else None (missing, altered, or without a manifest): what the runner compares with a page's record."""
    kind, key = name.split("/", 1)
    try:
        return verify_run(StoredRun(kind, key, Path(root)))
    except StoreError:
        return None


def all_runs(root: Path | None = None) -> list[StoredRun]:
    """Every run directory of every kind under ``root`` (default the book's ``results/runs``)."""
    root = Path(root or store_root())
    return [StoredRun(kind, path.name, root) for kind in KINDS if (root / kind).is_dir()
            for path in sorted((root / kind).iterdir()) if path.is_dir()]


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bertsent.experiments.store",
                                     description="Verify the run store, or write the manifests of its runs.")
    sub = parser.add_subparsers(dest="command", required=True)
    verify = sub.add_parser("verify", help="verify every run (or the named ones): one line per failing run")
    verify.add_argument("runs", nargs="*", metavar="KIND/KEY")
    manifest = sub.add_parser("manifest", help="write manifest.csv for the runs without one (or the named ones)")
    manifest.add_argument("runs", nargs="*", metavar="KIND/KEY")
    index = sub.add_parser("index", help="write <kind>/index.csv again from the runs' train.json")
    index.add_argument("kind", choices=[k for k in KINDS if k != "untrained"])
    parser.add_argument("--results-dir", help="another results folder (default: the book's results/)")
    args = parser.parse_args(argv)
    root = store_root(args.results_dir)
    if args.command == "index":
        print(f"wrote {_shown(write_index(root / args.kind))}")
        return 0
    chosen = [StoredRun(*name.split("/", 1), root) for name in args.runs] if args.runs else all_runs(root)
    if args.command == "manifest":
        written = 0
        for run in chosen:
            if (run.directory / MANIFEST).is_file() and not args.runs:
                continue
            write_manifest(run.directory)
            written += 1
        print(f"wrote {written} manifest(s) under {_shown(root)}")
        return 0
    failed = 0
    for run in chosen:
        try:
            run.verify()
        except StoreError as error:
            failed += 1
            print(error)
    print(f"{len(chosen) - failed} of {len(chosen)} stored runs verified")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

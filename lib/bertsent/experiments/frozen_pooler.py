r"""Layer-wise attention pooling on a frozen encoder (Oh et al., COLING 2022): the chapter's "frozen encoder" arm.

For one backbone, the layer readouts ``(s_l, t_l)`` of every sentence are computed once
(:mod:`bertsent.experiments.layer_states`): the NLI training triplets' sentences, STS-B dev (selection) and the
**full** test sets of STS12-16, STS-B and SICK-R. Each trainable pooling of the chapter (``att_cls``, ``att_mean``,
``att_both``, ``att_both_cls``) is then trained on them (:mod:`bertsent.training.frozen_pooler`) with several seeds,
and the parameter-free readouts (``cls_last``, ``mean_last``, ``cls_mean_last`` and, over every hidden state,
``mean_layers`` and ``concat_layers``) are scored on the same sets.

Every run (a trained pooler and seed, or a fixed readout) is recorded in the run store under
``results/runs/attention_pooling_frozen/<key>/`` (:mod:`bertsent.experiments.store`): ``train.json`` (identity,
steps, seconds, selected step, dev score at step 0 and selected, the test scores' summary, the layer weights'
entropy ratio), ``history.csv`` (the dev curve, the loss, the dev entropy ratio and how far the weights moved), and
two evaluations: ``sts_test`` (Spearman x 100 "all" and "wmean" of every test set) and ``alpha_test`` (the L x L
attention averaged over every test sentence; the layer weights are its column means). The key hashes the backbone
(and its weights' digest), the training data, the data manifest, the dev and test set sizes, the configuration and
the method versions of the training path. A run's checkpoint lives in ``.cache/frozen_pooler/<key>/`` while it
trains, so an interrupted run resumes; it is deleted once the run is recorded.

Command line::

    python -m bertsent.experiments.frozen_pooler list  [--backbones ...]   # what is cached and recorded
    python -m bertsent.experiments.frozen_pooler cache [--backbones ...]   # fill the readout caches (resumes)
    python -m bertsent.experiments.frozen_pooler train [--backbones ...]   # cache, then train what is missing
    python -m bertsent.experiments.frozen_pooler summary [--backbones ...] # mean +- sd over seeds per variant
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.sts import STS_DATASETS, STSDataset
from ..evaluation.sts import cosine_rows, evaluate_sts
from ..models.layer_attention import ATTENTION_POOLINGS, FIXED_POOLINGS
from ..paths import CACHE_DIR
from ..report.claims import Side, claims_table, correlation_evaluation, encoder_floor, judge, seed_noise
from ..training.frozen_pooler import (EXTRA_FIXED, FrozenPoolerConfig, encode_states, entropy_ratio, layer_weights,
                                      train_frozen_pooler, weight_change)
from .layer_states import LayerStates, cache_layer_states, states_key
from .store import StoredRun, run_key

METHOD_VERSION = 1  # bump when the maths changes

KIND = "attention_pooling_frozen"
TRAINING_PATH = ("bertsent.training.frozen_pooler", "bertsent.experiments.layer_states", "bertsent.data.nli",
                 "bertsent.experiments.frozen_pooler")
BACKBONES = ("all-minilm-l6-v2", "bert-mini-wiki", "all-mpnet-base-v2", "gemma-3-270m")
TRAINED = tuple(ATTENTION_POOLINGS)  # att_cls, att_mean, att_both, att_both_cls
FIXED = tuple(FIXED_POOLINGS) + tuple(EXTRA_FIXED)
SEEDS = (42, 43, 44, 45, 46)
MAX_LENGTH = 64
STATES_ROOT = CACHE_DIR / "layer_states"
CHECKPOINT_ROOT = CACHE_DIR / "frozen_pooler"


@dataclass(frozen=True)
class Data:
    """The sentences of the arm: NLI triplets of ``sources`` (all of them: SNLI dev + test give 6,339), all of STS-B
    dev, every pair of the test sets ``tests``."""

    sources: tuple = ("snli",)
    tests: tuple = STS_DATASETS
    data_dir: object = None

    def triplets(self):
        from ..data.nli import nli_triplets

        return nli_triplets(tuple(self.sources), self.data_dir)

    def dev(self) -> STSDataset:
        from ..data.sts import load_stsb

        return load_stsb("dev", self.data_dir)

    def test_sets(self) -> dict[str, STSDataset]:
        from .sts_tables import load_sts_datasets

        return load_sts_datasets(list(self.tests), self.data_dir)


def _unique(sentences) -> list[str]:
    return list(dict.fromkeys(sentences))


def test_sentences(test_sets: dict[str, STSDataset]) -> list[str]:
    return _unique(s for d in test_sets.values() for s in d.sentences())


@dataclass
class BackboneStates:
    """A backbone's three caches and the triplets as row indices into the training cache."""

    backbone: str
    train: LayerStates
    dev: LayerStates
    test: LayerStates
    triplet_rows: tuple  # (anchor_rows, positive_rows, negative_rows)


def sentence_sets(data: Data | None = None) -> dict[str, list[str]]:
    """The three sentence lists of the arm, by cache name: ``nli`` (the triplets' distinct sentences), ``stsb-dev``,
    ``sts-test`` (every distinct sentence of the test sets)."""
    data = data or Data()
    triplets = data.triplets()
    return {"nli": _unique(triplets.anchors + triplets.positives + triplets.negatives),
            "stsb-dev": data.dev().sentences(), "sts-test": test_sentences(data.test_sets())}


def cache_state(backbone: str, data: Data | None = None, root: Path | None = None) -> dict[str, str]:
    """Each cache of ``backbone`` in words: complete (seconds, sentences/s), k of n batches written, or missing."""
    from .layer_states import _batches

    out = {}
    for name, sentences in sentence_sets(data).items():
        directory = Path(root or STATES_ROOT) / states_key(backbone, name, sentences, MAX_LENGTH)
        if (directory / "done.json").is_file():
            done = json.loads((directory / "done.json").read_text())
            out[name] = (f"complete, {done['sentences']} sentences, {done['bytes'] / 2 ** 20:.0f} MiB, "
                         f"{done['seconds']:.0f} s ({done['sentences_per_second']:.1f} sentences/s)")
        elif (directory / "progress.json").is_file():
            progress = json.loads((directory / "progress.json").read_text())
            out[name] = (f"{progress['batches']} of {len(_batches(sentences, 64))} batches written "
                         f"({progress['seconds']:.0f} s; resumes)")
        else:
            out[name] = f"missing ({len(sentences)} sentences)"
    return out


def backbone_states(backbone: str, data: Data | None = None, root: Path | None = None, log=print,
                    source=None) -> BackboneStates:
    """The three caches of ``backbone`` (filled or resumed as needed: the backbone is loaded only then)."""
    data = data or Data()
    triplets = data.triplets()
    sets = sentence_sets(data)
    root = Path(root or STATES_ROOT)
    if source is None and not all((root / states_key(backbone, name, sentences, MAX_LENGTH) / "done.json").is_file()
                                  for name, sentences in sets.items()):
        from ..encode.backbones import load_backbone

        source = load_backbone(backbone)  # once, for every cache that still needs filling
    loaded = {name: cache_layer_states(source, backbone, name, sentences, MAX_LENGTH, root=root, log=log)
              for name, sentences in sets.items()}
    train = loaded["nli"]
    rows = tuple(train.rows(part) for part in (triplets.anchors, triplets.positives, triplets.negatives))
    return BackboneStates(backbone, train, loaded["stsb-dev"], loaded["sts-test"], rows)


# --- scoring -------------------------------------------------------------------------------------------------------

def sts_scores(vectors: np.ndarray, states: LayerStates, datasets: dict[str, STSDataset]) -> pd.DataFrame:
    """Spearman x 100 ("all" and "wmean") of cosine similarity on every dataset; ``vectors`` row i = ``states``
    sentence i."""
    index = states.index
    rows = []
    for name, dataset in datasets.items():
        scores = evaluate_sts(dataset, lambda a, b: cosine_rows(vectors[[index[x] for x in a]],
                                                                vectors[[index[x] for x in b]]))
        rows += [(name, aggregation, scores[aggregation]) for aggregation in ("all", "wmean")]
    return pd.DataFrame(rows, columns=["dataset", "aggregation", "spearman"])


PAIR_COSINES = "stsb_pair_cosines"  # the evaluation a paired bootstrap of two runs' STS-B difference reads


def pair_cosine_table(vectors: np.ndarray, states: LayerStates, dataset: STSDataset) -> pd.DataFrame:
    """The cosine of every pair of ``dataset`` (its subsets in order) beside its gold score: columns pair, gold,
    cosine; ``vectors`` row i = ``states`` sentence i. Two runs scored on the same pairs can then be compared with
    a paired bootstrap (:func:`frozen_paired_noise`)."""
    index = states.index
    first = [index[s] for pairs in dataset.subsets.values() for s in pairs.sentences1]
    second = [index[s] for pairs in dataset.subsets.values() for s in pairs.sentences2]
    gold = np.concatenate([np.asarray(pairs.scores, dtype=float) for pairs in dataset.subsets.values()])
    return pd.DataFrame({"pair": np.arange(len(gold)), "gold": gold,
                         "cosine": np.asarray(cosine_rows(vectors[first], vectors[second]), dtype=float)})


def pair_cosine_settings(run: "FrozenRun") -> dict:
    return {"dataset": "stsb", "pairs": int(run.test_pairs["stsb"]), "max_length": MAX_LENGTH}


def dev_scorer(states: LayerStates, dev: STSDataset):
    """``pooler -> (STS-B dev Spearman "all", layer-weight entropy ratio over the dev sentences)``."""
    def score(pooler):
        vectors, alpha = encode_states(pooler, states.s, states.t)
        spearman = sts_scores(vectors, states, {"stsb": dev})
        entropy = None if alpha is None else entropy_ratio(layer_weights(alpha))
        return float(spearman.loc[spearman["aggregation"] == "all", "spearman"].iloc[0]), entropy
    return score


def summarise_scores(scores: pd.DataFrame, aggregation: str = "all") -> dict:
    """``stsb_test`` and ``avg7`` (mean of the seven test sets; None unless all seven) of one run's scores."""
    chosen = scores[scores["aggregation"] == aggregation].set_index("dataset")["spearman"]
    return {"stsb_test": float(chosen["stsb"]) if "stsb" in chosen else None,
            "avg7": float(chosen.mean()) if len(chosen) == 7 else None}


# --- runs ----------------------------------------------------------------------------------------------------------

def run_identity(backbone: str, config: FrozenPoolerConfig, data: Data, dev_pairs: int, test_pairs: dict) -> dict:
    from ..versions import manifest_digest
    from .runs import backbone_identity, path_versions

    return {"kind": KIND, **backbone_identity(backbone), "sources": list(data.sources), "max_triplets": None,
            "data": manifest_digest(), "dev_pairs": int(dev_pairs), "test_pairs": dict(test_pairs),
            "max_length": MAX_LENGTH, "encoder": "frozen (eval mode)", "config": asdict(config),
            "methods": path_versions(TRAINING_PATH)["digest"]}


def run_config(pooling: str, seed: int, **overrides) -> FrozenPoolerConfig:
    """A trained pooling's configuration; a parameter-free readout's is seed 0 and 0 steps (it is deterministic)."""
    if pooling in TRAINED:
        return FrozenPoolerConfig(**{**overrides, "pooling": pooling, "seed": int(seed)})
    return FrozenPoolerConfig(pooling=pooling, seed=0, steps=0)


@dataclass
class FrozenRun:
    backbone: str
    config: FrozenPoolerConfig
    data: Data
    dev_pairs: int
    test_pairs: dict
    results_dir: object = None

    @property
    def identity(self) -> dict:
        return run_identity(self.backbone, self.config, self.data, self.dev_pairs, self.test_pairs)

    @property
    def key(self) -> str:
        c = self.config
        readable = f"{self.backbone.replace('/', '_')}-{c.pooling}" + (f"-s{c.seed}" if c.trainable else "")
        return run_key(readable, self.identity)

    @property
    def stored(self) -> StoredRun:
        return StoredRun.at(KIND, self.key, self.results_dir)

    @property
    def checkpoint(self) -> Path:
        return CHECKPOINT_ROOT / self.key / "checkpoint.pt"


def plan(backbones=BACKBONES, poolings=TRAINED + FIXED, seeds=SEEDS, data: Data | None = None, results_dir=None,
         **overrides) -> list[FrozenRun]:
    """Every run of the arm: each backbone x trained pooling x seed, and each parameter-free readout once."""
    data = data or Data()
    dev_pairs = len(data.dev())
    test_pairs = {name: len(d) for name, d in data.test_sets().items()}
    runs = []
    for backbone in backbones:
        for pooling in poolings:
            for seed in (seeds if pooling in TRAINED else (0,)):
                runs.append(FrozenRun(backbone, run_config(pooling, seed, **overrides), data, dev_pairs, test_pairs,
                                      results_dir))
    return runs


def execute(run: FrozenRun, states: BackboneStates, dev: STSDataset, test_sets: dict[str, STSDataset],
            log=print, stop_after: int | None = None) -> StoredRun | None:
    """Train (or resume) and record one run; its record is written whole (scores, history, then ``train.json``).
    ``stop_after``: interrupt training after that many steps (tests of resumption); returns None then."""
    import torch

    stored = run.stored
    if stored.exists:
        return stored
    if stored.directory.exists():  # an unrecorded leftover (no train.json): written again from scratch
        shutil.rmtree(stored.directory)
    config = run.config
    score_dev = dev_scorer(states.dev, dev)
    if config.trainable:
        result = train_frozen_pooler(config, states.train.s, states.train.t, *states.triplet_rows,
                                     dev_score=score_dev, checkpoint=run.checkpoint, stop_after=stop_after,
                                     log=log)
        if result is None:
            return None
        model, history = result.pooler, pd.DataFrame(result.history)
        steps, best_step, best_dev, seconds = result.steps, result.best_step, result.best_dev, result.seconds
        moved = weight_change(model, result.initial)
    else:
        start = time.perf_counter()
        model = config.pooling
        best_dev, _ = score_dev(model)
        history = pd.DataFrame([{"step": 0, "dev": best_dev}])
        steps, best_step, seconds, moved = 0, 0, time.perf_counter() - start, None
    history["best"] = history["step"] == best_step
    vectors, alpha = encode_states(model, states.test.s, states.test.t)
    scores = sts_scores(vectors, states.test, test_sets)
    summary_scores = summarise_scores(scores)
    weights = None if alpha is None else layer_weights(alpha)
    dev_step0 = float(history.loc[history["step"] == 0, "dev"].iloc[0])
    train = {"backbone": run.backbone, "config": asdict(config), "step": int(steps), "best_step": int(best_step),
             "best_dev": float(best_dev), "dev_step0": dev_step0, "seconds": float(seconds),
             "torch_threads": torch.get_num_threads(), "identity": run.identity,
             "method_versions": _versions(), "triplets": int(len(states.triplet_rows[0])),
             "steps_per_epoch": int(np.ceil(len(states.triplet_rows[0]) / config.batch_size)),
             "layer_weights": None if weights is None else [float(w) for w in weights],
             "entropy_ratio": None if weights is None else entropy_ratio(weights),
             "weight_change": moved, **summary_scores,
             "summary": {"backbone": run.backbone, "pooling": config.pooling, "seed": config.seed,
                         "trained": config.trainable, "triplets": int(len(states.triplet_rows[0])),
                         "batch_size": config.batch_size, "learning_rate": config.learning_rate,
                         "init": config.init, "steps": int(steps), "best_step": int(best_step),
                         "best_dev": float(best_dev), "dev_step0": dev_step0, **summary_scores,
                         "entropy_ratio": None if weights is None else entropy_ratio(weights),
                         "weight_change": moved, "seconds": round(float(seconds), 1),
                         "threads": torch.get_num_threads()}}
    settings = {"datasets": dict(run.test_pairs), "max_length": MAX_LENGTH}
    stored.directory.mkdir(parents=True, exist_ok=True)
    _write_evaluation(stored, "sts_test", settings, scores)
    _write_evaluation(stored, PAIR_COSINES, pair_cosine_settings(run),
                      pair_cosine_table(vectors, states.test, test_sets["stsb"]))
    if alpha is not None:
        n = alpha.shape[0]
        _write_evaluation(stored, "alpha_test", {**settings, "sentences": len(states.test)},
                          pd.DataFrame({"query": np.repeat(np.arange(n), n), "key": np.tile(np.arange(n), n),
                                        "alpha": alpha.ravel()}))
    stored.record(json.loads(json.dumps(train, default=float)), history)
    run.checkpoint.unlink(missing_ok=True)
    return stored


def _versions() -> dict:
    from .runs import path_versions

    return path_versions(TRAINING_PATH)["modules"]


def _write_evaluation(stored: StoredRun, name: str, settings: dict, scores: pd.DataFrame) -> None:
    """An evaluation's CSV and its entry in ``evaluations.json``, before the run is recorded (the manifest is
    written with ``train.json`` by :meth:`StoredRun.record`)."""
    from ..report.io import write_csv_atomic, write_json_atomic
    from .store import digest_of

    path = stored.directory / f"{name}-{digest_of(settings)[:8]}.csv"
    write_csv_atomic(scores, path, index=False)
    described = stored.directory / "evaluations.json"
    index = json.loads(described.read_text()) if described.is_file() else {}
    index[path.name] = {"evaluation": name, "settings": settings}
    write_json_atomic(described, index)


# --- reading -------------------------------------------------------------------------------------------------------

def recorded(runs: list[FrozenRun]) -> pd.DataFrame:
    """One row per recorded run: its ``train.json`` summary, and for a trained pooler ``entropy_step0``, its layer
    weights' entropy ratio on dev before the first step (from its history; NaN for a fixed readout)."""
    rows = []
    for run in runs:
        if not run.stored.exists:
            continue
        row = dict(run.stored.train()["summary"])
        history = run.stored.history() if row.get("trained") else None
        first = (history.loc[history["step"] == 0, "dev_entropy_ratio"] if history is not None
                 and "dev_entropy_ratio" in history else pd.Series(dtype=float))
        row["entropy_step0"] = float(first.iloc[0]) if len(first) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def summary_table(runs: list[FrozenRun]) -> pd.DataFrame:
    """Per backbone and pooling: mean and sd over seeds of STS-B test, avg7, entropy ratio (after training and at
    step 0), selected step, seconds."""
    table = recorded(runs)
    if not len(table):
        return table
    grouped = table.groupby(["backbone", "pooling"], sort=False)
    out = grouped.agg(seeds=("seed", "size"), stsb_test=("stsb_test", "mean"), stsb_test_sd=("stsb_test", "std"),
                      avg7=("avg7", "mean"), avg7_sd=("avg7", "std"), best_dev=("best_dev", "mean"),
                      dev_step0=("dev_step0", "mean"), entropy_ratio=("entropy_ratio", "mean"),
                      entropy_step0=("entropy_step0", "mean"),
                      weight_change=("weight_change", "mean"), best_step_min=("best_step", "min"),
                      best_step_max=("best_step", "max"), steps=("steps", "max"), seconds=("seconds", "mean"))
    out = out.reset_index()
    out["stsb_pairs"] = runs[0].test_pairs.get("stsb")  # every run of a plan is scored on the same full test sets
    return out


def locate(runs: list[FrozenRun], results_dir=None) -> list[FrozenRun]:
    """Each run where it is recorded: the book's run store (``results/runs``) first, else ``results_dir``'s store
    (where a page re-run with other parameters keeps the runs it trains; the book's store is only read)."""
    if results_dir is None:
        return list(runs)
    return [run if run.stored.exists else FrozenRun(run.backbone, run.config, run.data, run.dev_pairs,
                                                        run.test_pairs, results_dir) for run in runs]


def train_missing(runs: list[FrozenRun], log=print) -> list[FrozenRun]:
    """Train and record every run of ``runs`` not yet recorded (filling the backbones' readout caches first, which
    is most of the time on a large backbone); returns the runs trained."""
    missing = [run for run in runs if not run.stored.exists]
    if not missing:
        return []
    data = missing[0].data
    dev, test_sets = data.dev(), data.test_sets()
    loaded: dict[str, BackboneStates] = {}
    for run in missing:
        if run.backbone not in loaded:
            loaded[run.backbone] = backbone_states(run.backbone, data, log=log)
        start = time.perf_counter()
        train = execute(run, loaded[run.backbone], dev, test_sets, log=log).train()
        log(f"{run.backbone} {run.config.pooling} seed {run.config.seed}: STS-B test {train['stsb_test']:.2f}, "
            f"avg7 {train['avg7']:.2f}, best step {train['best_step']} of {train['step']}, "
            f"entropy ratio {train['entropy_ratio']}, {time.perf_counter() - start:.0f} s")
    return missing


def has_pair_cosines(run: FrozenRun) -> bool:
    return run.stored.exists and run.stored.scores(PAIR_COSINES, pair_cosine_settings(run)) is not None


# how far (Spearman x 100 points) a pooler trained again may land from its record and still lend it its cosines: a run
# recorded on another kind of CPU lands a few thousandths away (bert-tiny-wiki's, 2026-12-06: at most 0.003)
REPRODUCTION_TOLERANCE = 0.01


def add_pair_cosines(runs: list[FrozenRun], log=print, loaded: dict | None = None, dev: STSDataset | None = None,
                     test_sets: dict | None = None, tolerance: float = REPRODUCTION_TOLERANCE) -> list[FrozenRun]:
    """Give every recorded run of ``runs`` recorded without them its per-pair STS-B test cosines
    (:data:`PAIR_COSINES`): a fixed readout is scored again from the cached states (it is deterministic); a trained
    pooler is trained again from its seed in a scratch store, and its cosines are added only if it reproduces the
    recorded run (the same selected step; best dev, STS-B test and avg7 within ``tolerance`` points: the same
    numbers on the same kind of CPU), else the run is left as it is and the difference logged. The cosines of a
    pooler trained again carry ``record_gap``, the largest of those differences (0: exactly its record). Returns the
    runs given them. ``loaded`` (backbone -> its states), ``dev`` and
    ``test_sets``: what :func:`backbone_states` and the data would give (read from them where not given)."""
    import tempfile

    todo = [run for run in runs if run.stored.exists and not has_pair_cosines(run)]
    if not todo:
        return []
    data = todo[0].data
    dev, test_sets = dev or data.dev(), test_sets or data.test_sets()
    loaded = dict(loaded or {})
    added = []
    for run in todo:
        if run.backbone not in loaded:
            loaded[run.backbone] = backbone_states(run.backbone, data, log=log)
        states = loaded[run.backbone]
        settings = pair_cosine_settings(run)
        if not run.config.trainable:
            vectors, _ = encode_states(run.config.pooling, states.test.s, states.test.t)
            run.stored.add_scores(PAIR_COSINES, settings, pair_cosine_table(vectors, states.test, test_sets["stsb"]))
            added.append(run)
            continue
        with tempfile.TemporaryDirectory(prefix="frozen-again-") as scratch:
            again = execute(FrozenRun(run.backbone, run.config, run.data, run.dev_pairs, run.test_pairs, scratch),
                            states, dev, test_sets, log=log)
            recorded, reproduced = run.stored.train(), again.train()
            gaps = {key: abs(recorded[key] - reproduced[key]) for key in ("best_dev", "stsb_test", "avg7")
                    if recorded[key] is not None and reproduced[key] is not None}
            gap = max(gaps.values(), default=0.0)
            if recorded["best_step"] != reproduced["best_step"] or gap > tolerance:
                log(f"{run.key}: trained again, it does not reproduce the recorded run (best step "
                    f"{recorded['best_step']} -> {reproduced['best_step']}, differences {gaps}; recorded with "
                    f"{recorded.get('torch_threads')} thread(s)): its cosines are not added")
                continue
            cosines = again.scores(PAIR_COSINES, settings).assign(record_gap=gap)
            run.stored.add_scores(PAIR_COSINES, settings, cosines)
        added.append(run)
        log(f"{run.key}: " + ("reproduced exactly" if gap == 0 else f"reproduced within {gap:.4f} points")
            + "; per-pair cosines added")
    return added


def pair_cosines(runs: list[FrozenRun]) -> pd.DataFrame:
    """Per-pair STS-B test cosines of every recorded run that has them: columns backbone, pooling, seed, pair, gold,
    cosine (a fixed readout's seed is 0)."""
    parts = [run.stored.scores(PAIR_COSINES, pair_cosine_settings(run)).assign(
        backbone=run.backbone, pooling=run.config.pooling, seed=run.config.seed)
        for run in runs if has_pair_cosines(run)]
    columns = ["backbone", "pooling", "seed", "pair", "gold", "cosine"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def frozen_paired_noise(cosines: pd.DataFrame, summary: pd.DataFrame, claims=None,
                        resamples: int = 1000) -> pd.DataFrame:
    """The paired bootstrap standard error of STS-B test ``better`` minus ``worse`` (mean over seeds) per backbone,
    for every claim of ``claims`` (default: RQ1's) and every trained pooler against every fixed readout (what the
    findings compare), where *every* recorded seed of both sides has its per-pair cosines (else the difference
    keeps the unpaired noise of :func:`difference_noise`). Columns as
    :func:`~bertsent.experiments.attention_pooling.paired_noise` gives them (readouts "pooled")."""
    from .attention_pooling import RQ1_CLAIMS, paired_noise

    columns = ["backbone", "better_pooling", "better_readout", "worse_pooling", "worse_readout", "pairs", "resamples",
               "se"]
    if not len(cosines) or not len(summary):
        return pd.DataFrame(columns=columns)
    have = cosines.groupby(["backbone", "pooling"])["seed"].nunique()
    expected = summary.set_index(["backbone", "pooling"])["seeds"]
    complete = [key for key, count in have.items() if key in expected.index and count == expected[key]]
    cosines = cosines.set_index(["backbone", "pooling"]).loc[complete].reset_index() if complete else cosines.iloc[0:0]
    poolings = list(dict.fromkeys(summary["pooling"]))
    pairs = list(dict.fromkeys([*(claims or RQ1_CLAIMS), *[(t, f) for t in poolings if t in TRAINED
                                                          for f in poolings if f not in TRAINED]]))
    noise = paired_noise(cosines.assign(readout="pooled"), [((a, "pooled"), (b, "pooled")) for a, b in pairs],
                         resamples)
    return noise[columns]


def missing_runs(runs: list[FrozenRun]) -> pd.DataFrame:
    """The runs of ``runs`` not recorded (backbone, pooling, seed), with the command that trains them."""
    rows = [{"backbone": r.backbone, "pooling": r.config.pooling, "seed": r.config.seed if r.config.trainable else "-",
             "command": f"python -m bertsent.experiments.frozen_pooler train --backbones {r.backbone} "
                        f"--poolings {r.config.pooling}" + (f" --seeds {r.config.seed}" if r.config.trainable else "")}
            for r in runs if not r.stored.exists]
    return pd.DataFrame(rows, columns=["backbone", "pooling", "seed", "command"])


def ablation_view(summary: pd.DataFrame, paper: pd.Series | None = None) -> pd.DataFrame:
    """:func:`summary_table` in the columns of the fine-tuning arm's ablation table
    (:func:`~bertsent.experiments.attention_pooling.ablation_table`: ``stsb``, ``stsb_sd``, ``avg``, ``avg_sd``,
    ``seeds``, ``paper_stsb``), so one figure draws both arms; a fixed readout has no seed (``seeds`` 0)."""
    view = summary.rename(columns={"stsb_test": "stsb", "stsb_test_sd": "stsb_sd", "avg7": "avg", "avg7_sd": "avg_sd"})
    trained = view["pooling"].isin(TRAINED)
    view["seeds"] = view["seeds"].where(trained, 0)
    view["paper_stsb"] = view["pooling"].map(paper if paper is not None else {}).astype(float)
    return view


def mean_alpha(runs: list[FrozenRun], pooling: str) -> dict[str, np.ndarray]:
    """Per backbone, the L x L attention of ``pooling`` averaged over every test sentence and over the recorded
    seeds (each seed's ``alpha_test`` evaluation)."""
    out: dict[str, list[np.ndarray]] = {}
    for run in runs:
        if run.config.pooling != pooling or not run.stored.exists:
            continue
        described = json.loads((run.stored.directory / "evaluations.json").read_text())
        name, entry = next((n, e) for n, e in described.items() if e["evaluation"] == "alpha_test")
        table = run.stored.scores("alpha_test", entry["settings"])
        size = int(table["query"].max()) + 1
        out.setdefault(run.backbone, []).append(
            table.pivot(index="query", columns="key", values="alpha").to_numpy().reshape(size, size))
    return {backbone: np.mean(matrices, axis=0) for backbone, matrices in out.items()}


def layer_weight_table(alphas: dict[str, np.ndarray], pooling: str) -> pd.DataFrame:
    """One row per backbone and hidden state: the weight of that state's mean in the pooled vector (the column mean of
    :func:`mean_alpha`'s matrix), the uniform 1/L, and the weights' entropy ratio H(w) / log L (1 = uniform)."""
    rows = []
    for backbone, alpha in alphas.items():
        weights = np.asarray(alpha).mean(axis=0)
        ratio = entropy_ratio(weights)
        rows += [{"backbone": backbone, "pooling": pooling, "state": state, "weight": float(w),
                  "uniform": 1 / len(weights), "entropy_ratio": ratio} for state, w in enumerate(weights)]
    return pd.DataFrame(rows, columns=["backbone", "pooling", "state", "weight", "uniform", "entropy_ratio"])


def frozen_findings(summary: pd.DataFrame, weights: pd.DataFrame, noise: pd.DataFrame | None = None) -> str:
    """The page's headline in words, per backbone: the best trained pooler against the best fixed readout on STS-B
    test (beyond or within the noise of :func:`difference_noise`, paired where ``noise`` has the difference),
    whether its layer weights were one-hot before training, and where the layer weights went."""
    lines = []
    for backbone, group in summary.groupby("backbone", sort=False):
        trained, fixed = group[group["pooling"].isin(TRAINED)], group[~group["pooling"].isin(TRAINED)]
        if not len(trained) or not len(fixed):
            continue
        best = trained.loc[trained["stsb_test"].idxmax()]
        plain = fixed.loc[fixed["stsb_test"].idxmax()]
        gap = float(best["stsb_test"] - plain["stsb_test"])
        tolerance = difference_noise(best, best["pooling"], plain, plain["pooling"],
                                     _paired(noise, backbone, best["pooling"], plain["pooling"])).tolerance
        verb = ("beats" if gap > 0 else "stays below") if abs(gap) > tolerance else (
            "scores above, within the noise," if gap > 0 else "scores below, within the noise,")
        against = ("" if pd.isna(tolerance) else f": {gap:+.2f}, tolerance {tolerance:.2f}")
        sd = "" if pd.isna(best["stsb_test_sd"]) else f" ± {best['stsb_test_sd']:.2f}"
        line = (f"on {backbone}, the best trained pooler ({best['pooling']}, STS-B test {best['stsb_test']:.2f}{sd} "
                f"over {int(best['seeds'])} seeds, {int(best['steps']):,} steps) {verb} the best fixed readout "
                f"({plain['pooling']}, {plain['stsb_test']:.2f}{against})")
        if "entropy_step0" in best and best["entropy_step0"] < 0.01:
            line += (f" with layer weights that were one-hot before its first step (entropy "
                     f"{100 * best['entropy_step0']:.0f}% of uniform at step 0: the hidden states' norms saturate "
                     "the attention's softmax), so the gain is its projection's, not a learned choice of layers")
        states = weights[weights["backbone"] == backbone]
        if len(states):
            top = states.loc[states["weight"].idxmax()]
            state = int(top["state"])
            where = (", the embedding output," if state == 0 else ", the last layer," if state == len(states) - 1
                     else "")
            line += (f"; {top['pooling']}'s heaviest hidden state is {state} of 0-{len(states) - 1}{where} "
                     f"({top['weight']:.3f} against the uniform {top['uniform']:.3f}; entropy "
                     f"{100 * top['entropy_ratio']:.0f}% of uniform)")
        if encoder_floor(backbone) is not None:
            line += " (an encoder that has not learned language: the pooler finds what little its layers hold)"
        lines.append(line)
    if not lines:
        return "No backbone has both a trained pooler and a fixed readout recorded for these parameters."
    return "With the encoder frozen and the pooler trained to convergence: " + "; ".join(lines) + "."


def frozen_claims(summary: pd.DataFrame, paper: pd.Series, claims=None, noise: pd.DataFrame | None = None
                  ) -> pd.DataFrame:
    """RQ1 ("learned layer-wise pooling beats fixed pooling") on the frozen encoder: each (better, worse) pair of
    :data:`~bertsent.experiments.attention_pooling.RQ1_CLAIMS` judged on STS-B test with
    :func:`~bertsent.report.claims.judge`. The paper's effect is the difference of its two figures where it reports
    both, else a direction. Noise: the trained side's seed spread (a fixed readout is deterministic: no seed, no
    spread) and the sampling noise of the STS-B test pairs scored (``stsb_pairs``): paired where ``noise``
    (:func:`frozen_paired_noise`) has the difference, else Fisher's z with the sides independent. The paper fine-tuned the encoder with its
    pooler; here only the pooler (and its projection) is trained and the fixed readouts are not trained at all, so
    the rows carry ``arm`` = "frozen encoder"."""
    from .attention_pooling import RQ1_CLAIMS

    rows = []
    for backbone, group in summary.groupby("backbone", sort=False):
        group = group.set_index("pooling")
        for better, worse in claims or RQ1_CLAIMS:
            if better not in group.index or worse not in group.index:
                continue
            a, b = group.loc[better], group.loc[worse]
            effect = paper.get(better, np.nan) - paper.get(worse, np.nan)
            rows.append(judge(f"{better} > {worse} (stsb)", float(a["stsb_test"] - b["stsb_test"]),
                              None if pd.isna(effect) else float(effect),
                              difference_noise(a, better, b, worse, _paired(noise, backbone, better, worse)),
                              backbone=backbone, arm="frozen encoder", rq="RQ1"))
    return claims_table(rows)


def difference_noise(a: pd.Series, a_pooling: str, b: pd.Series, b_pooling: str, paired=None):
    """The noise of STS-B test ``a`` minus ``b`` (two rows of :func:`summary_table`): a trained side's seed spread
    (a fixed readout is deterministic: no seed, no spread) and the sampling noise of the STS-B test pairs scored:
    ``paired`` (the paired bootstrap of this difference, an Evaluation) where given, else Fisher's z of each side,
    taken as independent (which overstates it: both sides are scored on the same pairs)."""
    sides = [Side(0.0 if pd.isna(r["stsb_test_sd"]) else float(r["stsb_test_sd"]),
                  int(r["seeds"]) if name in TRAINED else 0) for name, r in ((a_pooling, a), (b_pooling, b))]
    evaluation = paired or correlation_evaluation(int(a["stsb_pairs"]), float((a["stsb_test"] + b["stsb_test"]) / 2),
                                                  2, "STS-B test pairs scored")
    return seed_noise(*sides, evaluation=evaluation)


def _paired(noise: pd.DataFrame | None, backbone: str, better: str, worse: str):
    from .attention_pooling import paired_evaluation

    return paired_evaluation(noise, backbone, (better, "pooled"), (worse, "pooled"))


# --- command line --------------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    import argparse

    import torch

    parser = argparse.ArgumentParser(prog="python -m bertsent.experiments.frozen_pooler",
                                     description="Layer-wise attention pooling on a frozen encoder's cached states.")
    parser.add_argument("command", choices=["list", "cache", "train", "summary", "pair-cosines"],
                        help="pair-cosines: add per-pair STS-B cosines to recorded runs without them (a trained "
                             "pooler is trained again, and they are added only if it reproduces the record)")
    parser.add_argument("--backbones", nargs="+", default=list(BACKBONES))
    parser.add_argument("--poolings", nargs="+", default=list(FIXED + TRAINED[::-1]),
                        help="trained in this order (default: the fixed readouts, then att_both_cls, att_both, ...)")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--steps", type=int, default=FrozenPoolerConfig.steps)
    parser.add_argument("--batch-size", type=int, default=FrozenPoolerConfig.batch_size)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    overrides = {"steps": args.steps, "batch_size": args.batch_size}
    runs = plan(args.backbones, args.poolings, args.seeds, **overrides)
    if args.command == "list":
        for backbone in args.backbones:
            for name, state in cache_state(backbone).items():
                print(f"cache {backbone} {name}: {state}")
        for run in runs:
            state = ("recorded" if run.stored.exists else
                     "interrupted (resumes)" if run.checkpoint.is_file() else "missing")
            print(f"{state:22s} {KIND}/{run.key}")
        print(f"{sum(r.stored.exists for r in runs)} of {len(runs)} runs recorded")
        return 0
    if args.command == "summary":
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            print(summary_table(runs).round(3).to_string(index=False))
        return 0
    if args.command == "pair-cosines":
        added = add_pair_cosines(runs, log=lambda line: print(line, flush=True))
        print(f"per-pair cosines added to {len(added)} run(s)")
        return 0
    data = Data()
    if args.command == "cache":
        for backbone in args.backbones:
            backbone_states(backbone, data)
        return 0
    # pooling by pooling in the order given (the fixed readouts first by default), each over the backbones in the
    # order given, seed by seed: an interrupted session leaves every backbone with the same variants done
    order = {p: i for i, p in enumerate(args.poolings)}
    backbones = {b: i for i, b in enumerate(args.backbones)}
    ordered = sorted(runs, key=lambda r: (order[r.config.pooling], backbones[r.backbone], r.config.seed))
    print(f"{sum(r.stored.exists for r in runs)} of {len(runs)} runs recorded; training the rest", flush=True)
    train_missing(ordered, log=lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

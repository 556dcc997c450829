"""Layer-wise attention pooling (Oh et al., COLING 2022): the chapter's experiments, as functions the notebooks call.

Every trained run goes through the run cache (:func:`bertsent.experiments.runs.attention_run`, kind
``attention_pooling``): its ``train.json`` and history are committed under ``results/runs/attention_pooling/<key>/``
and so is every evaluation of it (STS scores of the pooled vector and of the fixed readouts, the learned alpha,
geometry, retrieval, timing), so a page re-renders without the weights; only an evaluation not yet stored loads
(or retrains) the model.

Readouts of a trained :class:`~bertsent.models.layer_attention.LayerAttentionModel`: ``pooled`` (the trained
pooling, whatever it is), ``cls_last`` and ``mean_last`` (the encoder's own last-layer vectors, the pooler removed:
the paper's RQ4). For a run trained with ``pooling="cls_last"``, ``pooled`` and ``cls_last`` are the same vector.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..data.sts import STSDataset
from ..evaluation.geometry import geometry_summary
from ..evaluation.retrieval import evaluate_retrieval
from ..evaluation.sts import cosine_rows, evaluate_sts
from ..models.layer_attention import FIXED_POOLINGS, POOLINGS
from ..report.claims import (Side, Spread, claims_table, correlation_evaluation, judge, reciprocal_rank_evaluation,
                             seed_noise)
from ..training.attention_pooling import AttentionPoolingConfig

METHOD_VERSION = 1  # bump when the maths changes

READOUTS = ("pooled", "cls_last", "mean_last")
PAPER_POOLER = "att_both_cls"
# RQ1 claims on STS-B test: (better, worse); the paper's effect where both rows have a reported number
RQ1_CLAIMS = [("att_both_cls", "cls_mean_last"), ("att_both", "cls_mean_last"), ("att_both_cls", "att_both"),
              ("att_both_cls", "cls_last"), ("att_both_cls", "mean_last")]


# --- runs --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrainingData:
    """What a run trains and selects on: NLI triplets of ``sources`` (``max_triplets``: a seeded random subset of
    that many, seed 0, the same for every run; None all) and the first ``dev_pairs`` STS-B dev pairs per subset
    (None all)."""

    sources: tuple = ("snli",)
    max_triplets: int | None = None
    dev_pairs: int | None = None
    data_dir: object = None

    def triplets(self):
        from ..data.nli import Triplets, nli_triplets

        full = nli_triplets(tuple(self.sources), self.data_dir)
        if not self.max_triplets or self.max_triplets >= len(full):
            return full
        keep = np.sort(np.random.default_rng(0).permutation(len(full))[:self.max_triplets])
        return Triplets([full.anchors[i] for i in keep], [full.positives[i] for i in keep],
                        [full.negatives[i] for i in keep])

    def dev(self) -> STSDataset:
        from ..data.sts import load_stsb

        dev = load_stsb("dev", self.data_dir)
        return dev.head(self.dev_pairs) if self.dev_pairs else dev


def run_config(pooling: str, seed: int, **overrides) -> AttentionPoolingConfig:
    """The supervised configuration of one pooling (the paper's ablation) and seed, with ``overrides``."""
    return AttentionPoolingConfig(**{"objective": "supervised", **overrides, "pooling": pooling, "seed": int(seed)})


@dataclass
class Run:
    """One trained configuration: where its results are committed and where its weights live."""

    backbone: str
    config: AttentionPoolingConfig
    data: TrainingData
    runs_dir: Path | None = None
    results_dir: object = None

    def _locate(self, need_model: bool = False):
        from .runs import attention_run

        return attention_run(self.backbone, self.config, self.data.triplets, self.data.dev(), self.data.sources,
                             self.data.max_triplets, self.runs_dir, self.results_dir, need_model=need_model)

    @property
    def stored(self):
        return self._locate()[0]

    @property
    def key(self) -> str:
        """The run's key in the store (its training identity), computed without training anything."""
        from .runs import attention_run_key

        return attention_run_key(self.backbone, self.config, self.data.sources, self.data.max_triplets,
                                 len(self.data.dev()))

    def committed(self):
        """The run's stored results, or None when it has not been trained (nothing is trained here)."""
        from .store import StoredRun

        stored = StoredRun.at("attention_pooling", self.key, self.results_dir)
        return stored if stored.exists else None

    def summary(self) -> dict:
        return self.stored.train()["summary"]

    def load(self):
        """``(model, tokenizer)``: the selected model (``best.pt``) in eval mode, retrained if its weights are gone."""
        import torch

        from ..encode.backbones import load_backbone
        from ..models.layer_attention import LayerAttentionModel

        _, directory = self._locate(need_model=True)
        source = load_backbone(self.backbone)
        model = LayerAttentionModel.on_backbone(source, self.config.pooling)
        weights = directory / "best.pt"
        state = torch.load(weights if weights.is_file() else directory / "checkpoint.pt", map_location="cpu",
                           weights_only=False)
        model.load_state_dict(state if weights.is_file() else state["model"])
        return model.eval(), source.tokenizer

    def evaluation(self, name: str, settings: dict, compute: Callable) -> pd.DataFrame:
        """Evaluation ``name`` of this run: committed scores when present, else ``compute(model, tokenizer)``."""
        from .runs import evaluation_settings

        settings = evaluation_settings(__name__, **settings)
        stored = self.stored
        found = stored.scores(name, settings)
        if found is not None:
            return found
        return stored.add_scores(name, settings, compute(*self.load()))


def untrained(backbone: str):
    """``(model, tokenizer)``: the untrained backbone with a parameter-free ``cls_last`` pooler (its fixed readouts)."""
    from ..encode.backbones import load_backbone
    from ..models.layer_attention import LayerAttentionModel

    source = load_backbone(backbone)
    model = LayerAttentionModel.on_backbone(source, "cls_last")
    return model.eval(), source.tokenizer


# --- STS ---------------------------------------------------------------------------------------------------------

def _vectors(model, tokenizer, sentences, readout: str, max_length: int, batch_size: int) -> np.ndarray:
    from ..models.layer_attention import encode_sentences

    return encode_sentences(model, tokenizer, sentences, batch_size, max_length,
                            None if readout == "pooled" else readout)


def _readout_vectors(model, tokenizer, sentences, readouts, max_length: int, batch_size: int) -> dict:
    """``{readout: vectors}`` for every readout from one encoder pass per batch: the same batches, the same numbers as
    :func:`_vectors` called once per readout (the pooler and the fixed readouts read the same hidden states)."""
    import torch

    from ..models.layer_attention import fixed_pooling

    if not sentences:
        return {r: _vectors(model, tokenizer, sentences, r, max_length, batch_size) for r in readouts}
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    order = np.argsort([-len(s) for s in sentences], kind="stable")  # as encode_sentences: the same batches
    out = {r: [None] * len(sentences) for r in readouts}
    with torch.no_grad():
        for start in range(0, len(sentences), batch_size):
            ids = order[start:start + batch_size]
            batch = tokenizer([sentences[i] for i in ids], padding=True, truncation=True, max_length=max_length,
                              return_tensors="pt").to(device)
            s, t = model.readouts(batch["input_ids"], batch["attention_mask"])
            for readout in readouts:
                vectors = model.pooler(s, t) if readout == "pooled" else fixed_pooling(s, t, readout)
                for i, row in zip(ids, vectors.float().cpu().numpy()):
                    out[readout][i] = row
    model.train(was_training)
    return {r: np.stack(rows).astype(np.float32) for r, rows in out.items()}


def readout_sts_scores(model, tokenizer, datasets: dict[str, STSDataset], readouts=READOUTS, max_length: int = 64,
                       batch_size: int = 64) -> pd.DataFrame:
    """Spearman x 100 of every readout on every dataset: columns readout, dataset, aggregation, spearman."""
    rows = []
    for name, dataset in datasets.items():
        sentences = dataset.sentences()
        index = {s: i for i, s in enumerate(sentences)}
        encoded = _readout_vectors(model, tokenizer, sentences, readouts, max_length, batch_size)
        for readout in readouts:
            vectors = encoded[readout]
            scores = evaluate_sts(dataset, lambda a, b: cosine_rows(vectors[[index[s] for s in a]],
                                                                    vectors[[index[s] for s in b]]))
            rows += [(readout, name, aggregation, scores[aggregation]) for aggregation in ("all", "wmean")]
    return pd.DataFrame(rows, columns=["readout", "dataset", "aggregation", "spearman"])


def sts_settings(run: Run, datasets: dict[str, STSDataset], readouts=READOUTS) -> dict:
    """What identifies a run's stored STS scores: the readouts, the maximum length and each test set's size."""
    return {"readouts": list(readouts), "max_length": run.config.max_length,
            "datasets": {name: len(d) for name, d in datasets.items()}}


def run_sts_scores(run: Run, datasets: dict[str, STSDataset], readouts=READOUTS) -> pd.DataFrame:
    """One run's STS scores (committed evaluation ``sts_readouts``), labelled backbone, pooling, seed."""
    settings = sts_settings(run, datasets, readouts)
    scores = run.evaluation("sts_readouts", settings, lambda model, tokenizer: readout_sts_scores(
        model, tokenizer, datasets, readouts, run.config.max_length))
    return scores.assign(backbone=run.backbone, pooling=run.config.pooling, seed=run.config.seed)


def readout_pair_cosines(model, tokenizer, dataset: STSDataset, readouts=READOUTS, max_length: int = 64,
                         batch_size: int = 64) -> pd.DataFrame:
    """The cosine of every pair of ``dataset`` (its subsets in order) under each readout, beside the gold score:
    columns readout, pair, gold, cosine. What a paired comparison of two runs on the same pairs needs."""
    sentences = dataset.sentences()
    index = {s: i for i, s in enumerate(sentences)}
    first = [s for pairs in dataset.subsets.values() for s in pairs.sentences1]
    second = [s for pairs in dataset.subsets.values() for s in pairs.sentences2]
    gold = np.concatenate([pairs.scores for pairs in dataset.subsets.values()]).astype(float)
    encoded = _readout_vectors(model, tokenizer, sentences, readouts, max_length, batch_size)
    rows = []
    for readout in readouts:
        vectors = encoded[readout]
        cosine = cosine_rows(vectors[[index[s] for s in first]], vectors[[index[s] for s in second]])
        rows.append(pd.DataFrame({"readout": readout, "pair": np.arange(len(gold)), "gold": gold,
                                  "cosine": np.asarray(cosine, dtype=float)}))
    return pd.concat(rows, ignore_index=True)


def run_pair_cosines(run: Run, dataset: STSDataset, readouts=READOUTS) -> pd.DataFrame:
    """One run's per-pair cosines on ``dataset`` (committed evaluation ``pair_cosines``), labelled backbone,
    pooling, seed."""
    settings = {"readouts": list(readouts), "max_length": run.config.max_length, "dataset": dataset.name,
                "pairs": len(dataset)}
    cosines = run.evaluation("pair_cosines", settings, lambda model, tokenizer: readout_pair_cosines(
        model, tokenizer, dataset, readouts, run.config.max_length))
    return cosines.assign(backbone=run.backbone, pooling=run.config.pooling, seed=run.config.seed)


def paired_bootstrap_se(gold: np.ndarray, better: list[np.ndarray], worse: list[np.ndarray], resamples: int = 1000,
                        seed: int = 0) -> float:
    """Standard error (points) of mean-over-seeds Spearman x 100 of ``better`` minus that of ``worse`` (each a list
    of per-run cosines over the same pairs as ``gold``), from resampling the pairs with replacement: both sides
    are scored on every resample's same pairs, so what the two share cancels (the test set's noise of this
    difference, the seeds held fixed)."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(seed)
    n = len(gold)
    differences = np.empty(resamples)
    for r in range(resamples):
        pick = rng.integers(0, n, n)
        gold_ranks = rankdata(gold[pick])
        means = [np.mean([np.corrcoef(gold_ranks, rankdata(c[pick]))[0, 1] for c in runs]) for runs in (better, worse)]
        differences[r] = 100 * (means[0] - means[1])
    return float(np.nanstd(differences, ddof=1))  # a resample of a tiny set can repeat one pair (no correlation)


def paired_noise(cosines: pd.DataFrame, pairs_to_judge, resamples: int = 1000) -> pd.DataFrame:
    """The paired bootstrap standard error (:func:`paired_bootstrap_se`) of each difference the chapter judges, per
    backbone: ``pairs_to_judge`` lists ((pooling, readout), (pooling, readout)) sides; a side absent on a backbone
    is skipped. Columns backbone, better_pooling, better_readout, worse_pooling, worse_readout, pairs, resamples,
    se."""
    rows = []
    for backbone, group in cosines.groupby("backbone", sort=False):
        runs = {key: frame.sort_values("pair") for key, frame in group.groupby(["pooling", "readout", "seed"])}
        for better, worse in pairs_to_judge:
            a = [frame["cosine"].to_numpy() for key, frame in runs.items() if key[:2] == tuple(better)]
            b = [frame["cosine"].to_numpy() for key, frame in runs.items() if key[:2] == tuple(worse)]
            if not a or not b:
                continue
            gold = next(iter(runs.values()))["gold"].to_numpy()
            rows.append({"backbone": backbone, "better_pooling": better[0], "better_readout": better[1],
                         "worse_pooling": worse[0], "worse_readout": worse[1], "pairs": len(gold),
                         "resamples": resamples, "se": paired_bootstrap_se(gold, a, b, resamples)})
    return pd.DataFrame(rows, columns=["backbone", "better_pooling", "better_readout", "worse_pooling",
                                       "worse_readout", "pairs", "resamples", "se"])


def judged_sides(claims=RQ1_CLAIMS, pooler: str = PAPER_POOLER) -> list[tuple]:
    """The (pooling, readout) sides of every STS-B difference the ablation judges: RQ1's pooled readouts, and RQ4's
    fixed readout of the pooler-trained encoder against the model trained with that readout."""
    return ([((better, "pooled"), (worse, "pooled")) for better, worse in claims]
            + [((pooler, readout), (readout, "pooled")) for readout in ("cls_last", "mean_last")])


def paired_evaluation(noise: pd.DataFrame | None, backbone: str, better: tuple, worse: tuple):
    """The stored paired bootstrap of this difference as an Evaluation, or None."""
    from ..report.claims import bootstrap_evaluation

    if noise is None or not len(noise):
        return None
    row = noise[(noise["backbone"] == backbone) & (noise["better_pooling"] == better[0])
                & (noise["better_readout"] == better[1]) & (noise["worse_pooling"] == worse[0])
                & (noise["worse_readout"] == worse[1])]
    if not len(row):
        return None
    row = row.iloc[0]
    evaluation = bootstrap_evaluation(float(row["se"]), int(row["resamples"]))
    return type(evaluation)(evaluation.se, f"{evaluation.source}, {int(row['pairs']):,} STS-B test pairs")


def per_seed_scores(scores: pd.DataFrame, aggregation: str = "all") -> pd.DataFrame:
    """One row per (backbone, pooling, readout, seed): ``stsb`` and the seven-set ``avg`` (NaN unless all seven)."""
    rows = scores[scores["aggregation"] == aggregation]
    wide = rows.pivot_table(index=["backbone", "pooling", "readout", "seed"], columns="dataset", values="spearman",
                            sort=False)
    out = pd.DataFrame(index=wide.index)
    out["stsb"] = wide["stsb"] if "stsb" in wide else np.nan
    out["avg"] = wide.mean(axis=1) if wide.shape[1] == 7 else np.nan
    return out.reset_index()


def _stats(per_seed: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    grouped = per_seed.groupby(by, sort=False)[value]
    return pd.DataFrame({value: grouped.mean(), f"{value}_sd": grouped.std(ddof=1),
                         "seeds": grouped.size()}).reset_index()


def ablation_table(scores: pd.DataFrame, paper: pd.Series | None = None, aggregation: str = "all") -> pd.DataFrame:
    """The pooling ablation (table 1): per backbone and trained pooling, the pooled vector's STS-B test and seven-set
    average (mean over seeds, their sd, the number of seeds) and the paper's STS-B figure where it reports one."""
    per_seed = per_seed_scores(scores[scores["readout"] == "pooled"], aggregation)
    table = _stats(per_seed, ["backbone", "pooling"], "stsb").merge(
        _stats(per_seed, ["backbone", "pooling"], "avg").drop(columns="seeds"), on=["backbone", "pooling"])
    table["paper_stsb"] = table["pooling"].map(paper if paper is not None else {}).astype(float)
    order = {p: i for i, p in enumerate(POOLINGS)}
    return table.sort_values(["backbone", "pooling"], key=lambda c: c.map(order) if c.name == "pooling" else c,
                             kind="stable").reset_index(drop=True)


def _side(sd, seeds) -> Side:
    return Side(0.0 if pd.isna(sd) else float(sd), int(seeds))


def _spread(row, value: str, label: str) -> Spread | None:
    """The seed spread of one row (``<value>_sd`` over ``seeds``), to lend to one-seed rows; None under 2 seeds."""
    if row is None or row["seeds"] < 2 or pd.isna(row[f"{value}_sd"]):
        return None
    return Spread(float(row[f"{value}_sd"]), int(row["seeds"]), label)


def scored_pairs(max_pairs: int | None = None, name: str = "stsb", data_dir=None) -> int:
    """How many pairs of the STS test set ``name`` a page scored: all of them, or with ``max_pairs`` the first
    ``max_pairs`` of every subset (:func:`~bertsent.experiments.sts_tables.load_sts_datasets`)."""
    from .sts_tables import load_sts_datasets

    return len(load_sts_datasets([name], data_dir, max_pairs)[name])


def _evaluation(pairs: int | None, a, b, metric: str):
    """The test set's own noise of a difference of two STS-B correlations on ``pairs`` pairs (None: not known)."""
    if not pairs or metric != "stsb":
        return None
    return correlation_evaluation(int(pairs), float((a[metric] + b[metric]) / 2), 2, "STS-B test pairs scored")


def pooling_claims(scores: pd.DataFrame, paper: pd.Series, claims=RQ1_CLAIMS, metric: str = "stsb",
                   aggregation: str = "all", reference: str = PAPER_POOLER, pairs: int | None = None,
                   paired: pd.DataFrame | None = None) -> pd.DataFrame:
    """RQ1, "learned layer-wise pooling beats fixed pooling": each (better, worse) pair of trained poolings judged on
    ``metric`` (``stsb`` or ``avg``) with :func:`~bertsent.report.claims.judge`. The paper's effect is the difference
    of its STS-B figures where it reports both rows, else a direction only (the paper says the pooler beats every
    fixed pooling). Tolerance: :func:`~bertsent.report.claims.seed_noise` over each side's seeds; a one-seed side
    borrows the spread of ``reference`` (the paper's pooler) over its seeds on the same backbone, when it has two or
    more. ``pairs``: the STS-B test pairs scored (:func:`scored_pairs`), whose sampling noise joins the tolerance:
    from ``paired`` (:func:`paired_noise`: a paired bootstrap over the pairs both sides scored) where it has the
    difference, else from each side's correlation alone (Fisher's z, the sides taken as independent)."""
    per_seed = per_seed_scores(scores[scores["readout"] == "pooled"], aggregation)
    stats = _stats(per_seed, ["backbone", "pooling"], metric)
    rows = []
    for backbone, group in stats.groupby("backbone", sort=False):
        group = group.set_index("pooling")
        base = group.loc[reference] if reference in group.index else None
        seeds = 0 if base is None else int(base["seeds"])
        lent = _spread(base, metric, f"{reference} over {seeds} seeds on {backbone}")
        for better, worse in claims:
            if better not in group.index or worse not in group.index:
                continue
            a, b = group.loc[better], group.loc[worse]
            if pd.isna(a[metric]) or pd.isna(b[metric]):
                continue
            effect = paper.get(better, np.nan) - paper.get(worse, np.nan)
            rows.append(judge(f"{better} > {worse} ({metric})", a[metric] - b[metric],
                              None if pd.isna(effect) else float(effect),
                              seed_noise(_side(a[f"{metric}_sd"], a["seeds"]), _side(b[f"{metric}_sd"], b["seeds"]),
                                         reference=lent,
                                         evaluation=(metric == "stsb" and paired_evaluation(paired, backbone, (better, "pooled"),
                                                                                  (worse, "pooled")))
                                         or _evaluation(pairs, a, b, metric)),
                              backbone=backbone, rq="RQ1"))
    return claims_table(rows)


def rq4_table(scores: pd.DataFrame, pooler: str = PAPER_POOLER, aggregation: str = "all") -> pd.DataFrame:
    """The paper's RQ4: for each fixed readout (``cls_last``, ``mean_last``), that readout of the encoder trained with
    ``pooler`` (the pooler removed at inference) beside the same readout of the model trained with that fixed pooling
    (no pooler ever). Columns backbone, readout, trained_with, stsb, avg (means over seeds), their sd, seeds."""
    per_seed = per_seed_scores(scores, aggregation)
    rows = []
    for readout in ("cls_last", "mean_last"):
        with_pooler = per_seed[(per_seed["pooling"] == pooler) & (per_seed["readout"] == readout)]
        without = per_seed[(per_seed["pooling"] == readout) & (per_seed["readout"] == "pooled")]
        rows += [with_pooler.assign(trained_with=pooler, readout=readout),
                 without.assign(trained_with=readout, readout=readout)]
    both = pd.concat(rows, ignore_index=True)
    if not len(both):
        return pd.DataFrame(columns=["backbone", "readout", "trained_with", "stsb", "stsb_sd", "avg", "avg_sd", "seeds"])
    by = ["backbone", "readout", "trained_with"]
    return _stats(both, by, "stsb").merge(_stats(both, by, "avg").drop(columns="seeds"), on=by)


def rq4_claims(table: pd.DataFrame, pooler: str = PAPER_POOLER, metric: str = "stsb",
               pairs: int | None = None, paired: pd.DataFrame | None = None) -> pd.DataFrame:
    """RQ4, "the gain stays when the attention layer is removed at inference": the fixed readout of the pooler-trained
    encoder minus the same readout of the model trained without the pooler, per backbone; a direction (the paper gives
    no number for it here). A one-seed side borrows the spread of the pooler-trained encoder's readout over its
    seeds, when it has two or more. ``pairs``, ``paired``: the test set's noise, as for :func:`pooling_claims`."""
    rows = []
    for (backbone, readout), group in table.groupby(["backbone", "readout"], sort=False):
        group = group.set_index("trained_with")
        if pooler not in group.index or readout not in group.index:
            continue
        a, b = group.loc[pooler], group.loc[readout]
        if pd.isna(a[metric]) or pd.isna(b[metric]):
            continue
        lent = _spread(a, metric, f"{readout} of {pooler} over {int(a['seeds'])} seeds on {backbone}")
        rows.append(judge(f"{readout} of the {pooler} encoder > {readout} trained alone ({metric})",
                          a[metric] - b[metric], None,
                          seed_noise(_side(a[f"{metric}_sd"], a["seeds"]), _side(b[f"{metric}_sd"], b["seeds"]),
                                     reference=lent,
                                     evaluation=(metric == "stsb" and paired_evaluation(paired, backbone, (pooler, readout),
                                                                              (readout, "pooled")))
                                     or _evaluation(pairs, a, b, metric)),
                          backbone=backbone, rq="RQ4"))
    return claims_table(rows)


# --- the learned layer weights -------------------------------------------------------------------------------------

def mean_alpha(model, tokenizer, sentences: list[str], max_length: int = 64, batch_size: int = 64) -> np.ndarray:
    """alpha (L queries x L keys) averaged over ``sentences`` (eval mode: RReLU's slope fixed)."""
    import torch

    if model.pooling not in POOLINGS or model.pooling in FIXED_POOLINGS:
        raise ValueError(f"pooling {model.pooling!r} has no attention weights. Fix: use an att_* run.")
    model.eval()
    total, count = None, 0
    with torch.no_grad():
        for start in range(0, len(sentences), batch_size):
            batch = tokenizer(sentences[start:start + batch_size], padding=True, truncation=True,
                              max_length=max_length, return_tensors="pt")
            model(batch["input_ids"], batch["attention_mask"])
            alpha = model.alpha.double().sum(dim=0)
            total = alpha if total is None else total + alpha
            count += len(batch["input_ids"])
    return (total / count).numpy()


def alpha_frame(alpha: np.ndarray) -> pd.DataFrame:
    """Long form of an L x L alpha: query, key, alpha."""
    n = alpha.shape[0]
    return pd.DataFrame({"query": np.repeat(np.arange(n), n), "key": np.tile(np.arange(n), n),
                         "alpha": np.asarray(alpha).ravel()})


def alpha_matrix(frame: pd.DataFrame) -> np.ndarray:
    """The L x L matrix back from :func:`alpha_frame`'s rows."""
    return frame.pivot(index="query", columns="key", values="alpha").sort_index().sort_index(axis=1).to_numpy()


def layer_weights(alpha: np.ndarray) -> np.ndarray:
    """The weight each hidden state (key) receives, averaged over queries: a = sum_m (mean_l alpha_lm) v_m, so this
    is exactly the weight of v_m in the pooled vector; it sums to one."""
    return np.asarray(alpha).mean(axis=0)


def alpha_summary(alpha: np.ndarray) -> dict:
    """Where the weight goes: on the last hidden state, against the uniform 1/L, the heaviest state, its weight."""
    w = layer_weights(alpha)
    return {"states": len(w), "last_weight": float(w[-1]), "uniform_weight": 1 / len(w),
            "heaviest_state": int(np.argmax(w)), "heaviest_weight": float(w.max()),
            "entropy_ratio": float(-(w * np.log(w)).sum() / np.log(len(w)))}


def run_alpha(run: Run, sentences: list[str]) -> pd.DataFrame:
    """A run's mean alpha over ``sentences`` (committed evaluation ``alpha``), long form."""
    settings = {"sentences": len(sentences), "first": sentences[:1], "max_length": run.config.max_length}
    return run.evaluation("alpha", settings, lambda model, tokenizer: alpha_frame(
        mean_alpha(model, tokenizer, sentences, run.config.max_length)))


# --- geometry ------------------------------------------------------------------------------------------------------

def readout_geometry(model, tokenizer, dataset: STSDataset, readouts, max_length: int = 64,
                     n_pairs: int = 10000, max_points: int = 5000) -> pd.DataFrame:
    """Anisotropy, alignment (gold >= 4) and uniformity of each readout on ``dataset``'s pairs, one row each."""
    first, second, gold = [], [], []
    for pairs in dataset.subsets.values():
        first += list(pairs.sentences1)
        second += list(pairs.sentences2)
        gold += list(pairs.scores)
    sentences = list(dict.fromkeys(first + second))
    index = {s: i for i, s in enumerate(sentences)}
    rows = []
    for readout in readouts:
        vectors = _vectors(model, tokenizer, sentences, readout, max_length, 64)
        summary = geometry_summary(vectors[[index[s] for s in first]], vectors[[index[s] for s in second]],
                                   np.asarray(gold, dtype=float), n_pairs=n_pairs, max_points=max_points)
        rows.append({"readout": readout, **summary})
    return pd.DataFrame(rows)


def run_geometry(run: Run, dataset: STSDataset, readouts=READOUTS, **options) -> pd.DataFrame:
    settings = {"readouts": list(readouts), "pairs": len(dataset), "max_length": run.config.max_length, **options}
    return run.evaluation("geometry", settings, lambda model, tokenizer: readout_geometry(
        model, tokenizer, dataset, readouts, run.config.max_length, **options))


def _seeded_difference(rows: pd.DataFrame, value: str, by: str, better: str, worse: str, label: str,
                       evaluation=None):
    """``(ours, noise)`` for ``better`` - ``worse`` of the mean of ``value`` over seeds (``rows``: one per seed, a
    ``seed`` column, ``by`` naming the side); a one-seed side borrows ``better``'s spread when it has two seeds or
    more. None when a side is missing."""
    grouped = rows.groupby(by)[value]
    stats = pd.DataFrame({value: grouped.mean(), f"{value}_sd": grouped.std(ddof=1), "seeds": grouped.size()})
    if better not in stats.index or worse not in stats.index:
        return None
    a, b = stats.loc[better], stats.loc[worse]
    lent = _spread(a, value, f"{better} over {int(a['seeds'])} seeds, {label}")
    if callable(evaluation):
        evaluation = evaluation(float((a[value] + b[value]) / 2))
    noise = seed_noise(_side(a[f"{value}_sd"], a["seeds"]), _side(b[f"{value}_sd"], b["seeds"]), reference=lent,
                       evaluation=evaluation)
    return float(a[value] - b[value]), noise


def geometry_claims(geometry: pd.DataFrame, trained: str = PAPER_POOLER, baseline: str = "cls_last") -> pd.DataFrame:
    """RQ2, "less anisotropic and more uniform": the pooler-trained model's pooled vectors against the model trained
    with ``baseline`` fixed pooling (supervised SimCSE), per backbone; lower is the paper's direction for both
    quantities (uniformity is a log-mean, lower = more uniform), and the paper gives no number. Means over seeds;
    tolerance from :func:`~bertsent.report.claims.seed_noise`, a one-seed side borrowing the pooler's spread.

    ``geometry``: rows backbone, method (the trained pooling), seed, anisotropy, uniformity (one row per seed)."""
    geometry = geometry if "seed" in geometry else geometry.assign(seed=0)
    rows = []
    for backbone, group in geometry.groupby("backbone", sort=False):
        for quantity, wording in (("anisotropy", "less anisotropic"), ("uniformity", "more uniform")):
            found = _seeded_difference(group, quantity, "method", trained, baseline, f"{quantity} on {backbone}")
            if found is not None:
                rows.append(judge(f"{trained} {wording} than {baseline} trained alone", found[0], None, found[1],
                                  direction=-1, backbone=backbone, quantity=quantity, rq="RQ2"))
    return claims_table(rows)


# --- semantic search and encoding cost -----------------------------------------------------------------------------

def timed_vectors(model, tokenizer, sentences: list[str], readout: str, max_length: int = 64,
                  batch_size: int = 64) -> tuple[np.ndarray, float]:
    """``(vectors, seconds)`` of one encoding pass."""
    start = time.perf_counter()
    vectors = _vectors(model, tokenizer, sentences, readout, max_length, batch_size)
    return vectors, time.perf_counter() - start


def retrieval_rows(model, tokenizer, retrieval_sets: dict, readouts, max_length: int = 64) -> pd.DataFrame:
    """MRR@10, recall@1/10 of each readout on each retrieval set, with the encode time per 1,000 sentences and the
    index memory (float32 vectors: n x dim x 4 bytes)."""
    rows = []
    for name, rset in retrieval_sets.items():
        for readout in readouts:
            vectors, seconds = timed_vectors(model, tokenizer, rset.sentences, readout, max_length)
            metrics = evaluate_retrieval(rset, lambda _: vectors)
            rows.append({"set": name, "readout": readout, **metrics, "dim": vectors.shape[1],
                         "seconds_per_1000": 1000 * seconds / len(rset.sentences),
                         "index_mib": vectors.shape[0] * vectors.shape[1] * 4 / 2 ** 20})
    return pd.DataFrame(rows)


def run_retrieval(run: Run, retrieval_sets: dict, readouts=READOUTS) -> pd.DataFrame:
    settings = {"readouts": list(readouts), "max_length": run.config.max_length,
                "sets": {name: [len(r), len(r.sentences)] for name, r in retrieval_sets.items()}}
    return run.evaluation("retrieval", settings, lambda model, tokenizer: retrieval_rows(
        model, tokenizer, retrieval_sets, readouts, run.config.max_length)).assign(
        backbone=run.backbone, pooling=run.config.pooling, seed=run.config.seed)


def encoding_overhead(model, tokenizer, sentences: list[str], repeats: int = 3, fixed: str = "cls_last",
                      max_length: int = 64, timer: Callable[..., tuple] | None = None) -> dict:
    """The pooler's cost on encoding: the same encoder, the same sentences, timed alternately with the pooler and with
    the ``fixed`` readout ``repeats`` times; ``overhead_ratio`` = median pooled time / median fixed time."""
    timer = timer or timed_vectors
    pooled, plain = [], []
    for _ in range(repeats):
        pooled.append(timer(model, tokenizer, sentences, "pooled", max_length)[1])
        plain.append(timer(model, tokenizer, sentences, fixed, max_length)[1])
    p, f = float(np.median(pooled)), float(np.median(plain))
    return {"sentences": len(sentences), "repeats": repeats, "pooled_seconds": p, "fixed_seconds": f,
            "overhead_ratio": p / f, "overhead_percent": 100 * (p / f - 1)}


def run_overhead(run: Run, sentences: list[str], repeats: int = 3) -> pd.DataFrame:
    import torch

    settings = {"sentences": len(sentences), "repeats": repeats, "threads": torch.get_num_threads(),
                "max_length": run.config.max_length}
    return run.evaluation("overhead", settings, lambda model, tokenizer: pd.DataFrame(
        [encoding_overhead(model, tokenizer, sentences, repeats, max_length=run.config.max_length)]))


def step_benchmarks(directory=None) -> dict[str, dict]:
    """Every ``benchmarks/attention_pooling_step.py`` run stored under ``directory`` (default ``results/benchmarks``,
    files ``attention_pooling_step*.json``), by file name: what :func:`step_time_table` reads."""
    import json

    from ..paths import RESULTS_DIR

    folder = Path(directory) if directory else RESULTS_DIR / "benchmarks"
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("attention_pooling_step*.json"))}


def step_time_table(benchmarks: dict[str, dict], runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One training step per backbone, from the JSON of ``benchmarks/attention_pooling_step.py`` runs, by name (the
    chapter's supervised step with the LayerAttPooler; within a run every backbone is timed in one process and
    interleaved, so a busy machine slows them alike): per run and backbone, the trained parameters, the median
    seconds per step and the ratio to the run's reference backbone (its first). Ratios compare within a run only.
    ``runs`` (the chapter's ``training_runs.csv``), when given, adds each backbone's measured seconds per step in its
    stored runs (median over runs, evaluations included) and how many runs that is."""
    rows = []
    for name, benchmark in benchmarks.items():
        medians = benchmark["median_step_seconds"]
        reference = benchmark.get("reference", next(iter(medians)))
        rows += [{"benchmark": name, "backbone": backbone,
                  "trained_parameters": benchmark.get("trained_parameters", {}).get(backbone),
                  "seconds_per_step": seconds, "reference": reference,
                  "ratio_to_reference": seconds / medians[reference]} for backbone, seconds in medians.items()]
    table = pd.DataFrame(rows)
    if runs is not None and len(runs):
        stored = runs.groupby("backbone")["seconds_per_step"].agg(["median", "size"])
        table["stored_runs_seconds_per_step"] = table["backbone"].map(stored["median"])
        table["stored_runs"] = table["backbone"].map(stored["size"]).fillna(0).astype(int)
    return table


def search_claims(table: pd.DataFrame, paper_effect: float, pooler: str = PAPER_POOLER,
                  baseline: str = "cls_last", metric: str = "mrr@10") -> pd.DataFrame:
    """RQ3 (search half): the pooler-trained model's pooled vectors against the model trained with ``baseline``
    fixed pooling, ``metric`` per backbone and retrieval set (the paper: Quora, RoBERTa-large, +0.47 MRR@10). Means
    over seeds; tolerance from :func:`~bertsent.report.claims.seed_noise`, a one-seed side borrowing the pooler's
    spread.

    ``table``: rows of :func:`run_retrieval` (backbone, pooling, readout, set, seed, metric)."""
    table = table if "seed" in table else table.assign(seed=0)
    pooled = table[table["readout"] == "pooled"]
    rows = []
    for (backbone, name), group in pooled.groupby(["backbone", "set"], sort=False):
        queries = int(group["queries"].max()) if "queries" in group and metric.startswith("mrr") else None
        evaluation = (lambda mrr, n=queries: reciprocal_rank_evaluation(n, mrr)) if queries else None
        found = _seeded_difference(group, metric, "pooling", pooler, baseline, f"{name} on {backbone}", evaluation)
        if found is not None:
            rows.append(judge(f"{pooler} > {baseline} trained alone ({metric}, {name})", found[0], paper_effect,
                              found[1], backbone=backbone, rq="RQ3"))
    return claims_table(rows)


# --- what the pages iterate over -----------------------------------------------------------------------------------

RECIPE_FIELDS = ("max_triplets", "training")


def backbone_recipe(backbone: str, data: TrainingData, training: dict | None = None,
                    recipes: dict | None = None) -> tuple[TrainingData, dict]:
    """``(data, training overrides)`` of ``backbone``'s runs: the page's, with ``recipes[backbone]`` over them.

    A recipe lets a backbone train at another scale than the page's default in the same build (e.g. the paper's
    3 epochs over every triplet on the backbones a build can afford it for): ``max_triplets`` replaces
    the page's subset size (None: all), ``training`` is merged over the page's overrides."""
    recipe = (recipes or {}).get(backbone) or {}
    unknown = sorted(set(recipe) - set(RECIPE_FIELDS))
    if unknown:
        raise ValueError(f"recipe of {backbone!r}: unknown field(s) {unknown}; a recipe sets "
                         f"{' and '.join(RECIPE_FIELDS)}")
    if "max_triplets" in recipe:
        data = TrainingData(data.sources, recipe["max_triplets"], data.dev_pairs, data.data_dir)
    return data, {**(training or {}), **(recipe.get("training") or {})}


def recipe_in_words(recipe: dict) -> str:
    """A backbone's recipe (:func:`backbone_recipe`) as the page says it: "all the triplets, 3 epochs with no step
    cap, dev every 50 steps" (fields it does not know are given as ``name value``)."""
    from ..training.attention_pooling import AttentionPoolingConfig

    parts = []
    if "max_triplets" in recipe:
        count = recipe["max_triplets"]
        parts.append("all the triplets" if count is None else f"a seeded subset of {count:,} triplets")
    training = dict(recipe.get("training") or {})
    if "max_steps" in training:
        steps = training.pop("max_steps")
        epochs = training.pop("epochs", AttentionPoolingConfig.epochs)
        parts.append(f"{epochs} epochs with no step cap" if steps is None else f"at most {steps:,} steps")
    if "eval_every" in training:
        parts.append(f"dev every {training.pop('eval_every'):,} steps")
    parts += [f"{name} {value}" for name, value in training.items()]
    return ", ".join(parts)


def page_run(backbone: str, pooling: str, seed: int, data: TrainingData, training: dict | None = None,
             recipes: dict | None = None, runs_dir=None, results_dir=None) -> Run:
    """One run of the chapter's pages: ``pooling`` and ``seed`` on ``backbone`` with its recipe
    (:func:`backbone_recipe`)."""
    data, training = backbone_recipe(backbone, data, training, recipes)
    return Run(backbone, run_config(pooling, seed, **training), data, runs_dir, results_dir)


def ablation_runs(backbones, poolings, seeds, main_poolings=(), main_seeds=(), data: TrainingData | None = None,
                  training: dict | None = None, runs_dir=None, results_dir=None, recipes: dict | None = None) -> list[Run]:
    """Every run of the pooling ablation: each backbone x pooling with ``seeds``, the ``main_poolings`` with
    ``main_seeds`` instead (the main comparison, more seeds); ``recipes``: per-backbone scale
    (:func:`backbone_recipe`)."""
    data = data or TrainingData()
    return [page_run(backbone, pooling, seed, data, training, recipes, runs_dir, results_dir)
            for backbone in backbones for pooling in poolings
            for seed in (main_seeds if pooling in main_poolings and main_seeds else seeds)]


def pooler_and_baseline_runs(backbones, pooler: str, seeds, baseline: str, baseline_seed: int, data: TrainingData,
                             training: dict | None = None, recipes: dict | None = None, runs_dir=None,
                             results_dir=None) -> tuple[dict, dict]:
    """``(runs, baselines)``: the runs the layers and search pages read, the pooler's per ``(backbone, seed)`` and
    the baseline's per backbone. They are the ablation page's own runs (same keys), so each is trained once for the
    three pages."""
    runs = {(backbone, seed): page_run(backbone, pooler, seed, data, training, recipes, runs_dir, results_dir)
            for backbone in backbones for seed in seeds}
    baselines = {backbone: page_run(backbone, baseline, baseline_seed, data, training, recipes, runs_dir, results_dir)
                 for backbone in backbones}
    return runs, baselines


def layers_page_inputs(max_pairs: int | None = None, alpha_sentences: int = 1000,
                       data_dir=None) -> tuple[STSDataset, list[str]]:
    """``(pairs, sentences)``: the STS-B test pairs the layers page measures geometry on (the first ``max_pairs``
    of each subset when given) and the sentences its alpha is averaged over (the first ``alpha_sentences`` of
    those pairs)."""
    from ..data.sts import load_stsb

    pairs = load_stsb("test", data_dir)
    pairs = pairs.head(max_pairs) if max_pairs else pairs
    return pairs, pairs.sentences()[:alpha_sentences]


def timed_sentences(retrieval_sets: dict, count: int) -> list[str]:
    """The sentences the search page times the encoding overhead on: the first ``count`` candidates of its first
    retrieval set."""
    return next(iter(retrieval_sets.values())).sentences[:count]


def training_summaries(runs: list[Run]) -> pd.DataFrame:
    """One row per run: backbone, pooling, seed, triplets, steps, best step and dev score, seconds, seconds per
    step, threads (from the committed ``train.json``)."""
    return pd.DataFrame([run.summary() for run in runs]).drop(columns=["objective"], errors="ignore")


def load_retrieval_sets(names, max_pairs: int | None = None, data_dir=None) -> dict:
    """The retrieval stand-ins by name (:mod:`bertsent.evaluation.retrieval`); ``max_pairs`` (smoke runs): STS-B /
    SICK-R built from the first pairs of every subset only, MRPC from its first test pairs."""
    from ..data.sts import load_sickr, load_stsb
    from ..data.transfer import load_transfer
    from ..evaluation.retrieval import GOLD_THRESHOLD, load_retrieval_set, retrieval_set_from_pairs

    out = {}
    for name in names:
        if not max_pairs:
            out[name] = load_retrieval_set(name, data_dir=data_dir)
        elif name in ("stsb", "sickr"):
            dataset = (load_stsb if name == "stsb" else load_sickr)("test", data_dir).head(max_pairs)
            first = [s for p in dataset.subsets.values() for s in p.sentences1]
            second = [s for p in dataset.subsets.values() for s in p.sentences2]
            gold = np.concatenate([p.scores for p in dataset.subsets.values()])
            out[name] = retrieval_set_from_pairs(f"{name}-test-first{max_pairs}", first, second, gold >= GOLD_THRESHOLD)
        else:
            examples = load_transfer("mrpc", data_dir).splits["test"]
            first, second = zip(*examples.inputs[:max_pairs])
            out[name] = retrieval_set_from_pairs(f"mrpc-test-first{max_pairs}", list(first), list(second),
                                                 examples.labels[:max_pairs] == 1)
    return out

"""The STS tables of the book, as functions: every layer x pooling of a backbone, and the untrained baselines;
and the paper's claims about them (Figure 1, the untrained rows of Table 2), judged by
:mod:`bertsent.report.claims` with the noise of the test pairs' sample (a paired bootstrap: these readouts have no
training seed)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.sts import STS_DATASETS, STSDataset, load_sts
from ..encode.encoder import Encoder
from ..evaluation.sts import (AGGREGATIONS, BOOTSTRAP_RESAMPLES, average_difference_se, cosine_rows, evaluate_sts,
                              paired_bootstrap_se, spearman_x100)
from ..report import reported
from ..report.claims import claims_table, judge, pair_sampling_noise

METHOD_VERSION = 1  # bump when the maths changes

LAYER_POOLING_COLUMNS = ["backbone", "dataset", "layer", "pooling", "aggregation", "spearman"]
BASELINE_COLUMNS = ["backbone", "method", "dataset", "aggregation", "spearman"]
# baseline method -> (pooling, layer); layer -1 is the last layer. The method "cls" is the backbone's sentence
# token: [CLS] for an encoder, the last token for a causal LM (see baseline_poolings); the row keeps the name "cls".
BASELINE_METHODS = {"cls": ("cls", -1), "mean": ("mean", -1), "first_last_avg": ("first_last_avg", -1)}
GLOVE_METHOD = "glove_mean"
# The paper's claims about its untrained rows (Table 2: GloVe, BERT-base [CLS] and mean), "A > B" on the average
# over the STS sets; "cls" is the backbone's sentence token (a causal LM's last token).
BASELINE_CLAIMS = [("mean", "cls"), (GLOVE_METHOD, "cls"), (GLOVE_METHOD, "mean")]
# A measured difference between two deterministic readouts and its noise: what a claims table is judged from.
DIFFERENCE_COLUMNS = ["backbone", "claim", "a", "b", "datasets", "difference", "standard_error", "resamples"]


def load_sts_datasets(names=STS_DATASETS, data_dir=None, max_pairs: int | None = None) -> dict[str, STSDataset]:
    """The test splits of the named STS datasets; ``max_pairs`` keeps the first pairs of each subset (smoke runs)."""
    datasets = {name: load_sts(name, "test", data_dir) for name in names}
    if max_pairs:
        datasets = {name: d.head(max_pairs) for name, d in datasets.items()}
    return datasets


def layer_pooling_scores(encoder: Encoder, datasets: dict[str, STSDataset], poolings=None,
                         layers=None, transform=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spearman x 100 for every dataset x layer x pooling.

    ``transform``: applied to the vectors before the cosine (e.g. whitening). Returns ``(table, subsets)``:
    ``table`` has :data:`LAYER_POOLING_COLUMNS` with both aggregations for every dataset; ``subsets`` holds
    the per-subset scores (column ``subset`` added).
    """
    def vectors(pooled, sentences, pooling, layer):
        found = pooled.lookup(sentences, pooling, layer)
        return transform(found) if transform is not None else found

    backbone = encoder.backbone
    poolings = list(poolings or encoder.supported_poolings())
    rows, subset_rows = [], []
    for name, dataset in datasets.items():
        pooled = encoder.encode(dataset.sentences(), poolings)
        for layer in (range(pooled.n_layers) if layers is None else [l % pooled.n_layers for l in layers]):
            for pooling in poolings:
                def similarity(first, second):
                    return cosine_rows(vectors(pooled, first, pooling, layer), vectors(pooled, second, pooling, layer))

                scores = evaluate_sts(dataset, similarity)
                for aggregation in AGGREGATIONS:
                    rows.append((backbone.name, name, layer, pooling, aggregation, scores[aggregation]))
                for subset, value in scores.subsets.items():
                    subset_rows.append((backbone.name, name, subset, scores.sizes[subset], layer, pooling, value))
    table = pd.DataFrame(rows, columns=LAYER_POOLING_COLUMNS)
    subsets = pd.DataFrame(subset_rows, columns=["backbone", "dataset", "subset", "pairs", "layer", "pooling", "spearman"])
    return table, subsets


def baseline_poolings(backbone) -> dict[str, str]:
    """Baseline method -> the pooling that computes it on ``backbone``: :data:`BASELINE_METHODS`, with ``cls`` read
    as the backbone's sentence token (``"last"`` on a causal LM; a causal LM's mean also leaves BOS out); a causal
    LM adds ``prompt``, the last token of the prompt-wrapped sentence (:data:`~bertsent.encode.causal_pooling.PROMPT_TEMPLATE`)."""
    from ..encode.causal_pooling import sentence_token_pooling

    token = sentence_token_pooling(backbone)
    methods = {method: token if method == "cls" else pooling for method, (pooling, _) in BASELINE_METHODS.items()}
    if "prompt" in getattr(backbone, "poolings", ()):
        methods["prompt"] = "prompt"  # a causal LM's zero-shot sentence readout (PromptEOL's template)
    return methods


def baseline_scores(encoder: Encoder, datasets: dict[str, STSDataset]) -> pd.DataFrame:
    """Untrained baselines: GloVe mean for a GloVe backbone; last-layer [CLS] (a causal LM's last token, still
    labelled ``cls``), mean and first-last average otherwise."""
    backbone = encoder.backbone
    if backbone.kind == "glove":
        table, _ = layer_pooling_scores(encoder, datasets, ["mean"], layers=[0])
        table["method"] = GLOVE_METHOD
    else:
        methods = baseline_poolings(backbone)
        table, _ = layer_pooling_scores(encoder, datasets, list(methods.values()), layers=[-1])
        table["method"] = table["pooling"].map({p: m for m, p in methods.items()})
    return table[BASELINE_COLUMNS]


def sts_average(table: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean over the seven STS datasets (the papers' "avg" column), per group and aggregation.

    The average is NaN when a dataset is missing or undefined, so a partial average is never shown as complete.
    """
    def mean_of_seven(values: pd.Series) -> float:
        return values.mean(skipna=False) if len(values) == len(STS_DATASETS) else float("nan")

    return table.groupby(by + ["aggregation"], sort=False)["spearman"].agg(mean_of_seven).reset_index()


def baseline_table(scores: pd.DataFrame, aggregation: str, datasets: list[str]) -> pd.DataFrame:
    """The baselines table: one row per (backbone, method), one column per dataset of ``datasets`` in that order,
    and the seven-set ``avg`` when all seven are there (NaN for a group missing one, see :func:`sts_average`).

    ``scores``: columns backbone, method, dataset, aggregation, spearman (``sts_baselines.csv``).
    """
    rows = scores[scores["aggregation"] == aggregation]
    table = rows.pivot_table(index=["backbone", "method"], columns="dataset", values="spearman", sort=False)[datasets]
    if len(datasets) == 7:
        table["avg"] = sts_average(rows, ["backbone", "method"]).set_index(["backbone", "method"])["spearman"]
    return table


def layer_pooling_grid(table: pd.DataFrame, dataset: str = "stsb", aggregation: str = "all") -> pd.DataFrame:
    """``layer x pooling`` grid for one dataset, or for ``dataset="avg"`` the mean over the seven STS sets."""
    rows = table[table["aggregation"] == aggregation]
    if dataset == "avg":
        rows = sts_average(rows, ["backbone", "layer", "pooling"])
    else:
        rows = rows[rows["dataset"] == dataset]
    poolings = list(dict.fromkeys(table["pooling"]))
    return rows.pivot_table(index="layer", columns="pooling", values="spearman", dropna=False)[poolings]


def grid_extremes(grid: pd.DataFrame) -> dict[str, dict]:
    """The best and worst defined cells of a grid: ``{"best": {layer, pooling, spearman}, "worst": {...}}``."""
    cells = grid.stack().dropna()
    return {
        kind: {"layer": int(index[0]), "pooling": index[1], "spearman": float(cells[index])}
        for kind, index in (("best", cells.idxmax()), ("worst", cells.idxmin()))
    }


def figure1_checks(grid: pd.DataFrame, shallow_layers=(1, 2, 3), sentence_pooling: str = "cls") -> dict:
    """What a layer x pooling grid says about the two claims of the SG-OPT paper's Figure 1.

    Claim 1, the spread: best and worst defined cells. Claim 2, the obvious readout is poor: the rank of the
    last layer's [CLS] among all defined cells (1 = best), the best shallow-layer cell, and at how many layers
    [CLS] is the weakest pooling. ``sentence_pooling``: the readout that stands for [CLS] (``"last"`` for a causal
    backbone: :func:`~bertsent.encode.causal_pooling.sentence_token_pooling`); the keys keep the name ``cls``.
    The shallow layers are those of ``shallow_layers`` below the grid's last layer (a 2-layer BERT: layer 1 only).
    """
    shallow_layers = [layer for layer in shallow_layers if layer in grid.index and layer < grid.index.max()]
    if not shallow_layers:
        raise ValueError(f"The grid's layers ({', '.join(map(str, grid.index))}) have no shallow layer below the last "
                         "one; pass shallow_layers that the backbone has.")
    if sentence_pooling not in grid.columns:
        raise ValueError(f"The grid has no {sentence_pooling!r} column (it has {', '.join(grid.columns)}); pass the "
                         "backbone's sentence readout as sentence_pooling.")
    cells = grid.stack().dropna()
    last_cls = float(grid.loc[grid.index.max(), sentence_pooling])
    shallow = grid.loc[shallow_layers].stack().dropna()
    defined_cls = grid[sentence_pooling].dropna().index
    return {
        **grid_extremes(grid),
        "spread": float(cells.max() - cells.min()),
        "last_cls": last_cls,
        "last_cls_rank": int((cells > last_cls).sum()) + 1,
        "cells": len(cells),
        "best_shallow": {"layer": int(shallow.idxmax()[0]), "pooling": shallow.idxmax()[1], "spearman": float(shallow.max())},
        "cls_weakest_layers": int((grid.loc[defined_cls].idxmin(axis=1) == sentence_pooling).sum()),
        "cls_layers": len(defined_cls),
    }


def readout_predictions(encoder: Encoder, datasets: dict[str, STSDataset], pooling: str,
                        layer: int = -1) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per dataset, the cosine of every pair under one readout (``pooling`` of hidden state ``layer``) and the gold
    scores, the subsets concatenated (what the ``all`` aggregation scores). With a cached encoder this reads the
    vectors the tables above already computed."""
    predictions = {}
    for name, dataset in datasets.items():
        pooled = encoder.encode(dataset.sentences(), [pooling])
        at = layer % pooled.n_layers
        predicted = [cosine_rows(pooled.lookup(pairs.sentences1, pooling, at), pooled.lookup(pairs.sentences2, pooling, at))
                     for pairs in dataset.subsets.values()]
        gold = [np.asarray(pairs.scores, dtype=np.float64) for pairs in dataset.subsets.values()]
        predictions[name] = (np.concatenate(predicted), np.concatenate(gold))
    return predictions


def readout_difference(a: dict, b: dict, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Readout a's STS score minus b's, averaged over the datasets both were scored on (the ``all`` aggregation), and
    the standard error of that difference from a paired bootstrap over each dataset's pairs (``a``, ``b``: from
    :func:`readout_predictions`, on the same pairs)."""
    names = [name for name in a if name in b]
    differences, errors = [], []
    for name in names:
        (predicted_a, gold), (predicted_b, _) = a[name], b[name]
        differences.append(spearman_x100(predicted_a, gold) - spearman_x100(predicted_b, gold))
        errors.append(paired_bootstrap_se(gold, predicted_a, predicted_b, resamples, seed))
    return float(np.mean(differences)), average_difference_se(errors)


def _datasets_label(names) -> str:
    names = list(names)
    return f"the {len(names)} STS sets" if len(names) == len(STS_DATASETS) else "+".join(names)


def baseline_differences(encoders: dict[str, Encoder], datasets: dict[str, STSDataset],
                         resamples: int = BOOTSTRAP_RESAMPLES) -> pd.DataFrame:
    """The measured side of :data:`BASELINE_CLAIMS` on every transformer backbone of ``encoders`` (GloVe, where
    ``encoders`` has a GloVe backbone, is the same vectors for every backbone's claim): :data:`DIFFERENCE_COLUMNS`."""
    glove = [e for e in encoders.values() if e.backbone.kind == "glove"]
    rows = []
    for name, encoder in encoders.items():
        if encoder.backbone.kind == "glove":
            continue
        methods = baseline_poolings(encoder.backbone)
        predictions = {}
        for a, b in BASELINE_CLAIMS:
            if GLOVE_METHOD in (a, b) and not glove:
                continue
            for method in (a, b):
                if method not in predictions:
                    predictions[method] = (readout_predictions(glove[0], datasets, "mean", 0) if method == GLOVE_METHOD
                                           else readout_predictions(encoder, datasets, methods[method], -1))
            difference, error = readout_difference(predictions[a], predictions[b], resamples)
            rows.append((name, f"{a} > {b}", a, b, _datasets_label(datasets), difference, error, resamples))
    return pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)


def baseline_claims(differences: pd.DataFrame) -> pd.DataFrame:
    """The paper's claims about its untrained rows, judged: our difference (:func:`baseline_differences`) against the
    paper's on the same datasets (BERT-base's [CLS] and mean, GloVe; Table 2), the tolerance 2 bootstrap SEs."""
    paper = reported.sg_opt_sts_table()
    rows = []
    for row in differences.itertuples():
        names = list(STS_DATASETS) if row.datasets.startswith("the ") else row.datasets.split("+")
        side = {method: paper.loc[("GloVe", GLOVE_METHOD) if method == GLOVE_METHOD else ("BERT-base", method), names]
                for method in (row.a, row.b)}
        rows.append(judge(row.claim, row.difference, float((side[row.a] - side[row.b]).mean()),
                          pair_sampling_noise(row.standard_error, row.resamples), backbone=row.backbone,
                          datasets=row.datasets))
    return claims_table(rows)


def figure1_differences(encoder: Encoder, dataset: STSDataset, grid: pd.DataFrame, sentence_pooling: str,
                        resamples: int = BOOTSTRAP_RESAMPLES) -> pd.DataFrame:
    """The measured side of Figure 1's two claims on one backbone (``grid``: its STS-B layer x pooling grid):
    the best cell against the worst, and the best shallow cell (layers 1-3) against the last layer's sentence
    token. The cells are picked on the test set itself, as the paper's figure picks them; the bootstrap SE is that
    of the two picked cells (it does not count the picking). :data:`DIFFERENCE_COLUMNS`."""
    checks = figure1_checks(grid, sentence_pooling=sentence_pooling)
    last = {"layer": int(grid.index.max()), "pooling": sentence_pooling}
    pairs = {"best cell > worst cell": (checks["best"], checks["worst"]),
             "best shallow cell > last-layer sentence token": (checks["best_shallow"], last)}
    rows = []
    for claim, (a, b) in pairs.items():
        difference, error = readout_difference(
            *(readout_predictions(encoder, {dataset.name: dataset}, cell["pooling"], cell["layer"]) for cell in (a, b)),
            resamples)
        rows.append((encoder.backbone.name, claim, f"layer {a['layer']} {a['pooling']}",
                     f"layer {b['layer']} {b['pooling']}", dataset.name, difference, error, resamples))
    return pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)


def figure1_claims(differences: pd.DataFrame) -> pd.DataFrame:
    """Figure 1's claims judged (:func:`figure1_differences`), against BERT-base on STS-B: best (layer 2 max, 63.19)
    minus worst (layer 10 [CLS], 16.71); best shallow cell (the same layer 2 max) minus the last layer's [CLS]
    (20.30, the paper's Table 2)."""
    figure = reported.SG_OPT_FIGURE1
    paper = {"best cell > worst cell": figure["best"]["spearman"] - figure["worst"]["spearman"],
             "best shallow cell > last-layer sentence token":
                 figure["best"]["spearman"] - float(reported.sg_opt_sts_table().loc[("BERT-base", "cls"), "stsb"])}
    return claims_table([judge(row.claim, row.difference, paper[row.claim],
                               pair_sampling_noise(row.standard_error, row.resamples), backbone=row.backbone,
                               cells=f"{row.a} vs {row.b}")
                         for row in differences.itertuples()])

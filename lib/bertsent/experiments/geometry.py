"""The geometry chapter's tables: every readout of the book measured with :mod:`bertsent.evaluation.geometry`.

A *readout* is one way of turning sentences into vectors (a backbone's pooling at a layer, optionally
post-processed, or a trained model's [CLS]); each gets the same measurements on STS-B test: anisotropy over
random pairs of distinct sentences, alignment over pairs with gold >= 4, uniformity, the singular-value
spectrum, cosine similarities by gold band, and its STS average, so geometry can be read against quality.

The page's readouts are measured once and committed: an untrained backbone's under ``results/runs/untrained/``
(:func:`untrained_readouts`, :func:`stored_layer_anisotropy`), a trained run's with the run (:func:`trained_readout`),
so a new machine re-renders the page from them without loading a model.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from functools import cache
from typing import Callable

import numpy as np
import pandas as pd

from ..data.sentences import training_sentences
from ..data.sts import STSDataset
from ..encode.causal_pooling import sentence_token_pooling
from ..encode.encoder import Encoder
from ..evaluation.geometry import (
    anisotropy,
    cosine_by_gold_band,
    geometry_summary,
    make_geometry_callback,
    singular_value_spectrum,
)
from ..paths import CACHE_DIR
from ..report.claims import Side, Spread, claims_table, judge, seed_noise
from ..training.self_guided import SelfGuidedConfig, train_self_guided
from .runs import run_id
from .self_guided import mean_whitening, score_encoder
from .store import digest_of

METHOD_VERSION = 1  # bump when the maths changes


@dataclass
class Readout:
    """Sentence vectors from ``encoder``: ``pooling`` at ``layer``, then ``transform`` (e.g. whitening).
    ``pooling=None`` (the default): the backbone's sentence token, [CLS] or a causal LM's last token
    (:func:`~bertsent.encode.causal_pooling.sentence_token_pooling`)."""
    backbone: str
    method: str
    encoder: Encoder
    pooling: str | None = None
    layer: int = -1
    transform: Callable[[np.ndarray], np.ndarray] | None = None

    def __post_init__(self):
        self.pooling = self.pooling or sentence_token_pooling(self.encoder.backbone)

    def vectors(self, sentences: list[str]) -> np.ndarray:
        pooled = self.encoder.encode(sentences, [self.pooling])
        vectors = pooled.lookup(sentences, self.pooling, self.layer % pooled.n_layers)
        return self.transform(vectors) if self.transform is not None else vectors

    def sts_scores(self, datasets: dict[str, STSDataset]) -> pd.DataFrame:
        return score_encoder(self.encoder, datasets, self.pooling, self.layer, self.transform)


@dataclass
class StoredReadout:
    """A readout measured once and committed: a trained run's sentence token (:func:`trained_readout`, stored with
    the run) or an untrained backbone's readout (:func:`untrained_readouts`). :func:`readout_geometry`,
    :func:`readout_spectrum` and :func:`readout_cosine_bands` return its stored tables (after checking that they are
    asked with the settings the tables were measured with)."""
    backbone: str
    method: str
    tables: dict[str, pd.DataFrame]
    settings: dict


def flat_pairs(dataset: STSDataset) -> tuple[list[str], list[str], np.ndarray]:
    """All pairs of an STS dataset, subsets concatenated: (first sentences, second sentences, gold scores)."""
    subsets = list(dataset.subsets.values())
    return ([s for p in subsets for s in p.sentences1], [s for p in subsets for s in p.sentences2],
            np.concatenate([np.asarray(p.scores, dtype=np.float64) for p in subsets]))


def layer_anisotropy(encoder: Encoder, sentences: list[str], poolings, n_pairs: int = 10000,
                     seed: int = 0) -> pd.DataFrame:
    """Anisotropy of every hidden layer (0 = embeddings) and pooling, on the same random sentence pairs."""
    sentences = list(dict.fromkeys(sentences))
    pooled = encoder.encode(sentences, list(poolings))
    rows = []
    for pooling in poolings:
        for layer in range(pooled.n_layers):
            vectors = pooled.lookup(sentences, pooling, layer)
            nonzero = np.linalg.norm(vectors, axis=1) > 0  # layer-0 [CLS] is one constant vector: still defined
            rows.append((pooling, layer, anisotropy(vectors[nonzero], n_pairs=n_pairs, seed=seed)))
    return pd.DataFrame(rows, columns=["pooling", "layer", "anisotropy"])


def readout_geometry(readout: Readout, dataset: STSDataset, sts_datasets: dict[str, STSDataset] | None = None,
                     threshold: float = 4.0, n_pairs: int = 10000, seed: int = 0,
                     max_points: int = 5000) -> dict:
    """Anisotropy, alignment, uniformity of one readout on ``dataset``; its STS average (``all``) if asked."""
    if isinstance(readout, StoredReadout):
        _same_settings(readout, pairs=len(dataset), threshold=threshold, n_pairs=n_pairs, seed=seed,
                       max_points=max_points, datasets={n: len(d) for n, d in (sts_datasets or {}).items()})
        return readout.tables["geometry"].iloc[0].to_dict()
    first, second, gold = flat_pairs(dataset)
    summary = geometry_summary(readout.vectors(first), readout.vectors(second), gold, threshold, n_pairs, seed,
                               max_points)
    row = {"backbone": readout.backbone, "method": readout.method, **summary}
    if sts_datasets:
        scores = readout.sts_scores(sts_datasets)
        row["sts_avg"] = float(scores[scores["aggregation"] == "all"]["spearman"].mean())
    return row


def readout_cosine_bands(readout: Readout, dataset: STSDataset) -> pd.DataFrame:
    """The cosine of every pair of ``dataset`` with its gold-score band, labelled with the readout."""
    if isinstance(readout, StoredReadout):
        _same_settings(readout, pairs=len(dataset))
        return readout.tables["cosine_bands"]
    first, second, gold = flat_pairs(dataset)
    bands = cosine_by_gold_band(readout.vectors(first), readout.vectors(second), gold)
    return bands.assign(backbone=readout.backbone, method=readout.method)


def readout_spectrum(readout: Readout, sentences: list[str], top: int = 100) -> pd.DataFrame:
    """The largest ``top`` normalised singular values of the readout's (centred) sentence-vector matrix."""
    if isinstance(readout, StoredReadout):
        _same_settings(readout, sentences=len(dict.fromkeys(sentences)), top=top)
        return readout.tables["spectrum"]
    values = singular_value_spectrum(readout.vectors(list(dict.fromkeys(sentences))))[:top]
    return pd.DataFrame({"backbone": readout.backbone, "method": readout.method,
                         "index": np.arange(1, len(values) + 1), "singular_value": values})


def _measurements(readout_of: Callable[..., Readout], stsb: STSDataset, sts_datasets: dict[str, STSDataset],
                  threshold: float, n_pairs: int, seed: int, max_points: int, top: int) -> dict:
    """The three stored measurements of a readout, name -> (the settings they add, ``compute(*args)``), where
    ``readout_of(*args)`` builds the readout (for a trained run, from its model's directory)."""
    sentences = list(dict.fromkeys(stsb.sentences()))
    datasets = {name: len(d) for name, d in sts_datasets.items()}
    return {
        "geometry": (dict(threshold=threshold, n_pairs=n_pairs, seed=seed, max_points=max_points, datasets=datasets),
                     lambda *args: pd.DataFrame([readout_geometry(readout_of(*args), stsb, sts_datasets, threshold,
                                                                  n_pairs, seed, max_points)])),
        "spectrum": (dict(top=top), lambda *args: readout_spectrum(readout_of(*args), sentences, top)),
        "cosine_bands": ({}, lambda *args: readout_cosine_bands(readout_of(*args), stsb)),
    }


def _stored_settings(stsb: STSDataset, sts_datasets: dict[str, STSDataset], threshold: float, n_pairs: int,
                     seed: int, max_points: int, top: int) -> dict:
    """What a :class:`StoredReadout`'s tables were measured with (checked when they are read)."""
    return dict(pairs=len(stsb), threshold=threshold, n_pairs=n_pairs, seed=seed, max_points=max_points,
                datasets={name: len(d) for name, d in sts_datasets.items()},
                sentences=len(dict.fromkeys(stsb.sentences())), top=top)


def trained_readout(backbone: str, method: str, train_data: str, config: SelfGuidedConfig, stsb: STSDataset,
                    sts_datasets: dict[str, STSDataset], threshold: float = 4.0, n_pairs: int = 10000, seed: int = 0,
                    max_points: int = 5000, top: int = 100, data_dir=None, dev: STSDataset | None = None,
                    runs_dir: Path | None = None, results_dir=None, **encoder_options) -> StoredReadout:
    """A trained run's sentence-token readout, labelled ``method``, measured as the untrained ones are: its
    ``geometry`` row (:func:`readout_geometry` on ``stsb``, STS average over ``sts_datasets``), ``spectrum``
    (:func:`readout_spectrum` on the sentences of ``stsb``) and ``cosine_bands`` (:func:`readout_cosine_bands`).
    Each is an evaluation of the run: read from its committed results (``results/runs/sg/<key>/``) when there,
    else computed on the run's model (trained first if its weights are gone) and committed, so a new machine
    re-renders the geometry page without the models."""
    from ..encode.backbones import backbone_sentence_pooling, load_backbone
    from .runs import evaluation_settings, run_scores

    def measured(model: Path) -> Readout:
        return Readout(backbone, method, Encoder(load_backbone(str(model)), **encoder_options))

    common = dict(readout=backbone_sentence_pooling(backbone), layer=-1, pairs=len(stsb),
                  max_length=encoder_options.get("max_length", 128))
    evaluations = _measurements(cache(measured), stsb, sts_datasets, threshold, n_pairs, seed, max_points, top)
    tables = {name: run_scores(backbone, train_data, config, name, evaluation_settings(__name__, **common, **extra),
                               compute, data_dir, dev, runs_dir, results_dir)
              for name, (extra, compute) in evaluations.items()}
    return StoredReadout(backbone, method, tables,
                         _stored_settings(stsb, sts_datasets, threshold, n_pairs, seed, max_points, top))


UNTRAINED_READOUTS = ("cls", "mean", "whitening")


def untrained_readouts(backbone: str, methods, stsb: STSDataset, sts_datasets: dict[str, STSDataset],
                       fit_sentences: list[str] | None = None, fit_set: str = "stsb_all", threshold: float = 4.0,
                       n_pairs: int = 10000, seed: int = 0, max_points: int = 5000, top: int = 100, results_dir=None,
                       **encoder_options) -> list[StoredReadout]:
    """The untrained ``backbone``'s readouts, each measured as :func:`trained_readout` measures a run's (geometry row
    with its STS average, spectrum, cosine bands) and committed under ``results/runs/untrained/``
    (:func:`~bertsent.experiments.runs.untrained_scores`): read back when stored with these settings, else the
    backbone is loaded once, the missing ones measured and committed (Gemma 3 270M's took most of the page's hour).

    ``methods``: readouts among ``cls`` (the last-layer sentence token: [CLS], a causal LM's last token), ``mean``
    (mean pooling) and ``whitening`` (mean pooling whitened with statistics fitted on ``fit_sentences``, from
    ``fit_set``), or a dict of labels to them (``{"glove_mean": "mean"}``)."""
    from ..encode.backbones import backbone_sentence_pooling, load_backbone
    from .runs import evaluation_settings, untrained_scores

    labels = dict(methods) if isinstance(methods, dict) else {method: method for method in methods}
    unknown = sorted(set(labels.values()) - set(UNTRAINED_READOUTS))
    if unknown:
        raise ValueError(f"unknown untrained readout(s) {unknown}; choose among {list(UNTRAINED_READOUTS)}")
    if "whitening" in labels.values() and fit_sentences is None:
        raise ValueError("the whitening readout needs fit_sentences (the sentences its statistics are fitted on)")
    encoder = cache(lambda: Encoder(load_backbone(backbone), **encoder_options))
    max_length = encoder_options.get("max_length", 128)
    stored = []
    for label, kind in labels.items():
        pooling = backbone_sentence_pooling(backbone) if kind == "cls" else "mean"
        fit = {} if kind != "whitening" else dict(transform="whitening", fit_set=fit_set,
                                                   fit_count=len(fit_sentences),
                                                   fit_digest=digest_of(fit_sentences)[:16])

        def readout_of(kind=kind, label=label, pooling=pooling) -> Readout:
            transform = mean_whitening(encoder(), fit_sentences).transform if kind == "whitening" else None
            return Readout(backbone, label, encoder(), pooling, transform=transform)

        evaluations = _measurements(cache(readout_of), stsb, sts_datasets, threshold, n_pairs, seed, max_points, top)
        common = dict(readout=pooling, layer=-1, pairs=len(stsb), max_length=max_length, **fit)
        tables = {name: untrained_scores(backbone, f"{name}_{label}", evaluation_settings(__name__, **common, **extra),
                                         compute, results_dir)
                  for name, (extra, compute) in evaluations.items()}
        stored.append(StoredReadout(backbone, label, tables,
                                    _stored_settings(stsb, sts_datasets, threshold, n_pairs, seed, max_points, top)))
    return stored


def stored_layer_anisotropy(backbone: str, sentences: list[str], poolings, n_pairs: int = 10000, seed: int = 0,
                            results_dir=None, **encoder_options) -> pd.DataFrame:
    """:func:`layer_anisotropy` of the untrained ``backbone`` for each of ``poolings`` it reads (a causal LM has no
    ``cls``), committed under ``results/runs/untrained/`` and read back when stored with these settings."""
    from ..encode.backbones import load_backbone
    from .runs import evaluation_settings, untrained_scores

    unique = list(dict.fromkeys(sentences))
    settings = evaluation_settings(__name__, poolings=list(poolings), sentences=len(unique), n_pairs=n_pairs,
                                   seed=seed, max_length=encoder_options.get("max_length", 128))

    def compute() -> pd.DataFrame:
        encoder = Encoder(load_backbone(backbone), **encoder_options)
        usable = [p for p in poolings if p in encoder.supported_poolings()]
        return layer_anisotropy(encoder, unique, usable, n_pairs=n_pairs, seed=seed)

    return untrained_scores(backbone, "layer_anisotropy", settings, compute, results_dir)


def _same_settings(readout: StoredReadout, **asked) -> None:
    differ = {k: (v, readout.settings[k]) for k, v in asked.items() if readout.settings[k] != v}
    if differ:
        raise ValueError(f"{readout.backbone} {readout.method}: its stored tables were measured with other settings "
                         f"(asked vs stored: {differ}); measure it again with these settings (trained_readout or "
                         f"untrained_readouts)")


def geometry_row(geometry: pd.DataFrame, backbone: str, method: str) -> pd.Series | None:
    """The first row of the ``geometry`` table (``isotropy/methods.csv``) for (backbone, method); None if absent."""
    match = geometry[(geometry["backbone"] == backbone) & (geometry["method"] == method)]
    return match.iloc[0] if len(match) else None


def geometry_trajectory(backbone: str, train_data: str, config: SelfGuidedConfig, dataset: STSDataset,
                        dev: STSDataset, data_dir=None, runs_dir: Path | None = None, results_dir=None) -> pd.DataFrame:
    """Train SG / SG-OPT recording ``dataset``'s geometry at every evaluation; one row per evaluation: step, STS-B
    dev score, alignment, uniformity, anisotropy.

    The run is the same as :func:`bertsent.experiments.runs.train_or_reuse`'s (same configuration and seed; the
    recording only reads the model), trained in its own directory ``<run id>-geometry``. The recording is an
    evaluation of that run (``trajectory``), committed with it (``results/runs/sg/<key>/``; the run's record too if
    it had none), so a new machine re-renders it without training.
    """
    from .runs import evaluation_settings, readable_run, record_sg_run, stored_run

    readable = readable_run(backbone, train_data, config, results_dir, len(dev))
    settings = evaluation_settings(__name__, pairs=len(dataset), max_length=config.max_length)
    found = readable.scores("trajectory", settings) if readable.exists else None
    if found is not None:
        return found
    directory = Path(runs_dir or CACHE_DIR / "runs") / f"{run_id(backbone, train_data, config)}-geometry"
    recording = directory / "geometry.csv"
    if not ((directory / "train.json").is_file() and recording.is_file()):
        # an interrupted recording cannot be resumed (the callback's early records would be missing)
        if (directory / "checkpoint.pt").is_file():
            (directory / "checkpoint.pt").unlink()
        callback = make_geometry_callback(dataset, max_length=config.max_length)
        result = train_self_guided(backbone, training_sentences(train_data, data_dir), dev, directory, config,
                                   resume=False, show_progress=False, callbacks=[callback])
        frame = callback.to_frame().merge(pd.DataFrame(result.history)[["step", "dev"]], on="step")
        frame.to_csv(recording, index=False)
        (directory / "recording.json").write_text(json.dumps({"config": asdict(config), "backbone": backbone,
                                                              "train_data": train_data}, indent=2) + "\n")
    stored = stored_run(backbone, train_data, config, results_dir, len(dev))  # never the book's, on a re-run
    if not stored.exists:
        record_sg_run(stored, directory, backbone, train_data, config, len(dev))
    return stored.add_scores("trajectory", settings, pd.read_csv(recording))


# The geometry the papers claim contrastive training leaves: lower anisotropy, lower (more uniform) uniformity.
GEOMETRY_CLAIMS = {"anisotropy": "less anisotropic", "uniformity": "more uniform"}


def geometry_claims(geometry: pd.DataFrame, backbones, methods, baseline: str = "cls", seeds: int = 1,
                    spreads: dict[str, Spread] | None = None) -> pd.DataFrame:
    """The claim "contrastive training leaves a less anisotropic, more uniform space" on each trained readout, as a
    claims table (:func:`bertsent.report.claims.claims_table`, with ``backbone``, ``method`` and ``quantity``).

    Our effect is the trained readout's anisotropy (uniformity) minus that of the untrained ``baseline`` readout of
    the same backbone (its sentence token, the vector SG / SG-OPT train: the method label ``"cls"`` also names a
    causal LM's last-token row). The papers give a direction (lower) and no number,
    so the verdict comes from the sign beyond the noise. The trained rows have ``seeds`` seeds and the untrained one
    none; a one-seed row borrows ``spreads[quantity]`` (a :class:`~bertsent.report.claims.Spread` of that
    measurement over seeds) and, with none given, the tolerance is not measured and the verdict is ``noise not measured``.

    ``geometry``: one row per readout with columns backbone, method, anisotropy, uniformity (``methods.csv``).
    """
    rows = []
    indexed = geometry.set_index(["backbone", "method"])
    for backbone in backbones:
        for method in methods:
            if (backbone, baseline) not in indexed.index or (backbone, method) not in indexed.index:
                continue
            for quantity, wording in GEOMETRY_CLAIMS.items():
                ours = indexed.loc[(backbone, method), quantity] - indexed.loc[(backbone, baseline), quantity]
                noise = seed_noise(Side(seeds=seeds), Side(seeds=0), reference=(spreads or {}).get(quantity))
                rows.append(judge(f"{method} {wording} than untrained {baseline}", ours, None, noise, direction=-1,
                                  backbone=backbone, method=method, quantity=quantity))
    return claims_table(rows)

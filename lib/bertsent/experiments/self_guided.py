"""SG / SG-OPT experiments: train (or reuse) a run, then score it like every other row of the book; the
ablations, the paper's claims read against ours, and the tables built from per-seed scores.

Runs are trained, cached and reused by :mod:`bertsent.experiments.runs`.
"""
from __future__ import annotations

import functools

from functools import cache
from pathlib import Path

import pandas as pd

from ..data.sts import STSDataset
from ..encode.causal_pooling import sentence_token_pooling
from ..encode.encoder import Encoder
from ..encode.whitening import Whitening
from ..report.claims import (NO_CLAIM, Evaluation, Side, Spread, claims_table, correlation_evaluation, dev_set_noise,
                             judge, mean_of_sets_evaluation, mean_of_sets_noise, seed_noise)
from ..training.self_guided import SelfGuidedConfig
from .store import digest_of
from .sts_tables import layer_pooling_scores

METHOD_VERSION = 1  # bump when the maths changes

METHOD_LOSSES = {"sg": "base", "sg_opt": "opt3"}

# The paper's ablations of SG-OPT, plus two choices where the paper and the released code differ:
# variant -> (SelfGuidedConfig fields changed from SG-OPT's, what the variant is)
ABLATIONS = {
    "sg_opt": ({}, "SG-OPT: L^opt3, every layer a view, only c anchors"),
    "opt2": ({"loss": "opt2"}, "L^opt2: one sampled view instead of all layers"),
    "opt1": ({"loss": "opt1"}, "L^opt1: keeps the c_i - c_j repulsion"),
    "sg": ({"loss": "base"}, "SG: L^base, NT-Xent unmodified"),
    "tau_0.1": ({"temperature": 0.1}, "tau = 0.1 instead of 0.01"),
    "lambda_0": ({"reg_weight": 0.0}, "lambda = 0: no regulariser"),
    "lambda_1": ({"reg_weight": 1.0}, "lambda = 1"),
    "no_head": ({"projection": False}, "no projection head f"),
    "mean_views": ({"view_pooling": "mean"}, "views mean-pooled (released code) instead of max-pooled (paper)"),
    "frozen_dropout": ({"frozen_dropout": True}, "BERT_F with dropout on (released code)"),
    "lr_5e-4": ({"learning_rate": 5e-4}, "lr 5e-4 instead of 5e-5 (not in the paper: larger steps for a small model)"),
}


def ablation_config(variant: str, seed: int, **base) -> SelfGuidedConfig:
    """The configuration of one ablation ``variant`` (see :data:`ABLATIONS`) on top of SG-OPT's (and ``base``)."""
    if variant not in ABLATIONS:
        raise ValueError(f"Unknown ablation {variant!r}. Known: {', '.join(ABLATIONS)}.")
    return SelfGuidedConfig(**{**base, **ABLATIONS[variant][0], "seed": seed})


def trained_scores(backbone: str, train_data: str, config: SelfGuidedConfig, datasets: dict[str, STSDataset],
                   dev: STSDataset | None = None, data_dir=None, runs_dir: Path | None = None,
                   results_dir=None, **encoder_options) -> pd.DataFrame:
    """One run's last-layer sentence token ([CLS]; a causal LM's last token) scored on every dataset and
    aggregation: read from the run's committed results (``results/runs/sg/<key>/``) when they hold these datasets;
    else trained (or reused) and scored, then committed. The evaluation keeps its name ``sts_cls`` for either
    token; its settings record the readout (``cls`` or ``last``)."""
    from ..encode.backbones import backbone_sentence_pooling, load_backbone
    from .runs import run_scores

    readout = backbone_sentence_pooling(backbone)
    settings = sts_settings(readout, datasets, encoder_options.get("max_length", 128))
    return run_scores(backbone, train_data, config, "sts_cls", settings,
                      lambda model: score_encoder(Encoder(load_backbone(str(model)), **encoder_options), datasets,
                                                  readout),
                      data_dir, dev, runs_dir, results_dir)


def sts_settings(readout: str, datasets: dict[str, STSDataset], max_length: int, **extra) -> dict:
    """What decides a last-layer readout's STS scores besides the model: the readout, the test sets' sizes, the
    maximum length, ``extra`` (e.g. a whitening's fit sentences) and the scoring code's method versions; the key of
    a stored ``sts_*`` evaluation, trained or untrained."""
    from .runs import evaluation_settings

    return evaluation_settings(__name__, readout=readout, layer=-1, max_length=max_length,
                               datasets={name: len(dataset) for name, dataset in datasets.items()}, **extra)


def trained_pairs(trained_runs: dict[str, list], backbone: str, methods: list[str],
                  train_data: list[str]) -> list:
    """The (method, train_data) pairs to train on ``backbone``: its own list in ``trained_runs`` when it has one
    (an entry's optional third element, its seeds, is left out here: see :func:`trained_runs_with_seeds`),
    otherwise every method of ``methods`` on every set of ``train_data`` (method by method)."""
    return [entry[:2] for entry in _run_entries(trained_runs, backbone, methods, train_data)]


def _run_entries(trained_runs: dict[str, list], backbone: str, methods: list[str], train_data: list[str]) -> list:
    """``backbone``'s own entries in ``trained_runs``, else (method, data) for every method and set."""
    return trained_runs.get(backbone, [(method, data) for method in methods for data in train_data])


def trained_runs_with_seeds(trained_runs: dict[str, list], backbone: str, methods: list[str], train_data: list[str],
                            seeds: list[int]) -> list[tuple[str, str, list[int]]]:
    """The runs to train on ``backbone`` as (method, train_data, seeds): the pairs of :func:`trained_pairs`, each
    with its own seeds where its ``trained_runs`` entry has a third element (e.g. ``[sg_opt, stsb_train, [42, 43,
    44]]``: three seeds of the claim that needs the noise, one of the others), else ``seeds``.

    >>> trained_runs_with_seeds({"m": [["sg_opt", "a", [1, 2]], ["sg", "a"]]}, "m", [], [], [7])
    [('sg_opt', 'a', [1, 2]), ('sg', 'a', [7])]
    """
    return [(entry[0], entry[1], list(entry[2]) if len(entry) > 2 else list(seeds))
            for entry in _run_entries(trained_runs, backbone, methods, train_data)]


def sts_page_runs(backbone: str, methods: list[str], train_data: list[str], seeds: list[int],
                  trained_runs: dict[str, list], config: dict | None = None) -> list[tuple[str, str, SelfGuidedConfig]]:
    """The trained runs of the STS page on ``backbone``, in the page's order: ``(method, train_data, config)``, each
    configuration the page's ``config`` overrides with the method's loss and one seed (the runs of
    :func:`trained_runs_with_seeds`, one per seed). The page and ``python -m bertsent.experiments.sts_runs`` (which
    trains them ahead of the page) both read them from here, so they ask for the same runs."""
    return [(method, data, SelfGuidedConfig(**{**(config or {}), "loss": METHOD_LOSSES[method], "seed": seed}))
            for method, data, run_seeds in trained_runs_with_seeds(trained_runs, backbone, methods, train_data, seeds)
            for seed in run_seeds]


def labelled_scores(scores: pd.DataFrame, backbone: str, method: str, train_data: str = "-",
                    seed: object = "-") -> pd.DataFrame:
    """``scores`` (dataset, aggregation, spearman rows) labelled with the run that produced them, as in
    ``sts_main.csv``; ``"-"`` marks an untrained readout's train_data and seed."""
    return scores.assign(backbone=backbone, method=method, train_data=train_data, seed=seed)


def score_encoder(encoder: Encoder, datasets: dict[str, STSDataset], pooling: str | None = None, layer: int = -1,
                  transform=None) -> pd.DataFrame:
    """Spearman x 100 of one readout (pooling, layer, optional vector transform) on every dataset and aggregation.
    ``pooling=None``: the backbone's sentence token (:func:`~bertsent.encode.causal_pooling.sentence_token_pooling`:
    [CLS], or a causal LM's last token)."""
    pooling = pooling or sentence_token_pooling(encoder.backbone)
    table, _ = layer_pooling_scores(encoder, datasets, [pooling], [layer], transform)
    return table[["dataset", "aggregation", "spearman"]].reset_index(drop=True)


def mean_whitening(encoder: Encoder, fit_sentences: list[str]) -> Whitening:
    """Whitening fitted (no labels) on the encoder's last-layer mean vectors of ``fit_sentences``."""
    fitted = encoder.encode(fit_sentences, ["mean"])
    return Whitening.fit(fitted.vectors["mean"][-1])


def whitening_scores(encoder: Encoder, datasets: dict[str, STSDataset], fit_sentences: list[str]) -> pd.DataFrame:
    """Last-layer mean vectors whitened with statistics fitted on ``fit_sentences`` (:func:`mean_whitening`)."""
    return score_encoder(encoder, datasets, "mean", -1, mean_whitening(encoder, fit_sentences).transform)


def untrained_rows(backbone: str, datasets: dict[str, STSDataset], fit_sentences: list[str], fit_set: str = "stsb_all",
                   results_dir=None, **encoder_options) -> pd.DataFrame:
    """The untrained backbone's rows of the main STS table, labelled as in ``sts_main.csv``: its last-layer sentence
    token (``cls``; a causal LM's last token), mean pooling (``mean``), and mean pooling whitened with statistics
    fitted on ``fit_sentences`` (``whitening``, train_data ``fit_set``).

    Each is read from the backbone's committed scores (``results/runs/untrained/``,
    :func:`~bertsent.experiments.runs.untrained_scores`) when they hold these datasets and settings; otherwise the
    backbone is loaded once, the missing ones are computed and committed."""
    from ..encode.backbones import backbone_sentence_pooling, load_backbone
    from .runs import untrained_scores

    encoder = cache(lambda: Encoder(load_backbone(backbone), **encoder_options))
    max_length = encoder_options.get("max_length", 128)
    readout = backbone_sentence_pooling(backbone)
    fit = dict(fit_set=fit_set, fit_count=len(fit_sentences), fit_digest=digest_of(fit_sentences)[:16])
    readouts = [("cls", "-", sts_settings(readout, datasets, max_length),
                 lambda: score_encoder(encoder(), datasets, readout)),
                ("mean", "-", sts_settings("mean", datasets, max_length),
                 lambda: score_encoder(encoder(), datasets, "mean")),
                ("whitening", fit_set, sts_settings("mean", datasets, max_length, transform="whitening", **fit),
                 lambda: whitening_scores(encoder(), datasets, fit_sentences))]
    return pd.concat([labelled_scores(untrained_scores(backbone, f"sts_{method}", settings, compute, results_dir),
                                      backbone, method, train_data)
                      for method, train_data, settings, compute in readouts], ignore_index=True)


def seed_mean_table(scores: pd.DataFrame, aggregation: str, datasets: list[str]) -> pd.DataFrame:
    """The main STS table from per-seed rows: one row per (backbone, method, train_data), each dataset's
    Spearman and the seven-set ``avg`` averaged over seeds, and the number of ``seeds``.

    ``scores``: columns backbone, method, train_data, seed, dataset, aggregation, spearman (``sts_main.csv``).
    The average of each seed is taken first, then the mean over seeds (the paper's "mean of 8 runs").
    """
    rows = scores[scores["aggregation"] == aggregation]
    per_seed = rows.pivot_table(index=["backbone", "method", "train_data", "seed"], columns="dataset",
                                values="spearman", sort=False)[list(datasets)]
    if len(datasets) == 7:
        per_seed["avg"] = per_seed.mean(axis=1)
    grouped = per_seed.groupby(level=["backbone", "method", "train_data"], sort=False)
    table = grouped.mean()
    table["seeds"] = grouped.size()
    return table


def seed_averages(scores: pd.DataFrame, by: list[str], aggregation: str = "all") -> pd.DataFrame:
    """The seven-set STS average of each seed, one row per (``by`` ..., seed).

    ``scores``: per-seed rows with columns ``by``, seed, dataset, aggregation, spearman. A seed missing a
    dataset gets NaN, never a partial average.
    """
    from .sts_tables import sts_average

    return sts_average(scores[scores["aggregation"] == aggregation], by + ["seed"]).rename(columns={"spearman": "avg"})


@functools.lru_cache(maxsize=None)
def sts_test_pairs(data_dir=None) -> dict[str, int]:
    """The number of pairs of each STS test set, all subsets pooled (the ``all`` aggregation): what the
    evaluation-set noise of a score on it rests on. Empty when the data is not found (the tolerances then say the
    test set's noise is left out). The canonical profiles score the full test sets; a smoke run's few pairs are
    not these counts, so its tolerances are too narrow."""
    from ..data.sts import STS_DATASETS, load_sts
    from ..paths import DataNotFoundError

    try:
        return {name: len(load_sts(name, "test", data_dir)) for name in STS_DATASETS}
    except (DataNotFoundError, FileNotFoundError):
        return {}


def sts_evaluation(rows: pd.DataFrame, sides: int = 2, aggregation: str = "all") -> Evaluation | None:
    """The test sets' own sampling noise of a difference between ``sides`` rows of STS scores (``rows``: their
    per-seed rows, columns dataset, aggregation, spearman): per dataset the Fisher standard error of a Spearman
    correlation at the rows' mean on that set's pairs (:func:`sts_test_pairs`), averaged over the datasets as the
    score is. None when a set's size is not known."""
    sizes = sts_test_pairs()
    rows = rows[rows["aggregation"] == aggregation]
    keys = [column for column in ("backbone", "method", "variant", "train_data") if column in rows]
    # each side weighs the same, however many seeds it has
    means = rows.groupby(["dataset", *keys], sort=False)["spearman"].mean().groupby(level="dataset").mean()
    if not len(means) or any(name not in sizes for name in means.index):
        return None
    parts = [correlation_evaluation(sizes[name], float(means[name]), sides, f"{name} test pairs")
             for name in means.index]
    return parts[0] if len(parts) == 1 else mean_of_sets_evaluation(parts, "STS test sets")


def _statistics(per_seed: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group of ``by`` of per-seed rows (columns ``by``, seed, value): the mean ``avg`` and standard deviation
    ``sd`` over seeds and the number of ``seeds``, 0 for a deterministic row (seed ``"-"``: untrained, whitening)."""
    per_seed = per_seed.assign(seeded=per_seed["seed"].astype(str) != "-")
    grouped = per_seed.groupby(by, sort=False)
    return pd.DataFrame({"avg": grouped["value"].mean(), "sd": grouped["value"].std(ddof=1),
                         "seeds": grouped["seeded"].sum().astype(int)}).reset_index()


def seed_statistics(scores: pd.DataFrame, by: list[str], aggregation: str = "all") -> pd.DataFrame:
    """Per group of ``by``: the mean (``avg``) and standard deviation (``sd``) over seeds of the seven-set STS
    average, and the number of ``seeds``, 0 for a deterministic row (seed ``"-"``: untrained, whitening).

    ``scores``: per-seed rows with columns ``by``, seed, dataset, aggregation, spearman.
    """
    return _statistics(seed_averages(scores, by, aggregation).rename(columns={"avg": "value"}), by)


def seed_spreads(scores: pd.DataFrame, variant: str = "sg_opt", aggregation: str = "all",
                 where: str = "ablation page") -> dict[str, Spread]:
    """The seed spread of ``variant`` on each backbone where it has two seeds or more: per backbone a
    :class:`~bertsent.report.claims.Spread` (sd over seeds of the seven-set STS average), to lend to one-seed rows.

    ``scores``: per-seed rows with columns backbone, variant, seed, dataset, aggregation, spearman
    (``sg_ablations.csv``).
    """
    stats = seed_statistics(scores[scores["variant"] == variant], ["backbone", "variant"], aggregation)
    return {row["backbone"]: Spread(float(row["sd"]), int(row["seeds"]),
                                    f"{variant} over {int(row['seeds'])} seeds on {row['backbone']}, {where}")
            for _, row in stats.iterrows() if row["seeds"] >= 2 and pd.notna(row["sd"])}


def measured_spreads(results_dir=None) -> dict[str, Spread]:
    """SG-OPT's seed spread per backbone as measured on the ablation page (:func:`seed_spreads` of
    ``sg_ablations.csv`` under ``results_dir``, else the repository's ``results/``); empty when neither holds it.

    Pages that run before the ablation page in a build read the spread of its last committed run.
    """
    from ..paths import RESULTS_DIR

    for directory in dict.fromkeys(Path(d) for d in (results_dir or RESULTS_DIR, RESULTS_DIR)):
        if (directory / "sg_ablations.csv").is_file():
            return seed_spreads(pd.read_csv(directory / "sg_ablations.csv"))
    return {}


def spread_for(spreads: dict[str, Spread], backbone: str) -> Spread | None:
    """The spread measured on ``backbone``; None when none was measured there. A spread is never lent across
    backbones: how much a run moves with its seed depends on the backbone (its size, how far training moves it),
    so another backbone's spread is no yardstick here."""
    return spreads.get(backbone)


def page_spreads(stats: pd.DataFrame, method: str = "sg_opt", where: str = "STS page") -> dict[str, Spread]:
    """``method``'s seed spread per backbone on the page's own runs, from :func:`seed_statistics` rows (by
    backbone, method, train_data): the training set with the most seeds (two or more) on each backbone."""
    rows = stats[(stats["method"] == method) & (stats["seeds"] >= 2) & stats["sd"].notna()]
    rows = rows.sort_values("seeds", ascending=False, kind="stable").drop_duplicates("backbone")
    return {row["backbone"]: Spread(float(row["sd"]), int(row["seeds"]),
                                    f"{method} over {int(row['seeds'])} seeds on {row['backbone']} "
                                    f"({row['train_data']}), {where}")
            for _, row in rows.iterrows()}


def _side(sd: float, seeds: int) -> Side:
    """A side of :func:`~bertsent.report.claims.seed_noise` (a one-seed or deterministic row has no sd: NaN)."""
    return Side(0.0 if pd.isna(sd) else float(sd), int(seeds))


def _side_of(row) -> Side:
    return _side(row["sd"], row["seeds"])


def claim_sides(stats: pd.DataFrame, backbone: str, train_data: str) -> pd.DataFrame:
    """The rows of :func:`seed_statistics` (by backbone, method, train_data) that one backbone's claims compare,
    indexed by method: the untrained rows (train_data "-"), whitening (fitted on ``stsb_all``) and SG / SG-OPT
    trained on ``train_data``."""
    rows = stats[stats["backbone"] == backbone]
    keep = [(data == train_data) if method in METHOD_LOSSES else data in ("-", "stsb_all")
            for method, data in zip(rows["method"], rows["train_data"])]
    return rows[keep].set_index("method")


def sts_claims(scores: pd.DataFrame, paper: pd.Series, claims: list[tuple[str, str]], train_data: list[str],
               spreads: dict[str, Spread] | None = None, aggregation: str = "all") -> pd.DataFrame:
    """The paper's STS claims "row A beats row B" on each of our backbones and training sets, judged by
    :func:`bertsent.report.claims.judge`: a claims table with ``backbone`` and ``train_data``.

    ``scores``: per-seed rows (``sts_main.csv``). ``paper``: the paper's STS averages by method. Our effect is the
    difference of the two rows' seven-set averages (mean over seeds); its tolerance :func:`~bertsent.report.claims.seed_noise`
    from the seeds of each row. A one-seed row borrows the spread of SG-OPT's seeds on the same backbone in
    ``scores`` (:func:`page_spreads`; e.g. a one-seed ``stsb_all`` run, where ``stsb_train`` has three seeds), else
    :func:`spread_for` of ``spreads`` (:func:`measured_spreads`, the ablation page's).
    A claim whose rows are missing (not trained, or fewer than seven datasets) is left out.
    """
    stats = seed_statistics(scores, ["backbone", "method", "train_data"], aggregation)
    own = page_spreads(stats)
    rows = []
    for backbone in dict.fromkeys(stats["backbone"]):
        reference = own.get(backbone) or spread_for(spreads or {}, backbone)
        for data in train_data:
            sides = claim_sides(stats, backbone, data)
            for better, worse in claims:
                if better not in sides.index or worse not in sides.index:
                    continue
                a, b = sides.loc[better], sides.loc[worse]
                if pd.isna(a["avg"]) or pd.isna(b["avg"]):
                    continue
                compared = scores[(scores["backbone"] == backbone) & pd.Series(
                    [(m, d) in {(better, a["train_data"]), (worse, b["train_data"])}
                     for m, d in zip(scores["method"], scores["train_data"])], index=scores.index)]
                rows.append(judge(f"{better} > {worse}", a["avg"] - b["avg"], paper[better] - paper[worse],
                                  seed_noise(_side_of(a), _side_of(b), reference=reference,
                                             evaluation=sts_evaluation(compared, 2, aggregation)),
                                  backbone=backbone, train_data=data))
    return claims_table(rows)


def _ablation_rows(scores: pd.DataFrame, reference: str, aggregation: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`ablation_table` and :func:`ablation_claims`, from one pass over the per-seed averages."""
    from ..report.reported import sg_opt_ablation_table

    per_seed = seed_averages(scores, ["backbone", "variant"], aggregation)
    grouped = per_seed.groupby(["backbone", "variant"], sort=False)["avg"]
    table = pd.DataFrame({"avg": grouped.mean(), "std": grouped.std(ddof=1), "seeds": grouped.size()}).reset_index()
    paper = sg_opt_ablation_table()
    rows, claims = [], []
    for backbone, group in table.groupby("backbone", sort=False):
        base = group.set_index("variant").loc[reference]
        spread = (Spread(float(base["std"]), int(base["seeds"]), f"{reference} over {int(base['seeds'])} seeds on {backbone}")
                  if base["seeds"] > 1 else None)
        for _, row in group.iterrows():
            change = row["avg"] - base["avg"]
            reported_change = paper["change"].get(row["variant"], float("nan"))
            judged = {"ratio": float("nan"), "tolerance": float("nan"), "noise_source": "", "verdict": NO_CLAIM}
            if row["variant"] != reference and pd.notna(reported_change):
                claim = f"{row['variant']} {'<' if reported_change < 0 else '>'} {reference}"
                compared = scores[(scores["backbone"] == backbone) & scores["variant"].isin([row["variant"], reference])]
                noise = seed_noise(_side(row["std"], row["seeds"]), _side(base["std"], base["seeds"]), reference=spread,
                                   evaluation=sts_evaluation(compared, 2, aggregation))
                judged = judge(claim, change, reported_change, noise, backbone=backbone, variant=row["variant"])
                claims.append(judged)
            rows.append({**row, "change": change, "paper_avg": paper["avg"].get(row["variant"], float("nan")),
                         "paper_change": reported_change,
                         **{key: judged[key] for key in ("ratio", "tolerance", "noise_source", "verdict")}})
    return pd.DataFrame(rows), claims_table(claims)


def ablation_table(scores: pd.DataFrame, reference: str = "sg_opt", aggregation: str = "all") -> pd.DataFrame:
    """Our ablations beside the paper's: per (backbone, variant) the mean and standard deviation over seeds of the
    STS average, the number of seeds, the ``change`` from ``reference``, the paper's average and change, and the
    judgement of :func:`ablation_claims` on the paper's claim (``ratio``, ``tolerance``, ``noise_source``,
    ``verdict``; :data:`~bertsent.report.claims.NO_CLAIM` for the reference and for rows the paper does not have).

    ``scores``: columns backbone, variant, train_data, seed, dataset, aggregation, spearman.
    """
    return _ablation_rows(scores, reference, aggregation)[0]


def ablation_claims(scores: pd.DataFrame, reference: str = "sg_opt", aggregation: str = "all") -> pd.DataFrame:
    """The paper's ablation claims ("this variant is worse than SG-OPT", by the paper's change) on each backbone,
    judged by :func:`bertsent.report.claims.judge`: a claims table with ``backbone`` and ``variant``.

    Our effect is the variant's change from ``reference`` (means over seeds of the STS average); its tolerance
    :func:`~bertsent.report.claims.seed_noise` from the seeds of both rows, a one-seed variant borrowing the
    reference's spread over its seeds on the same backbone. Variants the paper does not have are left out.
    """
    return _ablation_rows(scores, reference, aggregation)[1]


def domain_table(scores: pd.DataFrame, aggregation: str = "all") -> pd.DataFrame:
    """STS-B test and, where all seven datasets are present, the seven-set ``avg`` per (backbone, method,
    train_data), each the mean over seeds.

    ``scores``: columns backbone, method, train_data, seed, dataset, aggregation, spearman (``sg_domain.csv``).
    """
    keys = ["backbone", "method", "train_data"]
    rows = scores[scores["aggregation"] == aggregation]
    table = pd.DataFrame({"stsb": rows[rows["dataset"] == "stsb"].groupby(keys, sort=False)["spearman"].mean()})
    if rows["dataset"].nunique() == 7:
        table["avg"] = seed_averages(scores, keys, aggregation).groupby(keys, sort=False)["avg"].mean()
    return table


def domain_changes(table: pd.DataFrame, paper: pd.DataFrame, source: str = "snli",
                   reference: str = "stsb_all") -> pd.DataFrame:
    """What training (or fitting) on ``source`` sentences instead of ``reference`` sentences changes, per
    backbone, method and score column of :func:`domain_table`, beside the paper's change.

    ``paper``: the paper's changes indexed by method, one column per score (:func:`bertsent.report.reported.sg_opt_domain_changes`,
    with flow renamed to the method that stands in for it). Methods trained on only one of the two sets are left out.
    """
    rows = []
    for (backbone, method), group in table.groupby(level=["backbone", "method"], sort=False):
        group = group.droplevel(["backbone", "method"])
        if not {source, reference} <= set(group.index):
            continue
        for column in table.columns:
            rows.append({"backbone": backbone, "method": method, "score": column,
                         source: group.loc[source, column], reference: group.loc[reference, column],
                         "change": group.loc[source, column] - group.loc[reference, column],
                         "paper_change": paper.loc[method, column] if method in paper.index else float("nan")})
    return pd.DataFrame(rows, columns=["backbone", "method", "score", source, reference, "change", "paper_change"])


def _domain_statistics(scores: pd.DataFrame, aggregation: str) -> dict[str, pd.DataFrame]:
    """Per score column of :func:`domain_table` (``stsb``; ``avg`` with all seven datasets): mean, sd and number of
    seeds (0: deterministic) per (backbone, method, train_data)."""
    keys = ["backbone", "method", "train_data"]
    rows = scores[(scores["aggregation"] == aggregation) & (scores["dataset"] == "stsb")]
    stats = {"stsb": _statistics(rows.rename(columns={"spearman": "value"}), keys)}
    if scores.loc[scores["aggregation"] == aggregation, "dataset"].nunique() == 7:
        stats["avg"] = _statistics(seed_averages(scores, keys, aggregation).rename(columns={"avg": "value"}), keys)
    return {score: table.set_index(keys) for score, table in stats.items()}


def domain_claims(scores: pd.DataFrame, paper: pd.DataFrame, spreads: dict[str, Spread] | None = None,
                  source: str = "snli", reference: str = "stsb_all",
                  robust: tuple[str, str] = ("sg_opt", "whitening"), aggregation: str = "all") -> pd.DataFrame:
    """The paper's domain-robustness claims on each backbone, judged by :func:`bertsent.report.claims.judge`: a
    claims table with ``backbone``, ``method`` and ``score``.

    Two kinds of claim per backbone and score column: each method's change when its sentences come from ``source``
    instead of ``reference`` (claim ``"<method>: snli - stsb_all (<score>)"``, against the paper's change), and
    ``"<a> more robust than <b> (<score>)"`` for ``robust = (a, b)``: our effect is a's change minus b's, the paper's
    the same (SG-OPT -1.63 minus flow -4.19 = +2.56 on the average). Tolerances: :func:`~bertsent.report.claims.seed_noise`
    over the seeds of every row involved, a one-seed row borrowing :func:`spread_for` of ``spreads``.

    ``scores``: per-seed rows (``sg_domain.csv``); ``paper``: as for :func:`domain_changes`. Methods the paper has
    no figure for, or trained on only one of the two sets, are left out.
    """
    stats, rows = _domain_statistics(scores, aggregation), []
    for backbone in dict.fromkeys(scores["backbone"]):
        lent = spread_for(spreads or {}, backbone)
        for score, table in stats.items():
            if backbone not in table.index.get_level_values("backbone"):
                continue

            def pair(method):
                keys = [(backbone, method, data) for data in (source, reference)]
                return [table.loc[key] for key in keys] if all(key in table.index for key in keys) else None

            def evaluation(methods, sets=(source, reference)):
                chosen = scores[(scores["backbone"] == backbone) & scores["method"].isin(methods)
                                & scores["train_data"].isin(sets)]
                if score == "stsb":
                    chosen = chosen[chosen["dataset"] == "stsb"]
                return sts_evaluation(chosen, 2 * len(methods), aggregation)

            for method in dict.fromkeys(table.loc[backbone].index.get_level_values("method")):
                sides = pair(method)
                if sides is None or method not in paper.index:
                    continue
                rows.append(judge(f"{method}: {source} - {reference} ({score})", sides[0]["avg"] - sides[1]["avg"],
                                  paper.loc[method, score],
                                  seed_noise(*map(_side_of, sides), reference=lent, evaluation=evaluation([method])),
                                  backbone=backbone, method=method, score=score))
            a, b = pair(robust[0]), pair(robust[1])
            if a is not None and b is not None and set(robust) <= set(paper.index):
                ours = (a[0]["avg"] - a[1]["avg"]) - (b[0]["avg"] - b[1]["avg"])
                rows.append(judge(f"{robust[0]} more robust than {robust[1]} ({score})", ours,
                                  paper.loc[robust[0], score] - paper.loc[robust[1], score],
                                  seed_noise(*map(_side_of, a + b), reference=lent, evaluation=evaluation(list(robust))),
                                  backbone=backbone, method=f"{robust[0]} vs {robust[1]}", score=score))
    return claims_table(rows)


def transfer_claims(scores: pd.DataFrame, scored_examples: dict[str, int], paper: pd.DataFrame,
                    better: str = "sg_opt", baseline: str = "mean") -> pd.DataFrame:
    """The paper's transfer claim on each backbone: ``better`` above ``baseline`` on the average accuracy of the
    SentEval tasks in ``scores`` (``transfer.csv``: backbone, method, task, accuracy), against the paper's difference
    on the same tasks (``paper``: :func:`~bertsent.report.reported.sg_opt_transfer_table`).

    The tolerance is the test-set noise alone: per task 2 binomial SEs of a difference of two accuracies on its
    ``scored_examples`` (:func:`~bertsent.report.claims.dev_set_noise`), combined over the tasks
    (:func:`~bertsent.report.claims.mean_of_sets_noise`). The page's SG-OPT has one training seed, whose spread is
    not in it: a floor, so ``within noise`` is certain where it says so and ``reproduced`` is not proof."""
    rows = []
    for backbone, group in scores.groupby("backbone", sort=False):
        table = group.pivot_table(index="method", columns="task", values="accuracy")
        if not {better, baseline} <= set(table.index):
            continue
        tasks = [task for task in table.columns if task in paper.columns]
        noise = mean_of_sets_noise([dev_set_noise(scored_examples[task], table.loc[[better, baseline], task].mean(),
                                                  scores="test scores")
                                    for task in tasks], "one seed (its spread not included)", "tasks")
        rows.append(judge(f"{better} > {baseline} (transfer average)",
                          float((table.loc[better, tasks] - table.loc[baseline, tasks]).mean()),
                          float((paper.loc[better, tasks] - paper.loc[baseline, tasks]).mean()), noise,
                          backbone=backbone, tasks=len(tasks)))
    return claims_table(rows)

"""The paper's claims at a glance: every claim of a chapter, recomputed with the book's one verdict rule
(:mod:`bertsent.report.claims`) from the per-run CSVs its pages committed under ``results/``. Nothing is trained or
encoded: reading the CSVs and judging takes seconds.

One function per chapter (:func:`sg_opt_claims`, :func:`geometry_claims_overview`, :func:`bert_claims`,
:func:`attention_pooling_claims`, :func:`acl_claims`) returns the
chapter's claims tables by the file name the chapter's pages write them under (``sts_main_claims.csv``, ...), so that
the overview page overwrites those files instead of keeping a second copy. :func:`run_records` says which runs the
numbers come from (the pages' run records ``results/runs/<page>.json``) and whether a page's own verdicts predate the
current rule.

Where the inputs are read (``inputs_dir``): the repository's ``results/`` by default; with ``per_page=True`` one
folder per page below it (``<inputs_dir>/<page>/<path under results>``), the layout of the smoke-run fixtures
``tests/fixtures/smoke_results/``.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..report import reported
from ..report.claims import METHOD_VERSION as CLAIMS_RULE_VERSION
from ..report.claims import claims_summary, rejudge

# Each chapter's function imports its pages' modules itself: they import PyTorch and transformers, and a claims page
# (which only reads CSVs) then starts in about 1 s instead of 5-7 s.

METHOD_VERSION = 3  # bump when the maths changes (2: rule 3's inputs: test-set sizes, cost claims; 3: the long run's GLUE claims on its seeds)

# The STS claims of the paper's main table (Table 2), "A > B" on the seven-set average: as on the STS page.
STS_CLAIMS = [("sg_opt", "cls"), ("sg", "cls"), ("sg_opt", "mean"), ("sg_opt", "sg"), ("sg_opt", "whitening")]
# The BERT ablations' objective claims, in the paper's order: "A > B" at one size.
OBJECTIVE_CLAIMS = [("mlm_nsp", "mlm"), ("mlm", "ltr")]
RULE_MODULE = "bertsent.report.claims"  # the verdict rule; a page judged with it records its version
RULE_VERSION = CLAIMS_RULE_VERSION


class MissingResults(FileNotFoundError):
    """A per-run CSV a chapter's claims need is not there: the message names the page that writes it."""


@dataclass(frozen=True)
class Chapter:
    """A chapter's overview: the function that recomputes its claims, the pages whose results it reads, and the
    columns that tell a claim's rows apart in the summary (:func:`chapter_summary`)."""
    claims: callable
    pages: tuple[str, ...]
    label_with: tuple[str, ...] = ("train_data",)


def _base(inputs_dir) -> Path:
    from ..paths import RESULTS_DIR

    return Path(inputs_dir) if inputs_dir else RESULTS_DIR


def _path(page: str, relative: str, inputs_dir=None, per_page: bool = False) -> Path:
    base = _base(inputs_dir)
    return base / page / relative if per_page else base / relative


def read_results(page: str, relative: str, inputs_dir=None, per_page: bool = False) -> pd.DataFrame:
    """The CSV ``relative`` (a path under ``results/``) that page ``page`` writes; :class:`MissingResults` naming the
    page to run when it is not there."""
    from ..report.io import read_path

    path = read_path(_path(page, relative, inputs_dir, per_page))
    if not path.is_file():
        raise MissingResults(f"{path} is missing: it is written by the page {page!r}; run it first "
                             f"(python -m bertsent.book run {page} --profile quick)")
    return pd.read_csv(path)


def _trained_sets(scores: pd.DataFrame) -> list[str]:
    from .self_guided import METHOD_LOSSES

    return list(dict.fromkeys(scores.loc[scores["method"].isin(list(METHOD_LOSSES)), "train_data"]))


def sg_opt_claims(inputs_dir=None, per_page: bool = False) -> dict[str, pd.DataFrame]:
    """The SG-OPT chapter's claims: Figure 1's (``layer_pooling_differences.csv`` of ``layer_pooling``), the untrained
    rows' (``sts_baselines_differences.csv`` of ``sts_baselines``; both differences of deterministic readouts with
    their paired-bootstrap SEs), the main STS table's (``sts_main.csv`` of ``sg_opt_sts``), the ablations'
    (``sg_ablations.csv`` of ``sg_opt_ablations``) and the domain-robustness ones (``sg_domain.csv`` of
    ``sg_opt_domain``), by the file each page writes them to. The transfer claim is re-judged from the page's own
    ``transfer_claims.csv`` (:func:`~bertsent.report.claims.rejudge`: its tolerance needs each SentEval task's test
    size, which no per-run CSV keeps). One-seed rows borrow SG-OPT's seed spread measured on
    the ablation page (:func:`~bertsent.experiments.self_guided.seed_spreads`), as the pages do."""
    from .self_guided import ablation_claims, domain_claims, seed_spreads, sts_claims
    from .sts_tables import baseline_claims, figure1_claims

    figure1 = figure1_claims(read_results("layer_pooling", "layer_pooling_differences.csv", inputs_dir, per_page))
    baselines = baseline_claims(read_results("sts_baselines", "sts_baselines_differences.csv", inputs_dir, per_page))
    scores = read_results("sg_opt_sts", "sts_main.csv", inputs_dir, per_page)
    ablations = read_results("sg_opt_ablations", "sg_ablations.csv", inputs_dir, per_page)
    domain = read_results("sg_opt_domain", "sg_domain.csv", inputs_dir, per_page)
    spreads = seed_spreads(ablations)
    paper_avg = reported.sg_opt_sts_table().loc["BERT-base", "avg"].rename({"bert_flow": "whitening"})
    paper_domain = reported.sg_opt_domain_changes().rename(index={"bert_flow": "whitening"})
    # the transfer tolerance is the test sets' binomial noise alone (no seeds): unlimited degrees of freedom
    transfer = rejudge(read_results("sg_opt_transfer", "transfer_claims.csv", inputs_dir, per_page), df=math.inf)
    cost = {}
    if _path("sg_opt_cost", "cost/inference.csv", inputs_dir, per_page).is_file():
        from .cost import inference_claims

        inference = read_results("sg_opt_cost", "cost/inference.csv", inputs_dir, per_page)
        # judged from the timings themselves; a copy without them (the test suite's smoke fixtures leave every
        # column that times the machine out) has no cost claims to recompute
        if {"ratio_to_peer", "ratio_sd"} <= set(inference.columns):
            cost = {"cost/inference_claims.csv": inference_claims(inference, reported.sg_opt_cost_table())}
    return {**cost, "layer_pooling_claims.csv": figure1, "sts_baselines_claims.csv": baselines,
            "sts_main_claims.csv": sts_claims(scores, paper_avg, STS_CLAIMS, _trained_sets(scores), spreads),
            "transfer_claims.csv": transfer, "sg_ablations_claims.csv": ablation_claims(ablations),
            "sg_domain_claims.csv": domain_claims(domain, paper_domain, spreads)}


def geometry_claims_overview(inputs_dir=None, per_page: bool = False) -> dict[str, pd.DataFrame]:
    """The geometry chapter's claims ("contrastive training leaves a less anisotropic, more uniform space") on every
    trained readout of ``isotropy/methods.csv`` (page ``isotropy``), against the same backbone's untrained [CLS]."""
    from .geometry import geometry_claims
    from .self_guided import METHOD_LOSSES

    geometry = read_results("isotropy", "isotropy/methods.csv", inputs_dir, per_page)
    trained = geometry[geometry["method"].isin(list(METHOD_LOSSES))]
    return {"isotropy/claims.csv": geometry_claims(geometry, list(dict.fromkeys(trained["backbone"])),
                                                   list(dict.fromkeys(trained["method"])))}


def _labels(models) -> dict[str, set[str]]:
    """Objectives by size, from the page's row names ``"<size> <objective>"``."""
    by_size: dict[str, set[str]] = {}
    for model in models:
        size, _, objective = str(model).partition(" ")
        by_size.setdefault(size, set()).add(objective)
    return by_size


def read_single_result(page: str, pattern: str, inputs_dir=None, per_page: bool = False) -> pd.DataFrame:
    """The one CSV matching ``pattern`` (a glob under ``results/``, for a file named after the page's parameters,
    e.g. ``bert/glue_<size>_<profile>.csv``) that page ``page`` writes; :class:`MissingResults` with none, a
    ValueError naming them with several."""
    base = _path(page, "", inputs_dir, per_page)
    found = sorted(base.glob(pattern))
    if not found:
        raise MissingResults(f"no {base / pattern}: it is written by the page {page!r}; run it first "
                             f"(python -m bertsent.book run {page} --profile quick)")
    if len(found) > 1:
        raise ValueError(f"several files match {base / pattern}: {', '.join(p.name for p in found)}; keep the one "
                         f"the page's current run wrote")
    return pd.read_csv(found[0])


def bert_claims(inputs_dir=None, per_page: bool = False) -> dict[str, pd.DataFrame]:
    """The BERT chapter's claims. From the pre-training page (``bert/glue_<size>_<profile>.csv`` of
    ``bert_pretraining``): the pre-trained model above the same architecture fine-tuned from random weights, per GLUE
    task. From ``bert/ablation_glue.csv`` (page ``bert_ablations``): the objective claims at the size that has
    several objectives (MLM+NSP > MLM > LTR, and each objective above the same size fine-tuned from random weights),
    and the size claims (each larger MLM+NSP model above the next smaller one). From ``bert/long_run_glue.csv``
    (page ``bert_long_run``, when it fine-tuned the long run's model; ``bert/long_run_glue_seeds.csv`` where it
    fine-tuned the chosen rates with several seeds): that model above the same size untrained, per GLUE task. Directions without a paper number,
    weighed against the dev-set noise, both runs at the majority class judged at floor
    (:func:`~bertsent.experiments.bert_ablations.compare_rows`). A table with no claim is left out."""
    from ..models.bert_pretraining import BERT_SIZES
    from .bert_ablations import compare_rows, compare_seeded, glue_scores, run_label
    from .bert_stall import floor_claims

    tables = {}
    pretraining = read_single_result("bert_pretraining", "bert/glue_*.csv", inputs_dir, per_page)
    if {"pre-trained", "no pre-training"} <= set(pretraining["model"]):
        tables["bert/pretraining_claims.csv"] = compare_rows(glue_scores(pretraining), pretraining, "pre-trained",
                                                             "no pre-training")
    searches = read_results("bert_ablations", "bert/ablation_glue.csv", inputs_dir, per_page)
    scores = glue_scores(searches)
    by_size = _labels(scores.index)
    trained = {size: objectives - {"untrained"} for size, objectives in by_size.items()}
    objective_size = max(trained, key=lambda size: len(trained[size]))
    pairs = [(run_label(objective_size, a), run_label(objective_size, b)) for a, b in OBJECTIVE_CLAIMS]
    if "untrained" in by_size[objective_size]:
        order = [o for o in dict.fromkeys(str(m).partition(" ")[2] for m in scores.index) if o in trained[objective_size]]
        pairs += [(run_label(objective_size, o), f"{objective_size} untrained") for o in order]
    sizes = [size for size in BERT_SIZES if "mlm_nsp" in by_size.get(size, ())]
    size_pairs = [(run_label(big, "mlm_nsp"), run_label(small, "mlm_nsp")) for small, big in zip(sizes, sizes[1:])]
    for name, claims in (("bert/ablation_objective_claims.csv", pairs), ("bert/ablation_size_claims.csv", size_pairs)):
        checks = [compare_rows(scores, searches, a, b) for a, b in claims if a in scores.index and b in scores.index]
        if checks:
            tables[name] = pd.concat(checks, ignore_index=True)
    stall = read_results("bert_stall_study", "bert/stall_study.csv", inputs_dir, per_page)
    floors = read_results("bert_stall_study", "bert/stall_study_floors.csv", inputs_dir, per_page)
    tables["bert/stall_study_claims.csv"] = floor_claims(stall, floors)
    # the long run's model against the same size untrained: only where the page fine-tuned it (``published_run``;
    # its smoke profile has no weights to fine-tune), on the means over its fine-tuning seeds where it ran them
    # (compare_seeded), else on the learning-rate search's chosen runs
    if _path("bert_long_run", LONG_RUN_GLUE_SEEDS, inputs_dir, per_page).is_file():
        seeded = read_results("bert_long_run", LONG_RUN_GLUE_SEEDS, inputs_dir, per_page)
        tables["bert/long_run_glue_claims.csv"] = compare_seeded(seeded, "pre-trained", "no pre-training")
    elif _path("bert_long_run", LONG_RUN_GLUE, inputs_dir, per_page).is_file():
        long_run = read_results("bert_long_run", LONG_RUN_GLUE, inputs_dir, per_page)
        tables["bert/long_run_glue_claims.csv"] = compare_rows(glue_scores(long_run), long_run, "pre-trained",
                                                               "no pre-training")
    return tables


LONG_RUN_GLUE = "bert/long_run_glue.csv"
LONG_RUN_GLUE_SEEDS = "bert/long_run_glue_seeds.csv"


def attention_pooling_claims(inputs_dir=None, per_page: bool = False) -> dict[str, pd.DataFrame]:
    """The layer-wise attention pooling chapter's claims, each recomputed from the per-run scores its page wrote:
    RQ1 and RQ4 from ``attention_pooling/ablation_scores.csv`` (page ``attention_pooling_ablation``), RQ1 on the
    frozen encoder from ``attention_pooling/frozen_summary.csv`` (``attention_pooling_frozen``), RQ2 from the
    pooled rows of ``attention_pooling/geometry.csv`` (``attention_pooling_layers``), RQ3 from
    ``attention_pooling/retrieval.csv`` (``attention_pooling_search``), with the pooler and baseline the pages
    use by default."""
    from .attention_pooling import geometry_claims as pooled_geometry_claims
    from .attention_pooling import pooling_claims, rq4_claims, rq4_table, search_claims

    from .attention_pooling import scored_pairs
    from .frozen_pooler import frozen_claims

    scores = read_results("attention_pooling_ablation", "attention_pooling/ablation_scores.csv", inputs_dir, per_page)
    pairs = _scored_pairs("attention_pooling_ablation", inputs_dir, per_page, scored_pairs)
    try:  # the paired bootstrap of each judged difference (pages before 2026-12-06 did not write it)
        paired = read_results("attention_pooling_ablation", "attention_pooling/stsb_paired_noise.csv", inputs_dir,
                              per_page)
    except MissingResults:
        paired = None
    rq1 = pooling_claims(scores, reported.layer_attention_stsb(), pairs=pairs, paired=paired)
    rq4 = rq4_claims(rq4_table(scores), pairs=pairs, paired=paired)
    geometry = read_results("attention_pooling_layers", "attention_pooling/geometry.csv", inputs_dir, per_page)
    retrieval = read_results("attention_pooling_search", "attention_pooling/retrieval.csv", inputs_dir, per_page)
    search = reported.layer_attention_search()
    frozen = read_results("attention_pooling_frozen", "attention_pooling/frozen_summary.csv", inputs_dir, per_page)
    try:  # the paired bootstrap of the frozen arm's differences (pages before 2026-12-06 did not write it)
        frozen_noise = read_results("attention_pooling_frozen", "attention_pooling/frozen_paired_noise.csv",
                                    inputs_dir, per_page)
    except MissingResults:
        frozen_noise = None
    return {"attention_pooling/claims_frozen.csv": frozen_claims(frozen, reported.layer_attention_stsb(),
                                                                 noise=frozen_noise),
            "attention_pooling/claims_ablation.csv": pd.concat([t for t in (rq1, rq4) if len(t)], ignore_index=True),
            "attention_pooling/claims_geometry.csv": pooled_geometry_claims(geometry[geometry["readout"] == "pooled"]),
            "attention_pooling/claims_search.csv": search_claims(
                retrieval, float(search["layer_attention"] - search["baseline"]))}


def _scored_pairs(page: str, inputs_dir, per_page: bool, count) -> int | None:
    """The STS-B test pairs ``page`` scored, from its run record's ``max_pairs`` (``count``:
    :func:`~bertsent.experiments.attention_pooling.scored_pairs`); None without a record or the data."""
    from ..paths import DataNotFoundError

    record = _path(page, f"runs/{page}.json", inputs_dir, per_page)
    if not record.is_file():
        return None
    try:
        return count(json.loads(record.read_text()).get("parameters", {}).get("max_pairs"))
    except (DataNotFoundError, FileNotFoundError):
        return None


def acl_claims(inputs_dir=None, per_page: bool = False) -> dict[str, pd.DataFrame]:
    """The aligned contrastive learning chapter's claims, each recomputed from the per-run CSVs its pages wrote: the
    motivating observation from the per-step angles (``aligned-contrastive/gradient_angles_per_step.csv`` of
    ``acl_gradient_angles``, at the paper's 90-degree threshold), the main table's "ACL > CE, CE+SCL" and the
    component ablation from ``glue_scores.csv`` and the lambda sensitivity from ``lambda_sensitivity.csv``
    (``acl_glue``; a one-seed lambda point borrows ACL's seed spread on that task, as the page does), and the
    multi-exit claims from ``exit_scores.csv`` and ``exit_runs.csv`` (``acl_multi_exit``), with its deep backbone's
    claims where it ran one (:func:`_deep_exit_claims`)."""
    from . import aligned_contrastive as acl

    folder = "aligned-contrastive"
    angles = read_results("acl_gradient_angles", f"{folder}/gradient_angles_per_step.csv", inputs_dir, per_page)
    scores = read_results("acl_glue", f"{folder}/glue_scores.csv", inputs_dir, per_page)
    sensitivity = read_results("acl_glue", f"{folder}/lambda_sensitivity.csv", inputs_dir, per_page)
    exits = read_results("acl_multi_exit", f"{folder}/exit_runs.csv", inputs_dir, per_page)
    per_exit = acl.exit_table(exits)  # from the per-run rows, which keep each run's dev-set size
    lambda_tasks = list(dict.fromkeys(sensitivity["task"]))
    reference = acl.with_reference(scores[scores["task"].isin(lambda_tasks)])
    tables = {f"{folder}/gradient_angles_claims.csv": acl.angle_claims(angles),
              f"{folder}/glue_claims.csv": acl.main_claims(scores),
              f"{folder}/component_claims.csv": acl.component_claims(scores),
              f"{folder}/lambda_claims.csv": acl.lambda_claim(sensitivity, reference=reference,
                                                              left_out=acl.left_out_tasks(scores)),
              f"{folder}/exit_claims.csv": acl.multi_exit_claims(per_exit, exits)}
    return {**tables, **_deep_exit_claims(exits, inputs_dir, per_page)}


def _deep_exit_claims(exits: pd.DataFrame, inputs_dir=None, per_page: bool = False) -> dict[str, pd.DataFrame]:
    """The multi-exit page's claims on its deep backbone, when it ran one (``deep_exit_runs.csv``): the depth
    comparison and ACL-CL against joint CE at every deep exit, with the backbones and the exit compared named as the
    page's run record gives them (``runs/acl_multi_exit.json``)."""
    from . import aligned_contrastive as acl

    page, folder = "acl_multi_exit", "aligned-contrastive"
    if not _path(page, f"{folder}/deep_exit_runs.csv", inputs_dir, per_page).is_file():
        return {}
    deep_exits = read_results(page, f"{folder}/deep_exit_runs.csv", inputs_dir, per_page)
    record = _path(page, f"runs/{page}.json", inputs_dir, per_page)
    if not record.is_file():
        raise MissingResults(f"{record} is missing: the multi-exit page's run record names its backbones; run the "
                             f"page first (python -m bertsent.book run {page} --profile quick)")
    parameters = json.loads(record.read_text())["parameters"]
    deep, shallow, deep_exit = parameters["deep_backbone"], parameters["backbone"], int(parameters["deep_exit"])
    tables = {f"{folder}/depth_claims.csv": acl.depth_claims(deep_exits, exits, deep_exit, "acl_cl", "joint", deep,
                                                               shallow)}
    deep_checks = acl.deep_exit_claims(deep_exits, deep)
    if len(deep_checks):
        tables[f"{folder}/deep_exit_claims.csv"] = deep_checks
    return tables


CHAPTERS = {
    "sg-opt": Chapter(sg_opt_claims, ("layer_pooling", "sts_baselines", "sg_opt_sts", "sg_opt_transfer",
                                      "sg_opt_ablations", "sg_opt_domain", "sg_opt_cost")),
    "geometry": Chapter(geometry_claims_overview, ("isotropy",)),
    "bert": Chapter(bert_claims, ("bert_pretraining", "bert_ablations", "bert_stall_study", "bert_long_run"), ("train_data", "run")),
    "attention-pooling": Chapter(attention_pooling_claims, ("attention_pooling_ablation", "attention_pooling_layers",
                                                            "attention_pooling_search",
                                                            "attention_pooling_frozen")),
    "aligned-contrastive": Chapter(acl_claims, ("acl_gradient_angles", "acl_glue", "acl_multi_exit"), ("exit",)),
}


def chapter_claims(chapter: str, inputs_dir=None, per_page: bool = False) -> dict[str, pd.DataFrame]:
    """The claims tables of ``chapter`` (a key of :data:`CHAPTERS`), by the file name under ``results/``."""
    if chapter not in CHAPTERS:
        raise ValueError(f"Unknown chapter {chapter!r}; choose one of {', '.join(CHAPTERS)}")
    return CHAPTERS[chapter].claims(inputs_dir, per_page)


def chapter_summary(tables: dict[str, pd.DataFrame], chapter: str | None = None) -> pd.DataFrame:
    """One table for the page: :func:`~bertsent.report.claims.claims_summary` of every claims table, labelled with
    the columns that say where a claim was tested (the chapter's :attr:`Chapter.label_with`: the training set by
    default, the exit for the multi-exit claims)."""
    label_with = CHAPTERS[chapter].label_with if chapter else ("train_data",)
    return claims_summary(*tables.values(), label_with=label_with)


def run_records(pages, inputs_dir=None, per_page: bool = False) -> pd.DataFrame:
    """One row per page: its run record's profile and ``finished`` date (``runs/<page>.json`` under the inputs),
    and whether that run judged its claims with the current rule: the record's method version of
    :mod:`bertsent.report.claims` is the current :data:`~bertsent.report.claims.METHOD_VERSION` (a record from
    before method versions were recorded did not). A page with no record says so."""
    rows = []
    for page in pages:
        path = _path(page, f"runs/{page}.json", inputs_dir, per_page)
        if not path.is_file():
            rows.append({"page": page, "profile": "", "finished": "", "current_rule": False,
                         "note": "no run record"})
            continue
        record = json.loads(path.read_text())
        finished = str(record.get("finished", ""))
        uses = record.get("method_versions", {}).get(RULE_MODULE) == RULE_VERSION
        rows.append({"page": page, "profile": record.get("profile", ""), "finished": finished, "current_rule": uses,
                     "note": "verdicts on the page by the current rule" if uses else
                             "the page's own verdicts predate the current rule"})
    return pd.DataFrame(rows, columns=["page", "profile", "finished", "current_rule", "note"])


def provenance(records: pd.DataFrame) -> str:
    """The page's sentence on where its numbers come from, computed from :func:`run_records`."""
    recorded = records[records["finished"] != ""]
    parts = [f"`{r.page}` ({r.profile} profile, finished {r.finished})" for r in recorded.itertuples()]
    missing = [f"`{page}`" for page in records.loc[records["finished"] == "", "page"]]
    text = ("The numbers below are recomputed from the committed results of "
            + (", ".join(parts) if parts else "no recorded run") + ".")
    if missing:
        text += f" No run record for {', '.join(missing)} (its CSVs are read as they are)."
    old = recorded.loc[~recorded["current_rule"].astype(bool), "page"].tolist()
    if old:
        text += (f" {'That page was' if len(old) == 1 else 'Those pages were'} executed before the current verdict "
                 f"rule (version {RULE_VERSION} of `{RULE_MODULE}`): where "
                 f"{'its' if len(old) == 1 else 'their'} own text or tables give a verdict, the one here supersedes it.")
    elif parts:
        text += " Every page was executed with the current verdict rule: its verdicts and these agree."
    return text


# The claims CSVs of each chapter, as globs under results/ (every file a chapter's claims function or its pages write).
CHAPTER_FILES = {
    "sg-opt": ("layer_pooling_claims.csv", "sts_baselines_claims.csv", "sts_main_claims.csv", "transfer_claims.csv",
               "sg_ablations_claims.csv", "sg_domain_claims.csv", "cost/inference_claims.csv"),
    "geometry": ("isotropy/claims.csv",),
    "bert": ("bert/*_claims.csv",),
    "attention-pooling": ("attention_pooling/claims_*.csv",),
    "aligned-contrastive": ("aligned-contrastive/*_claims.csv",),
}
SCOREBOARD = "claims_scoreboard.csv"


def scoreboard(results_dir=None) -> pd.DataFrame:
    """The book's verdicts at a glance: per chapter (:data:`CHAPTER_FILES`), how many claims got each verdict of
    :data:`~bertsent.report.claims.VERDICTS`, counted from the committed claims CSVs (rows without a claim left
    out), with a ``total`` row and column; verdicts no row has are left out."""
    from ..report.claims import NO_CLAIM, VERDICTS
    from ..report.io import results_glob

    base = _base(results_dir)  # with the claims tables this page staged (bertsent.report.io) read in their place
    counts = {}
    for chapter, patterns in CHAPTER_FILES.items():
        verdicts = pd.concat([pd.read_csv(path)["verdict"] for pattern in patterns
                              for path in results_glob(base, pattern)]
                             or [pd.Series(dtype=str)], ignore_index=True)
        counts[chapter] = verdicts[verdicts != NO_CLAIM].value_counts()
    table = pd.DataFrame(counts).T.reindex(columns=list(VERDICTS)).fillna(0).astype(int)
    table = table.loc[:, table.sum() > 0]
    table.loc["total"] = table.sum()
    table["total"] = table.sum(axis=1)
    return table.rename_axis("chapter")


def write_scoreboard(results_dir=None) -> pd.DataFrame:
    """:func:`scoreboard`, written to ``claims_scoreboard.csv`` under ``results_dir`` (the intro page shows it);
    each chapter's claims page rewrites it after its own claims, so it follows the latest verdicts."""
    from ..report.io import staged

    table = scoreboard(results_dir)
    path = staged(_base(results_dir) / SCOREBOARD)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path)
    return table

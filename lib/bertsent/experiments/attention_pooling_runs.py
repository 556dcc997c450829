"""Train and score the attention-pooling ablation page's fine-tuning runs ahead of the page, one at a time.

Each run of the ablation page (``attention_pooling_ablation``) fine-tunes the encoder with a pooling and is then
scored on the STS test sets. Its training record and every evaluation are committed under
``results/runs/attention_pooling/<key>/``, but its weights live in ``.cache/runs`` only; an evaluation not stored
yet (a new machine, or the page scoring other test pairs) trains the run again. This command does, with the same
library calls and the page's resolved parameters (:func:`~bertsent.experiments.attention_pooling.ablation_runs`
and :func:`~bertsent.experiments.attention_pooling.run_sts_scores`), one run at a time, so each run's scores land
in the store as it finishes (commit them) and two processes can share the work by backbone::

    python -m bertsent.experiments.attention_pooling_runs --list                        # which runs are scored
    python -m bertsent.experiments.attention_pooling_runs --backbone bert-tiny-wiki --threads 1
    python -m bertsent.experiments.attention_pooling_runs --key <a key --list prints> --threads 1

A run whose STS scores at the page's settings are stored is reused at once. A run this command trains also gets,
while its weights are at hand, what the chapter's other pages ask of it (:func:`page_evaluations`: the ablation's
per-pair cosines, the layers page's alpha and geometry, the search page's retrieval and encoding overhead), so that
no page has to train it again on a machine where its weights are gone. As for the runner, only the canonical
profiles (quick, paper) without overrides write under ``results/``.
"""
from __future__ import annotations

import argparse
import time

METHOD_VERSION = 1  # bump when the maths changes

PAGE = "attention_pooling_ablation"
# the pages that read some of the ablation's runs (the pooler's main seeds and the baseline) with evaluations of their own
COMPANION_PAGES = ("attention_pooling_layers", "attention_pooling_search")


def page_runs(profile: str = "quick", overrides: dict | None = None, backbones: list[str] | None = None,
              results_dir=None):
    """``(parameters, runs, sts)``: the ablation page's resolved parameters, its runs (``backbones``: only those;
    each must be one the page's profile names) and the STS test sets it scores them on."""
    from ..book import page_results_dir, resolve_parameters
    from .attention_pooling import TrainingData, ablation_runs
    from .sts_tables import load_sts_datasets

    parameters = resolve_parameters(PAGE, profile, overrides)
    chosen = parameters["backbones"]
    unknown = [b for b in backbones or [] if b not in chosen]
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a backbone of {PAGE} at profile {profile!r} "
                         f"(it has {', '.join(chosen)})")
    data = TrainingData(tuple(parameters["nli_sources"]), parameters["max_triplets"], parameters["dev_pairs"],
                        parameters["data_dir"])
    runs = ablation_runs([b for b in chosen if not backbones or b in backbones], parameters["poolings"],
                         parameters["seeds"], parameters["main_poolings"], parameters["main_seeds"], data,
                         parameters["training"], parameters["runs_dir"],
                         page_results_dir(PAGE, profile, overrides, results_dir), parameters["recipes"])
    sts = load_sts_datasets(parameters["datasets"], parameters["data_dir"], parameters["max_pairs"])
    return parameters, runs, sts


def page_readouts(run) -> tuple:
    """The readouts the page scores for ``run``: all three for the paper's pooler (RQ4), the pooled one otherwise."""
    from .attention_pooling import PAPER_POOLER, READOUTS

    return READOUTS if run.config.pooling == PAPER_POOLER else ("pooled",)


def is_scored(run, sts) -> bool:
    """Whether ``run``'s STS scores at the page's settings are stored (then the page reads them without the model)."""
    from .attention_pooling import sts_settings
    from .runs import evaluation_settings

    stored = run.committed()
    if stored is None:
        return False
    settings = evaluation_settings("bertsent.experiments.attention_pooling",
                                   **sts_settings(run, sts, page_readouts(run)))
    return stored.scores("sts_readouts", settings) is not None


def companion_runs(page: str, profile: str = "quick", overrides: dict | None = None, results_dir=None):
    """``(parameters, pooler_runs, baselines)`` of a companion page (:data:`COMPANION_PAGES`) as the page builds
    them: the pooler's run per (backbone, seed) and the baseline's per backbone. ``overrides``: those the page
    declares are applied (the shared ones, e.g. ``recipes``; the ablation's own, e.g. ``poolings``, are not its)."""
    from ..book import REPO_ROOT, load_config, notebook_parameters, page_results_dir, resolve_parameters
    from .attention_pooling import TrainingData, pooler_and_baseline_runs

    declared = notebook_parameters(REPO_ROOT / load_config()["notebooks"][page]["source"])
    shared = {name: value for name, value in (overrides or {}).items() if name in declared}
    parameters = resolve_parameters(page, profile, shared)
    directory = page_results_dir(page, profile, shared, results_dir)
    data = TrainingData(tuple(parameters["nli_sources"]), parameters["max_triplets"], parameters["dev_pairs"],
                        parameters["data_dir"])
    pooler_runs, baselines = pooler_and_baseline_runs(
        parameters["backbones"], parameters["pooler"], parameters["seeds"], parameters["baseline"],
        parameters["baseline_seed"], data, parameters["training"], parameters["recipes"], parameters["runs_dir"],
        directory)
    return parameters, pooler_runs, baselines


def page_evaluations(run, sts: dict, profile: str = "quick", overrides: dict | None = None,
                     results_dir=None) -> list[str]:
    """Compute (or find stored) every evaluation of ``run`` that the chapter's pages read, with each page's own
    settings; the names of those that apply. The ablation page: per-pair cosines on STS-B test. The layers page
    (when ``run`` is one of its pooler's runs or its baseline): geometry, and alpha for its first seed. The search
    page (likewise): retrieval, and the encoding overhead for its first seed. The inputs come from the functions
    the pages' notebooks call (:func:`~bertsent.experiments.attention_pooling.layers_page_inputs`,
    :func:`~bertsent.experiments.attention_pooling.timed_sentences`), so the pages find these stored."""
    from .attention_pooling import (layers_page_inputs, load_retrieval_sets, run_alpha, run_geometry, run_overhead,
                                    run_pair_cosines, run_retrieval, timed_sentences)

    run_pair_cosines(run, sts["stsb"], page_readouts(run))
    done = ["pair_cosines"]
    for page in COMPANION_PAGES:
        parameters, pooler_runs, baselines = companion_runs(page, profile, overrides, results_dir)
        first_seed = parameters["seeds"][0]
        as_pooler = [(seed, r) for (backbone, seed), r in pooler_runs.items() if r.key == run.key]
        as_baseline = [r for r in baselines.values() if r.key == run.key]
        if not as_pooler and not as_baseline:
            continue
        if page == "attention_pooling_layers":
            stsb, alpha_sentences = layers_page_inputs(parameters["max_pairs"], parameters["alpha_sentences"],
                                                       parameters["data_dir"])
            for seed, companion in as_pooler:
                run_geometry(companion, stsb)
                done.append("geometry")
                if seed == first_seed:
                    run_alpha(companion, alpha_sentences)
                    done.append("alpha")
            for companion in as_baseline:
                run_geometry(companion, stsb, ["pooled"])
                done.append("geometry")
        else:
            sets = load_retrieval_sets(parameters["retrieval_sets"], parameters["max_pairs"], parameters["data_dir"])
            for seed, companion in as_pooler:
                run_retrieval(companion, sets)
                done.append("retrieval")
                if seed == first_seed:
                    run_overhead(companion, timed_sentences(sets, parameters["overhead_sentences"]),
                                 parameters["repeats"])
                    done.append("overhead")
            for companion in as_baseline:
                run_retrieval(companion, sets, ["pooled"])
                done.append("retrieval")
    return done


def train_page_runs(profile: str = "quick", overrides: dict | None = None, backbones: list[str] | None = None,
                    results_dir=None, max_runs: int | None = None, keys: list[str] | None = None, log=print) -> list[dict]:
    """Train (where needed) and score the page's runs whose STS scores are not stored (at most ``max_runs``)."""
    from .attention_pooling import run_sts_scores

    _, runs, sts = page_runs(profile, overrides, backbones, results_dir)
    runs = _select(runs, keys)
    done, handled = [], 0
    for run in runs:
        key = run.key
        if is_scored(run, sts):
            log(f"{key}: scored before, reused")
            continue
        if max_runs is not None and handled >= max_runs:
            log(f"{key}: left for a later call (--max-runs {max_runs})")
            continue
        start = time.time()
        run_sts_scores(run, sts, page_readouts(run))
        seconds = round(time.time() - start, 1)
        evaluations = page_evaluations(run, sts, profile, overrides, results_dir)
        handled += 1
        log(f"{key}: trained and scored ({seconds} s); also stored for the pages: {', '.join(evaluations)} "
            f"({round(time.time() - start - seconds, 1)} s)")
        done.append({"key": key, "seconds": seconds})
    return done


def _select(runs, keys):
    if not keys:
        return runs
    by_key = {run.key: run for run in runs}
    unknown = [key for key in keys if key not in by_key]
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a run of {PAGE} (--list names them)")
    return [by_key[key] for key in keys]


def main(argv=None) -> int:
    from ..book import add_train_ahead_options, train_ahead_overrides

    parser = argparse.ArgumentParser(prog="python -m bertsent.experiments.attention_pooling_runs",
                                     description="Train and score the attention-pooling ablation's runs ahead of "
                                                 "the page (see the module doc).")
    parser.add_argument("--backbone", action="append", help="only this backbone's runs (repeatable)")
    parser.add_argument("--key", action="append", help="only this run, by the key --list prints (repeatable)")
    add_train_ahead_options(parser)
    args = parser.parse_args(argv)
    overrides = train_ahead_overrides(args)
    try:
        if args.list:
            _, runs, sts = page_runs(args.profile, overrides, args.backbone, args.results_dir)
            for run in _select(runs, args.key):
                print(f"{run.key}: {'scored' if is_scored(run, sts) else 'missing'}")
            return 0
        train_page_runs(args.profile, overrides, args.backbone, args.results_dir, args.max_runs, args.key)
    except ValueError as error:  # ParameterError included
        parser.exit(2, f"error: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Train an SG page's runs ahead of the page, one at a time, so that the page re-renders from them in minutes.

At the quick profile the STS page (``sg_opt_sts``) asks for runs that take hours of CPU each (Gemma 3 270M: about
2 h a run on 2 cores), more than one session. This command trains and scores the same runs with the same library
call the page makes (:func:`~bertsent.experiments.self_guided.trained_scores` on the runs of
:func:`~bertsent.experiments.self_guided.sts_page_runs`, with the page's resolved parameters), so each run's
results land in ``results/runs/sg/<key>/`` as it finishes (commit them), and a later ``python -m bertsent.book run
sg_opt_sts`` reads them instead of training. Runs already there are reused at once (listed as such)::

    python -m bertsent.experiments.sts_runs --list                          # the runs, and which are stored
    python -m bertsent.experiments.sts_runs --backbone gemma-3-270m          # train/score the missing ones
    python -m bertsent.experiments.sts_runs --backbone gemma-3-270m --max-runs 1 --threads 2
    python -m bertsent.experiments.sts_runs --key <a key --list prints>     # just that run (repeatable)
    python -m bertsent.experiments.sts_runs --page sg_opt_domain --list     # the domain page's runs (SNLI, ...)

``--page`` picks the page (:data:`PAGES`: the STS page by default, the ablation page, the domain page); each
page's runs are the ones its notebook asks :func:`~bertsent.experiments.self_guided.trained_scores` for.

Like the runner, only the canonical profiles (quick, paper) without overrides write under ``results/``; any other
profile writes to its re-run folder (``.cache/reruns/sg_opt_sts-<profile>-<hash>/results``) unless
``--results-dir`` is given.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

PAGE = "sg_opt_sts"
# the SG pages that train runs, and what each calls them: the STS page's methods, the ablation page's variants, the
# domain page's SG-OPT on each sentence set
PAGES = {"sg_opt_sts": "STS page", "sg_opt_ablations": "ablation page", "sg_opt_domain": "domain page"}


def _backbone_runs(page: str, parameters: dict, backbone: str) -> list[tuple[str, str, object]]:
    """(method or variant, train_data, SelfGuidedConfig) of every run ``page`` trains on ``backbone``, in its order."""
    from .self_guided import ablation_config, sts_page_runs

    if page == "sg_opt_sts":
        seeds = parameters["seeds_per_backbone"].get(backbone, parameters["seeds"])
        return sts_page_runs(backbone, parameters["methods"], parameters["train_data"], seeds,
                             parameters["trained_runs"], parameters["config"])
    if page == "sg_opt_ablations":
        return [(variant, parameters["train_data"], ablation_config(variant, seed, **parameters["config"]))
                for variant in parameters["variants"]
                for seed in (parameters["reference_seeds"] if variant == "sg_opt" else parameters["seeds"])]
    return [("sg_opt", train_set, ablation_config("sg_opt", seed, **parameters["config"]))
            for train_set in parameters["train_sets"] for seed in parameters["seeds"]]


def page_runs(profile: str = "quick", overrides: dict | None = None, backbones: list[str] | None = None,
              page: str = PAGE) -> list[dict]:
    """``page``'s trained runs at ``profile`` (a page of :data:`PAGES`; default the STS page): one dict per run
    (backbone, method, train_data, seed, config), in the page's order; ``backbones`` keeps only those (each must be
    one the page's profile names)."""
    from ..book import resolve_parameters

    if page not in PAGES:
        raise ValueError(f"{page!r} trains no SG runs ahead; pages that do: {', '.join(PAGES)}")
    parameters = resolve_parameters(page, profile, overrides)
    chosen = parameters["backbones"]
    if backbones:
        unknown = [b for b in backbones if b not in chosen]
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not a backbone of the {PAGES[page]} at profile {profile!r} "
                             f"(it has {', '.join(chosen)})")
        chosen = [b for b in chosen if b in backbones]
    return [{"backbone": backbone, "method": method, "train_data": data, "seed": config.seed, "config": config}
            for backbone in chosen for method, data, config in _backbone_runs(page, parameters, backbone)]


def _results_dir(profile: str, overrides: dict | None, results_dir, page: str = PAGE) -> Path | None:
    from ..book import page_results_dir

    return page_results_dir(page, profile, overrides, results_dir)


def _page_dev(parameters):
    from ..data.sts import load_stsb

    dev = load_stsb("dev", parameters["data_dir"])
    return dev.head(parameters["dev_pairs"]) if parameters["dev_pairs"] else dev


def stored_page_runs(profile: str = "quick", overrides: dict | None = None, backbones: list[str] | None = None,
                     results_dir=None, keys: list[str] | None = None, dev_pairs: int | None = None,
                     page: str = PAGE) -> list[tuple[dict, object]]:
    """The page's runs (:func:`page_runs`), each with its stored-run handle (:func:`~bertsent.experiments.runs.stored_run`:
    its key and whether its results are under ``results_dir``, default as in the module doc); ``keys``: only those
    runs, in that order (each must be one of the page's). ``dev_pairs``: the size of the page's STS-B dev selection
    set, part of every key (read from the data when not given)."""
    from ..book import resolve_parameters
    from .runs import stored_run

    parameters = resolve_parameters(page, profile, overrides)
    results_dir = _results_dir(profile, overrides, results_dir, page)
    dev_pairs = len(_page_dev(parameters)) if dev_pairs is None else dev_pairs
    runs = [(run, stored_run(run["backbone"], run["train_data"], run["config"], results_dir, dev_pairs))
            for run in page_runs(profile, overrides, backbones, page)]
    if keys:
        by_key = {stored.key: (run, stored) for run, stored in runs}
        unknown = [key for key in keys if key not in by_key]
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not a run of the {PAGES[page]} at profile {profile!r} "
                             f"(python -m bertsent.experiments.sts_runs --page {page} --list names them)")
        runs = [by_key[key] for key in keys]
    return runs


def train_page_runs(profile: str = "quick", overrides: dict | None = None, backbones: list[str] | None = None,
                    results_dir=None, max_runs: int | None = None, log=print, keys: list[str] | None = None,
                    page: str = PAGE) -> list[dict]:
    """Train and score ``page``'s runs that are not stored yet (at most ``max_runs`` of them); returns one dict per
    run handled: its key, whether it was stored before, and the seconds it took."""
    from ..book import resolve_parameters
    from .self_guided import trained_scores
    from .sts_tables import load_sts_datasets

    parameters = resolve_parameters(page, profile, overrides)
    sts = load_sts_datasets(parameters["datasets"], parameters["data_dir"], parameters["max_pairs"])
    dev = _page_dev(parameters)
    encoder_options = dict(batch_size=parameters["batch_size"], max_length=parameters["max_length"],
                           show_progress=False)
    done, trained = [], 0
    for run, stored in stored_page_runs(profile, overrides, backbones, results_dir, keys, len(dev), page):
        before = stored.exists
        if not before and max_runs is not None and trained >= max_runs:
            log(f"{stored.key}: left for a later call (--max-runs {max_runs})")
            continue
        start = time.time()
        # cache=False: a trained model is scored once; nothing to keep for later
        trained_scores(run["backbone"], run["train_data"], run["config"], sts, dev, parameters["data_dir"],
                       parameters["runs_dir"], _results_dir(profile, overrides, results_dir, page), cache=False,
                       **encoder_options)
        seconds = round(time.time() - start, 1)
        trained += not before
        log(f"{stored.key}: {'stored before, reused' if before else 'trained and scored'} ({seconds} s)")
        done.append({"key": stored.key, "stored_before": before, "seconds": seconds})
    return done


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bertsent.experiments.sts_runs",
                                     description="Train an SG page's runs ahead of the page (see the module doc).")
    from ..book import add_train_ahead_options, train_ahead_overrides

    parser.add_argument("--page", default=PAGE, choices=list(PAGES), help=f"whose runs (default {PAGE})")
    parser.add_argument("--backbone", action="append", help="only this backbone's runs (repeatable)")
    parser.add_argument("--key", action="append", help="only this run, by the key --list prints (repeatable)")
    add_train_ahead_options(parser)
    args = parser.parse_args(argv)
    overrides = train_ahead_overrides(args)
    try:
        if args.list:
            for _, stored in stored_page_runs(args.profile, overrides, args.backbone, args.results_dir, args.key,
                                              page=args.page):
                print(f"{stored.key}: {'stored' if stored.exists else 'missing'}")
            return 0
        train_page_runs(args.profile, overrides, args.backbone, args.results_dir, args.max_runs, keys=args.key,
                        page=args.page)
    except ValueError as error:  # ParameterError included
        parser.exit(2, f"error: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

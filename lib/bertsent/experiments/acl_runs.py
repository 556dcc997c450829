"""Train the aligned-contrastive chapter's fine-tunings ahead of its pages, one at a time.

At the quick profile the chapter asks for about 30 fine-tunings of 5-25 minutes each on one core: more than a
session. This command lists them and trains the missing ones with the same library calls the pages make
(:func:`~bertsent.experiments.aligned_contrastive.run_grid` for ``acl_glue``, whose runs ``acl_gradient_angles``
reads too, and :func:`~bertsent.experiments.aligned_contrastive.exit_grid` for ``acl_multi_exit``), one run per
call, so each lands in ``results/runs/glue/<key>/`` as it finishes (commit it) and ``python -m bertsent.book run``
re-renders the pages from them::

    python -m bertsent.experiments.acl_runs --list                          # every run of both pages, stored or not
    python -m bertsent.experiments.acl_runs --page acl_glue --max-runs 1    # train the next missing one
    python -m bertsent.experiments.acl_runs --run acl_glue:CoLA:acl:3       # just that run (a name --list prints)
    python -m bertsent.experiments.acl_runs -p seeds '[1, 2, 3]' --results-dir results --list

Where the page chooses each task's recipe on dev (``grid_learning_rates`` x ``grid_epochs``, CE with
``grid_seeds``), the grid's runs come first, and a task's other runs wait until its grid is stored (the recipe they
are trained with is the grid's best). Where it also chooses the contrastive term's temperature and weight
(``contrastive_grid_temperatures`` x ``contrastive_grid_weights`` for ``contrastive_grid_methods``, at the task's
chosen recipe), those grid runs come next, and the tuned methods' main runs wait for them in turn. Where the page
gates the contrastive methods on CE (``baseline_gate``), CE's runs over the table's seeds come before the
contrastive grid, and every other run of a task waits for them: a task CE has not learned beyond the majority class
(:func:`~bertsent.experiments.aligned_contrastive.baseline_check`) is listed as left out, and its contrastive runs
are never trained.
A run's name is ``PAGE:TASK:METHOD:SEED`` with ``:WEIGHT`` (lambda) for the contrastive methods (none where the
weight is chosen on the contrastive grid), ``:tTEMPERATURE`` for a contrastive-grid run,
``:lrRATE:epEPOCHS`` for a recipe-grid run, ``:diagnose`` for a grid point trained again with its final model
diagnosed (``diagnose_grid_points``, :func:`~bertsent.experiments.aligned_contrastive.grid_diagnosis`) and ``@BACKBONE``
for a run on another backbone than the page's (the multi-exit page's ``deep_backbone``, e.g. ``-p deep_backbone
all-mpnet-base-v2``). Like the runner,
only the canonical profiles (quick, paper) without overrides write under ``results/``; any other profile or ``-p``
writes to the page's re-run folder (``.cache/reruns/<page>-<profile>-<hash>/results``) unless ``--results-dir`` is
given (``--results-dir results`` adds runs to the book's store, e.g. a third seed before the profile lists it).
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

PAGES = ("acl_glue", "acl_multi_exit")


@dataclass(frozen=True)
class PageRun:
    """One fine-tuning a page asks for."""

    page: str
    task: str
    method: str  # a method of aligned_contrastive.METHODS, or a multi-exit mode (acl_multi_exit)
    seed: int
    weight: float | None  # lambda; None for plain CE, and for a method whose weight the contrastive grid chooses
    backbone: str | None = None  # None: the page's backbone; else another (the multi-exit page's deep_backbone)
    recipe: tuple[float, int] | None = None  # (learning rate, epochs) of a recipe-grid run; None: the page's recipe
    temperature: float | None = None  # tau of a contrastive-grid run; None: the page's or the one the grid chose
    diagnose: bool = False  # a contrastive-grid point trained again with its final model diagnosed (grid_diagnosis)

    @property
    def name(self) -> str:
        weight = "" if self.weight is None else f":{self.weight:g}"
        weight += "" if self.temperature is None else f":t{self.temperature:g}"
        recipe = "" if self.recipe is None else f":lr{self.recipe[0]:g}:ep{self.recipe[1]}"
        backbone = "" if self.backbone is None else f"@{self.backbone}"
        diagnose = ":diagnose" if self.diagnose else ""
        return f"{self.page}:{self.task}:{self.method}:{self.seed}{weight}{recipe}{diagnose}{backbone}"


@dataclass(frozen=True)
class Waiting:
    """In place of a stored-run handle: a run that cannot be trained yet (its task's grid or CE runs are missing),
    or at all (its task is left out by the baseline gate), and why."""

    reason: str


def uses_recipe_grid(parameters: dict) -> bool:
    """Whether the page chooses each task's learning rate and epochs from a CE grid on dev (``grid_learning_rates``
    and ``grid_epochs`` both given) instead of taking ``learning_rate`` and ``epochs`` as they are."""
    return bool(parameters.get("grid_learning_rates")) and bool(parameters.get("grid_epochs"))


def tuned_methods(parameters: dict) -> list[str]:
    """The ungated methods whose temperature and weight the page chooses on dev per task
    (``contrastive_grid_methods``, when ``contrastive_grid_temperatures`` and ``contrastive_grid_weights`` are both
    given); empty: every contrastive method takes the page's ``weight`` and ``temperature``."""
    from .aligned_contrastive import check_tunable

    if not (parameters.get("contrastive_grid_temperatures") and parameters.get("contrastive_grid_weights")):
        return []
    return check_tunable(parameters.get("contrastive_grid_methods") or [])


def page_runs(page: str, parameters: dict) -> list[PageRun]:
    """The fine-tunings of ``page`` with its resolved ``parameters``, in the page's order, each once (the lambda
    curve's point at the main table's lambda is the main table's run)."""
    if page not in PAGES:
        raise ValueError(f"Unknown page {page!r}; the chapter's training pages are {', '.join(PAGES)}.")
    from .aligned_contrastive import TUNED_AS, seeds_of

    weight = float(parameters["weight"])
    if page == "acl_multi_exit":
        runs = [PageRun(page, task, mode, int(seed), weight) for task in parameters["tasks"]
                for mode in parameters["modes"] for seed in seeds_of(parameters["seeds"], task)]
        if parameters.get("deep_backbone"):
            runs += [PageRun(page, task, mode, int(seed), weight, parameters["deep_backbone"])
                     for task in parameters["tasks"] for mode in parameters["deep_modes"]
                     for seed in seeds_of(parameters["seeds"], task)]
        return runs
    runs = [PageRun(page, task, "ce", int(seed), None, recipe=(float(rate), int(count)))
            for task in parameters["tasks"] for rate in parameters["grid_learning_rates"]
            for count in parameters["grid_epochs"] for seed in parameters["grid_seeds"]
            ] if uses_recipe_grid(parameters) else []
    if parameters.get("baseline_gate"):  # CE first: its baseline check decides which tasks get the rest
        runs += [PageRun(page, task, "ce", int(seed), None) for task in parameters["tasks"]
                 for seed in seeds_of(parameters["seeds"], task)]
    tuned = tuned_methods(parameters)
    runs += [PageRun(page, task, method, int(seed), float(w), temperature=float(t))
             for task in parameters["tasks"] for method in tuned
             for t in parameters["contrastive_grid_temperatures"] for w in parameters["contrastive_grid_weights"]
             for seed in parameters["grid_seeds"]]
    runs += [PageRun(page, task, method, int(seed), None if method == "ce" or TUNED_AS[method] in tuned else weight)
             for task in parameters["tasks"] for method in parameters["methods"]
             for seed in seeds_of(parameters["seeds"], task)]
    runs += [PageRun(page, parameters["lambda_task"], method, int(seed), float(w)) for w in parameters["lambdas"]
             for method in ("acl_embed", "acl") for seed in parameters["lambda_seeds"]]
    runs += [PageRun(page, task, "ce_scl", int(seed), float(w), temperature=float(t), diagnose=True)
             for task, t, w in parameters.get("diagnose_grid_points") or [] for seed in parameters["grid_seeds"]]
    return list(dict.fromkeys(runs))


def _settings(parameters: dict) -> dict:
    return {name: parameters[name] for name in ("epochs", "learning_rate", "batch_size", "max_length",
                                                "max_dev_examples")}


def _run_settings(run: PageRun, parameters: dict, model, results_dir) -> dict | None:
    """The :class:`~bertsent.training.glue.GlueConfig` settings ``run`` is trained with: a grid run's own learning
    rate and epochs; under a recipe grid, the recipe chosen on its task's stored grid runs (None while one of them
    is missing); else (no grid, or a task the grid does not cover) the page's."""
    import pandas as pd

    from . import aligned_contrastive as acl
    from .runs import glue_run_handle

    settings = _settings(parameters)
    if run.recipe is not None:
        return {**settings, "learning_rate": run.recipe[0], "epochs": run.recipe[1]}
    if run.page != "acl_glue" or not uses_recipe_grid(parameters):
        return settings
    rows = []
    for grid_run in page_runs(run.page, parameters):
        if grid_run.recipe is None or grid_run.task != run.task:
            continue
        stored = glue_run_handle(model, run.task, acl.glue_config(run.task, grid_run.seed,
                                                                   parameters["max_train_examples"],
                                                                   **_run_settings(grid_run, parameters, model,
                                                                                   results_dir)),
                                 results_dir, None)
        if not stored.exists:
            return None
        rows.append({**acl._run_row(stored, "ce", run.task, grid_run.seed, None),
                     "learning_rate": grid_run.recipe[0], "epochs": grid_run.recipe[1]})
    if not rows:  # a task outside the grid's (the lambda curve's task, not in ``tasks``): the page's recipe
        return settings
    return acl.with_chosen_recipes(settings, acl.chosen_recipes(pd.DataFrame(rows)), [run.task])


def _gate(run: PageRun, parameters: dict, model, results_dir) -> str | None:
    """Why ``run`` may not be trained under the page's baseline gate (``baseline_gate``): it waits for its task's
    CE runs over the table's seeds, or its task is left out (CE has not learned it beyond the majority class);
    None where it may (CE itself, a page without the gate, a task CE learned)."""
    import pandas as pd

    from ..evaluation.glue import mark_majority_class
    from . import aligned_contrastive as acl
    from .runs import glue_run_handle

    if run.page != "acl_glue" or run.method == "ce" or not parameters.get("baseline_gate"):
        return None
    rows = []
    seeds = acl.seeds_of(parameters["seeds"], run.task)
    for seed in seeds:
        settings = _run_settings(PageRun(run.page, run.task, "ce", seed, None), parameters, model, results_dir)
        if settings is None:
            return f"waits for {run.task}'s recipe grid (its runs are listed above)"
        stored = glue_run_handle(model, run.task, acl.glue_config(run.task, seed, parameters["max_train_examples"],
                                                                   **settings), results_dir, None)
        if not stored.exists:
            return (f"waits for CE's {len(seeds)} runs on {run.task} (the baseline check on them decides whether "
                    f"{run.task} gets contrastive runs)")
        rows.append(acl._run_row(stored, "ce", run.task, seed, None))
    scores = acl.score_table(mark_majority_class(pd.DataFrame(rows), parameters["data_dir"]), parameters["data_dir"])
    why = acl.left_out_tasks(scores).get(run.task)
    return None if why is None else f"left out, never trained: {why}"


def _run_terms(run: PageRun, parameters: dict, model, results_dir) -> tuple[float, float] | None:
    """(weight, temperature) of ``run``'s contrastive term: a contrastive-grid run's own; for a method the page
    tunes, the pair chosen on its task's stored contrastive-grid runs (None while one of them, or the recipe they
    wait for, is missing); else the run's weight (the page's where it has none) and the page's temperature."""
    import pandas as pd

    from . import aligned_contrastive as acl
    from .runs import glue_run_handle

    if run.temperature is not None:
        return float(run.weight), float(run.temperature)
    defaults = (float(parameters["weight"] if run.weight is None else run.weight), float(parameters["temperature"]))
    tuned_as = acl.TUNED_AS.get(run.method)
    if run.page != "acl_glue" or run.weight is not None or tuned_as not in tuned_methods(parameters):
        return defaults
    rows = []
    for grid_run in page_runs(run.page, parameters):
        if (grid_run.temperature is None or grid_run.diagnose or grid_run.task != run.task
                or grid_run.method != tuned_as):
            continue
        settings = _run_settings(grid_run, parameters, model, results_dir)
        if settings is None:
            return None
        stored = glue_run_handle(model, run.task, acl.glue_config(run.task, grid_run.seed,
                                                                   parameters["max_train_examples"], **settings),
                                 results_dir, _objective(grid_run, parameters, _run_terms(grid_run, parameters,
                                                                                           model, results_dir)))
        if not stored.exists:
            return None
        rows.append(acl._run_row(stored, tuned_as, run.task, grid_run.seed, grid_run.weight, grid_run.temperature))
    return acl.term_of(acl.chosen_terms(pd.DataFrame(rows)), run.method, run.task, *defaults)


def _objective(run: PageRun, parameters: dict, terms: tuple[float, float]):
    from . import aligned_contrastive as acl

    weight, temperature = terms
    if run.page == "acl_multi_exit":
        return acl.exit_objective(run.method, weight, temperature, parameters["thresholds"],
                                  parameters["latency_examples"])
    return acl.method_objective(run.method, weight, temperature, parameters["angle_every"], run.diagnose)


def stored_runs(page: str, profile: str = "quick", overrides: dict | None = None, results_dir=None,
                names: list[str] | None = None) -> list[tuple[PageRun, object]]:
    """``page``'s runs, each with its stored-run handle (key, ``exists``) under the results folder the module doc
    describes, or a :class:`Waiting` for a run whose recipe (or contrastive term) waits for its task's grid, or
    that the baseline gate holds back; ``names``: only the runs so named (each must be one of the page's)."""
    from ..book import page_results_dir, resolve_parameters
    from ..encode.backbones import backbone_path
    from .runs import model_at

    parameters = resolve_parameters(page, profile, overrides)
    results_dir = page_results_dir(page, profile, overrides, results_dir)
    runs = page_runs(page, parameters)
    models = {backbone: model_at(backbone_path(backbone))
              for backbone in {run.backbone or parameters["backbone"] for run in runs}}
    if names:
        by_name = {run.name: run for run in runs}
        unknown = [name for name in names if name not in by_name]
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not a run of {page} at profile {profile!r} "
                             "(python -m bertsent.experiments.acl_runs --list names them)")
        runs = [by_name[name] for name in names]
    handles = []
    for run in runs:
        model = models[run.backbone or parameters["backbone"]]
        handles.append((run, _handle(run, parameters, model, results_dir)))
    return handles


def _handle(run: PageRun, parameters: dict, model, results_dir):
    """``run``'s stored-run handle, or a :class:`Waiting` saying why it cannot be trained now."""
    from . import aligned_contrastive as acl
    from .runs import glue_run_handle

    settings = _run_settings(run, parameters, model, results_dir)
    if settings is None:
        return Waiting(f"waits for {run.task}'s recipe grid (its runs are listed above)")
    gate = _gate(run, parameters, model, results_dir)
    if gate is not None:
        return Waiting(gate)
    terms = _run_terms(run, parameters, model, results_dir)
    if terms is None:
        return Waiting(f"waits for {run.task}'s contrastive grid (its runs are listed above)")
    return glue_run_handle(model, run.task, acl.glue_config(run.task, run.seed, parameters["max_train_examples"],
                                                            **settings),
                           results_dir, _objective(run, parameters, terms))


def train_run(run: PageRun, profile: str = "quick", overrides: dict | None = None, results_dir=None) -> None:
    """Fine-tune (or reuse) one run through the page's own call."""
    from ..book import page_results_dir, resolve_parameters
    from ..encode.backbones import backbone_path
    from . import aligned_contrastive as acl
    from .runs import model_at

    parameters = resolve_parameters(run.page, profile, overrides)
    results_dir = page_results_dir(run.page, profile, overrides, results_dir)
    model = model_at(backbone_path(run.backbone or parameters["backbone"]))
    settings = _run_settings(run, parameters, model, results_dir)
    if settings is None:
        raise ValueError(f"{run.name} is trained with the recipe chosen on {run.task}'s recipe grid, which is not "
                         "all stored yet: train the grid's runs first (--list names them)")
    gate = _gate(run, parameters, model, results_dir)
    if gate is not None:
        raise ValueError(f"{run.name} {gate}" + ("" if gate.startswith("left out") else
                                                 ": train those first (--list names them)"))
    terms = _run_terms(run, parameters, model, results_dir)
    if terms is None:
        raise ValueError(f"{run.name} is trained with the temperature and weight chosen on {run.task}'s contrastive "
                         "grid, which is not all stored yet: train the grid's runs first (--list names them)")
    shared = (parameters["max_train_examples"], *terms)
    if run.diagnose:
        acl.grid_diagnosis(model, [[run.task, run.temperature, run.weight]], [run.seed], parameters["max_train_examples"],
                           parameters["data_dir"], results_dir, parameters["angle_every"], **settings)
    elif run.page == "acl_multi_exit":
        acl.exit_grid(model, [run.task], [run.method], [run.seed], *shared, parameters["thresholds"],
                      parameters["latency_examples"], parameters["data_dir"], results_dir, **settings)
    else:
        acl.run_grid(model, [run.task], [run.method], [run.seed], *shared, parameters["data_dir"], results_dir,
                     angle_every=parameters["angle_every"], **settings)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bertsent.experiments.acl_runs",
                                     description="Train the ACL pages' fine-tunings ahead of the pages (see the "
                                                 "module doc).")
    from ..book import add_train_ahead_options, train_ahead_overrides

    parser.add_argument("--page", action="append", choices=PAGES, help="only this page's runs (repeatable)")
    parser.add_argument("--run", action="append", help="only this run, by the name --list prints (repeatable)")
    add_train_ahead_options(parser)
    args = parser.parse_args(argv)
    overrides = train_ahead_overrides(args)
    pages = args.page or [p for p in PAGES if not args.run or any(r.startswith(p + ":") for r in args.run)]
    stray = [r for r in args.run or [] if not any(r.startswith(p + ":") for p in pages)]
    if stray:  # else a name outside the chosen pages would be ignored, or leave its page's whole grid chosen
        parser.exit(2, f"error: {', '.join(stray)}: not a run of {', '.join(pages) or 'any page'} (a name starts "
                       f"with its page, one of {', '.join(PAGES)}; --list prints them)\n")
    trained = 0
    states = {"stored": 0, "missing": 0, "waiting": 0, "left out": 0}
    try:
        for page in pages:
            names = [r for r in args.run if r.startswith(page + ":")] if args.run else None
            for run, stored in stored_runs(page, args.profile, overrides, args.results_dir, names):
                if isinstance(stored, Waiting) and not args.list:  # what it waits for may have been trained since
                    (_, stored), = stored_runs(page, args.profile, overrides, args.results_dir, [run.name])
                if isinstance(stored, Waiting):
                    states["left out" if stored.reason.startswith("left out") else "waiting"] += 1
                    print(f"{run.name}: {stored.reason}")
                    continue
                if args.list:
                    states["stored" if stored.exists else "missing"] += 1
                    print(f"{run.name}: {'stored' if stored.exists else 'missing'} ({stored.key})")
                    continue
                if stored.exists:
                    continue
                if args.max_runs is not None and trained >= args.max_runs:
                    print(f"{run.name}: left for a later call (--max-runs {args.max_runs})")
                    continue
                start = time.time()
                train_run(run, args.profile, overrides, args.results_dir)
                trained += 1
                print(f"{run.name}: trained ({time.time() - start:.0f} s; {stored.key})", flush=True)
    except ValueError as error:  # ParameterError included
        parser.exit(2, f"error: {error}\n")
    if args.list:
        print(", ".join(f"{count} {state}" for state, count in states.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Training the ACL pages' fine-tunings ahead of the pages (``bertsent.experiments.acl_runs``): the runs the pages
ask for, each once, keyed as the pages key them, stored where they read them, never into results/ by a
non-canonical profile."""
import pytest

from bertsent.book import resolve_parameters
from bertsent.experiments import acl_runs
from bertsent.experiments.acl_runs import PageRun, Waiting


def test_the_lambda_curve_reuses_the_main_tables_point_and_ce_has_no_lambda():
    parameters = resolve_parameters("acl_glue", "quick", {"tasks": ["CoLA"], "seeds": [1], "lambdas": [0.5, 2.0],
                                                          "lambda_seeds": [1]})
    runs = acl_runs.page_runs("acl_glue", parameters)
    assert PageRun("acl_glue", "CoLA", "ce", 1, None) in runs
    assert sum(r == PageRun("acl_glue", "CoLA", "acl", 1, 0.5) for r in runs) == 1
    assert [r.name for r in runs][-2:] == ["acl_glue:CoLA:acl_embed:1:2", "acl_glue:CoLA:acl:1:2"]
    assert len({r.name for r in runs}) == len(runs)


def test_a_task_with_its_own_seeds_gets_exactly_those():
    # (an empty lambda list is refused before any work, so the lambda curve keeps its own seeds here)
    parameters = resolve_parameters("acl_glue", "quick", {"tasks": ["SST-2", "CoLA"], "methods": ["ce"],
                                                          "seeds": {"SST-2": [1], "CoLA": [1, 4]}})
    runs = acl_runs.page_runs("acl_glue", parameters)
    assert [(r.task, r.seed) for r in runs if r.method == "ce"] == [("SST-2", 1), ("CoLA", 1), ("CoLA", 4)]
    curve = [r for r in runs if r.method != "ce"]
    assert curve and {r.seed for r in curve} == set(parameters["lambda_seeds"])
    assert {r.task for r in curve} == {parameters["lambda_task"]}


def test_multi_exit_runs_are_the_modes_per_task_and_seed():
    parameters = resolve_parameters("acl_multi_exit", "quick", {"seeds": [1, 2], "deep_backbone": None})
    runs = acl_runs.page_runs("acl_multi_exit", parameters)
    assert [(r.method, r.seed) for r in runs] == [(m, s) for m in parameters["modes"] for s in (1, 2)]


def test_an_unknown_page_or_run_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="acl_angles.*acl_glue, acl_multi_exit"):
        acl_runs.page_runs("acl_angles", {})
    with pytest.raises(ValueError, match="acl_glue:CoLA:acl:9: not a run of acl_glue.*--list"):
        acl_runs.stored_runs("acl_glue", "quick", names=["acl_glue:CoLA:acl:9"])


def test_a_run_is_trained_where_the_page_reads_it_and_then_reused(tmp_path):
    overrides = {"lambdas": [0.5], "grid_learning_rates": []}  # no recipe grid: the run has its recipe now
    name = "acl_glue:RTE:acl:1:0.5"
    (run, stored), = acl_runs.stored_runs("acl_glue", "smoke", overrides, tmp_path, [name])
    assert not stored.exists
    acl_runs.train_run(run, "smoke", overrides, tmp_path)
    (_, again), = acl_runs.stored_runs("acl_glue", "smoke", overrides, tmp_path, [name])
    assert again.exists and again.key == stored.key and again.directory.is_relative_to(tmp_path)
    assert again.train()["result"]["train_examples"] == 16


def test_only_canonical_profiles_write_into_results(tmp_path):
    (_, canonical), = acl_runs.stored_runs("acl_glue", "quick", names=["acl_glue:CoLA:ce:1"])
    (_, rerun), = acl_runs.stored_runs("acl_glue", "quick", {"seeds": [1]}, names=["acl_glue:CoLA:ce:1"])
    assert canonical.key == rerun.key
    assert ".cache" not in str(canonical.directory) and "reruns" in str(rerun.directory)


def test_a_deep_backbone_adds_its_own_runs_named_by_it():
    deep_grid = {"deep_backbone": "all-mpnet-base-v2", "deep_modes": ["joint", "acl_cl"]}
    parameters = resolve_parameters("acl_multi_exit", "quick", deep_grid)
    deep = [r for r in acl_runs.page_runs("acl_multi_exit", parameters) if r.backbone]
    assert [(r.method, r.seed) for r in deep] == [(m, s) for m in parameters["deep_modes"] for s in parameters["seeds"]]
    assert deep[0].name == "acl_multi_exit:SST-2:joint:1:0.5@all-mpnet-base-v2"
    listed = acl_runs.stored_runs("acl_multi_exit", "quick", deep_grid,
                                  names=[deep[0].name, "acl_multi_exit:SST-2:joint:1:0.5"])
    assert listed[0][1].key != listed[1][1].key and "SST-2-multi_exit_joint" in listed[0][1].key


def test_a_run_name_outside_the_chosen_pages_is_refused(capsys):
    with pytest.raises(SystemExit) as stopped:
        acl_runs.main(["--list", "--page", "acl_glue", "--run", "acl_multi_exit:SST-2:joint:1:0.5"])
    assert stopped.value.code == 2 and "acl_multi_exit:SST-2:joint:1:0.5: not a run of acl_glue" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        acl_runs.main(["--list", "--run", "acl_angles:CoLA:ce:1"])


def test_a_recipe_grid_comes_first_and_the_tasks_other_runs_wait_for_it(tmp_path):
    """With ``grid_learning_rates`` x ``grid_epochs``, CE's grid runs (the grid's own seed) come first; the task's
    main runs have no handle until every grid run of the task is stored, then take the grid's best recipe."""
    grid = {"grid_learning_rates": [5e-5, 1e-4], "grid_epochs": [1], "grid_seeds": [0], "methods": ["ce"],
            "lambdas": [0.5]}
    parameters = resolve_parameters("acl_glue", "smoke", grid)
    runs = acl_runs.page_runs("acl_glue", parameters)
    assert [r.name for r in runs[:2]] == ["acl_glue:RTE:ce:0:lr5e-05:ep1", "acl_glue:RTE:ce:0:lr0.0001:ep1"]
    listed = dict((run.name, stored) for run, stored in acl_runs.stored_runs("acl_glue", "smoke", grid, tmp_path))
    assert isinstance(listed["acl_glue:RTE:ce:1"], Waiting)
    assert not isinstance(listed["acl_glue:RTE:ce:0:lr0.0001:ep1"], Waiting)
    with pytest.raises(ValueError, match="recipe grid, which is not all stored yet"):
        acl_runs.train_run(PageRun("acl_glue", "RTE", "ce", 1, None), "smoke", grid, tmp_path)
    for run in runs[:2]:
        acl_runs.train_run(run, "smoke", grid, tmp_path)
    scores = {run.recipe[0]: stored.train()["result"]["accuracy"]
              for run, stored in acl_runs.stored_runs("acl_glue", "smoke", grid, tmp_path, [r.name for r in runs[:2]])}
    (_, main), = acl_runs.stored_runs("acl_glue", "smoke", grid, tmp_path, ["acl_glue:RTE:ce:1"])
    best = max(scores, key=lambda rate: (scores[rate], -rate))
    assert not isinstance(main, Waiting) and not main.exists
    (_, at_best), = acl_runs.stored_runs("acl_glue", "smoke", {**grid, "grid_learning_rates": [best]}, tmp_path,
                                         ["acl_glue:RTE:ce:1"])
    assert main.key == at_best.key  # the same run as a page whose grid holds only the best rate


def test_the_lambda_curves_task_outside_the_grid_keeps_the_pages_recipe(tmp_path):
    grid = {"grid_learning_rates": [5e-5, 1e-4], "grid_epochs": [1], "methods": ["ce"], "lambda_task": "CoLA",
            "lambdas": [0.5]}
    listed = dict((run.name, stored) for run, stored in acl_runs.stored_runs("acl_glue", "smoke", grid, tmp_path))
    curve = [name for name in listed if name.startswith("acl_glue:CoLA:")]
    assert curve and not any(isinstance(listed[name], Waiting) for name in curve)  # no grid on CoLA: nothing to wait for
    (_, plain), = acl_runs.stored_runs("acl_glue", "smoke", {k: v for k, v in grid.items() if not k.startswith("grid")},
                                       tmp_path, [curve[0]])
    assert listed[curve[0]].key == plain.key


def test_the_contrastive_grid_runs_at_the_tasks_recipe_and_the_tuned_methods_wait_for_it(tmp_path):
    """With ``contrastive_grid_temperatures`` x ``contrastive_grid_weights``, CE+SCL's grid runs come before the
    main runs; CE+SCL and its gated variant have no weight of their own and no handle until the grid is stored, then
    take the best (temperature, weight); ACL keeps the page's. (The gated variant's share: the library's test.)"""
    grid = {"grid_learning_rates": [], "contrastive_grid_temperatures": [0.1, 0.5], "contrastive_grid_weights": [1.0],
            "contrastive_grid_methods": ["ce_scl"], "methods": ["ce", "ce_scl", "acl"], "lambdas": [0.5]}
    parameters = resolve_parameters("acl_glue", "smoke", grid)
    runs = acl_runs.page_runs("acl_glue", parameters)
    assert [r.name for r in runs[:2]] == ["acl_glue:RTE:ce_scl:0:1:t0.1", "acl_glue:RTE:ce_scl:0:1:t0.5"]
    names = [r.name for r in runs]
    assert "acl_glue:RTE:ce_scl:1" in names and "acl_glue:RTE:acl:1:0.5" in names
    listed = dict((run.name, stored) for run, stored in acl_runs.stored_runs("acl_glue", "smoke", grid, tmp_path))
    assert isinstance(listed["acl_glue:RTE:ce_scl:1"], Waiting)
    assert not any(isinstance(listed[name], Waiting) for name in ("acl_glue:RTE:acl:1:0.5", "acl_glue:RTE:ce:1"))
    with pytest.raises(ValueError, match="contrastive grid, which is not all stored yet"):
        acl_runs.train_run(PageRun("acl_glue", "RTE", "ce_scl", 1, None), "smoke", grid, tmp_path)
    for run in runs[:2]:
        acl_runs.train_run(run, "smoke", grid, tmp_path)
    scores = {run.temperature: stored.train()["result"]["accuracy"]
              for run, stored in acl_runs.stored_runs("acl_glue", "smoke", grid, tmp_path, [r.name for r in runs[:2]])}
    best = max(scores, key=lambda temperature: (scores[temperature], -temperature))
    (_, tuned), = acl_runs.stored_runs("acl_glue", "smoke", grid, tmp_path, ["acl_glue:RTE:ce_scl:1"])
    untuned = {"grid_learning_rates": [], "contrastive_grid_temperatures": [], "methods": ["ce_scl"], "lambdas": [0.5],
               "weight": 1.0, "temperature": best}
    (_, plain), = acl_runs.stored_runs("acl_glue", "smoke", untuned, tmp_path, ["acl_glue:RTE:ce_scl:1:1"])
    assert not isinstance(tuned, Waiting) and tuned.key == plain.key  # the page's run at the chosen pair
    with pytest.raises(ValueError, match="contrastive_grid_methods.*'acl'.*ce_scl, acl_embed"):
        acl_runs.page_runs("acl_glue", {**parameters, "contrastive_grid_methods": ["acl"]})


def test_the_baseline_gate_trains_ce_first_and_leaves_a_task_it_has_not_learned_untrained(tmp_path, monkeypatch):
    """With ``baseline_gate``, CE's runs over the table's seeds come before the contrastive grid; a task's other
    runs wait for them, then are trained where CE learned the task, and listed as left out (never trained) where
    it did not."""
    from bertsent.experiments import aligned_contrastive as acl

    gate = {"baseline_gate": True, "grid_learning_rates": [], "contrastive_grid_temperatures": [0.3],
            "contrastive_grid_weights": [0.5],
            "methods": ["ce", "ce_scl", "acl"], "lambdas": [0.5], "lambda_task": "RTE"}
    names = [run.name for run in acl_runs.page_runs("acl_glue", resolve_parameters("acl_glue", "smoke", gate))]
    assert names[:2] == ["acl_glue:RTE:ce:1", "acl_glue:RTE:ce_scl:0:0.5:t0.3"]
    listed = {run.name: stored for run, stored in acl_runs.stored_runs("acl_glue", "smoke", gate, tmp_path)}
    assert "waits for CE's 1 runs on RTE" in listed["acl_glue:RTE:acl:1:0.5"].reason
    assert "waits for CE's" in listed["acl_glue:RTE:ce_scl:0:0.5:t0.3"].reason
    assert not isinstance(listed["acl_glue:RTE:ce:1"], Waiting)
    acl_runs.train_run(PageRun("acl_glue", "RTE", "ce", 1, None), "smoke", gate, tmp_path)

    monkeypatch.setattr(acl, "left_out_tasks", lambda scores, baseline="ce": {"RTE": "CE has not learned RTE"})
    listed = {run.name: stored for run, stored in acl_runs.stored_runs("acl_glue", "smoke", gate, tmp_path)}
    assert listed["acl_glue:RTE:acl:1:0.5"] == Waiting("left out, never trained: CE has not learned RTE")
    with pytest.raises(ValueError, match="acl_glue:RTE:acl:1:0.5 left out, never trained"):
        acl_runs.train_run(PageRun("acl_glue", "RTE", "acl", 1, 0.5), "smoke", gate, tmp_path)

    monkeypatch.setattr(acl, "left_out_tasks", lambda scores, baseline="ce": {})
    (_, grid), = acl_runs.stored_runs("acl_glue", "smoke", gate, tmp_path, ["acl_glue:RTE:ce_scl:0:0.5:t0.3"])
    (_, ungated), = acl_runs.stored_runs("acl_glue", "smoke", {**gate, "baseline_gate": False}, tmp_path,
                                         ["acl_glue:RTE:ce_scl:0:0.5:t0.3"])
    assert not isinstance(grid, Waiting) and grid.key == ungated.key  # kept: the run the ungated page trains


def test_the_list_ends_with_how_many_runs_are_in_each_state(tmp_path, capsys):
    acl_runs.main(["--list", "--page", "acl_glue", "--profile", "smoke", "--results-dir", str(tmp_path),
                   "-p", "baseline_gate", "true", "-p", "grid_learning_rates", "[]", "-p", "lambdas", "[0.5]"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == f"0 stored, 1 missing, {len(lines) - 2} waiting, 0 left out"
    assert lines[0].startswith("acl_glue:RTE:ce:1: missing")


def test_a_diagnosed_grid_point_is_the_grid_run_again_with_its_decisions_read(tmp_path):
    """A point of ``diagnose_grid_points`` is a run of its own (named ``:diagnose``, keyed apart), trained number for
    number as the grid's run, whose result adds the final model's diagnosis on the training set and dev; the tuned
    methods do not wait for it."""
    from bertsent.experiments import aligned_contrastive as acl

    grid = {"grid_learning_rates": [], "contrastive_grid_temperatures": [0.1], "contrastive_grid_weights": [1.0],
            "contrastive_grid_methods": ["ce_scl"], "methods": ["ce", "ce_scl"], "lambdas": [0.5],
            "diagnose_grid_points": [["RTE", 0.1, 1.0]]}
    names = [run.name for run in acl_runs.page_runs("acl_glue", resolve_parameters("acl_glue", "smoke", grid))]
    assert names[-1] == "acl_glue:RTE:ce_scl:0:1:t0.1:diagnose" and "acl_glue:RTE:ce_scl:0:1:t0.1" in names
    for name in ("acl_glue:RTE:ce_scl:0:1:t0.1", "acl_glue:RTE:ce_scl:0:1:t0.1:diagnose"):
        (run, _), = acl_runs.stored_runs("acl_glue", "smoke", grid, tmp_path, [name])
        acl_runs.train_run(run, "smoke", grid, tmp_path)
    listed = dict((run.name, stored) for run, stored in acl_runs.stored_runs("acl_glue", "smoke", grid, tmp_path))
    point, diagnosed = listed["acl_glue:RTE:ce_scl:0:1:t0.1"], listed["acl_glue:RTE:ce_scl:0:1:t0.1:diagnose"]
    assert not isinstance(listed["acl_glue:RTE:ce_scl:1"], Waiting)
    assert point.key != diagnosed.key and "diagnosis" not in point.train()["result"]
    found = diagnosed.train()["result"]
    assert found["accuracy"] == point.train()["result"]["accuracy"]
    assert diagnosed.history()["ce"].dropna().tolist() == point.history()["ce"].dropna().tolist()
    from bertsent.encode.backbones import backbone_path
    from bertsent.experiments.runs import model_at

    parameters = resolve_parameters("acl_glue", "smoke", grid)
    model = model_at(backbone_path(parameters["backbone"]))
    settings = acl_runs._run_settings(PageRun("acl_glue", "RTE", "ce_scl", 0, 1.0, temperature=0.1, diagnose=True),
                                      parameters, model, tmp_path)
    table = acl.grid_diagnosis(model, parameters["diagnose_grid_points"], parameters["grid_seeds"],
                               parameters["max_train_examples"], None, tmp_path, parameters["angle_every"],
                               **settings)  # reads the stored run: nothing is trained again
    assert list(table["split"]) == ["train", "dev"] and table["score"].iloc[1] == pytest.approx(found["accuracy"])
    assert table["examples"].iloc[0] == found["train_examples"]

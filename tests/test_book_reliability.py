"""What the runner refuses before any work, and what it notices afterwards: an ``--output`` inside the repository,
an output folder it cannot write, a partial notebook beside the book's page, a stored run edited since its page
ran (``status``), and the "untouched" message computed from what was written."""
import json
import os
import shutil

import pytest

from bertsent import book
from bertsent.book import load_config, resolve_parameters, run_fingerprint
from bertsent.experiments import store
from bertsent.paths import CACHE_DIR, REPO_ROOT


def _no_kernel(monkeypatch):
    import papermill

    def execute(*_, **__):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(papermill, "execute_notebook", execute)


@pytest.mark.parametrize("output", [".", "book/sg-opt", "results", "notebooks", ".cache"])
def test_an_output_inside_the_repository_is_refused_in_one_line(output, monkeypatch, capsys):
    _no_kernel(monkeypatch)
    monkeypatch.chdir(REPO_ROOT)
    assert book.main(["run", "layer_pooling", "--profile", "smoke", "--output", output]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "is inside the repository" in error and "fix:" in error, error


def test_a_new_folder_under_cache_or_one_outside_is_accepted(tmp_path):
    book.check_output_choice(tmp_path / "anywhere")
    book.check_output_choice(CACHE_DIR / "reruns" / "never-made-by-this-test-x1")
    previous = tmp_path / "previous"
    previous.mkdir()
    book.check_output_choice(previous)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through folder permissions")
def test_a_read_only_output_folder_is_refused_before_a_kernel_starts(tmp_path, monkeypatch, capsys):
    _no_kernel(monkeypatch)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert book.main(["run", "layer_pooling", "--profile", "smoke", "--output", str(locked / "out")]) == 2
    finally:
        locked.chmod(0o700)
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "is not writable" in error


def test_an_output_folder_that_is_a_file_or_unwritable_is_refused(tmp_path, monkeypatch):
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(book.ParameterError, match="is a file, not a folder"):
        book.check_output_folder(file / "out")
    monkeypatch.setattr(os, "access", lambda *_: False)  # as for a user without write access (the tests may run as root)
    with pytest.raises(book.ParameterError, match="is not writable by this user"):
        book.check_output_folder(tmp_path / "out")


def test_the_partial_notebook_of_a_book_page_lives_under_cache():
    page = REPO_ROOT / load_config()["notebooks"]["layer_pooling"]["output"]
    partial = book.partial_notebook(page)
    assert partial.is_relative_to(CACHE_DIR) and partial.name.endswith(".running.ipynb")
    assert not partial.is_relative_to(REPO_ROOT / "book")


def test_a_failed_canonical_run_leaves_nothing_in_book(monkeypatch, tmp_path, capsys):
    import papermill

    page = REPO_ROOT / load_config()["notebooks"]["contrastive_in_ten_minutes"]["output"]
    before = sorted(p.name for p in page.parent.iterdir())
    seen = []

    def execute(source, output, **_):
        seen.append(output)
        open(output, "w").write("{}")  # papermill saves the partial notebook after every cell
        raise KeyboardInterrupt

    monkeypatch.setattr(papermill, "execute_notebook", execute)
    assert book.main(["run", "contrastive_in_ten_minutes", "--force"]) == 1
    assert sorted(p.name for p in page.parent.iterdir()) == before
    assert seen and os.path.realpath(seen[0]).startswith(os.path.realpath(CACHE_DIR))
    assert "interrupted" in capsys.readouterr().err
    os.unlink(seen[0])


def _copy_glue_run(root):
    source = next((REPO_ROOT / "results" / "runs" / "glue").glob("*-RTE-*/train.json")).parent
    shutil.copytree(source, root / "glue" / source.name)
    shutil.copy(source.parent / "index.csv", root / "glue" / "index.csv")
    return store.StoredRun("glue", source.name, root)


def test_status_notices_an_edited_stored_run(monkeypatch, tmp_path):
    """A page's record lists the stored runs it read with the sha256 of each one's manifest: editing one of them
    makes the page out of date, and reading it fails in one line."""
    config = load_config()
    entry = config["notebooks"]["acl_glue"]
    output = tmp_path / "executed.ipynb"
    output.write_text("{}")
    config["notebooks"]["acl_glue"] = {**entry, "output": str(output)}
    monkeypatch.setattr(book, "load_config", lambda *_: config)
    monkeypatch.setattr(book, "RUNS_DIR", tmp_path)
    run = _copy_glue_run(tmp_path)
    parameters = resolve_parameters("acl_glue", "quick", config=config)
    record = {"fingerprint": run_fingerprint(REPO_ROOT / entry["source"], parameters), "profile": "quick",
              "finished": "now", "outputs": [], "parameters": parameters,
              "stored_runs": {run.name: run.verify()}}
    (tmp_path / "acl_glue.json").write_text(json.dumps(record))
    fresh, words = book.page_status("acl_glue", config)
    assert fresh, words
    train = run.directory / "train.json"
    train.write_text(train.read_text().replace('"best_dev": ', '"best_dev": 1', 1))
    fresh, words = book.page_status("acl_glue", config)
    assert not fresh and words.startswith(f"stored run {run.name} changed since it ran"), words
    with pytest.raises(store.StoreError, match="train.json differs from its manifest.csv"):
        run.train()


def test_a_run_missing_when_the_page_ran_makes_it_out_of_date_once_stored(monkeypatch, tmp_path):
    """A page that renders the runs stored so far (the frozen-encoder arm lists the others as missing) records the
    runs it did not find; storing one of them later makes the page out of date."""
    monkeypatch.setattr(book, "RUNS_DIR", tmp_path)
    source = REPO_ROOT / load_config()["notebooks"]["acl_glue"]["source"]
    name = f"glue/{next((REPO_ROOT / 'results' / 'runs' / 'glue').glob('*-RTE-*/train.json')).parent.name}"
    record = {"stored_runs": {name: store.MISSING_RUN}}
    assert book.stored_runs_changed(record, source) is None
    run = _copy_glue_run(tmp_path)
    assert run.name == name
    assert book.stored_runs_changed(record, source) == f"stored run {name} was missing when the page ran and is stored now"
    record = {"stored_runs": {name: run.verify()}}
    assert book.stored_runs_changed(record, source) is None


def test_a_record_without_its_runs_is_out_of_date_when_any_stored_run_fails(monkeypatch, tmp_path):
    monkeypatch.setattr(book, "RUNS_DIR", tmp_path)
    run = _copy_glue_run(tmp_path)
    source = REPO_ROOT / load_config()["notebooks"]["acl_glue"]["source"]
    assert book.stored_runs_changed({}, source) is None
    (run.directory / "history.csv").unlink()
    assert "a stored run fails verification (stored run glue/" in book.stored_runs_changed({}, source)
    teaching = REPO_ROOT / load_config()["notebooks"]["contrastive_in_ten_minutes"]["source"]
    assert book.stored_runs_changed({}, teaching) is None  # a page that reaches no stored run


def test_the_untouched_message_is_computed_from_what_changed(monkeypatch, tmp_path):
    before = book._book_snapshot()
    assert book._changed_since(before) == []
    some = next(iter(before))
    before[some] = (-1, -1)
    assert book._changed_since(before) == [some]


@pytest.mark.parametrize("notebook,overrides,words", [
    ("layer_pooling", {"max_pairs": -5}, "'max_pairs' of layer_pooling: expected a size of at least 1, got -5"),
    ("layer_pooling", {"max_pairs": 0}, "expected a size of at least 1, got 0"),
    ("layer_pooling", {"backbones": []}, "an empty list leaves the page nothing to compute"),
    ("layer_pooling", {"backbones": ["no-such-model"]}, "unknown backbone 'no-such-model'"),
    ("sg_opt_sts", {"config": {"learning_rate": "fast"}}, "field 'learning_rate' of SelfGuidedConfig expected a number"),
    ("sg_opt_sts", {"config": {"batch_size": 0}}, "field 'batch_size': expected a size of at least 1"),
    ("sg_opt_sts", {"config": {"max_steps": -3}}, "field 'max_steps': expected a size of at least 1, got -3"),
    ("sg_opt_sts", {"config": {"temperature": 0}}, "field 'temperature': expected a number above 0, got 0"),
    ("acl_glue", {"seeds": []}, "'seeds' of acl_glue: an empty list"),
    ("acl_glue", {"methods": ["ce", "acll"]}, "unknown value the string 'acll'; known: acl, acl_embed, ce, ce_scl"),
    ("acl_glue", {"learning_rate": {"CoLA": -1}}, "expected a number above 0, got -1"),
])
def test_values_out_of_range_are_refused_before_any_work(notebook, overrides, words, monkeypatch, capsys):
    with pytest.raises(book.ParameterError) as caught:
        resolve_parameters(notebook, "smoke", overrides)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    _no_kernel(monkeypatch)
    argv = ["run", notebook, "--profile", "smoke"]
    for key, value in overrides.items():
        argv += ["-p", key, json.dumps(value)]
    assert book.main(argv) == 2
    assert words in capsys.readouterr().err


def test_every_profile_passes_the_range_checks():
    config = load_config()
    for name in config["notebooks"]:
        for profile in config["profiles"]:
            resolve_parameters(name, profile, config=config)


def test_the_notebooks_check_cell_applies_the_ranges():
    namespace = {**book.notebook_parameters(REPO_ROOT / load_config()["notebooks"]["layer_pooling"]["source"]),
                 "max_pairs": 0}
    with pytest.raises(book.ParameterError, match="expected a size of at least 1, got 0"):
        book.check_page_parameters("layer_pooling", namespace)


@pytest.mark.parametrize("argv,words", [
    (["--max-steps", "-5"], "--max-steps: expected a size of at least 1, got -5"),
    (["--learning-rate", "0"], "--learning-rate: expected a number above 0"),
    (["--batch-size", "0"], "--batch-size: expected a size of at least 1, got 0"),
    (["--dev-pairs", "0"], "--dev-pairs: expected a size of at least 1"),
])
def test_the_self_guided_command_line_checks_values_before_any_work(argv, words, capsys, tmp_path):
    from bertsent.training import self_guided

    with pytest.raises(SystemExit) as caught:
        self_guided.main(["--backbone", "all-minilm-l6-v2", "--output", str(tmp_path), *argv])
    assert caught.value.code == 2 and words in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_an_unknown_backbone_is_refused_without_the_hub(capsys, tmp_path, monkeypatch):
    from bertsent.training import self_guided

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SystemExit):
        self_guided.main(["--backbone", "no-such-model", "--output", str(tmp_path)])
    assert "unknown backbone 'no-such-model'" in capsys.readouterr().err
    book.check_backbone_name("sentence-transformers/all-MiniLM-L6-v2")  # a hub id passes to the loader


# --- a canonical run publishes its page and its results/ together, once the page has finished -------------------

def _tiny_book(tmp_path, monkeypatch, fails: bool):
    """A one-table page run canonically in a book of its own: ``book/``, ``results/`` and the staging folder under
    ``tmp_path``, each holding an earlier run's files; its kernel is a real one. Returns (page, table)."""
    import nbformat

    cells = [nbformat.v4.new_code_cell('profile = "quick"\nresults_dir = None'),
             nbformat.v4.new_code_cell("import pandas as pd\nfrom bertsent.report.tables import results_path, "
                                       "write_table\nwrite_table(pd.DataFrame({'value': [2]}), "
                                       "results_path(results_dir, 'staging-test', 'table.csv'))")]
    cells[0].metadata["tags"] = ["parameters"]
    if fails:
        cells.append(nbformat.v4.new_code_cell("raise RuntimeError('after the table')"))
    source = tmp_path / "tiny.ipynb"
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, source)
    page, table = tmp_path / "book" / "tiny.ipynb", tmp_path / "results" / "staging-test" / "table.csv"
    page.parent.mkdir()
    page.write_text("the earlier page")
    table.parent.mkdir(parents=True)
    table.write_text("value\n1\n")
    config = {"notebooks": {"tiny": {"source": str(source), "output": str(page)}}, "profiles": {"quick": {}}}
    monkeypatch.setattr(book, "load_config", lambda *_: config)
    monkeypatch.setattr(book, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(book, "RUNS_DIR", tmp_path / "results" / "runs")
    monkeypatch.setattr(book, "STAGING_DIR", tmp_path / "staging")
    return page, table


@pytest.mark.parametrize("how", ["a cell raises", "Ctrl-C"])
def test_a_canonical_run_that_stops_after_writing_a_table_changes_neither_page_nor_results(how, tmp_path,
                                                                                           monkeypatch, capsys):
    from bertsent.report.io import STAGING_VARIABLE

    page, table = _tiny_book(tmp_path, monkeypatch, fails=how == "a cell raises")
    if how == "Ctrl-C":  # the kernel's part, as the staged table is all that matters here
        import papermill

        def execute(source, output, **_):
            staged = os.path.join(os.environ[STAGING_VARIABLE], "staging-test", "table.csv")
            os.makedirs(os.path.dirname(staged))
            open(staged, "w").write("value\n2\n")
            raise KeyboardInterrupt

        monkeypatch.setattr(papermill, "execute_notebook", execute)
    assert book.main(["run", "tiny", "--force"]) == 1
    error = capsys.readouterr().err.strip()
    staging = tmp_path / "staging" / "tiny"
    assert len(error.splitlines()) == 1, error
    assert ("raised RuntimeError: after the table" if how == "a cell raises" else "tiny: interrupted") in error
    assert f"book/ and results/ are as they were, the result files it wrote wait unpublished in {staging}/" in error
    assert page.read_text() == "the earlier page" and table.read_text() == "value\n1\n"
    assert not (tmp_path / "results" / "runs" / "tiny.json").exists()
    assert (staging / "staging-test" / "table.csv").read_text() == "value\n2\n"
    assert not (REPO_ROOT / "results" / "staging-test").exists()  # the kernel never wrote the book's results/
    assert STAGING_VARIABLE not in os.environ
    if how == "a cell raises":  # a staged table counts as the page's output, where it will be published
        monkeypatch.setattr(book, "RESULTS_DIR", REPO_ROOT / "results")
        partial = book.partial_notebook(page)
        assert book._outputs_of(partial, staging) == [REPO_ROOT / "results" / "staging-test" / "table.csv"]


def test_a_canonical_run_that_finishes_publishes_page_results_and_record(tmp_path, monkeypatch, capsys):
    import nbformat

    page, table = _tiny_book(tmp_path, monkeypatch, fails=False)
    assert book.main(["run", "tiny", "--force"]) == 0
    assert table.read_text() == "value\n2\n"
    executed = nbformat.read(page, as_version=4)
    assert "wrote results/staging-test/table.csv" in [output.get("text", "").strip() for cell in executed.cells
                                                      for output in cell.get("outputs", [])]
    record = json.loads((tmp_path / "results" / "runs" / "tiny.json").read_text())
    assert record["notebook"] == "tiny" and record["profile"] == "quick"
    assert not (tmp_path / "staging" / "tiny").exists() and not book.partial_notebook(page).exists()
    assert not list(tmp_path.rglob("*.publishing"))
    assert not (REPO_ROOT / "results" / "staging-test").exists()


def _staged_run(tmp_path):
    staging, results = tmp_path / "staging", tmp_path / "results"
    for relative in ("a.csv", "sub/b.csv"):
        for root, text in ((staging, "new"), (results, "old")):
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text)
    executed, page = tmp_path / "page.running.ipynb", tmp_path / "book" / "page.ipynb"
    executed.write_text("new page")
    page.parent.mkdir()
    page.write_text("old page")
    return staging, results, executed, page


def test_publishing_puts_the_results_first_then_the_page_then_its_record(tmp_path, monkeypatch):
    staging, results, executed, page = _staged_run(tmp_path)
    monkeypatch.setattr(book, "RESULTS_DIR", results)
    replaced, replace = [], os.replace

    def recording(source, target):
        replaced.append(os.path.relpath(target, tmp_path))
        replace(source, target)

    monkeypatch.setattr(os, "replace", recording)
    book.publish_page("page", staging, executed, page, results / "runs" / "page.json", {"notebook": "page"})
    assert replaced == ["results/a.csv", "results/sub/b.csv", "book/page.ipynb", "results/runs/page.json"]
    assert [(results / r).read_text() for r in ("a.csv", "sub/b.csv")] == ["new", "new"]
    assert page.read_text() == "new page" and not staging.exists()


def test_a_publication_that_cannot_be_prepared_changes_nothing(tmp_path, monkeypatch):
    """Where .cache is on another file system each file is first copied beside its target; a copy that fails (a
    full disk) leaves every target as it was, the staged files where they were, and no copy behind."""
    import shutil

    staging, results, executed, page = _staged_run(tmp_path)
    monkeypatch.setattr(book, "RESULTS_DIR", results)
    monkeypatch.setattr(book, "_same_file_system", lambda *_: False)
    copies, copy = [], shutil.copyfile

    def failing(source, target):
        copies.append(target)
        if len(copies) == 2:
            raise OSError(28, "No space left on device")
        return copy(source, target)

    monkeypatch.setattr(shutil, "copyfile", failing)
    with pytest.raises(book.NotebookFailed) as caught:
        book.publish_page("page", staging, executed, page, results / "runs" / "page.json", {"notebook": "page"})
    assert "publishing it failed" in str(caught.value) and "book/ and results/ are as they were" in str(caught.value)
    assert [(results / r).read_text() for r in ("a.csv", "sub/b.csv")] == ["old", "old"]
    assert page.read_text() == "old page" and (staging / "a.csv").read_text() == "new"
    assert not list(tmp_path.rglob("*.publishing")) and not (results / "runs" / "page.json").exists()
    monkeypatch.setattr(shutil, "copyfile", copy)
    book.publish_page("page", staging, executed, page, results / "runs" / "page.json", {"notebook": "page"})
    assert [(results / r).read_text() for r in ("a.csv", "sub/b.csv")] == ["new", "new"]
    assert page.read_text() == "new page" and not list(tmp_path.rglob("*.publishing"))

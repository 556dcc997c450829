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

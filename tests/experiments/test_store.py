"""The run store's verification (``bertsent.experiments.store``): every committed run has a manifest of its files,
and a run that was altered (a value, a type, a field, a truncated file, a missing file, a duplicated index row)
stops its reader with one line naming the run, the file and the fix, before any page or CSV is written."""
import json
import shutil

import pandas as pd
import pytest

from bertsent.experiments import store
from bertsent.experiments.store import StoredRun, StoreError
from bertsent.paths import REPO_ROOT, RESULTS_DIR


def _snapshot():
    """Every file under book/ and results/ with its size and modification time."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns)
            for top in (REPO_ROOT / "book", RESULTS_DIR) for p in top.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def before():
    return _snapshot()


def _committed_glue_run():
    for train in sorted((RESULTS_DIR / "runs" / "glue").glob("*-RTE-lr0.0001-s1-*/train.json")):
        if json.loads(train.read_text())["dev_metric"] == "accuracy":
            return train.parent
    pytest.skip("no committed RTE run to copy")


@pytest.fixture
def copy(tmp_path):
    """A copy of one committed GLUE run and its kind's index, under tmp_path/runs/glue."""
    source = _committed_glue_run()
    target = tmp_path / "runs" / "glue"
    shutil.copytree(source, target / source.name)
    shutil.copy(source.parent / "index.csv", target / "index.csv")
    return StoredRun.at("glue", source.name, tmp_path)


def _edit_train(run, change, rewrite_manifest=True, text=False):
    """Apply ``change`` to the copy's train.json (as parsed JSON, or as ``text``)."""
    path = run.directory / "train.json"
    path.write_text(change(path.read_text()) if text else json.dumps(change(json.loads(path.read_text())), indent=2))
    if rewrite_manifest:  # the schema is checked on its own, also where the manifest agrees with the edit
        store.write_manifest(run.directory)


def _fails(run, *words):
    with pytest.raises(StoreError) as caught:
        run.train()
    message = str(caught.value)
    assert "\n" not in message and f"stored run glue/{run.key}" in message and "Fix:" in message, message
    for word in words:
        assert word in message, message
    return message


def test_every_committed_run_verifies():
    runs = store.all_runs()
    assert len(runs) > 100
    for run in runs:
        assert (run.directory / store.MANIFEST).is_file(), run.name
        run.verify()


def test_an_untouched_copy_reads(copy):
    assert copy.train()["result"]["accuracy"] == copy.train()["best_dev"]
    assert "step" in copy.history()


def _set_accuracy(train):
    train["result"]["accuracy"] = 96.0
    return train


def test_a_changed_value_is_caught_by_the_manifest(copy):
    _edit_train(copy, _set_accuracy, rewrite_manifest=False)
    _fails(copy, "train.json differs from its manifest.csv", "git checkout --", copy.key)


def test_a_changed_value_is_caught_by_its_repeats_even_with_the_manifest_rewritten(copy):
    _edit_train(copy, _set_accuracy)
    _fails(copy, "train.json", "result.accuracy 96.0 differs from best_dev")


def test_a_wrong_type(copy):
    def to_text(train):
        train["best_dev"] = str(train["best_dev"])
        return train
    _edit_train(copy, to_text)
    _fails(copy, "train.json field 'best_dev' should be a number")


def test_a_missing_field(copy):
    _edit_train(copy, lambda train: {k: v for k, v in train.items() if k != "result"})
    _fails(copy, "train.json has no field 'result'")


def test_a_truncated_json(copy):
    _edit_train(copy, lambda text: text[: len(text) // 2], text=True)
    _fails(copy, "train.json is not valid JSON")


def test_a_duplicate_key_in_json(copy):
    _edit_train(copy, lambda text: text.replace('"best_step":', '"best_dev": 96.0,\n  "best_step":', 1), text=True)
    _fails(copy, "train.json is not valid JSON", "duplicate key(s) ['best_dev']")


def test_a_missing_file(copy):
    (copy.directory / "history.csv").unlink()
    _fails(copy, "history.csv is missing")
    with pytest.raises(StoreError, match="history.csv is missing"):
        copy.history()


def test_a_missing_train_json_is_not_taken_for_an_unfinished_run(copy):
    (copy.directory / "train.json").unlink()
    assert copy.exists  # its manifest lists it: reading says so, rather than training the run again
    _fails(copy, "train.json is missing")


def test_a_file_the_manifest_does_not_list(copy):
    (copy.directory / "extra.csv").write_text("a\n1\n")
    _fails(copy, "extra.csv is not in its manifest.csv")


def test_a_duplicate_index_row(copy):
    index = copy.root / "glue" / "index.csv"
    lines = index.read_text().splitlines(keepends=True)
    row = next(line for line in lines if line.startswith(copy.key + ","))
    index.write_text("".join(lines) + row)
    message = _fails(copy, "index.csv lists", "2 times", "python -m bertsent.experiments.store index glue")
    assert copy.key in message


def test_an_index_row_that_disagrees_with_train_json(copy):
    index = copy.root / "glue" / "index.csv"
    table = pd.read_csv(index, dtype=str, keep_default_na=False)
    table.loc[table["key"] == copy.key, "best_dev"] = "96.0"
    table.to_csv(index, index=False)
    _fails(copy, "index.csv says best_dev '96.0'")


def test_the_key_must_hash_its_identity(copy):
    def other_seed(train):
        train["identity"]["config"]["seed"] = 99
        return train
    _edit_train(copy, other_seed)
    _fails(copy, "'identity' does not hash to the key's")


def test_a_run_without_manifest_says_how_to_write_one(copy):
    (copy.directory / store.MANIFEST).unlink()
    with pytest.raises(StoreError, match=r"manifest.csv is missing .*python -m bertsent.experiments.store manifest "
                                         r"glue/"):
        copy.train()


def test_scores_are_verified_and_added_scores_are_listed(copy, tmp_path):
    copy.add_scores("extra", {"n": 1}, pd.DataFrame({"x": [1.5]}))
    assert copy.scores("extra", {"n": 1})["x"].tolist() == [1.5]
    copy.verify()  # the new file and evaluations.json are in the manifest
    written = next(copy.directory.glob("extra-*.csv"))
    written.write_text("x\n2.5\n")
    with pytest.raises(StoreError, match=f"{written.name} differs from its manifest.csv"):
        copy.scores("extra", {"n": 1})
    with pytest.raises(StoreError):  # adding to an altered run does not bless the alteration
        copy.add_scores("more", {"n": 2}, pd.DataFrame({"x": [1.0]}))


def test_reads_are_logged_for_the_page_that_made_them(copy, tmp_path, monkeypatch):
    log = tmp_path / "reads.txt"
    monkeypatch.setattr(store, "_LOGGED", set())
    monkeypatch.setenv(store.READ_LOG_VARIABLE, str(log))
    copy.train()
    copy.history()
    name, digest = log.read_text().split()
    assert name == f"glue/{copy.key}" and digest == store.stored_run_digest(copy.root, name)
    (copy.directory / "history.csv").write_text("step\n0\n")
    assert store.stored_run_digest(copy.root, name) is None


def test_a_run_looked_for_and_not_found_is_logged_as_missing(copy, tmp_path, monkeypatch):
    log = tmp_path / "reads.txt"
    monkeypatch.setattr(store, "_LOGGED", set())
    monkeypatch.setenv(store.READ_LOG_VARIABLE, str(log))
    absent = store.StoredRun("glue", "not-trained-yet-0123456789", copy.root)
    assert not absent.exists and not absent.exists
    assert copy.exists
    assert log.read_text().splitlines() == [f"glue/not-trained-yet-0123456789 {store.MISSING_RUN}"]


def test_the_command_line_verifies_and_names_the_failing_run(copy, capsys):
    assert store.main(["--results-dir", str(copy.root.parent), "verify"]) == 0
    (copy.directory / "history.csv").unlink()
    assert store.main(["--results-dir", str(copy.root.parent), "verify"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith(f"stored run glue/{copy.key}: history.csv is missing") and out[-1].startswith("0 of 1")


def test_nothing_under_book_or_results_changed(before):
    assert _snapshot() == before

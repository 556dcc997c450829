"""The notebook runner: smoke runs of every notebook, parameter checks, result reuse."""
import json

import nbformat
import pandas as pd
import pytest

from bertsent import book
from bertsent.book import ParameterError, load_config, resolve_parameters, run_fingerprint, run_notebook
from bertsent.paths import REPO_ROOT


@pytest.mark.parametrize("name", list(load_config()["notebooks"]))
def test_smoke_run(name, tmp_path):
    source = REPO_ROOT / load_config()["notebooks"][name]["source"]
    overrides = {"runs_dir": str(tmp_path / "runs")} if "runs_dir" in book.notebook_parameters(source) else {}
    executed = run_notebook(name, "smoke", overrides, output=tmp_path / f"{name}.ipynb",
                            results_dir=tmp_path / "results", log=lambda *_: None)
    notebook = nbformat.read(executed, as_version=4)
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    csvs = list((tmp_path / "results").rglob("*.csv"))
    assert csvs
    for csv in csvs:
        assert len(pd.read_csv(csv)) > 0


def test_unknown_parameter_is_refused():
    with pytest.raises(ParameterError, match=r"Unknown parameter\(s\) \['batchsize'\].*batch_size"):
        resolve_parameters("layer_pooling", "quick", {"batchsize": 8})
    with pytest.raises(ParameterError, match="Unknown profile"):
        resolve_parameters("layer_pooling", "fast")
    with pytest.raises(ParameterError, match="Unknown notebook"):
        resolve_parameters("heatmap", "quick")


def test_profiles_only_set_declared_parameters():
    config = load_config()
    for profile in config["profiles"]:
        for name in config["notebooks"]:
            resolve_parameters(name, profile, config=config)  # raises on a typo in profiles.yml


def test_fingerprint_follows_parameters_and_notebook(tmp_path):
    source = REPO_ROOT / load_config()["notebooks"]["layer_pooling"]["source"]
    base = run_fingerprint(source, {"a": 1})
    assert run_fingerprint(source, {"a": 1}) == base
    assert run_fingerprint(source, {"a": 2}) != base
    copy = tmp_path / "nb.ipynb"
    copy.write_bytes(source.read_bytes() + b" ")
    assert run_fingerprint(copy, {"a": 1}) != base


def test_up_to_date_run_is_reused(monkeypatch, tmp_path):
    """A matching record and present outputs: no execution; a changed parameter: execution."""
    config = load_config()
    entry = config["notebooks"]["layer_pooling"]
    output = tmp_path / "executed.ipynb"
    output.write_text("{}")
    config["notebooks"]["layer_pooling"] = {**entry, "output": str(output)}  # absolute: REPO_ROOT / it == it
    monkeypatch.setattr(book, "load_config", lambda *_: config)
    monkeypatch.setattr(book, "RUNS_DIR", tmp_path)
    parameters = resolve_parameters("layer_pooling", "quick", config=config)
    record = {"fingerprint": run_fingerprint(REPO_ROOT / entry["source"], parameters), "profile": "quick",
              "finished": "now", "outputs": []}
    (tmp_path / "layer_pooling.json").write_text(json.dumps(record))
    import papermill

    def executed(*args, **kwargs):
        raise RuntimeError("executed")

    monkeypatch.setattr(papermill, "execute_notebook", executed)
    assert run_notebook("layer_pooling", "quick", log=lambda *_: None) == output
    with pytest.raises(RuntimeError, match="executed"):
        run_notebook("layer_pooling", "quick", {"batch_size": 7}, log=lambda *_: None)
    with pytest.raises(RuntimeError, match="executed"):
        run_notebook("layer_pooling", "quick", force=True, log=lambda *_: None)
    output.unlink()  # results gone: recompute
    with pytest.raises(RuntimeError, match="executed"):
        run_notebook("layer_pooling", "quick", log=lambda *_: None)


def test_fingerprint_covers_exactly_the_modules_a_notebook_imports():
    from bertsent.book import library_files

    source = REPO_ROOT / load_config()["notebooks"]["layer_pooling"]["source"]
    names = {p.relative_to(REPO_ROOT / "lib").as_posix() for p in library_files(source)}
    assert {"bertsent/encode/encoder.py", "bertsent/encode/pooling.py", "bertsent/encode/__init__.py",
            "bertsent/report/io.py", "bertsent/data/manifest.py", "bertsent/__init__.py"} <= names
    assert not {n for n in names if n.startswith("bertsent/losses") or n == "bertsent/book.py"}

"""Run the book's notebooks with papermill, with named parameter profiles and result reuse.

``notebooks/profiles.yml`` names each notebook (its source and the executed copy the book renders)
and the parameter profiles (``smoke``, ``quick``, ``paper``). A run records a fingerprint of
everything that determines its results in ``results/runs/<notebook>.json``: the notebook's code cells, the
resolved parameters, the data manifest, and the ``METHOD_VERSION`` of every library module the notebook
reaches through its imports (:mod:`bertsent.versions`), not the modules' text, so a refactor of the library
leaves every page up to date and a bumped version makes exactly the pages that reach it out of date. A later
build whose fingerprint matches and whose outputs are present reuses them instead of recomputing; one that
does not says why. ``--force`` recomputes. Trained runs are reused the same way, from their committed results
(:mod:`bertsent.experiments.runs`).

Command line::

    python -m bertsent.book run                              # every notebook, profile quick
    python -m bertsent.book run layer_pooling -p backbones '["all-minilm-l6-v2"]' --profile paper
    python -m bertsent.book list                             # notebooks, profiles and parameters
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import yaml

from .paths import REPO_ROOT, RESULTS_DIR
from .report.io import write_json_atomic
from .versions import code_imports, manifest_digest, method_versions, reached_modules, versions_digest

PROFILES_FILE = REPO_ROOT / "notebooks" / "profiles.yml"
RUNS_DIR = RESULTS_DIR / "runs"


class ParameterError(ValueError):
    pass


def load_config(path: Path = PROFILES_FILE) -> dict:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def notebook_parameters(source: Path) -> dict:
    """The parameters a notebook declares (its cell tagged ``parameters``), with their defaults."""
    import papermill

    # papermill reports each default as its source text; the defaults are Python literals
    return {name: ast.literal_eval(spec["default"]) for name, spec in papermill.inspect_notebook(str(source)).items()}


def resolve_parameters(name: str, profile: str, overrides: dict | None = None, config: dict | None = None) -> dict:
    """Every parameter's value: notebook defaults, then the profile's, then explicit overrides (unknown names are an error)."""
    config = config or load_config()
    if name not in config["notebooks"]:
        raise ParameterError(f"Unknown notebook {name!r}. Known: {', '.join(config['notebooks'])}.")
    if profile not in config["profiles"]:
        raise ParameterError(f"Unknown profile {profile!r}. Known: {', '.join(config['profiles'])}.")
    declared = notebook_parameters(REPO_ROOT / config["notebooks"][name]["source"])
    chosen = {"profile": profile}
    chosen.update(config["profiles"][profile].get(name, {}) or {})
    chosen.update(overrides or {})
    unknown = sorted(set(chosen) - set(declared))
    if unknown:
        raise ParameterError(
            f"Unknown parameter(s) {unknown} for notebook {name!r}. Known: {', '.join(declared)}. "
            f"Fix: check the spelling, or list them with `python -m bertsent.book list`."
        )
    return {**declared, **chosen}


class _DropLibraryImports(ast.NodeTransformer):
    """Removes the statements that import from bertsent, collecting the names they bind: where a name comes from
    is the library's layout, which the method versions cover (:func:`page_inputs`)."""

    def __init__(self):
        self.names: set[tuple] = set()

    @staticmethod
    def _library(module: str) -> bool:
        return module == "bertsent" or module.startswith("bertsent.")

    def visit_Import(self, node):
        kept = [alias for alias in node.names if not self._library(alias.name)]
        self.names.update(("import", alias.asname or "bertsent") for alias in node.names if self._library(alias.name))
        if not kept:
            return None
        node.names = kept
        return node

    def visit_ImportFrom(self, node):
        if node.level == 0 and self._library(node.module or ""):
            self.names.update(("from", alias.name, alias.asname) for alias in node.names)
            return None
        return node


def code_cells(notebook: Path) -> list[str]:
    """The sources of a notebook's code cells (markdown cells never change a result)."""
    import nbformat

    return [cell.source for cell in nbformat.read(notebook, as_version=4).cells if cell.cell_type == "code"]


def code_digest(notebook: Path) -> str:
    """sha256 of what the notebook's code does: each code cell's syntax tree (so comments and layout do not
    count), with the statements importing from bertsent replaced by the sorted set of names they import (so a
    module moving inside the library, which changes an import line, does not count either). A cell that does not
    parse (IPython magics) counts as its text."""
    digest = hashlib.sha256()
    names: set[tuple] = set()
    for source in code_cells(notebook):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            digest.update(source.encode())
            continue
        dropper = _DropLibraryImports()
        digest.update(ast.dump(dropper.visit(tree)).encode())
        names |= dropper.names
    digest.update(json.dumps(sorted(names, key=repr)).encode())
    return digest.hexdigest()


def notebook_modules(notebook: Path) -> set[str]:
    """The bertsent modules a notebook's code cells import."""
    return code_imports(code_cells(notebook))


def library_files(notebook: Path) -> list[Path]:
    """The library modules a notebook reaches: its bertsent imports, followed transitively, with the packages'
    ``__init__`` files."""
    return sorted(set(reached_modules(notebook_modules(notebook)).values()))


def page_inputs(source: Path, parameters: dict) -> dict:
    """What a page's results depend on, each as a digest: its ``code`` (:func:`code_digest`), its resolved
    ``parameters``, the data ``manifest`` (each file's path and sha256) and the ``methods``: the
    ``METHOD_VERSION`` of every library module it reaches (:mod:`bertsent.versions`), not the modules' text."""
    return {"code": code_digest(source),
            "parameters": hashlib.sha256(json.dumps(parameters, sort_keys=True).encode()).hexdigest(),
            "manifest": manifest_digest(),
            "methods": versions_digest(method_versions(notebook_modules(source)))}


def code_fingerprint(notebook: Path) -> str:
    """What a page's results depend on besides its notebook and parameters: the method versions of the library
    modules it reaches and the data manifest."""
    versions = versions_digest(method_versions(notebook_modules(notebook)))
    return hashlib.sha256(f"{versions}|{manifest_digest()}".encode()).hexdigest()


def run_fingerprint(source: Path, parameters: dict) -> str:
    """The page's fingerprint: sha256 of :func:`page_inputs`. A rename, a move, a docstring or any refactor of the
    library leaves it as it is; bumping the ``METHOD_VERSION`` of a module the page reaches changes it."""
    return hashlib.sha256(json.dumps(page_inputs(source, parameters), sort_keys=True).encode()).hexdigest()


def _stale_reason(record: dict, inputs: dict, versions: dict) -> str:
    """Which of a page's inputs changed since its record, in words (``versions``: module -> version now)."""
    recorded = record.get("inputs")
    if not recorded:
        return "recorded before pages were fingerprinted by method versions"
    words = {"code": "its code", "parameters": "its parameters", "manifest": "the data manifest",
             "methods": "the method versions it reaches"}
    changed = [words[key] for key in words if recorded.get(key) != inputs.get(key)]
    if recorded.get("methods") != inputs.get("methods"):
        before = record.get("method_versions", {})
        bumped = [f"{name} {before.get(name, '-')} -> {version}" for name, version in versions.items()
                  if before.get(name) != version and version != 1]
        if bumped:
            changed[-1] += f" ({', '.join(bumped)})"
    return ", ".join(changed) + " changed" if changed else "its outputs are missing"


def run_notebook(name: str, profile: str = "quick", overrides: dict | None = None, force: bool = False,
                 output: Path | None = None, results_dir: Path | None = None, log=print) -> Path:
    """Execute one notebook (or reuse its committed results); returns the executed notebook's path.

    With ``output``/``results_dir`` given (tests, experiments), the run goes there and is not recorded.
    """
    import papermill

    config = load_config()
    parameters = resolve_parameters(name, profile, overrides, config)  # rejects unknown names first
    entry = config["notebooks"][name]
    source = REPO_ROOT / entry["source"]
    canonical = output is None and results_dir is None
    output = Path(output) if output else REPO_ROOT / entry["output"]
    if results_dir is not None:
        parameters["results_dir"] = str(results_dir)
    inputs = page_inputs(source, parameters)
    versions = method_versions(notebook_modules(source))
    fingerprint = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()  # = run_fingerprint
    record_path = RUNS_DIR / f"{name}.json"
    if canonical and not force and record_path.is_file():
        record = json.loads(record_path.read_text())
        outputs_present = output.is_file() and all((REPO_ROOT / p).is_file() for p in record.get("outputs", []))
        if record.get("fingerprint") == fingerprint and outputs_present:
            log(f"{name}: up to date (profile {record['profile']}, run {record['finished']}); reusing its results")
            return output
        log(f"{name}: out of date: {_stale_reason(record, inputs, versions) if outputs_present else 'its outputs are missing'}")
    log(f"{name}: running {entry['source']} with profile {profile} -> {output.relative_to(REPO_ROOT) if output.is_relative_to(REPO_ROOT) else output}")
    output.parent.mkdir(parents=True, exist_ok=True)
    started = time.time()
    tmp_output = output.with_suffix(".running.ipynb")  # kept for inspection if a cell fails
    papermill.execute_notebook(str(source), str(tmp_output), parameters=parameters, cwd=str(REPO_ROOT),
                               kernel_name="python3", progress_bar=False)
    os.replace(tmp_output, output)
    seconds = time.time() - started
    if canonical:
        import torch, transformers

        written = sorted(str(p.relative_to(REPO_ROOT)) for p in _outputs_of(output))
        write_json_atomic(record_path, {
            "notebook": name, "profile": profile, "parameters": parameters, "fingerprint": fingerprint,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "seconds": round(seconds, 1), "outputs": written,
            "inputs": inputs, "method_versions": versions,
            "library_files": [str(p.relative_to(REPO_ROOT)) for p in library_files(source)],
            "versions": {"python": sys.version.split()[0], "torch": torch.__version__, "transformers": transformers.__version__},
        })
    log(f"{name}: done in {seconds:.0f} s")
    return output


def _outputs_of(executed: Path) -> list[Path]:
    """The result files a notebook reports writing: lines ``wrote <path>`` in its outputs."""
    import nbformat

    found = []
    for cell in nbformat.read(executed, as_version=4).cells:
        for out in cell.get("outputs", []):
            for line in out.get("text", "").splitlines():
                if line.startswith("wrote "):
                    found.append((REPO_ROOT / line[len("wrote "):].strip()).resolve())
    return [p for p in found if p.is_file() and p.is_relative_to(REPO_ROOT)]


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bertsent.book", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute notebooks (reusing up-to-date results)")
    run.add_argument("notebooks", nargs="*", help="names from notebooks/profiles.yml (default: all, in order)")
    run.add_argument("--profile", default="quick")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="override a parameter; VALUE is JSON (strings may be bare)")
    run.add_argument("--force", action="store_true", help="recompute even if committed results are up to date")
    sub.add_parser("list", help="show notebooks, profiles and parameters")
    args = parser.parse_args(argv)
    config = load_config()
    if args.command == "list":
        for name, entry in config["notebooks"].items():
            print(f"{name}: {entry['source']} -> {entry['output']}")
            for key, default in notebook_parameters(REPO_ROOT / entry["source"]).items():
                print(f"    {key} = {default}")
        for profile, values in config["profiles"].items():
            print(f"profile {profile}: {json.dumps(values)}")
        return 0
    names = args.notebooks or list(config["notebooks"])
    overrides = {key: _parse_value(value) for key, value in args.parameter}
    try:
        for name in names:
            run_notebook(name, args.profile, overrides, force=args.force)
    except ParameterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

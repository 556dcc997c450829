"""Run the book's notebooks with papermill, with named parameter profiles and result reuse.

``notebooks/profiles.yml`` names each notebook (its source and the executed copy the book renders)
and the parameter profiles (``smoke``, ``quick``, ``paper``). A run records a fingerprint of
everything that determines its results (the notebook, the resolved parameters, the library modules
it imports and the data manifest) in ``results/runs/<notebook>.json``; a later build whose fingerprint matches
and whose outputs are present reuses them instead of recomputing. ``--force`` recomputes.

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


def _imported_modules(code: str, package: str | None = None) -> set[str]:
    """Names of the bertsent modules that ``code`` imports (``package``: the importing module's package)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing module's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)  # "from pkg import module"
    return {name for name in found if name == "bertsent" or name.startswith("bertsent.")}


def _module_file(name: str) -> Path | None:
    base = REPO_ROOT / "lib" / Path(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def library_files(notebook: Path) -> list[Path]:
    """The library modules a notebook uses: its bertsent imports, followed transitively, with the packages'
    ``__init__`` files."""
    import nbformat

    cells = nbformat.read(notebook, as_version=4).cells
    pending = set().union(*(_imported_modules(c.source) for c in cells if c.cell_type == "code"
                            and not c.source.lstrip().startswith(("%", "!"))))
    files: dict[str, Path] = {}
    while pending:
        parts = pending.pop().split(".")
        for depth in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ too
            prefix = ".".join(parts[:depth])
            path = _module_file(prefix)
            if path is None or prefix in files:
                continue
            files[prefix] = path
            package = prefix if path.name == "__init__.py" else ".".join(parts[: depth - 1])
            pending |= _imported_modules(path.read_text(encoding="utf-8"), package) - set(files)
    return sorted(set(files.values()))


def code_fingerprint(notebook: Path) -> str:
    """Hash of the library modules a notebook uses and of the data manifest: what its results depend on
    besides the notebook itself and its parameters."""
    digest = hashlib.sha256()
    for path in library_files(notebook) + [REPO_ROOT / "data" / "manifest.csv"]:
        digest.update(path.relative_to(REPO_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def run_fingerprint(source: Path, parameters: dict) -> str:
    digest = hashlib.sha256()
    digest.update(source.read_bytes())
    digest.update(json.dumps(parameters, sort_keys=True).encode())
    digest.update(code_fingerprint(source).encode())
    return digest.hexdigest()


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
    fingerprint = run_fingerprint(source, parameters)
    record_path = RUNS_DIR / f"{name}.json"
    if canonical and not force and record_path.is_file():
        record = json.loads(record_path.read_text())
        outputs_present = output.is_file() and all((REPO_ROOT / p).is_file() for p in record.get("outputs", []))
        if record.get("fingerprint") == fingerprint and outputs_present:
            log(f"{name}: up to date (profile {record['profile']}, run {record['finished']}); reusing its results")
            return output
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

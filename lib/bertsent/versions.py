"""Method versions: what decides a result's numbers, as the library modules declare it.

Every module whose code determines numbers (a loss, a model, a pooling, the encoder, a trainer, an evaluation,
the pre-training data and masking, whitening, geometry, a table's arithmetic) declares at its top::

    METHOD_VERSION = 1  # bump when the maths changes

Results are keyed on these declarations, never on the files' contents: a book page's fingerprint
(:mod:`bertsent.book`) and a trained run's key (:mod:`bertsent.experiments.store`) cover the versions of the
modules they reach through imports, followed transitively. So a rename, a move, a docstring or a pure
refactor leaves every result up to date, and bumping one module's version makes exactly the results that reach
it out of date.

What enters a digest is the sorted list of the reached versions above 1, without the modules' names: version 1
(every module's first) adds nothing, so splitting, merging, moving or renaming modules changes no digest, while
every bump does. The version of each reached module, by name, is still recorded beside the digest for readers
(:func:`method_versions`).
"""
from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from .paths import REPO_ROOT

VERSION_NAME = "METHOD_VERSION"
LIBRARY_DIR = REPO_ROOT / "lib"
PACKAGE = "bertsent"


def imported_modules(code: str, package: str | None = None) -> set[str]:
    """Names of the bertsent modules that ``code`` imports, anywhere in it (``package``: the importing module's
    package, for relative imports). ``from pkg import name`` yields both ``pkg`` and ``pkg.name`` (which may be a
    module); names that are not modules are dropped later, when no file answers them."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing module's package
                parts = (package or "").split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {name for name in found if name == PACKAGE or name.startswith(PACKAGE + ".")}


def module_file(name: str, library_dir: Path | None = None) -> Path | None:
    """The source file of module ``name`` under ``library_dir`` (default ``lib/``), or None."""
    base = Path(library_dir or LIBRARY_DIR) / Path(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def code_imports(cells: Iterable[str]) -> set[str]:
    """The bertsent modules imported by pieces of code (notebook cells); IPython magics and shell lines skipped."""
    found: set[str] = set()
    for code in cells:
        lines = [line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))]
        try:
            found |= imported_modules("\n".join(lines))
        except SyntaxError:
            continue
    return found


def reached_modules(roots: Iterable[str], library_dir: Path | None = None) -> dict[str, Path]:
    """Module name -> file of every library module that importing ``roots`` runs: the roots, their packages'
    ``__init__`` files, and everything they import, transitively (imports inside functions included)."""
    pending = set(roots)
    files: dict[str, Path] = {}
    while pending:
        parts = pending.pop().split(".")
        for depth in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ too
            prefix = ".".join(parts[:depth])
            if prefix in files:
                continue
            path = module_file(prefix, library_dir)
            if path is None:
                continue
            files[prefix] = path
            package = prefix if path.name == "__init__.py" else ".".join(parts[: depth - 1])
            pending |= _imports_of_file(path, package) - set(files)
    return dict(sorted(files.items()))


def _imports_of_file(path: Path, package: str) -> set[str]:
    stat = path.stat()
    return set(_cached_imports(str(path), stat.st_size, stat.st_mtime_ns, package))


@lru_cache(maxsize=None)
def _cached_imports(path: str, size: int, mtime_ns: int, package: str) -> frozenset[str]:
    return frozenset(imported_modules(Path(path).read_text(encoding="utf-8"), package))


def declared_version(path: Path) -> int | None:
    """The module's ``METHOD_VERSION = <int>`` (a top-level assignment), or None when it declares none."""
    stat = path.stat()
    return _cached_version(str(path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=None)
def _cached_version(path: str, size: int, mtime_ns: int) -> int | None:
    for node in ast.parse(Path(path).read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == VERSION_NAME for t in targets):
            value = node.value
            if not (isinstance(value, ast.Constant) and isinstance(value.value, int) and value.value >= 1):
                raise ValueError(f"{path}: {VERSION_NAME} must be a literal integer >= 1.")
            return value.value
    return None


def method_versions(roots: Iterable[str], library_dir: Path | None = None) -> dict[str, int]:
    """Module name -> ``METHOD_VERSION`` of every module reached from ``roots`` that declares one."""
    versions = {}
    for name, path in reached_modules(roots, library_dir).items():
        version = declared_version(path)
        if version is not None:
            versions[name] = version
    return versions


def versions_digest(versions: dict[str, int]) -> str:
    """sha256 of the sorted versions above 1 (see the module docstring: names and version-1 modules left out)."""
    bumped = sorted(v for v in versions.values() if v != 1)
    return hashlib.sha256(json.dumps(bumped).encode()).hexdigest()


def manifest_digest(manifest_path: Path | None = None) -> str:
    """sha256 of the data manifest's content: each file's path and sha256 (sorted; sources and sizes left out, so
    a new download address changes nothing while any changed byte of the data does)."""
    import csv

    from .paths import MANIFEST_PATH

    with open(manifest_path or MANIFEST_PATH, newline="", encoding="utf-8") as handle:
        rows = sorted((row["path"], row["sha256"]) for row in csv.DictReader(handle))
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()

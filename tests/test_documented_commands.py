"""Every ``python -m bertsent...`` command the README, the book's pages and the notebooks show, exercised as written.

A command is read from the text (continuation lines joined, the trailing comment, shell redirections and leading
environment variables dropped, ``.venv/bin/python`` or ``python`` alike) and then:

* a page run (``bertsent.book run ...``) is checked by the runner itself with ``--check``: the notebook names, the
  profile, every ``-p`` name and value, the output folder, exactly as the run would check them, without executing;
  the pages' executions are the smoke runs (``tests/test_book.py``);
* the cheap read-only commands (:data:`EXECUTED`: status, list, the run stores' listings) run for real;
* every other command has its arguments parsed by its own parser, as written (a misspelt option or a missing
  argument fails), and stops there: training and downloads are exercised at smoke size by their modules' tests;
* a bare ``python -m bertsent.x`` named in prose must be a module that runs as a command.

A documented command that no longer parses fails here with the file that shows it.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

from bertsent.paths import REPO_ROOT

COMMAND = re.compile(r"(?:\.venv/bin/)?python -m (bertsent[\w.]*)([^`\n|]*)")
# placeholders the text uses in a synopsis, and what stands for them here
PLACEHOLDERS = {"NAME": "layer_pooling", "OUT": "{tmp}", "MODEL_DIR": "models/bert-mini-wiki"}
# read-only and quick: run for real (seconds each)
EXECUTED = {("bertsent.book", "status"), ("bertsent.book", "list"), ("bertsent.experiments.acl_runs", "--list"),
            ("bertsent.experiments.sts_runs", "--list")}


def _documents() -> dict[str, str]:
    texts = {"README.md": (REPO_ROOT / "README.md").read_text()}
    for path in sorted((REPO_ROOT / "book").rglob("*.md")):
        texts[str(path.relative_to(REPO_ROOT))] = path.read_text()
    for path in sorted((REPO_ROOT / "notebooks").rglob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        texts[str(path.relative_to(REPO_ROOT))] = "\n".join("".join(c["source"]) for c in cells
                                                            if c["cell_type"] == "markdown")
    return texts


def _joined(text: str) -> str:
    """Continuation lines (a trailing backslash) joined into one."""
    return re.sub(r"\\\n\s*", " ", text)


def _arguments(rest: str) -> list[str]:
    """The arguments after the module, as the shell would pass them: comment, redirections, ``&`` dropped; a
    synopsis's optional ``[...]`` parts left out."""
    rest = re.sub(r"\[(?:--[\w-]+(?: [A-Z_]+)?|[A-Z_]+(?: \.\.\.)?)\]", " ", rest)  # [NAME ...] [--skip NAME]
    words = shlex.split(rest, comments=True)
    kept = []
    for word in words:
        if word in (">", ">>", "2>", "&", "&&", ";") or word.startswith(">"):
            break
        kept.append(word)
    return kept


def documented_commands() -> dict[tuple[str, tuple[str, ...]], list[str]]:
    """(module, arguments) -> the documents that show it."""
    found: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for where, text in _documents().items():
        for match in COMMAND.finditer(_joined(text)):
            module, rest = match.group(1).rstrip("."), match.group(2)
            try:
                arguments = tuple(_arguments(rest))
            except ValueError:  # prose after an opening quote: not a command line
                continue
            found.setdefault((module, arguments), []).append(where)
    return found


COMMANDS = documented_commands()


def _label(command) -> str:
    module, arguments = command
    return " ".join((module,) + arguments)[:90]


class _Parsed(Exception):
    """Raised by the patched parser once the arguments parsed: the command would run from here."""


def _parse_only(module: str, arguments: list[str], monkeypatch) -> str | None:
    """Run ``python -m module arguments`` until its parser has read the arguments: None when they parse, else what
    the parser printed."""
    original = argparse.ArgumentParser.parse_args

    def parse_and_stop(self, args=None, namespace=None):
        parsed = original(self, args, namespace)
        raise _Parsed(parsed)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
    monkeypatch.setattr(sys, "argv", [module] + arguments)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    except _Parsed:
        return None
    except SystemExit as stop:
        return printed.getvalue() or f"exit {stop.code}"
    return "the command ran to its end without parsing arguments"


def test_the_documents_show_commands():
    assert len(COMMANDS) >= 40
    modules = {module for module, _ in COMMANDS}
    assert {"bertsent.book", "bertsent.data", "bertsent.training.long_run"} <= modules


@pytest.mark.parametrize("command", sorted(COMMANDS), ids=_label)
def test_a_documented_command_runs_as_written(command, tmp_path, monkeypatch, capsys):
    module, arguments = command
    where = ", ".join(sorted(set(COMMANDS[command])))
    arguments = [PLACEHOLDERS.get(a, a).replace("{tmp}", str(tmp_path)) for a in arguments]
    monkeypatch.chdir(REPO_ROOT)
    if not arguments:  # a module named in prose: it must run as a command
        spec = importlib.util.find_spec(module)
        assert spec is not None, f"{where} names {module}, which does not exist"
        source = Path(spec.origin).read_text() if spec.origin and spec.origin.endswith(".py") else ""
        main = importlib.util.find_spec(module + ".__main__") if spec.submodule_search_locations else None
        assert "__main__" in source or main is not None, f"{where} names {module}, which is not a command"
        return
    if module == "bertsent.book" and arguments[0] == "run":
        from bertsent.book import main

        code = main(arguments + ["--check"])
        assert code == 0, f"{' '.join(arguments)} (shown in {where}) is refused: {capsys.readouterr().err}"
        return
    if (module, arguments[0]) in EXECUTED or (module, arguments[-1]) in EXECUTED:
        with contextlib.redirect_stdout(io.StringIO()):
            code = importlib.import_module(module).main(arguments)
        # `status` exits 1 when a page is out of date, as documented; anything else is a failure
        assert code in ((0, 1) if arguments == ["status"] else (0, None)), f"{' '.join(arguments)} ({where}) failed"
        return
    problem = _parse_only(module, arguments, monkeypatch)
    assert problem is None, f"python -m {module} {' '.join(arguments)} (shown in {where}) does not parse: {problem}"


def test_a_misspelt_option_fails_the_check(monkeypatch):
    assert _parse_only("bertsent.experiments.frozen_pooler", ["list", "--backbones", "x"], monkeypatch) is None
    problem = _parse_only("bertsent.experiments.frozen_pooler", ["list", "--backbone-s", "x"], monkeypatch)
    assert "unrecognized arguments: --backbone-s" in problem
    monkeypatch.undo()  # the parser as it is
    from bertsent.book import main

    assert main(["run", "sg_opt_sts", "-p", "confg", "3", "--check"]) == 2

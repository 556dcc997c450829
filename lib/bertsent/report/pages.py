"""What an executed page shows a reader: cell tags that hide set-up code, and outputs without noise.

The runner (:mod:`bertsent.book`) applies :func:`tidy_notebook` to every executed copy it writes, so the
sources under ``notebooks/`` stay clean; ``python -m bertsent.book tidy`` applies it to pages executed before,
without re-executing them. It changes only

- cell tags, which the book's renderer (MyST-NB) reads:

  * the notebook's own ``parameters`` cell gets ``remove-cell`` when papermill injected the values used
    (``injected-parameters``): one parameters cell on the page, not two; so does the cell after it that only
    checks the parameters (``check-parameters``);
  * every other code cell gets ``hide-input``: the code sits behind a toggle, the outputs (tables, figures, the
    prose a cell writes) stay, so a page reads as results and text. A cell tagged ``show-input`` in the source keeps
    its code in view (a page that teaches a call shows it that way);

- outputs: stderr streams are dropped (warnings, progress bars, "Loading weights"), and so are progress-bar
  lines in stdout; every other output is kept as it is, byte for byte.

Cell sources are never changed, so a page's fingerprint (its source's code, :func:`bertsent.book.code_digest`)
is not either. Applying it twice changes nothing the second time.
"""
from __future__ import annotations

import re
from pathlib import Path

REMOVE, HIDE, SHOW = "remove-cell", "hide-input", "show-input"
# the cell after the parameters that only checks them (bertsent.book.check_page_parameters): nothing to read
CHECK_TAG = "check-parameters"
# A progress-bar line (tqdm and the bars transformers draws): "Loading weights:  45%|####   | 35/78 [...]",
# "12/78 [00:01<00:02, 25.1it/s]" and the like.
PROGRESS_LINE = re.compile(r"\d+%\|.*\||\d+/\d+ \[[\d:?]+<[\d:?]+|it/s\]|s/it\]|^\s*Loading weights\b")


def _add_tag(cell, tag: str) -> bool:
    tags = cell.setdefault("metadata", {}).setdefault("tags", [])
    if tag in tags:
        return False
    tags.append(tag)
    return True


def clean_stream(text: str) -> str:
    """``text`` without progress-bar lines (a line redrawn with carriage returns counts as a progress line if any
    of its states is one)."""
    kept = []
    for line in re.split(r"(?<=\n)", text):  # not splitlines(): it splits at the carriage returns too
        states = line.rstrip("\n").split("\r")
        if any(PROGRESS_LINE.search(state) for state in states):
            continue
        kept.append(line)
    return "".join(kept)


def tidy_outputs(cell) -> int:
    """Drops stderr streams and progress lines from a code cell's outputs; returns how many outputs changed."""
    changed, kept = 0, []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            if output.get("name") == "stderr":
                changed += 1
                continue
            text = output.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            cleaned = clean_stream(text)
            if cleaned != text:
                changed += 1
                if not cleaned.strip():
                    continue
                output["text"] = cleaned
        kept.append(output)
    if changed:
        cell["outputs"] = kept
    return changed


def tidy_notebook(nb) -> dict[str, int]:
    """Tags and cleans an executed notebook in place (see the module docstring); returns counts of what changed:
    ``removed`` (cells removed from the page), ``hidden`` (inputs hidden), ``outputs`` (outputs dropped or cut)."""
    cells = nb.get("cells", [])
    injected = any("injected-parameters" in c.get("metadata", {}).get("tags", []) for c in cells)
    counts = {"removed": 0, "hidden": 0, "outputs": 0}
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        if ("parameters" in tags and injected) or CHECK_TAG in tags:
            counts["removed"] += _add_tag(cell, REMOVE)
        elif SHOW not in tags:
            counts["hidden"] += _add_tag(cell, HIDE)
        counts["outputs"] += tidy_outputs(cell)
    return counts


def tidy_page(path: Path) -> dict[str, int]:
    """:func:`tidy_notebook` on a notebook file, rewritten only if something changed (the way papermill writes
    it, so nothing else in the file moves)."""
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    counts = tidy_notebook(nb)
    if any(counts.values()):
        text = nbformat.writes(nb)
        tmp = path.with_name(path.name + ".tidy")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return counts

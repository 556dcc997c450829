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
  lines in stdout; every other output is kept as it is, byte for byte. A cell whose stdout is only ``wrote <path>``
  lines (:func:`bertsent.report.tables.write_table`) gets ``remove-stdout``: the lines stay in the executed
  notebook, where the runner reads the page's result files from them for its run record, but a reader does not
  see them (the run record lists the files).

Cell sources are never changed, so a page's fingerprint (its source's code, :func:`bertsent.book.code_digest`)
is not either. Applying it twice changes nothing the second time.

It also holds the box that opens every executed page, "What we found" (:func:`findings_box`): its first cell
after the parameter checks shows a placeholder, and the page's last cell fills it in with what the page found,
computed there (the page's own results, never typed numbers): a reader sees the result first, the evidence after.
"""
from __future__ import annotations

import re
from pathlib import Path

REMOVE, HIDE, SHOW, REMOVE_STDOUT = "remove-cell", "hide-input", "show-input", "remove-stdout"
WROTE_LINE = re.compile(r"^wrote \S")
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
        if only_wrote_lines(cell):
            counts["outputs"] += _add_tag(cell, REMOVE_STDOUT)
    return counts


def only_wrote_lines(cell) -> bool:
    """Whether a code cell prints something and all of it is ``wrote <path>`` lines."""
    lines = [line for output in cell.get("outputs", [])
             if output.get("output_type") == "stream" and output.get("name") == "stdout"
             for line in _text(output).splitlines() if line.strip()]
    return bool(lines) and all(WROTE_LINE.match(line) for line in lines)


def _text(output) -> str:
    text = output.get("text", "")
    return "".join(text) if isinstance(text, list) else text


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


FINDINGS_TITLE = "What we found"
# what the box says until the page's last cell fills it in: a page stopped early shows this, never a stale finding
FINDINGS_PENDING = ("The page's findings appear here once its last cell has run; this page stopped before it "
                    "(re-execute it: `.venv/bin/python -m bertsent.book run NAME`).")
# above this many claims the box shows the count and keeps the per-claim lines in a collapsed list, so the box stays
# a few lines tall on a claims page of 70 claims
FINDINGS_LINES_SHOWN = 6


def findings_text(headline: str, *boxes: str) -> str:
    """The "What we found" box (a MyST admonition): ``headline`` (one sentence the page computed from its own
    results), then for each verdict box (:func:`bertsent.report.claims.verdict_box`) the count of its verdicts and
    its claim lines, collapsed under the count when there are more than :data:`FINDINGS_LINES_SHOWN`. Empty boxes
    (a page with no claim) add nothing; a box given as plain text is shown as it is."""
    parts = [headline.strip()]
    for box in boxes:
        if not box:
            continue
        lines, tally = getattr(box, "lines", None), getattr(box, "tally", "")
        if lines is None:
            parts.append(str(box))
            continue
        parts.append(f"**{tally}**" if tally else "")
        if len(lines) <= FINDINGS_LINES_SHOWN:
            parts.append("\n".join(lines))
        else:
            parts.append("\n".join([f"```{{admonition}} Claim by claim ({len(lines)})", ":class: dropdown",
                                    *lines, "```"]))
    body = "\n\n".join(part for part in parts if part)
    # four backticks: the claim list's own admonition nests inside
    return "\n".join([f"````{{admonition}} {FINDINGS_TITLE}", ":class: important", body, "````"])


def verdict_headline(box: str, judged_on: str = "this page") -> str:
    """One sentence from a verdict box's counts: how many claims hold (reproduced, larger than the paper's, or in
    its direction only), how many are not reproduced, and how many this book cannot decide (within noise, noise not
    measured, at or against a floor, not testable here, explained by a control). Empty for a box without claims.

    It asks the box (:class:`bertsent.report.claims.VerdictBox`) which verdicts hold instead of importing the
    claims module: the runner imports this module, the training paths import the runner, and every module an
    import statement reaches enters the run keys (:mod:`bertsent.versions`)."""
    total = sum(getattr(box, "counts", {}).values())
    if not total:
        return ""
    held, failed = box.held(), box.failed()
    open_ = total - held - failed
    return (f"Of the {total} claim{'s' if total != 1 else ''} of the paper judged on {judged_on}, {held} "
            f"hold{'s' if held == 1 else ''} (reproduced, larger than the paper's, or in its direction), {failed} "
            f"{'is' if failed == 1 else 'are'} not reproduced, and {open_} cannot be decided here (within the noise, "
            f"at a floor, or not testable on this book's models).")


class FindingsBox:
    """The placeholder :func:`findings_box` displayed; :meth:`update` replaces it in place (the executed page keeps
    the update in the placeholder's cell, so the box stays at the top)."""

    def __init__(self, handle):
        self._handle = handle

    def update(self, headline: str, *boxes: str) -> None:
        """Fills the box in (see :func:`findings_text`). Returns nothing: a page's last cell ends with this call, and a
        returned value would be shown there a second time."""
        from IPython.display import Markdown

        self._handle.update(Markdown(findings_text(headline, *boxes)))


def findings_box() -> FindingsBox:
    """Displays the "What we found" placeholder where it is called (a page's first cell after the parameter
    checks) and returns it; the page's last cell calls ``.update(headline, verdict_box(...))``."""
    from IPython.display import Markdown, display

    return FindingsBox(display(Markdown(findings_text(FINDINGS_PENDING)), display_id=True))

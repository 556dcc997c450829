"""What a reader meets first and what they never should, checked on the built HTML.

- Every executed page opens with its "What we found" box (:func:`bertsent.report.pages.findings_box`): the first
  output of the page, filled in by the page's last cell (not the placeholder a page that stopped early shows).
  The prose pages measure nothing of their own; :data:`PAGES_WITHOUT_FINDINGS` lists them, each with why.
- No table shows pandas' row numbers (``display(readable(frame))`` leaves them out).
- No "wrote results/..." line is in view (the runner hides them: :func:`bertsent.report.pages.tidy_notebook`).
- No internal reference: the project's notes (``paper-targets.md``, ``papers-*.md``, ``../shared/reference``), a
  "digest", an issue. A reader gets the paper, its table and its section instead.

The book is built once from the committed pages (``tests/test_built_html.py``'s fixture: execution off, about
10-30 s). A page that ``python -m bertsent.book status`` calls out of date (its re-execution waits, e.g. for an
embedding cache or for runs to train again) is excused from the first three checks until it is re-executed, and
each excused page is named in a warning and printed; an up-to-date page is never excused. Internal references are
not excused in prose (``.md`` pages), only in the outputs of an out-of-date page.
"""
import re
import warnings

import pytest
from bs4 import BeautifulSoup

from bertsent.paths import REPO_ROOT
from bertsent.report.pages import FINDINGS_PENDING, FINDINGS_TITLE
from tests.test_built_book import out_of_date_pages
from tests.test_built_html import NOTEBOOK_PAGES, html, page, toc_pages  # noqa: F401 - html: the built book

# The book's prose pages measure nothing themselves, so they have no findings box: each with why.
PAGES_WITHOUT_FINDINGS = {
    "book/intro": "the book's front page: the chapters and the book-wide count of verdicts the claims pages write",
    "book/status": "when each page last ran and what re-running it costs: no measurement",
    "book/rerun": "how to re-run a page: commands, no measurement",
    "book/code": "the library's layout and its commands: no measurement",
    "book/teaching/index": "a chapter index: links to the teaching page and the course plan",
    "book/teaching/course_plan": "a lesson plan; the times it gives are measured on the status page",
    "book/sg-opt/index": "a chapter index: its claims page opens with the chapter's findings",
    "book/geometry/index": "a chapter index: its claims page opens with the chapter's findings",
    "book/bert/index": "a chapter index: its claims page opens with the chapter's findings",
    "book/attention-pooling/index": "a chapter index: its claims page opens with the chapter's findings",
    "book/aligned-contrastive/index": "a chapter index: its claims page opens with the chapter's findings",
    "book/sg-opt/method": "the method as implemented, with exercises: equations and code, no measurement",
    "book/attention-pooling/method": "the method as implemented, with exercises: equations and code, no measurement",
    "book/aligned-contrastive/method": "the method as implemented, with exercises: equations and code, no measurement",
}
INTERNAL_REFERENCE = re.compile(r"paper-targets\.md|papers-[\w-]+\.md|shared/(?:reference|papers)\b|\bdigest papers"
                                r"|\bthe issue(?:'s|’s)?\b|\bissue #?\d+", re.I)
WROTE_LINE = re.compile(r"^\s*wrote \S+", re.M)


def main_of(soup: BeautifulSoup):
    return soup.find("main") or soup


def findings_problem(soup: BeautifulSoup) -> str | None:
    """Why the page does not open with a filled-in findings box, or None when it does."""
    outputs = [o for o in main_of(soup).find_all("div", class_="cell_output") if o.get_text(strip=True)]
    if not outputs:
        return "no output at all"
    title = outputs[0].find(class_="admonition-title")
    if title is None or title.get_text(strip=True) != FINDINGS_TITLE:
        return f"the first output is not the {FINDINGS_TITLE!r} box: {outputs[0].get_text(' ', strip=True)[:100]!r}"
    if FINDINGS_PENDING[:40] in outputs[0].get_text(" ", strip=True):
        return "the box was never filled in (the page stopped before its last cell)"
    return None


def row_number_tables(soup: BeautifulSoup) -> int:
    """How many tables label their rows 0, 1, 2, ... (pandas' index shown)."""
    found = 0
    for table in main_of(soup).find_all("table"):
        body = table.find("tbody")
        rows = body.find_all("tr") if body else []
        labels = [row.find(["th", "td"]) for row in rows]
        if rows and all(cell is not None and cell.name == "th" for cell in labels) and \
                [cell.get_text(strip=True) for cell in labels] == [str(i) for i in range(len(rows))]:
            found += 1
    return found


def wrote_lines(soup: BeautifulSoup) -> list[str]:
    return [m.group(0).strip() for o in main_of(soup).find_all("div", class_="cell_output")
            for m in WROTE_LINE.finditer(o.get_text("\n"))]


def internal_references(soup: BeautifulSoup) -> list[str]:
    return sorted({m.group(0) for m in INTERNAL_REFERENCE.finditer(main_of(soup).get_text(" "))})


_STALE: dict | None = None


def excused(name: str) -> str | None:
    """The runner's reason when the executed page ``name`` is out of date, else None."""
    global _STALE
    if _STALE is None:
        _STALE = out_of_date_pages()
    return _STALE.get((REPO_ROOT / f"{name}.ipynb").resolve())


def fail_or_excuse(name: str, problem: str) -> None:
    reason = excused(name)
    if reason is None:
        pytest.fail(f"{name}: {problem}")
    note = f"excused, out of date ({reason}): {name}: {problem}"
    print(note)
    warnings.warn(note)


def test_every_page_is_executed_or_listed_as_measuring_nothing():
    prose = [name for name in toc_pages() if name not in NOTEBOOK_PAGES]
    assert sorted(prose) == sorted(PAGES_WITHOUT_FINDINGS), "a prose page missing from PAGES_WITHOUT_FINDINGS, or one gone"


@pytest.mark.parametrize("name", NOTEBOOK_PAGES)
def test_every_executed_page_opens_with_what_it_found(html, name):
    problem = findings_problem(page(html, name))
    if problem:
        fail_or_excuse(name, problem)


@pytest.mark.parametrize("name", NOTEBOOK_PAGES)
def test_no_table_shows_row_numbers(html, name):
    count = row_number_tables(page(html, name))
    if count:
        fail_or_excuse(name, f"{count} table(s) show row numbers (display them with readable())")


@pytest.mark.parametrize("name", NOTEBOOK_PAGES)
def test_no_wrote_lines_in_view(html, name):
    lines = wrote_lines(page(html, name))
    if lines:
        fail_or_excuse(name, f"{len(lines)} 'wrote ...' line(s) in view, e.g. {lines[0]!r} (python -m bertsent.book tidy)")


@pytest.mark.parametrize("name", toc_pages())
def test_no_internal_references(html, name):
    found = internal_references(page(html, name))
    if not found:
        return
    if name in NOTEBOOK_PAGES:
        source = (REPO_ROOT / "notebooks").rglob("*.ipynb")
        in_sources = [p for p in source if any(ref in p.read_text(encoding="utf-8") for ref in found)]
        assert not in_sources, f"{name}: internal references {found} in the sources {in_sources}"
        fail_or_excuse(name, f"internal references in its outputs: {found}")
    else:
        pytest.fail(f"{name}: internal references {found}; cite the paper, its table and section instead")


def test_the_checks_find_what_they_look_for():
    """Each check fails on a page made to fail it and passes its fixed twin."""
    box = (f'<div class="cell_output"><div class="important admonition"><p class="admonition-title">{FINDINGS_TITLE}'
           '</p><p>42 pairs.</p></div></div>')
    pending = box.replace("42 pairs.", FINDINGS_PENDING)
    numbered = ('<table><thead><tr><th></th><th>a</th></tr></thead><tbody><tr><th>0</th><td>1</td></tr>'
                '<tr><th>1</th><td>2</td></tr></tbody></table>')
    labelled = numbered.replace("<th>0</th>", "<th>x</th>").replace("<th>1</th>", "<th>y</th>")
    plain = '<table><tbody><tr><td>0</td><td>1</td></tr></tbody></table>'

    def soup(body):
        return BeautifulSoup(f"<main>{body}</main>", "html.parser")

    assert findings_problem(soup(box)) is None
    assert "never filled in" in findings_problem(soup(pending))
    assert "not the" in findings_problem(soup('<div class="cell_output"><p>table</p></div>' + box))
    assert row_number_tables(soup(numbered)) == 1
    assert row_number_tables(soup(labelled)) == row_number_tables(soup(plain)) == 0
    assert wrote_lines(soup('<div class="cell_output"><pre>wrote results/a.csv\nkept</pre></div>')) == [
        "wrote results/a.csv"]
    assert wrote_lines(soup('<div class="cell_output"><p>It wrote nothing.</p></div>')) == []
    assert internal_references(soup("<p>see paper-targets.md section 3 and the issue's target</p>")) == [
        "paper-targets.md", "the issue's"]
    assert internal_references(soup("<p>the data in ../shared/data; Table 2 of the paper</p>")) == []

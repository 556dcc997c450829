"""What a reader of the built HTML sees: one parameters cell behind a toggle, no progress bars, no NaN in tables,
math that renders offline, a download button and no launch button.

The book is built once (about 10 s: execution is off in ``_config.yml``, the committed executed pages are
rendered as they are) from a copy of ``_config.yml``, ``_toc.yml`` and ``book/``, so a page being rewritten by a
run meanwhile cannot break the build.
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml
from bs4 import BeautifulSoup

from bertsent.paths import REPO_ROOT

# Pages whose committed tables predate bertsent.report.display.readable (their sources call it now): they show
# NaN / <NA> until they are re-executed (python -m bertsent.book run NAME). Strict: once a page is re-executed
# this test passes for it and asks for the page to be taken off this list.
AWAITING_RERUN_FOR_TABLES = {"book/bert/bert_ablations"}
PROGRESS = re.compile(r"Loading weights|\d+%\|[^|\n]*\||\d+/\d+ \[[\d:?]+<|it/s\]|s/it\]")


def toc_pages() -> list[str]:
    toc = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            pages.append(entry["file"])
            walk(entry.get("sections"))

    walk(toc.get("chapters"))
    return pages


NOTEBOOK_PAGES = [page for page in toc_pages() if (REPO_ROOT / f"{page}.ipynb").is_file()]


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("book-source")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(REPO_ROOT / name, source / name)
    shutil.copytree(REPO_ROOT / "book", source / "book", ignore=shutil.ignore_patterns("*.running.ipynb", ".ipynb_checkpoints"))
    config = yaml.safe_load((source / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off"  # the build renders the committed outputs only
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    done = subprocess.run([str(jupyter_book), "build", str(source), "--path-output", str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return source / "_build" / "html"


_PARSED: dict[Path, BeautifulSoup] = {}


def page(html: Path, name: str) -> BeautifulSoup:
    path = html / f"{name}.html"
    if path not in _PARSED:
        _PARSED[path] = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    return _PARSED[path]


def code_cells(soup: BeautifulSoup):
    return [div for div in soup.find_all("div", class_="cell") if div.find("div", class_="cell_input")]


@pytest.mark.parametrize("name", NOTEBOOK_PAGES)
def test_one_parameters_cell_behind_a_toggle(html, name):
    soup = page(html, name)
    shown = [cell for cell in code_cells(soup)
             if {"tag_parameters", "tag_injected-parameters"} & set(cell["class"])
             or re.search(r"^profile\s*=", cell.find("div", class_="cell_input").get_text(), re.M)]
    assert len(shown) == 1, f"{name}: {len(shown)} parameters cells shown (python -m bertsent.book tidy)"
    assert "tag_hide-input" in shown[0]["class"]


@pytest.mark.parametrize("name", NOTEBOOK_PAGES)
def test_imports_and_prose_building_code_are_behind_a_toggle(html, name):
    for cell in code_cells(page(html, name)):
        code = cell.find("div", class_="cell_input").get_text()
        if re.search(r"^(import|from)\s+\S+", code, re.M) or "Markdown(" in code:
            assert "tag_hide-input" in cell["class"], f"{name}: {code[:80]!r} is shown"
            assert cell.find("details"), name  # the toggle


@pytest.mark.parametrize("name", NOTEBOOK_PAGES)
def test_no_progress_bars_or_stderr(html, name):
    soup = page(html, name)
    text = soup.find("main").get_text() if soup.find("main") else soup.get_text()
    assert not PROGRESS.search(text), f"{name}: {PROGRESS.search(text).group(0)!r}"
    assert not soup.find(class_="stderr"), name


@pytest.mark.parametrize("name", [pytest.param(p, marks=pytest.mark.xfail(
    reason="committed tables predate report.display.readable; re-execute the page", strict=True))
    if p in AWAITING_RERUN_FOR_TABLES else p for p in toc_pages()])
def test_no_nan_in_tables(html, name):
    cells = [cell.get_text(strip=True) for table in page(html, name).find_all("table")
             for cell in table.find_all(["td", "th"])]
    missing = [text for text in cells if text in ("NaN", "nan", "<NA>", "None", "NaT")]
    assert not missing, f"{name}: {len(missing)} table cells read {sorted(set(missing))}"


def test_markdown_outputs_are_parsed_as_myst(html):
    for name in toc_pages():
        for paragraph in page(html, name).find_all("p"):
            assert not re.search(r"\|\s*:?-{3,}:?\s*\|", paragraph.get_text()), f"{name}: a Markdown table left raw"


def test_math_renders_without_network(html):
    pages_with_math = 0
    for name in toc_pages():
        soup = page(html, name)
        for script in soup.find_all("script", src=True):
            assert urlparse(script["src"]).scheme == "", f"{name}: script from the network: {script['src']}"
        mathjax = [s["src"] for s in soup.find_all("script", src=True) if "mathjax" in s["src"].lower()]
        if soup.find(class_="math"):
            pages_with_math += 1
            assert mathjax, f"{name} has math but no MathJax"
        for src in mathjax:
            assert (html / Path(name).parent / unquote(src)).resolve().is_file(), (name, src)
    assert pages_with_math >= 1
    assert (html / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()  # the fonts too


@pytest.mark.parametrize("name", NOTEBOOK_PAGES)
def test_download_button_and_no_launch_button_to_an_unrecorded_address(html, name):
    """The page's .ipynb can be downloaded; no launch (Binder, Colab) or repository button points at an address the
    project never recorded (the config has none: see the comment in _config.yml)."""
    links = [a["href"] for a in page(html, name).find_all("a", href=True)]
    assert not [h for h in links if h.startswith(("https://mybinder.org", "https://colab.research.google.com"))], name
    assert "repository" not in yaml.safe_load((REPO_ROOT / "_config.yml").read_text())
    assert not [h for h in links if "github.com/bertsent" in h], name
    downloads = [h for h in links if h.endswith(f"_sources/{name}.ipynb")]
    assert downloads and (html / Path(name).parent / downloads[0]).resolve().is_file(), name

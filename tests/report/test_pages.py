"""The runner's post-processing of executed pages: tags and clean outputs, sources untouched."""
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from bertsent.report.pages import clean_stream, tidy_notebook, tidy_page


def executed_page():
    return new_notebook(cells=[
        new_markdown_cell("# Title"),
        new_code_cell("profile = 'quick'  # set by the runner", metadata={"tags": ["parameters"]}),
        new_code_cell("# Parameters\nprofile = 'quick'\n", metadata={"tags": ["injected-parameters"]}),
        new_code_cell("check_page_parameters('page', globals())", metadata={"tags": ["check-parameters"]}),
        new_code_cell("import pandas as pd\nfrom bertsent.report.tables import write_table", outputs=[
            new_output("stream", name="stderr", text="\rLoading weights:  50%|#####     | 39/78 [00:00<?, ?it/s]"),
            new_output("stream", name="stdout", text="wrote results/x.csv\n 3/10 [00:01<00:02, 3.1it/s]\nkept\n")]),
        new_code_cell("display(Markdown(f'**{1 + 1}**'))"),
        new_code_cell("table = make_table()", metadata={"tags": ["show-input"]}),
        new_code_cell("plot(table)", outputs=[new_output("display_data", data={"text/plain": "<Figure>"})]),
    ])


def test_tidy_hides_every_code_cell_but_show_input_and_drops_noise_but_not_sources():
    nb = executed_page()
    sources = [c.source for c in nb.cells]
    counts = tidy_notebook(nb)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert tags == [[], ["parameters", "remove-cell"], ["injected-parameters", "hide-input"],
                    ["check-parameters", "remove-cell"], ["hide-input"], ["hide-input"], ["show-input"], ["hide-input"]]
    assert [c.source for c in nb.cells] == sources
    assert nb.cells[4].outputs == [new_output("stream", name="stdout", text="wrote results/x.csv\nkept\n")]
    assert nb.cells[7].outputs[0]["data"] == {"text/plain": "<Figure>"}
    assert counts == {"removed": 2, "hidden": 4, "outputs": 2}
    assert tidy_notebook(nb) == {"removed": 0, "hidden": 0, "outputs": 0}  # twice changes nothing


def test_without_injected_parameters_the_own_parameters_cell_is_hidden_not_removed():
    nb = executed_page()
    del nb.cells[2]
    tidy_notebook(nb)
    assert nb.cells[1].metadata["tags"] == ["parameters", "hide-input"]


def test_progress_lines_redrawn_with_carriage_returns_are_dropped():
    assert clean_stream("a\r 10%|#         | 1/10 [00:00<00:01, 9.9it/s]\rdone\nwrote x\n") == "wrote x\n"
    assert clean_stream("step 10: loss 1.5\n") == "step 10: loss 1.5\n"


def test_tidy_page_rewrites_only_when_something_changed(tmp_path):
    path = tmp_path / "page.ipynb"
    path.write_text(nbformat.writes(executed_page()), encoding="utf-8")
    assert any(tidy_page(path).values())
    text = path.read_text(encoding="utf-8")
    assert not any(tidy_page(path).values())
    assert path.read_text(encoding="utf-8") == text


def test_a_cell_that_only_reports_written_files_keeps_the_lines_but_hides_them_from_the_page():
    """The runner reads a page's result files from its ``wrote <path>`` lines, so they stay in the executed notebook;
    the rendered page drops them (MyST-NB's remove-stdout). A cell that prints anything else keeps its stdout."""
    only = new_code_cell("write_table(t, p)", outputs=[
        new_output("stream", name="stdout", text="wrote results/a.csv\n"),
        new_output("stream", name="stdout", text="wrote results/b.csv\n")])
    mixed = new_code_cell("write_table(t, p); print(n)", outputs=[
        new_output("stream", name="stdout", text="wrote results/a.csv\n12 rows\n")])
    silent = new_code_cell("x = 1")
    nb = new_notebook(cells=[only, mixed, silent])
    tidy_notebook(nb)
    assert "remove-stdout" in only.metadata["tags"]
    assert "remove-stdout" not in mixed.metadata["tags"] and "remove-stdout" not in silent.metadata["tags"]
    assert [o["text"] for o in only.outputs] == ["wrote results/a.csv\n", "wrote results/b.csv\n"]
    assert tidy_notebook(nb) == {"removed": 0, "hidden": 0, "outputs": 0}


def test_the_findings_box_shows_the_headline_then_the_verdict_count_and_folds_long_claim_lists():
    from bertsent.report.claims import Noise, claims_table, judge, verdict_box
    from bertsent.report.pages import FINDINGS_LINES_SHOWN, FINDINGS_TITLE, findings_text, verdict_headline

    noise = Noise(1.0, "3 vs 3", "test")
    held = judge("a > b", ours=3.0, paper=4.0, noise=noise, backbone="m")
    failed = judge("c > d", ours=-3.0, paper=4.0, noise=noise, backbone="m")
    box = verdict_box(claims_table([held, failed]))
    assert box.counts == {"reproduced": 1, "not reproduced": 1} and box.tally == "2 claims: 1 reproduced, 1 not reproduced."
    headline = verdict_headline(box)
    assert headline.startswith("Of the 2 claims of the paper judged on this page, 1 holds") and "1 is not reproduced" in headline
    text = findings_text("Ours beat theirs by 3.", box)
    assert text.startswith(f"````{{admonition}} {FINDINGS_TITLE}\n") and text.endswith("\n````")
    assert text.index("Ours beat theirs") < text.index(box.tally) < text.index("- a > b (m)")
    assert ":class: dropdown" not in text  # two claims: shown as they are
    long = verdict_box(claims_table([held] * (FINDINGS_LINES_SHOWN + 1)))
    assert ":class: dropdown" in findings_text("x", long)
    # a page without claims: the headline alone; an empty box adds nothing
    assert findings_text("Measured 3.", verdict_box(claims_table([]))).count("\n") == 3
    assert verdict_headline(verdict_box(claims_table([]))) == ""


def test_the_findings_box_is_filled_in_where_it_was_placed(tmp_path):
    """A page's first cell shows the box, its last cell fills it in: the executed notebook holds the filled-in box in
    the first cell's output (nbclient applies the display update there), nothing in the last cell's."""
    import papermill

    cells = [new_code_cell("from bertsent.report.pages import findings_box\n\nfound = findings_box()"),
             new_code_cell("result = 6 * 7"),
             new_code_cell("found.update(f'The answer is {result}.')")]
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}})
    nbformat.write(nb, tmp_path / "page.ipynb")
    papermill.execute_notebook(str(tmp_path / "page.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                               progress_bar=False)
    executed = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    first = [o["data"]["text/markdown"] for o in executed.cells[0].outputs]
    assert len(first) == 1 and "The answer is 42." in first[0] and "What we found" in first[0]
    assert executed.cells[2].outputs == []


def test_the_page_helpers_reach_no_module_that_computes():
    """The runner imports this module and the training paths import the runner, so a module it imported would enter
    every run key (bertsent.versions): importing the claims module here once made every stored run look missing."""
    from bertsent.versions import reached_modules

    assert "bertsent.report.claims" not in reached_modules(("bertsent.report.pages",))

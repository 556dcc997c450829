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

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from bertsent.report import plots


def history(n_runs: int) -> pd.DataFrame:
    rows = []
    for run in range(n_runs):
        for step in (0, 50, 100):
            rows.append({"run": f"run {run}", "step": step, "dev": 40.0 + run + step / 100, "loss": 1.0 + run,
                         "best": step == 50})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("n_runs", [3, 11])
def test_selection_curves_give_every_run_its_own_colour(n_runs):
    figure = plots.selection_curves(history(n_runs))
    left, right = figure.axes
    colours = [tuple(line.get_color()) for line in left.get_lines()]
    assert len(colours) == n_runs
    assert len(set(colours)) == n_runs
    assert [tuple(line.get_color()) for line in right.get_lines()] == colours
    plt.close(figure)


def test_stall_study_curves_draw_the_floors():
    from bertsent.report.plots import stall_study_curves

    history = pd.DataFrame({"run": ["a", "a", "b", "b"], "tokens": [0, 1e6, 0, 1e6],
                            "heldout_mlm_loss": [10.3, 7.2, 10.3, 7.0], "heldout_mlm_mask_accuracy": [0, .05, 0, .06],
                            "heldout_mlm_unchanged_accuracy": [0, .3, 0, .45]})
    fig = stall_study_curves(history, majority_floor=0.053, unigram_loss=7.29)
    loss_axis, mask_axis, _ = fig.axes
    assert any(line.get_label() == "unigram entropy" and line.get_ydata()[0] == 7.29 for line in loss_axis.get_lines())
    assert any(line.get_label() == "always the majority token" and line.get_ydata()[0] == pytest.approx(5.3)
               for line in mask_axis.get_lines())
    plt.close(fig)


# Figures designed for the page width: no wider than the page (so not shrunk) and no text under MIN_FONT points.
def assert_legible(figure):
    assert figure.get_size_inches()[0] <= plots.PAGE_WIDTH + 1e-9
    sizes = [text.get_fontsize() for text in figure.findobj(matplotlib.text.Text)
             if text.get_visible() and text.get_text().strip()]
    assert sizes and min(sizes) >= plots.MIN_FONT


def visible_axes(figure):
    return [ax for ax in figure.axes if ax.axison and ax.get_label() != "<colorbar>"]


def legends(figure):
    return [*figure.legends, *(ax.get_legend() for ax in figure.axes if ax.get_legend())]


def legend_labels(figure):
    return [text.get_text() for legend in legends(figure) for text in legend.get_texts()]


def assert_legends_clear(figure):
    """No legend covers data: no point of a line or scatter and no bar of any panel lies within a legend's box."""
    import numpy as np

    figure.canvas.draw()
    boxes = [legend.get_window_extent() for legend in legends(figure)]
    assert boxes
    for ax in visible_axes(figure):
        points = [line.get_transform().transform(line.get_xydata()) for line in ax.get_lines()]
        points += [c.get_offset_transform().transform(c.get_offsets()) for c in ax.collections
                   if isinstance(c, matplotlib.collections.PathCollection) and len(c.get_offsets())]
        points = np.concatenate(points) if points else np.empty((0, 2))
        points = points[np.isfinite(points).all(axis=1)]
        bars = [patch.get_window_extent() for patch in ax.patches if isinstance(patch, matplotlib.patches.Rectangle)]
        for box in boxes:
            inside = (points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0) & (points[:, 1] < box.y1)
            assert not inside.any(), f"a legend covers {int(inside.sum())} data points of {ax.get_title()!r}"
            assert not any(box.overlaps(bar) for bar in bars), f"a legend covers a bar of {ax.get_title()!r}"


def test_spectra_plot_labels_every_line_in_one_legend():
    rows = []
    for backbone, methods in [("a", ["cls", "mean", "whitening", "sg", "sg_opt"]), ("b", ["cls", "mean", "whitening"]),
                              ("c", ["cls", "mean", "whitening"])]:
        for method in methods:
            rows += [{"backbone": backbone, "method": method, "index": i, "singular_value": 1 / i} for i in (1, 2, 3)]
    figure = plots.spectra_plot(pd.DataFrame(rows))
    assert len(visible_axes(figure)) == 3
    assert sorted(legend_labels(figure)) == sorted(["[CLS]", "mean", "whitening", "SG", "SG-OPT"])
    assert len(visible_axes(figure)[0].get_lines()) == 5
    colour = {line.get_label(): line.get_color() for ax in visible_axes(figure) for line in ax.get_lines()}
    assert len(set(colour.values())) == 5  # one colour per readout, the same in every panel
    assert_legible(figure)
    plt.close(figure)


def test_anisotropy_curves_have_whole_layer_ticks_and_a_complete_legend():
    rows = [{"backbone": backbone, "pooling": pooling, "layer": layer, "anisotropy": 0.1 * layer}
            for backbone, poolings in [("a", ["cls", "mean"]), ("b", ["last", "mean"])]
            for pooling in poolings for layer in range(5)]
    figure = plots.anisotropy_curves(pd.DataFrame(rows))
    axes = visible_axes(figure)
    assert len(axes) == 2 and sum(len(ax.get_lines()) for ax in axes) == 4 + 2  # 4 curves and 2 zero lines
    figure.canvas.draw()
    for ax in axes:
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks)
    assert sorted(legend_labels(figure)) == sorted(["[CLS]", "mean", "last"])
    assert_legible(figure)
    plt.close(figure)


def test_cosine_band_histograms_order_the_bands_by_gold_score():
    import numpy as np

    rng = np.random.default_rng(0)
    bands = ["2-3", "3-4", "4-5", "1-2", "0-1"]  # the order they arrive in, as on the page
    rows = [{"backbone": "m", "method": method, "band": band, "cosine": c}
            for method in ("cls", "mean", "sg") for band in bands for c in rng.uniform(0, 1, 20)]
    figure = plots.cosine_band_histograms(pd.DataFrame(rows), [("m", "cls"), ("m", "mean"), ("m", "sg")])
    assert len(visible_axes(figure)) == 3
    assert legend_labels(figure) == ["0-1", "1-2", "2-3", "3-4", "4-5"]
    assert plots.gold_band_order(bands) == ["0-1", "1-2", "2-3", "3-4", "4-5"]
    assert_legible(figure)
    plt.close(figure)


def pretraining_history(nsp: bool = True) -> pd.DataFrame:
    frame = pd.DataFrame({"tokens": [0, 1e6, 2e6], "train_loss": [10.0, 8.0, 7.0], "heldout_mlm_loss": [10.0, 8.1, 7.2],
                          "heldout_mlm_accuracy": [0.0, 0.05, 0.08]})
    if nsp:
        frame["heldout_nsp_loss"] = [0.70, 0.69, 0.69]
        frame["heldout_nsp_accuracy"] = [0.50, 0.503, 0.498]
    return frame


def chance_lines(ax):
    return [line for line in ax.get_lines() if "chance" in line.get_label()]


def test_pretraining_curves_draw_nsp_chance_on_the_full_accuracy_range():
    figure = plots.pretraining_curves(pretraining_history(), "run")
    loss, accuracy = figure.axes
    assert len(loss.get_lines()) == 2 and len(accuracy.get_lines()) == 3
    (chance,) = chance_lines(accuracy)
    assert chance.get_ydata()[0] == 50
    assert accuracy.get_ylim() == (0, 100)
    assert len(legend_labels(figure)) == 5  # two losses, two accuracies and chance, in one legend below the panels
    assert_legends_clear(figure)
    assert_legible(figure)
    plt.close(figure)


def test_pretraining_comparison_stacks_objectives_with_a_chance_line_for_nsp():
    history = pd.concat([pretraining_history().assign(run="mlm_nsp"), pretraining_history(False).assign(run="mlm")])
    figure = plots.pretraining_comparison(history)
    assert len(figure.axes) == 4  # rows: MLM, NSP; columns: loss, accuracy
    nsp_accuracy = figure.axes[3]
    assert len(chance_lines(nsp_accuracy)) == 1 and nsp_accuracy.get_ylim() == (0, 100)
    assert not chance_lines(figure.axes[1])
    assert sorted(legend_labels(figure)) == ["chance (50%)", "mlm", "mlm_nsp"]
    assert_legends_clear(figure)
    assert_legible(figure)
    plt.close(figure)


def test_layer_pooling_figure_two_heatmaps_to_a_row_one_colour_bar():
    import numpy as np

    grid = pd.DataFrame(np.arange(12, dtype=float).reshape(4, 3), columns=["cls", "mean", "max"])
    figure = plots.layer_pooling_figure({"STS-B": grid, "average": grid + 1, "third": grid}, "m")
    heatmaps = [ax for ax in figure.axes if ax.axison and ax.get_label() != "<colorbar>" and ax.get_title()]
    assert len(heatmaps) == 3
    assert len(figure.axes) - len(heatmaps) - 1 == 1  # one colour bar (plus the spare slot)
    assert_legible(figure)
    plt.close(figure)


def sts_scores() -> pd.DataFrame:
    rows = []
    for backbone in ("a", "b"):
        for method, data, seeds in [("cls", "-", ["-"]), ("mean", "-", ["-"]), ("whitening", "stsb_all", ["-"]),
                                    ("sg_opt", "stsb_all", [1, 2, 3])]:
            for seed in seeds:
                for dataset in plots.STS_DATASETS:
                    for aggregation in ("all", "wmean"):
                        value = 50.0 + (seed if isinstance(seed, int) else 0)
                        rows.append({"backbone": backbone, "method": method, "train_data": data, "seed": seed,
                                     "dataset": dataset, "aggregation": aggregation, "spearman": value})
    return pd.DataFrame(rows)


def test_sts_main_figure_bars_per_readout_seed_error_bars_and_paper_marks():
    paper = pd.Series({"cls": 31.40, "mean": 52.57, "whitening": 68.77, "sg": 72.17, "sg_opt": 74.62})
    figure = plots.sts_main_figure(sts_scores(), paper)
    axes = [ax for ax in figure.axes if ax.get_title()]
    assert [ax.get_title() for ax in axes] == ["a", "b"]
    for ax in axes:
        assert len(ax.patches) == 4  # one bar per readout
        assert [t.get_text() for t in ax.get_yticklabels()] == ["[CLS]", "mean", "whitening (stsb_all)",
                                                              "SG-OPT (stsb_all)"]
        diamonds = [c for c in ax.collections if c.get_label() == "the paper (BERT-base)"]
        assert len(diamonds) == 1 and len(diamonds[0].get_offsets()) == 4
        assert len(ax.containers) == 2  # the bars and one set of error bars: only SG-OPT has several seeds
        assert ax.patches[3].get_width() == pytest.approx(52.0)
    spread = plots.seed_spread(sts_scores())
    row = spread[(spread["backbone"] == "a") & (spread["method"] == "sg_opt")].iloc[0]
    assert (row["avg"], row["sd"], row["seeds"]) == (pytest.approx(52.0), pytest.approx(1.0), 3)
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["the paper (BERT-base)"]
    assert_legible(figure)
    plt.close(figure)


def test_every_figure_a_notebook_draws_is_shown_once(tmp_path):
    """In a notebook (papermill, IPython's inline backend, as the runner executes pages), each figure of
    :func:`plots.page_figure` is displayed in the cell that draws it, once, and so is a plain matplotlib figure drawn
    after one: the first figure of a notebook loads the inline backend inside ``rc_context``, whose exit used to
    turn interactive mode off again, so that only the page's first figure was shown."""
    import nbformat
    import papermill

    from bertsent import book

    cells = ["import matplotlib.pyplot as plt\nfrom bertsent.report import plots\n\n"
             "@plots.page_figure\ndef line(y):\n    figure, ax = plt.subplots(figsize=(3, 2))\n"
             "    ax.plot([0, 1], [0, y])\n    return figure",
             "line(1);",
             "line(2);",
             "for y in (3, 4):\n    line(y)",
             "figure, ax = plt.subplots(figsize=(3, 2))\nax.plot([0, 1], [1, 0]);",
             "print(len(plt.get_fignums()))"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "figures.ipynb")
    papermill.execute_notebook(str(tmp_path / "figures.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                               progress_bar=False, kernel_manager_class=book._local_kernel_manager())
    executed = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells
    images = [sum("image/png" in o.get("data", {}) for o in cell.outputs) for cell in executed]
    assert images == [0, 1, 1, 2, 1, 0]
    assert executed[-1].outputs[0]["text"].strip() == "0"  # every figure closed once shown


def test_alpha_heatmaps_colour_scale_is_fixed_0_to_1_centred_on_uniform():
    """Near-uniform weights must look near-uniform: the colour scale does not stretch to the values (it once spanned
    0.134-0.150, so that uniform weights looked structured); it runs 0 to 1 with white at 1/L, and the colour bar
    states the range the weights span. The bars of the weight per hidden state start at 0."""
    import numpy as np

    rng = np.random.default_rng(0)
    alphas = {}
    for backbone, states in [("a", 7), ("b", 13)]:
        alpha = 1 / states + rng.uniform(-0.008, 0.008, (states, states))
        alphas[backbone] = alpha / alpha.sum(axis=1, keepdims=True)
    figure = plots.alpha_heatmaps(alphas)
    heatmaps = [ax for ax in figure.axes if ax.get_title() in alphas]
    assert len(heatmaps) == 2
    for ax, (backbone, alpha) in zip(heatmaps, alphas.items()):
        norm = ax.collections[0].norm
        assert (norm.vmin, norm.vmax) == (0, 1) and norm.vcenter == pytest.approx(1 / len(alpha))
        label = ax.collections[0].colorbar.ax.get_ylabel()
        assert f"here {alpha.min():.3f} to {alpha.max():.3f}" in label
    bars = [ax for ax in figure.axes if ax.patches]
    assert len(bars) == 2 and all(ax.get_ylim()[0] == 0 for ax in bars)
    assert_legible(figure)
    plt.close(figure)


def pooling_table():
    rows = [{"backbone": backbone, "pooling": pooling, "stsb": score, "stsb_sd": sd, "seeds": seeds,
             "avg": score - 10, "avg_sd": sd, "paper_stsb": paper}
            for backbone in ("a", "b")
            for pooling, score, sd, seeds, paper in [("cls_last", 71.0, None, 1, None), ("mean_last", 73.5, 0.4, 3, 85.0),
                                                     ("att_both", 72.0, 0.3, 3, 86.6)]]
    return pd.DataFrame(rows)


def test_pooling_ablation_bars_start_at_zero():
    figure = plots.pooling_ablation_bars(pooling_table())
    panels = [ax for ax in figure.axes if ax.patches]
    assert len(panels) == 2
    for ax in panels:
        assert ax.get_xlim()[0] == 0  # a bar's length is its score
        assert ax.get_xlim()[1] >= 86.6  # the paper's diamonds and the labels fit
    assert_legible(figure)
    plt.close(figure)


def ablation_changes_table():
    return pd.DataFrame([{"backbone": "a", "variant": variant, "change": change, "paper_change": paper, "std": 0.5}
                         for variant, change, paper in [("sg_opt", 0.0, 0.0), ("no_opt", -1.5, -2.0),
                                                        ("no_reg", 0.3, -0.8), ("frozen_views", -4.0, -1.0)]])


def angle_rows():
    import numpy as np

    rng = np.random.default_rng(1)
    return pd.DataFrame([{"task": task, "method": method, "angle": angle}
                         for task in ("SST-2", "CoLA", "MRPC") for method in ("ce_scl", "acl_embed")
                         for angle in rng.normal(70 if method == "acl_embed" else 88, 12, 200)])


def task_table(x, series, values):
    return pd.DataFrame([{"task": task, series: name, x: value, "mean": 50 + 5 * i + j, "sd": 1.0,
                          "metric": "accuracy"}
                         for task in ("SST-2", "CoLA") for j, name in enumerate(values) for i, value in
                         enumerate([1, 2, 3, 4, 5, 6] if x == "exit" else [0.1, 0.5, 1.0, 2.0])])


def early_exit_curve():
    return pd.DataFrame([{"task": "SST-2", "mode": mode, "threshold": t, "mean_layers": 1 + 5 * t,
                          "seconds_per_example": 0.004 + 0.02 * t + 0.002 * j, "score": 51 + 30 * t - j,
                          "metric": "accuracy"}
                         for j, mode in enumerate(("joint", "kd", "acl_cl")) for t in (0.0, 0.3, 0.6, 1.0)])


def geometry_methods():
    return pd.DataFrame([{"backbone": backbone, "method": method, "alignment": a, "uniformity": u, "sts_avg": s}
                         for backbone, offset in (("a", 0.0), ("b", 0.1))
                         for method, a, u, s in [("cls", 0.35 + offset, -3.8, 60.0), ("mean", 0.33, -3.9 + offset, 65.0),
                                                 ("sg_opt", 0.15, -2.0 + offset, 78.0)]])


FIGURES_WITH_LEGENDS = {
    # eight recipes whose curves fill each panel from top to bottom, as the stall study's do: no free corner
    "stall_study_curves": lambda: plots.stall_study_curves(
        pd.DataFrame([{"run": f"recipe {k}", "tokens": t * 1e6, "heldout_mlm_loss": 6.0 + 0.6 * k + 0.05 * t,
                       "heldout_mlm_mask_accuracy": 0.01 * k + 0.001 * t,
                       "heldout_mlm_unchanged_accuracy": 0.1 * k + 0.005 * t}
                      for k in range(8) for t in range(1, 13)]),
        majority_floor=0.059, unigram_loss=7.29),
    "ablation_changes": lambda: plots.ablation_changes(ablation_changes_table(), "a"),
    "gradient_angle_histograms": lambda: plots.gradient_angle_histograms(angle_rows()),
    "exit_scores": lambda: plots.exit_scores(task_table("exit", "mode", ["joint", "kd", "acl_cl"])),
    "lambda_sensitivity": lambda: plots.lambda_sensitivity(task_table("weight", "method", ["acl_embed", "acl"])),
    "quality_speed": lambda: plots.quality_speed(early_exit_curve()),
    "alignment_uniformity_map": lambda: plots.alignment_uniformity_map(
        geometry_methods(), pd.DataFrame({"step": [0, 50, 100], "alignment": [0.3, 0.2, 0.15],
                                          "uniformity": [-3.0, -2.5, -2.0]})),
    "anisotropy_curves (no spare panel)": lambda: plots.anisotropy_curves(pd.DataFrame(
        [{"backbone": b, "pooling": p, "layer": layer, "anisotropy": 0.9 - 0.1 * layer}
         for b in ("a", "b") for p in ("cls", "mean", "max") for layer in range(7)])),
    "spectra_plot (no spare panel)": lambda: plots.spectra_plot(pd.DataFrame(
        [{"backbone": b, "method": m, "index": i, "singular_value": 1 / i ** 0.5}
         for b in ("a", "b") for m in ("cls", "mean") for i in range(1, 50)])),
}


@pytest.mark.parametrize("name", list(FIGURES_WITH_LEGENDS))
def test_legends_cover_no_data_and_text_is_legible(name):
    """Legends sit outside the data (below the panels, above a panel, or in a spare panel), never over a line, a point
    or a bar (the stall study's legend once covered its curves); every text is at least MIN_FONT points on a figure
    no wider than the page."""
    figure = FIGURES_WITH_LEGENDS[name]()
    assert_legends_clear(figure)
    assert_legible(figure)
    plt.close(figure)


def test_long_run_curves_draw_each_lever_from_its_branch_on():
    parent = pd.DataFrame({"step": [0, 100, 200], "tokens": [0, 10**6, 2 * 10**6], "heldout_mlm_loss": [7.0, 6.5, 6.4],
                           "heldout_mlm_mask_accuracy": [0.0, 0.05, 0.06], "heldout_nsp_accuracy": [0.5, 0.6, 0.7]})
    lever = pd.concat([parent, pd.DataFrame({"step": [300], "tokens": [3 * 10**6], "heldout_mlm_loss": [5.0],
                                             "heldout_mlm_mask_accuracy": [0.40], "heldout_nsp_accuracy": [0.7]})])
    figure = plots.long_run_curves(parent, 0.05, 0.25, 0.06, levers={"decay": (200, lever)})
    mask = figure.axes[0]
    drawn = {line.get_label(): line for line in mask.get_lines()}
    assert list(drawn["decay"].get_xdata()) == [2.0, 3.0]  # from the branch step on, not the parent's rows again
    assert mask.get_ylim()[1] >= 40  # a lever above the run stays on the axes
    plt.close(figure)

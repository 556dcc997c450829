"""The README fits on one screen and states only numbers the committed results hold; the per-page state lives in
the book's page *Status of every page*."""
import re

import pandas as pd
import yaml

from bertsent.paths import REPO_ROOT, RESULTS_DIR

README = (REPO_ROOT / "README.md").read_text()


def chapter_line(name: str) -> str:
    """The README's bullet for a chapter, its wrapped lines joined."""
    bullets = re.split(r"\n- ", README.split("## The chapters, one result each", 1)[1].split("\n## ", 1)[0])
    (bullet,) = [b for b in bullets if b.startswith(f"**{name}**")]
    return " ".join(line.strip() for line in bullet.splitlines())


def test_readme_is_one_screen_and_links_the_status_page_in_the_book():
    assert len(README.splitlines()) <= 80
    assert "](book/status.md)" in README and "| chapter | pages |" not in README
    toc = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [entry["file"] for entry in toc["chapters"]]
    assert "book/status" in files and "book/code" in files
    status = (REPO_ROOT / "book" / "status.md").read_text()
    assert "| chapter | pages | state at this commit |" in status
    assert "<!-- class-profile-times:start -->" in status  # benchmarks/class_profile_times.py rewrites it there


def test_readme_headline_numbers_are_the_committed_results():
    def spread(backbone, method, train_data):
        from bertsent.report.plots import seed_spread

        table = seed_spread(pd.read_csv(RESULTS_DIR / "sts_main.csv"))
        return table[(table["backbone"] == backbone) & (table["method"] == method)
                     & (table["train_data"] == train_data)].iloc[0]

    toy = pd.read_csv(RESULTS_DIR / "teaching" / "toy_temperature_sweep.csv").set_index("stage")
    teaching = chapter_line("Teaching")
    assert f"{toy.loc['before', 'cos_other_cluster']:.2f} before" in teaching
    assert f"{toy.loc['tau = 0.05', 'cos_other_cluster']:.2f} after" in teaching

    sg = chapter_line("SG / SG-OPT")
    gemma = spread("gemma-3-270m", "sg_opt", "stsb_train")
    assert f"from {spread('gemma-3-270m', 'cls', '-')['avg']:.1f} to {gemma['avg']:.1f}" in sg
    assert f"({int(gemma['seeds'])} seeds, sd {gemma['sd']:.2f})" in sg
    assert f"mean pooling ({spread('gemma-3-270m', 'mean', '-')['avg']:.1f})" in sg
    assert f"whitening ({spread('gemma-3-270m', 'whitening', 'stsb_all')['avg']:.1f})" in sg
    mini = spread("bert-mini-wiki", "sg_opt", "stsb_train")["avg"]
    assert f"({spread('bert-mini-wiki', 'cls', '-')['avg']:.1f} to {mini:.1f})" in sg
    tiny = spread("bert-tiny-wiki", "sg_opt", "stsb_train")
    assert f"({spread('bert-tiny-wiki', 'cls', '-')['avg']:.1f} to {tiny['avg']:.1f}, {int(tiny['seeds'])} seeds" in sg
    assert f"whitening {spread('bert-tiny-wiki', 'whitening', 'stsb_all')['avg']:.1f})" in sg
    claims = pd.read_csv(RESULTS_DIR / "sts_main_claims.csv").set_index(["claim", "backbone", "train_data"])
    assert claims.loc[("sg_opt > cls", "bert-tiny-wiki", "stsb_train"), "verdict"] == "within noise"

    methods = pd.read_csv(RESULTS_DIR / "isotropy" / "methods.csv").set_index(["backbone", "method"])
    geometry = chapter_line("Geometry")
    cls, sg_opt = methods.loc[("gemma-3-270m", "cls")], methods.loc[("gemma-3-270m", "sg_opt")]
    assert f"{cls['anisotropy']:.2f} to {sg_opt['anisotropy']:.2f}" in geometry
    assert f"{cls['uniformity']:.2f} to {sg_opt['uniformity']:.2f}" in geometry

    mlm = pd.read_csv(RESULTS_DIR / "bert" / "mlm_accuracy.csv")
    mask = mlm[(mlm["positions"] == "mask") & (mlm["text"] == "held-out corpus")].iloc[0]
    bert = chapter_line("BERT")
    assert f"{100 * mask['accuracy']:.1f}% accuracy" in bert and f"{100 * mask['majority_floor']:.1f}% for" in bert
    long_run = pd.read_csv(RESULTS_DIR / "bert" / "long_run_claims.csv").iloc[0]
    assert f"at {long_run['tokens'] / 1e6:.1f}M tokens" in bert
    assert f"{long_run['score']:.2f}% at [MASK] against {long_run['reference']:.2f}% for the best constant" in bert
    tiny = pd.read_csv(RESULTS_DIR / "bert" / "long_run_equal_tokens.csv").set_index("lever").loc["bert-tiny-wsd"]
    assert f"{tiny['mask_accuracy']:.2f}% at [MASK] after {tiny['tokens_millions']:.1f}M tokens" in bert
    glue = pd.read_csv(RESULTS_DIR / "bert" / "long_run_glue_claims.csv")
    assert "GLUE dev: " + ", ".join(f"{row.task} {row.our_effect:+.1f}" for row in glue.itertuples()) in bert
    assert set(glue["verdict"]) == {"within noise"}  # what the sentence says of all four

    frozen = pd.read_csv(RESULTS_DIR / "attention_pooling" / "frozen_summary.csv").set_index(["backbone", "pooling"])
    pooling = chapter_line("Attention pooling")
    ours, fixed = frozen.loc[("all-minilm-l6-v2", "att_both_cls")], frozen.loc[("all-minilm-l6-v2", "cls_mean_last")]
    assert f"trained {int(ours['steps']):,} steps" in pooling
    assert f"scores {ours['stsb_test']:.1f} on the full STS-B test ({int(ours['seeds'])} seeds)" in pooling
    assert f"against {fixed['stsb_test']:.1f} for" in pooling
    claims = pd.read_csv(RESULTS_DIR / "attention_pooling" / "claims_frozen.csv")
    claim = claims[(claims["backbone"] == "all-minilm-l6-v2")
                   & (claims["claim"] == "att_both_cls > cls_mean_last (stsb)")].iloc[0]
    assert f"(tolerance {claim['tolerance']:.2f}): {claim['verdict']}" in pooling
    from bertsent.report.reported import layer_attention_stsb

    paper = layer_attention_stsb()
    assert f"{paper['att_both_cls']:.2f} against {paper['cls_mean_last']:.2f}" in pooling

    glue = pd.read_csv(RESULTS_DIR / "aligned-contrastive" / "glue_scores.csv")
    sst2 = glue[glue["task"] == "SST-2"].set_index("method")
    acl = chapter_line("Aligned contrastive learning")
    assert f"over {int(sst2.loc['acl', 'seeds'])} seeds ACL reaches {sst2.loc['acl', 'mean']:.1f}%" in acl
    assert f"CE's {sst2.loc['ce', 'mean']:.1f}%" in acl and f"CE+SCL's {sst2.loc['ce_scl', 'mean']:.1f}%" in acl
    check = pd.read_csv(RESULTS_DIR / "aligned-contrastive" / "baseline_check.csv").set_index("task")
    assert list(check.index[check["kept"]]) == ["SST-2"]
    assert f"only on SST-2 ({check.loc['SST-2', 'ce']:.1f}% dev accuracy against {check.loc['SST-2', 'majority']:.1f}%)" in acl
    left_out = [task for task in ("CoLA", "MRPC", "RTE") if not check.loc[task, "kept"]]
    assert f"On {', '.join(left_out[:-1])} and {left_out[-1]} CE is not above the majority class" in acl

"""The claims overview pages' library: every claim of a chapter recomputed from per-run CSVs (hand-made here)."""
import json

import pandas as pd
import pytest

from bertsent.experiments import claims_overview as overview
from bertsent.report import reported
from bertsent.report.tables import as_written

DATASETS = ["stsb", "sickr", "sts12", "sts13", "sts14", "sts15", "sts16"]


def _sts_rows(backbone, method, train_data, seed, value):
    return [{"backbone": backbone, "method": method, "train_data": train_data, "seed": seed, "dataset": d,
             "aggregation": "all", "spearman": value} for d in DATASETS]


def _write_sg_inputs(folder, gain):
    """sts_main.csv: untrained [CLS] at 50, SG-OPT (3 seeds, spread 0.5) at 50 + gain; an ablation CSV whose SG-OPT
    has 3 seeds; a domain CSV with SG-OPT and whitening on both sentence sets."""
    rows = _sts_rows("m", "cls", "-", "-", 50.0)
    for seed, offset in zip((1, 2, 3), (-0.5, 0.0, 0.5)):
        rows += _sts_rows("m", "sg_opt", "stsb_train", seed, 50.0 + gain + offset)
    pd.DataFrame(rows).to_csv(folder / "sts_main.csv", index=False)
    ablation = []
    for seed, offset in zip((1, 2, 3), (-0.5, 0.0, 0.5)):
        ablation += [{**r, "variant": "sg_opt"} for r in _sts_rows("m", "sg_opt", "stsb_train", seed, 60 + offset)]
    ablation += [{**r, "variant": "no_head"} for r in _sts_rows("m", "sg_opt", "stsb_train", 1, 59.0)]
    pd.DataFrame(ablation).drop(columns="method").to_csv(folder / "sg_ablations.csv", index=False)
    domain = (_sts_rows("m", "whitening", "stsb_all", "-", 60.0) + _sts_rows("m", "whitening", "snli", "-", 55.0)
              + _sts_rows("m", "sg_opt", "stsb_all", 1, 62.0) + _sts_rows("m", "sg_opt", "snli", 1, 61.0))
    pd.DataFrame(domain).to_csv(folder / "sg_domain.csv", index=False)
    pd.DataFrame([{"claim": "sg_opt > mean (transfer average)", "backbone": "m", "tasks": 7, "paper_effect": 0.75,
                   "our_effect": 1.2, "ratio": 1.2 / 0.75, "tolerance": 1.0, "seeds": "one seed",
                   "noise_source": "test", "verdict": "holds"}]).to_csv(folder / "transfer_claims.csv", index=False)
    _write_deterministic_differences(folder)


def _write_deterministic_differences(folder):
    """The untrained readouts' measured differences (pages layer_pooling, sts_baselines), SE 1 point each."""
    from bertsent.experiments.sts_tables import DIFFERENCE_COLUMNS

    pd.DataFrame([("m", "best cell > worst cell", "layer 2 max", "layer 5 cls", "stsb", 40.0, 1.0, 1000),
                  ("m", "best shallow cell > last-layer sentence token", "layer 2 max", "layer 6 cls", "stsb", 0.5, 1.0,
                   1000)], columns=DIFFERENCE_COLUMNS).to_csv(folder / "layer_pooling_differences.csv", index=False)
    pd.DataFrame([("m", "mean > cls", "mean", "cls", "the 7 STS sets", 25.0, 1.0, 1000)],
                 columns=DIFFERENCE_COLUMNS).to_csv(folder / "sts_baselines_differences.csv", index=False)


def _claim(table, claim):
    return table.set_index("claim").loc[claim]


def test_a_claim_flips_from_within_noise_to_reproduced_as_the_gap_grows(tmp_path, monkeypatch):
    from bertsent.experiments import self_guided
    from bertsent.report.claims import t_quantile

    monkeypatch.setattr(self_guided, "sts_test_pairs", lambda data_dir=None: {})  # the seed part alone here
    paper = reported.sg_opt_sts_table().loc["BERT-base", "avg"]
    paper_gap = paper["sg_opt"] - paper["cls"]
    verdicts = {}
    for gain in (0.2, paper_gap):  # tolerance: 4.30 * 0.5 / sqrt(3) = 1.24 (seeds 3 vs deterministic: 2 df)
        _write_sg_inputs(tmp_path, gain)
        row = _claim(overview.sg_opt_claims(tmp_path)["sts_main_claims.csv"], "sg_opt > cls")
        assert row["paper_effect"] == pytest.approx(paper_gap)  # the paper's number, from report.reported
        assert row["our_effect"] == pytest.approx(gain)
        assert row["tolerance"] == pytest.approx(t_quantile(2) * 0.5 / 3 ** 0.5)
        verdicts[gain] = row["verdict"]
    assert list(verdicts.values()) == ["within noise", "reproduced"]


def test_sg_opt_chapter_writes_each_table_under_the_pages_file_name(tmp_path):
    _write_sg_inputs(tmp_path, 3.0)
    tables = overview.sg_opt_claims(tmp_path)
    assert list(tables) == ["layer_pooling_claims.csv", "sts_baselines_claims.csv", "sts_main_claims.csv",
                            "transfer_claims.csv", "sg_ablations_claims.csv", "sg_domain_claims.csv"]
    assert _claim(tables["transfer_claims.csv"], "sg_opt > mean (transfer average)")["verdict"] == "reproduced"
    figure1 = tables["layer_pooling_claims.csv"].set_index("claim")["verdict"]
    assert figure1.tolist() == ["reproduced", "within noise"]  # 40 of 46.48 (ratio 0.86); 0.5 against 2 SE = 2
    assert _claim(tables["sts_baselines_claims.csv"], "mean > cls")["verdict"] == "reproduced"
    assert _claim(tables["sg_ablations_claims.csv"], "no_head < sg_opt")["our_effect"] == pytest.approx(-1.0)
    domain = tables["sg_domain_claims.csv"]
    robust = domain[(domain["claim"] == "sg_opt more robust than whitening (avg)")].iloc[0]
    assert robust["our_effect"] == pytest.approx(-1.0 - -5.0)
    summary = overview.chapter_summary(tables)
    assert "sg_opt > cls (stsb_train)" in summary.index and "m" in summary.columns


def test_a_missing_csv_names_the_page_to_run(tmp_path):
    with pytest.raises(overview.MissingResults, match=r"layer_pooling.*python -m bertsent.book run layer_pooling"):
        overview.sg_opt_claims(tmp_path)
    _write_deterministic_differences(tmp_path)
    with pytest.raises(overview.MissingResults, match=r"sg_opt_sts.*python -m bertsent.book run sg_opt_sts"):
        overview.sg_opt_claims(tmp_path)
    with pytest.raises(overview.MissingResults, match="bert_pretraining"):
        overview.bert_claims(tmp_path)
    _pretraining_glue(tmp_path)
    with pytest.raises(overview.MissingResults, match="bert_ablations"):
        overview.bert_claims(tmp_path)
    with pytest.raises(overview.MissingResults, match="isotropy"):
        overview.chapter_claims("geometry", tmp_path)


def test_geometry_claims_come_from_the_trained_readouts(tmp_path):
    (tmp_path / "isotropy").mkdir()
    pd.DataFrame({"backbone": ["m", "m", "m"], "method": ["cls", "mean", "sg_opt"], "anisotropy": [0.8, 0.1, 0.4],
                  "uniformity": [-1.0, -3.0, -2.5]}).to_csv(tmp_path / "isotropy" / "methods.csv", index=False)
    table = overview.geometry_claims_overview(tmp_path)["isotropy/claims.csv"]
    assert table["method"].tolist() == ["sg_opt", "sg_opt"]
    assert table["our_effect"].tolist() == pytest.approx([-0.4, -1.5])
    assert set(table["verdict"]) == {"noise not measured"}  # one seed and no spread: the sign is no verdict


def _pretraining_glue(results, name="glue_mini_cpu.csv"):
    (results / "bert").mkdir(exist_ok=True)
    rows = [("pre-trained", "RTE", 62.0, False), ("no pre-training", "RTE", 52.71, True),
            ("pre-trained", "MRPC", 68.38, True), ("no pre-training", "MRPC", 68.38, True)]
    pd.DataFrame([{"model": m, "task": t, "accuracy": a, "chosen": True, "at_majority_class": floor,
                   "dev_examples": {"RTE": 277, "MRPC": 408}[t]} for m, t, a, floor in rows]
                 ).to_csv(results / "bert" / name, index=False)


def test_bert_claims_from_the_glue_search(tmp_path):
    _pretraining_glue(tmp_path)
    scores = {"tiny mlm_nsp": 60.0, "tiny mlm": 50.0, "tiny untrained": 52.0, "mini mlm_nsp": 70.0}
    pd.DataFrame([{"task": "RTE", "model": model, "accuracy": value, "chosen": True, "dev_examples": 277}
                  for model, value in scores.items()]).to_csv(tmp_path / "bert" / "ablation_glue.csv", index=False)
    pd.DataFrame({"run": ["baseline", "lr1e-3_b32_nodrop_L64"], "tokens": [1000, 1100],
                  "heldout_mlm_mask_accuracy": [0.051, 0.08]}).to_csv(tmp_path / "bert" / "stall_study.csv", index=False)
    pd.DataFrame({"run": ["baseline", "lr1e-3_b32_nodrop_L64"], "mask_positions": [12000, 6000],
                  "majority_token": "the", "majority_floor": [0.05, 0.053]}
                 ).to_csv(tmp_path / "bert" / "stall_study_floors.csv", index=False)
    tables = overview.bert_claims(tmp_path)
    stall = tables["bert/stall_study_claims.csv"].set_index("run")
    assert stall.loc["baseline", "verdict"] == "within noise"  # +0.1 on 12,000 positions
    assert stall.loc["lr1e-3_b32_nodrop_L64", "verdict"] == "reproduced"  # +2.7, 2 SE about 0.7
    objective = tables["bert/ablation_objective_claims.csv"]
    assert objective["claim"].tolist() == ["tiny mlm_nsp > tiny mlm", "tiny mlm_nsp > tiny untrained",
                                           "tiny mlm > tiny untrained"]
    assert objective["verdict"].tolist() == ["reproduced", "within noise", "within noise"]  # tolerance about 8
    size = tables["bert/ablation_size_claims.csv"]
    assert size["claim"].tolist() == ["mini mlm_nsp > tiny mlm_nsp"] and size["verdict"].iloc[0] == "reproduced"
    pretraining = tables["bert/pretraining_claims.csv"].set_index("task")
    assert list(tables)[0] == "bert/pretraining_claims.csv"  # the chapter's pages in order
    assert pretraining.loc["RTE", "claim"] == "pre-trained > no pre-training"
    assert pretraining.loc["RTE", "our_effect"] == pytest.approx(62.0 - 52.71)
    assert pretraining.loc["MRPC", "verdict"] == "at floor"  # both at the majority class
    assert "bert/long_run_glue_claims.csv" not in tables  # the long-run page fine-tuned nothing
    _pretraining_glue(tmp_path, "long_run_glue.csv")
    long_run = overview.bert_claims(tmp_path)["bert/long_run_glue_claims.csv"].set_index("task")
    assert long_run.loc["RTE", "our_effect"] == pytest.approx(62.0 - 52.71)
    # with the page's seeds at the chosen rates, the claims are on their means and spreads (compare_seeded)
    pd.DataFrame([{"model": m, "task": "RTE", "accuracy": a, "seed": s, "at_majority_class": False,
                   "dev_examples": 277} for m, values in (("pre-trained", (60.0, 62.0, 64.0)),
                                                          ("no pre-training", (52.0, 53.0, 54.0)))
                  for s, a in enumerate(values)]).to_csv(tmp_path / "bert" / "long_run_glue_seeds.csv", index=False)
    seeded = overview.bert_claims(tmp_path)["bert/long_run_glue_claims.csv"].set_index("task")
    assert seeded.loc["RTE", "our_effect"] == pytest.approx(9.0) and seeded.loc["RTE", "seeds"] == "3 vs 3"
    _pretraining_glue(tmp_path, "glue_mini_gpu.csv")
    with pytest.raises(ValueError, match="several files match.*glue_mini_cpu.csv, glue_mini_gpu.csv"):
        overview.bert_claims(tmp_path)


def test_run_records_say_which_runs_and_whether_they_predate_the_rule(tmp_path):
    (tmp_path / "runs").mkdir()
    old = {"profile": "quick", "finished": "2026-11-30 01:11:37",
           "method_versions": {overview.RULE_MODULE: overview.RULE_VERSION - 1}}
    new = {"profile": "paper", "finished": "2026-12-02 10:00:00",
           "method_versions": {overview.RULE_MODULE: overview.RULE_VERSION}}
    (tmp_path / "runs" / "a.json").write_text(json.dumps(old))
    (tmp_path / "runs" / "b.json").write_text(json.dumps(new))
    records = overview.run_records(["a", "b", "c"], tmp_path)
    assert records["current_rule"].tolist() == [False, True, False]
    assert records["note"].iloc[2] == "no run record"
    text = overview.provenance(records)
    assert "`a` (quick profile, finished 2026-11-30 01:11:37)" in text and "`b` (paper profile" in text
    assert "That page was executed before the current verdict rule" in text and "No run record for `c`" in text
    assert "predate" not in overview.provenance(records.iloc[[1]])


def test_attention_pooling_claims_equal_the_pages_own_claims():
    """Recomputed from the four pages' stored smoke outputs, each claims table matches the one its page wrote, digit
    for digit (a page judges its claims from its tables as written, the overview from the CSVs)."""
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "smoke_results"
    tables = overview.chapter_claims("attention-pooling", fixtures, per_page=True)
    pages = {"attention_pooling/claims_ablation.csv": "attention_pooling_ablation",
             "attention_pooling/claims_geometry.csv": "attention_pooling_layers",
             "attention_pooling/claims_search.csv": "attention_pooling_search",
             "attention_pooling/claims_frozen.csv": "attention_pooling_frozen"}
    assert set(tables) == set(pages)
    for name, page in pages.items():
        written = pd.read_csv(fixtures / page / name)
        ours = tables[name].reset_index(drop=True)
        assert list(ours["claim"]) == list(written["claim"]) and list(ours["verdict"]) == list(written["verdict"])
        for column in ("our_effect", "tolerance"):  # the same digits: a page judges from what its CSVs hold
            pd.testing.assert_series_equal(as_written(ours)[column], written[column], check_names=False)


def test_acl_claims_equal_the_pages_own_claims():
    """The ACL chapter's claims, recomputed from its three pages' stored smoke outputs, match the tables the pages
    wrote (a table added on one kind of CPU only is read from that CPU's folder), and the summary labels the
    per-exit rows by their exit."""
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    tables = overview.chapter_claims("aligned-contrastive", fixtures / "smoke_results", per_page=True)
    pages = {"aligned-contrastive/gradient_angles_claims.csv": "acl_gradient_angles",
             "aligned-contrastive/glue_claims.csv": "acl_glue", "aligned-contrastive/lambda_claims.csv": "acl_glue",
             "aligned-contrastive/component_claims.csv": "acl_glue",
             "aligned-contrastive/exit_claims.csv": "acl_multi_exit"}
    assert set(tables) == set(pages)
    for name, page in pages.items():
        copies = [folder / page / name for folder in (fixtures / "smoke_results",
                                                      *sorted((fixtures / "smoke_results_by_cpu").glob("*")))]
        written = pd.read_csv(next(path for path in copies if path.is_file()))
        ours = tables[name].reset_index(drop=True)
        assert list(ours["claim"]) == list(written["claim"]) and list(ours["verdict"]) == list(written["verdict"])
        for column in ("our_effect", "tolerance"):  # the same digits: a page judges from what its CSVs hold
            pd.testing.assert_series_equal(as_written(ours)[column], written[column], check_names=False)
    summary = overview.chapter_summary(tables, "aligned-contrastive")
    exits = tables["aligned-contrastive/exit_claims.csv"]
    per_exit = exits[exits["exit"].notna()]
    assert {f"{claim} (exit {exit_})" for claim, exit_ in zip(per_exit["claim"], per_exit["exit"])} <= set(summary.index)
    assert "gain of acl_cl over joint: shallow half > deep half" in summary.index  # no exit: no label


def test_acl_claims_add_the_deep_backbones_claims_named_from_the_run_record(tmp_path):
    """Where the multi-exit page ran a deep backbone (deep_exit_runs.csv), the chapter's claims add the depth
    comparison and ACL-CL against joint CE at every deep exit, with the backbones its run record names; without
    the record they cannot be named, and the error says which page to run."""
    import shutil
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "smoke_results"
    for page in ("acl_gradient_angles", "acl_glue", "acl_multi_exit"):
        shutil.copytree(fixtures / page, tmp_path / page)
    folder = tmp_path / "acl_multi_exit" / "aligned-contrastive"
    shallow = pd.read_csv(folder / "exit_runs.csv")
    deep = pd.concat([shallow.assign(exit=shallow["exit"] + 4 * block) for block in (0, 1)], ignore_index=True)
    deep = deep.assign(score=deep["score"] + deep["exit"], accuracy=deep["accuracy"] + deep["exit"])
    deep[deep["mode"] != "kd"].to_csv(folder / "deep_exit_runs.csv", index=False)
    with pytest.raises(overview.MissingResults, match="acl_multi_exit"):
        overview.chapter_claims("aligned-contrastive", tmp_path, per_page=True)
    (tmp_path / "acl_multi_exit" / "runs").mkdir()
    (tmp_path / "acl_multi_exit" / "runs" / "acl_multi_exit.json").write_text(json.dumps(
        {"parameters": {"backbone": "small", "deep_backbone": "big", "deep_exit": 3}}))
    tables = overview.chapter_claims("aligned-contrastive", tmp_path, per_page=True)
    depth = tables["aligned-contrastive/depth_claims.csv"]
    assert depth["claim"].tolist() == ["big exit 3 (acl_cl) >= small (4 layers, joint)"]
    deep_claims = tables["aligned-contrastive/deep_exit_claims.csv"]
    assert set(deep_claims["exit"].dropna()) == set(range(1, 9)) and (deep_claims["model"] == "big").all()
    assert not deep_claims["claim"].str.contains("kd").any()
    summary = overview.chapter_summary(tables, "aligned-contrastive")
    assert "big: acl_cl > joint (exit 8)" in summary.index and "acl_cl > joint (exit 4)" in summary.index

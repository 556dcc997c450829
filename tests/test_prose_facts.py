"""Facts the book's prose states about stored runs (step counts, times, seeds) equal the runs' committed records, so
a passage cannot go stale unnoticed when a run is replaced (the BERT index once described a 2,500-step run that had
been replaced by a 6,000-step one; the STS page said a run was missing after it was stored)."""
import json

import pytest

import nbformat

from bertsent.paths import REPO_ROOT, RESULTS_DIR


def train_record(kind: str, key: str) -> dict:
    return json.loads((RESULTS_DIR / "runs" / kind / key / "train.json").read_text())


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_bert_index_describes_the_stored_cpu_run():
    key = "bert-mini-mlm_nsp-6000-bb867aaa35"
    record = train_record("pretraining", key)
    text = one_line((REPO_ROOT / "book" / "bert" / "index.md").read_text())
    config, final = record["config"], record["final"]
    assert f"`results/runs/pretraining/{key}/`" in text
    assert f"{final['step']:,} steps of {config['batch_size']} pairs" in text
    assert f"({final['tokens'] / 1e6:.1f}M non-padding tokens" in text
    assert f"{record['seconds']:,.0f} s of its own clock on {record['torch_threads']} threads" in text
    assert f"the first {config['short_fraction']:.0%} of the steps on pairs of at most {config['short_length']} tokens, " \
           f"the rest at {config['max_length']}" in text


def test_sts_page_describes_the_stored_mpnet_run_in_source_and_page():
    record = train_record("sg", "all-mpnet-base-v2-opt3-stsb_train-s42-44d4e71bf2")
    threads = "one thread" if record["summary"]["threads"] == 1 else f"{record['summary']['threads']} threads"
    fact = (f"seed {record['config']['seed']}, on the leak-free sentences: {record['summary']['steps']} steps, "
            f"{record['seconds']:,.0f} s on {threads}, kept at step {record['best_step']}")
    for path in (REPO_ROOT / "notebooks" / "sg-opt" / "sg_opt_sts.ipynb", REPO_ROOT / "book" / "sg-opt" / "sg_opt_sts.ipynb"):
        prose = one_line(" ".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"))
        assert fact in prose, path
        assert "not in the run store yet" not in prose


def test_acl_index_states_the_committed_baseline_check():
    """The ACL index names which tasks CE has learned beyond the majority class, with the numbers of
    ``baseline_check.csv``: a re-run that changes them (the recipe grid's runs) cannot leave the prose behind."""
    import pandas as pd

    check = pd.read_csv(RESULTS_DIR / "aligned-contrastive" / "baseline_check.csv").set_index("task")
    text = one_line((REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text())
    kept = list(check.index[check["kept"]])
    assert kept == ["SST-2"] and f"only **SST-2** passes: CE {check.loc['SST-2', 'ce']:.2f} against " \
                                 f"{check.loc['SST-2', 'majority']:.2f}" in text
    for task in check.index:
        assert f"{check.loc[task, 'tolerance']:.2f}" in text and f"{check.loc[task, 'ce']:.2f}" in text, task


@pytest.mark.parametrize("task", ["CoLA", "RTE", "SST-2", "MRPC"])
def test_acl_index_names_the_recipe_each_stored_grid_chose(task):
    """The recipe the ACL index says a task's grid chose is the one :func:`chosen_recipes` picks from the stored runs,
    with its dev score."""
    import pandas as pd

    from bertsent.book import resolve_parameters
    from bertsent.experiments import acl_runs
    from bertsent.experiments import aligned_contrastive as acl

    grid = {"tasks": [task], "grid_learning_rates": [2e-5, 5e-5, 1e-4], "grid_epochs": [3, 5]}
    handles = [(run, stored) for run, stored in acl_runs.stored_runs("acl_glue", "quick", grid, RESULTS_DIR)
               if run.recipe is not None]
    assert len(handles) == 6 and all(stored.exists for _, stored in handles)
    rows = [{**acl._run_row(stored, "ce", task, run.seed, None), "learning_rate": run.recipe[0],
             "epochs": run.recipe[1]} for run, stored in handles]
    best = acl.chosen_recipes(pd.DataFrame(rows)).query("chosen").iloc[0]
    text = one_line((REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text())
    rate = f"{best['learning_rate']:.0e}".replace("e-0", "e-")  # 5e-5, as the prose writes it
    assert (f"{task}'s best recipe is learning rate {rate} for {int(best['epochs'])} epochs "
            f"({best['metric']} {best['score']:.2f})") in text
    quick = resolve_parameters("acl_glue", "quick")
    # "where the main table uses ..."
    assert f"the main table uses {quick['epochs'][task]} epoch" in text.split(f"{task}'s best recipe")[1][:200]


def test_attention_pooling_index_states_gemmas_frozen_numbers():
    """The chapter index's sentence on the frozen Gemma 3 270M quotes frozen_summary.csv and claims_frozen.csv."""
    import pandas as pd

    summary = pd.read_csv(RESULTS_DIR / "attention_pooling" / "frozen_summary.csv")
    gemma = summary[summary["backbone"] == "gemma-3-270m"].set_index("pooling")
    claims = pd.read_csv(RESULTS_DIR / "attention_pooling" / "claims_frozen.csv")
    row = claims[(claims["backbone"] == "gemma-3-270m")
                 & (claims["claim"] == "att_both_cls > cls_mean_last (stsb)")].iloc[0]
    text = one_line((REPO_ROOT / "book" / "attention-pooling" / "index.md").read_text())
    for pooling in ("att_both_cls", "att_both"):
        assert f"{gemma.loc[pooling, 'stsb_test']:.2f} ± {gemma.loc[pooling, 'stsb_test_sd']:.2f}" in text, pooling
    assert f"{gemma.loc['cls_mean_last', 'stsb_test']:.2f} for `cls_mean_last`: {row['our_effect']:+.2f}, " \
           f"tolerance {row['tolerance']:.2f}" in text and row["verdict"] == "within noise"
    assert f"{gemma.loc['mean_layers', 'stsb_test']:.2f} for the uniform average over layers" in text


def test_acl_index_quotes_the_step_benchmark_for_a_sparser_angle():
    """The cost the ACL index gives for measuring the angle is the committed step benchmark's."""
    import json

    ratio = json.loads((RESULTS_DIR / "benchmarks" / "acl_step.json").read_text())["ratio_to_ce"]
    text = one_line((REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text())
    assert (f"one step: {ratio['acl_embed_measured']:.2f} times CE's measured, {ratio['acl_embed']:.2f} times not"
            in text)


def test_attention_pooling_index_states_where_the_frozen_arm_has_paired_noise():
    """The index's paragraph on the frozen arm's paired noise: the MiniLM verdicts it quotes are claims_frozen.csv's,
    and the counts of runs given their per-pair cosines are the store's."""
    import pandas as pd

    from bertsent.experiments import frozen_pooler as fp

    claims = pd.read_csv(RESULTS_DIR / "attention_pooling" / "claims_frozen.csv")
    minilm = claims[claims["backbone"] == "all-minilm-l6-v2"].set_index("claim")
    text = one_line((REPO_ROOT / "book" / "attention-pooling" / "index.md").read_text())
    for claim in ("att_both_cls > cls_mean_last", "att_both_cls > att_both", "att_both_cls > cls_last"):
        row = minilm.loc[f"{claim} (stsb)"]
        assert (f"`{claim}` {row['our_effect']:+.2f} (tolerance {row['tolerance']:.2f}, *{row['verdict']}*)"
                in text), claim
        assert "paired bootstrap" in row["noise_source"], claim
    runs = fp.plan(["all-minilm-l6-v2", "bert-mini-wiki", "bert-tiny-wiki"], ["att_both", "att_both_cls"])
    without = {}
    for run in runs:
        without.setdefault(run.backbone, []).append(not fp.has_pair_cosines(run))
    assert not any(without["all-minilm-l6-v2"]) and not any(without["bert-mini-wiki"])
    assert f"{sum(without['bert-tiny-wiki'])} of bert-tiny-wiki's {len(without['bert-tiny-wiki'])}" in text


ACL_INDEX_GRIDS = {"seeds": [1, 2, 3, 4, 5], "grid_learning_rates": [2e-5, 5e-5, 1e-4], "grid_epochs": [3, 5],
                   "contrastive_grid_temperatures": [0.1, 0.3, 0.5], "contrastive_grid_weights": [0.1, 0.5, 1.0],
                   "baseline_gate": True, "angle_every": 10, "lambda_seeds": [1, 2, 3],
                   "diagnose_grid_points": [["MRPC", 0.1, 1.0], ["MRPC", 0.5, 1.0], ["CoLA", 0.1, 1.0],
                                            ["CoLA", 0.5, 1.0]]}


def test_the_acl_index_lists_its_runs_with_the_grids_the_prose_tests_read():
    """The ACL index's ``--list`` command sets exactly :data:`ACL_INDEX_GRIDS` (and the lambda curve's task), so
    the runs these tests read are the runs that command lists."""
    import re
    import shlex

    from bertsent.book import parse_value

    text = (REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text()
    command = re.sub(r"\\\n\s*", " ", text[text.index("python -m bertsent.experiments.acl_runs --page acl_glue"):])
    words = shlex.split(command[:command.index("--list")])
    given = {words[i + 1]: parse_value(words[i + 2]) for i, word in enumerate(words) if word == "-p"}
    assert given == {**ACL_INDEX_GRIDS, "lambda_task": "SST-2"}


def acl_index_rows(task: str, keep) -> "pd.DataFrame":
    """One row per run (:func:`_run_row`) of ``task`` under the ACL index's ``--list`` flags that ``keep(run)``
    selects; every selected run must be stored."""
    import pandas as pd

    from bertsent.experiments import acl_runs
    from bertsent.experiments import aligned_contrastive as acl

    overrides = {**ACL_INDEX_GRIDS, "tasks": [task], "lambda_task": task}
    handles = [(run, stored) for run, stored in acl_runs.stored_runs("acl_glue", "quick", overrides, RESULTS_DIR)
               if keep(run) and not run.diagnose]
    assert handles and all(getattr(stored, "exists", False) for _, stored in handles)
    return pd.DataFrame([acl._run_row(stored, run.method, task, run.seed, run.weight, run.temperature)
                         for run, stored in handles])


@pytest.mark.parametrize("task", ["SST-2", "MRPC", "CoLA"])
def test_acl_index_names_the_contrastive_terms_each_stored_grid_chose(task):
    """The temperature and weight the ACL index says CE+SCL's grid chose on a task are those :func:`chosen_terms`
    picks from the stored runs, with their dev score, and the range the grid spans."""
    from bertsent.experiments import aligned_contrastive as acl

    rows = acl_index_rows(task, lambda run: run.method == "ce_scl" and run.temperature is not None)
    assert len(rows) == 9
    terms = acl.chosen_terms(rows)
    best = terms.query("chosen").iloc[0]
    text = one_line((REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text())
    assert (f"{task}'s CE+SCL grid chose tau {best['temperature']:g} and lambda {best['weight']:g} "
            f"({best['metric']} {best['score']:.2f})") in text
    assert f"the nine points span {terms['score'].min():.2f}-{terms['score'].max():.2f}" in text


def test_attention_pooling_index_states_mpnets_paired_frozen_claims():
    """The chapter index's sentence on the frozen all-mpnet-base-v2's paired claims quotes claims_frozen.csv, and
    those claims are judged with the paired bootstrap."""
    import pandas as pd

    claims = pd.read_csv(RESULTS_DIR / "attention_pooling" / "claims_frozen.csv")
    mpnet = claims[claims["backbone"] == "all-mpnet-base-v2"].set_index("claim")
    text = one_line((REPO_ROOT / "book" / "attention-pooling" / "index.md").read_text())
    for claim in ("att_both_cls > cls_mean_last", "att_both_cls > cls_last", "att_both_cls > mean_last",
                  "att_both > cls_mean_last", "att_both_cls > att_both"):
        row = mpnet.loc[f"{claim} (stsb)"]
        assert "paired bootstrap" in row["noise_source"], claim
        assert (f"`{claim}` {row['our_effect']:+.2f} (tolerance {row['tolerance']:.2f}: "
                f"*{row['verdict']}*") in text, claim


@pytest.mark.parametrize("task", ["SST-2", "MRPC", "CoLA", "RTE"])
def test_acl_index_states_the_gate_on_the_stored_ce_seeds(task):
    """What the ACL index says the baseline gate decided on a task is :func:`baseline_check` on CE's five stored
    seeds at the task's chosen recipe."""
    from bertsent.experiments import aligned_contrastive as acl

    runs = acl_index_rows(task, lambda run: run.method == "ce" and run.recipe is None)
    assert len(runs) == 5
    check = acl.baseline_check(acl.score_table(runs)).set_index("task").loc[task]
    text = one_line((REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text())
    sd = runs["score"].std()
    verdict = "kept" if check["kept"] else "left out"
    assert (f"{task} is {verdict} (CE {check['ce']:.2f} ± {sd:.2f} against" in text
            and f"{check['majority']:.2f}: {check['difference']:+.2f}, tolerance {check['tolerance']:.2f})" in text)
    if not check["kept"]:  # the seeds' range the index gives for a task it leaves out
        assert f"({runs['score'].min():.2f}-{runs['score'].max():.2f})" in text


def test_attention_pooling_index_states_minilms_300_step_claims():
    """The index's paragraph on MiniLM's 300-step fine-tuning runs quotes ablation_table.csv and claims_ablation.csv,
    and its "all three seeds selected step 0" is the stored runs' record."""
    import pandas as pd

    table = pd.read_csv(RESULTS_DIR / "attention_pooling" / "ablation_table.csv")
    minilm = table[table["backbone"] == "all-minilm-l6-v2"].set_index("pooling")
    claims = pd.read_csv(RESULTS_DIR / "attention_pooling" / "claims_ablation.csv")
    judged = claims[claims["backbone"] == "all-minilm-l6-v2"].set_index("claim")
    runs = pd.read_csv(RESULTS_DIR / "attention_pooling" / "training_runs.csv")
    minilm_runs = runs[runs["backbone"] == "all-minilm-l6-v2"]
    text = one_line((REPO_ROOT / "book" / "attention-pooling" / "index.md").read_text())
    assert set(minilm_runs["steps"]) == {300}
    assert list(minilm_runs.loc[minilm_runs["pooling"] == "cls_mean_last", "best_step"]) == [0, 0, 0]
    assert (f"`att_both_cls` reads {minilm.loc['att_both_cls', 'stsb']:.2f} ± {minilm.loc['att_both_cls', 'stsb_sd']:.2f}"
            f" over 3 seeds against `cls_mean_last`'s {minilm.loc['cls_mean_last', 'stsb']:.2f}") in text
    for claim in ("att_both_cls > cls_mean_last (stsb)", "att_both > cls_mean_last (stsb)",
                  "att_both_cls > mean_last (stsb)", "att_both_cls > att_both (stsb)",
                  "mean_last of the att_both_cls encoder > mean_last trained alone (stsb)"):
        row = judged.loc[claim]
        assert f"`{claim}`" in text, claim
        assert f"{row['our_effect']:+.2f} (tolerance {row['tolerance']:.2f}: *{row['verdict']}*)" in text, claim
    assert not (judged["verdict"] == "reproduced").any()
    main = judged.loc["att_both_cls > cls_mean_last (stsb)"]
    assert f"the tolerance is {main['tolerance'] / main['paper_effect']:.1f} times it" in text
    alpha = pd.read_csv(RESULTS_DIR / "attention_pooling" / "alpha_summary.csv").set_index("backbone")
    weights = alpha.loc["all-minilm-l6-v2"]
    assert (f"{weights['entropy_ratio']:.2%}, the last layer weighted {weights['last_weight']:.3f} against the "
            f"uniform {weights['uniform_weight']:.3f}") in text


def quoted_method_means(scores, task: str) -> str:
    """The four methods' mean ± sd as an ACL index paragraph on a complete row quotes them, CE+SCL with the
    contrastive terms the task's stored grid chose (:func:`chosen_terms`)."""
    from bertsent.experiments import aligned_contrastive as acl

    grid = acl_index_rows(task, lambda run: run.method == "ce_scl" and run.temperature is not None)
    chosen = acl.chosen_terms(grid).query("chosen").iloc[0]
    return (f"CE {scores.loc['ce', 'mean']:.2f} ± {scores.loc['ce', 'sd']:.2f}, CE+SCL "
            f"(tau {chosen['temperature']:g}, lambda {chosen['weight']:g}) "
            f"{scores.loc['ce_scl', 'mean']:.2f} ± {scores.loc['ce_scl', 'sd']:.2f}, ACL-Embed "
            f"{scores.loc['acl_embed', 'mean']:.2f} ± {scores.loc['acl_embed', 'sd']:.2f}, ACL "
            f"{scores.loc['acl', 'mean']:.2f} ± {scores.loc['acl', 'sd']:.2f}")


def test_acl_index_states_sst2s_complete_row():
    """The ACL index's paragraph on SST-2's complete row quotes :func:`score_table`, :func:`main_claims` and
    :func:`component_claims` on the five stored seeds of every method, and what it says of the gradient gate (how
    many steps it dropped, that the seeds it never fired on match ACL-Embed's) is the runs' record."""
    from bertsent.experiments import aligned_contrastive as acl

    runs = acl_index_rows("SST-2", lambda run: run.seed >= 1 and run.recipe is None and run.weight in (None, 0.5))
    scores = acl.score_table(runs).set_index("method")
    claims = acl.main_claims(scores.reset_index()).set_index("claim")
    components = acl.component_claims(scores.reset_index()).set_index("claim")
    text = one_line((REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text())
    assert set(scores["seeds"]) == {5} and scores.loc["ce", "dev_examples"] == 872
    assert quoted_method_means(scores, "SST-2") in text
    for claim in ("acl > ce", "acl > ce_scl"):
        row = claims.loc[claim]
        assert row["verdict"] == "within noise"
        assert f"`{claim}` is {row['our_effect']:+.2f} (tolerance {row['tolerance']:.2f})" in text, claim
    assert set(components["verdict"]) == {"within noise"}
    assert f"`acl > acl_embed`: {components.loc['acl > acl_embed', 'our_effect']:+.2f}" in text
    assert f"`acl_embed > ce_scl`: {components.loc['acl_embed > ce_scl', 'our_effect']:+.2f}" in text
    gated = runs[runs["method"] == "acl"].set_index("seed")
    ungated = runs[runs["method"] == "acl_embed"].set_index("seed")
    assert f"{int(gated['dropped_steps'].sum())} of its {int(gated['measured_steps'].sum()):,} steps" in text
    never = gated.index[gated["dropped_steps"] == 0]
    assert len(never) == 4 and (gated.loc[never, "score"] == ungated.loc[never, "score"]).all()
    fired = gated.index[gated["dropped_steps"] > 0][0]
    assert f"(seed {fired})" in text
    assert f"moved seed {fired} by {gated.loc[fired, 'score'] - ungated.loc[fired, 'score']:+.2f}" in text
    angles = runs.loc[runs["method"].isin(["acl", "acl_embed"]), "angle_mean"]
    assert f"at {angles.min():.0f}-{angles.max():.0f} degrees on average" in text


def quoted_range(values) -> str:
    """Values as the prose quotes them: one number where they round alike, else ``min-max``."""
    low, high = f"{min(values):.2f}", f"{max(values):.2f}"
    return low if low == high else f"{low}-{high}"


@pytest.mark.parametrize("task", ["MRPC", "CoLA"])
def test_acl_index_states_the_collapsed_grid_points_training_loss(task):
    """Where the ACL index says the grid's tau-0.1 points with lambda 0.5 and 1.0 collapse on dev while their
    training-batch cross-entropy still falls, the means over the last fifth of each run it quotes are the stored
    histories' (against the tau 0.3 and 0.5 points on MRPC, and tau 0.1 with lambda 0.1 on CoLA)."""
    from bertsent.experiments import acl_runs

    overrides = {**ACL_INDEX_GRIDS, "tasks": [task], "lambda_task": task}
    last_fifth = {}
    for run, stored in acl_runs.stored_runs("acl_glue", "quick", overrides, RESULTS_DIR):
        if run.method == "ce_scl" and run.temperature is not None and not run.diagnose:
            ce = stored.history()["ce"].dropna()
            last_fifth[(run.temperature, run.weight)] = ce.iloc[len(ce) - len(ce) // 5:].mean()
    assert len(last_fifth) == 9
    collapsed = [last_fifth[(0.1, weight)] for weight in (0.5, 1.0)]
    working = ([value for (tau, _), value in last_fifth.items() if tau != 0.1] if task == "MRPC"
               else [last_fifth[(0.1, 0.1)]])
    text = one_line((REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text())
    assert (f"a mean of {quoted_range(collapsed)} over the last fifth of each run, against "
            f"{quoted_range(working)}") in text


def test_acl_index_states_mrpcs_complete_row():
    """The ACL index's paragraph on MRPC's complete row quotes :func:`score_table`, :func:`main_claims` and
    :func:`component_claims` on the five stored seeds of every method, and what it says of the gradient gate (that it
    fired on every seed, how many steps it dropped, how far it moved each seed from ACL-Embed's) is the runs' record."""
    from bertsent.experiments import aligned_contrastive as acl

    runs = acl_index_rows("MRPC", lambda run: run.seed >= 1 and run.recipe is None and run.weight in (None, 0.5))
    scores = acl.score_table(runs)
    accuracy = scores[scores["metric"] == "accuracy"].set_index("method")
    claims = acl.main_claims(scores).set_index("claim")
    components = acl.component_claims(scores).set_index("claim")
    text = one_line((REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text())
    paragraph = text[text.index("**MRPC's row is complete**"):]
    assert set(accuracy["seeds"]) == {5} and accuracy.loc["ce", "dev_examples"] == 408
    assert quoted_method_means(accuracy, "MRPC") in paragraph
    for claim in ("acl > ce", "acl > ce_scl"):
        row = claims.loc[claim]
        assert f"`{claim}` is {row['our_effect']:+.2f} (tolerance {row['tolerance']:.2f})" in paragraph, claim
    for claim in ("acl > acl_embed", "acl_embed > ce_scl"):
        row = components.loc[claim]
        assert f"`{claim}`: {row['our_effect']:+.2f} (tolerance {row['tolerance']:.2f})" in paragraph, claim
    verdicts = set(claims["verdict"]) | set(components["verdict"])
    assert verdicts == {"within noise"} and "*within noise*" in paragraph
    above_ce = accuracy.loc[["ce_scl", "acl_embed", "acl"], "mean"] - accuracy.loc["ce", "mean"]
    assert f"sits {above_ce.min():.1f}-{above_ce.max():.1f} points above CE" in paragraph
    for method, label in (("ce", "CE"), ("ce_scl", "CE+SCL"), ("acl_embed", "ACL-Embed"), ("acl", "ACL")):
        seconds = runs.loc[runs["method"] == method, "train_seconds"]
        assert f"{label} {seconds.min():,.0f}-{seconds.max():,.0f} s" in paragraph, method
    gated = runs[runs["method"] == "acl"].set_index("seed")
    ungated = runs[runs["method"] == "acl_embed"].set_index("seed")
    dropped = gated["dropped_steps"].astype(int)
    assert (dropped > 0).all() and "on every seed" in paragraph
    assert (f"{dropped.sum()} of its {int(gated['measured_steps'].sum()):,} steps "
            f"({dropped.min()}-{dropped.max()} a seed)") in paragraph
    moved = gated["score"] - ungated.loc[gated.index, "score"]
    assert f"by {moved.min():+.2f} to {moved.max():+.2f} (mean {moved.mean():+.2f})" in paragraph
    angles = runs.loc[runs["method"].isin(["acl", "acl_embed"]), "angle_mean"]
    assert f"at {angles.min():.0f}-{angles.max():.0f} degrees on average" in paragraph


def test_acl_index_states_the_diagnosed_grid_point():
    """What the ACL index says of MRPC's diagnosed tau-0.1, lambda-1.0 grid point is the stored diagnosis
    (:func:`decision_diagnosis` of its final model), and the re-run scored what the grid's run scored."""
    from bertsent.experiments import acl_runs

    overrides = {**ACL_INDEX_GRIDS, "tasks": ["MRPC"], "lambda_task": "MRPC"}
    grid = {(run.temperature, run.weight, run.diagnose): stored
            for run, stored in acl_runs.stored_runs("acl_glue", "quick", overrides, RESULTS_DIR)
            if run.task == "MRPC" and run.method == "ce_scl" and run.temperature is not None}
    point, diagnosed = grid[(0.1, 1.0, False)].train()["result"], grid[(0.1, 1.0, True)].train()["result"]
    assert diagnosed["accuracy"] == point["accuracy"]
    train, dev = diagnosed["diagnosis"]["train"], diagnosed["diagnosis"]["dev"]
    best = max(stored.train()["result"]["accuracy"] for (_, _, again), stored in grid.items() if not again)
    text = one_line((REPO_ROOT / "book" / "aligned-contrastive" / "index.md").read_text())
    paragraph = text[text.index("**What the collapsed points lost.**"):]
    for quoted in (f"its dev accuracy is the grid run's {point['accuracy']:.2f} again",
                   f"paraphrase for {train['predicted_share'][1]:.1%} of the training pairs and "
                   f"{dev['predicted_share'][1]:.1%} of the dev pairs",
                   f"AUC of {train['auc']:.2f} on the training pairs and {dev['auc']:.2f} on dev",
                   f"would give {train['best_threshold_score']:.2f} and {dev['best_threshold_score']:.2f} accuracy",
                   f"the grid's best point scored {best:.2f}",
                   f"probability of class 1 of {train['probability_of_class_1']['0']:.2f} on the training pairs and "
                   f"{dev['probability_of_class_1']['0']:.2f} on dev",
                   f"the paraphrases' {train['cross_entropy']['1']:.2f} averaged with the non-paraphrases' "
                   f"{train['cross_entropy']['0']:.2f}"):
        assert quoted in paragraph, quoted
    assert train["auc"] > 0.9 and train["predicted_share"][1] > 0.95  # what "ranks ... misplaced threshold" reads
    contrast = grid[(0.5, 1.0, True)].train()["result"]
    assert contrast["accuracy"] == grid[(0.5, 1.0, False)].train()["result"]["accuracy"]
    found, held_out = contrast["diagnosis"]["train"], contrast["diagnosis"]["dev"]
    assert (f"the grid run's {contrast['accuracy']:.2f} again), ranks about as well (AUC {found['auc']:.2f} on the "
            f"training pairs and {held_out['auc']:.2f} on dev) but gives the non-paraphrases a mean probability of "
            f"class 1 of {found['probability_of_class_1']['0']:.2f} on the training pairs") in paragraph

"""The long run's page helpers (``bertsent.experiments.bert_long_run``), on the committed smoke stretch."""
import pandas as pd
import pytest

from bertsent.experiments.bert_long_run import curve_table, floor_claims, load_run, stretch_table

FIXTURE_ROOT = "tests/fixtures/training/long_run"  # relative: read from the repository's root, as a profile names it
FLOORS = {"majority_token": ",", "eval_pairs": 1024,
          "mask": {"count": 20000, "majority": 0.05, "best_constant": 0.06, "copy": 0.0}}


def test_a_run_with_nothing_committed_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="bertsent.training.long_run no-run"):
        load_run("no-run", tmp_path)


def test_the_committed_stretch_reads_back_as_curve_and_stretch_tables():
    record, history = load_run("smoke", FIXTURE_ROOT)
    stretches = stretch_table(record)
    assert stretches["stretch"].tolist() == [1] and stretches["continued_from"].iloc[0] == "new run"
    assert stretches["tokens_millions"].iloc[0] == pytest.approx(record["tokens"] / 1e6)
    curve = curve_table(history)
    assert curve["step"].tolist() == history["step"].tolist()
    assert curve["tokens_millions"].iloc[-1] == pytest.approx(record["tokens"] / 1e6)


def history_at(mask_accuracy: float, nsp_accuracy: float) -> pd.DataFrame:
    return pd.DataFrame([{"step": 0, "tokens": 0, "heldout_mlm_mask_accuracy": 0.0, "heldout_nsp_accuracy": 0.5},
                         {"step": 100, "tokens": 10**6, "heldout_mlm_mask_accuracy": mask_accuracy,
                          "heldout_nsp_accuracy": nsp_accuracy}])


def test_a_run_on_the_plateau_has_not_left_the_floor():
    claims = floor_claims(history_at(0.062, 0.51), FLOORS).set_index("claim")
    assert claims.loc["[MASK] accuracy > the best constant guess", "verdict"] == "within noise"
    assert claims.loc["[MASK] accuracy > the target 25%", "verdict"] == "not reproduced"
    assert claims.loc["NSP accuracy > chance (50%)", "verdict"] == "within noise"


def test_a_run_that_learned_clears_the_floor_the_target_and_chance():
    claims = floor_claims(history_at(0.31, 0.80), FLOORS).set_index("claim")
    # judged against the harder floor: the best constant (6%), not the majority word piece (5%)
    assert claims.loc["[MASK] accuracy > the best constant guess", "our_effect"] == pytest.approx(25.0)
    assert set(claims["verdict"]) == {"reproduced"}


def lever_run(tmp_path, name, branch, rows):
    import json
    directory = tmp_path / name
    directory.mkdir(parents=True)
    (directory / "record.json").write_text(json.dumps({"run": name, "branch": branch}))
    pd.DataFrame(rows).to_csv(directory / "history.csv", index=False)


def curve_rows(steps, losses, accuracies):
    return [{"step": s, "tokens": 8000 * s, "heldout_mlm_loss": loss, "heldout_mlm_mask_accuracy": accuracy,
             "heldout_nsp_accuracy": 0.7} for s, loss, accuracy in zip(steps, losses, accuracies)]


def test_a_lever_is_compared_with_its_parents_own_trend_before_the_branch(tmp_path):
    from bertsent.experiments.bert_long_run import lever_claims, lever_table, load_levers
    parent = curve_rows([0, 200, 400], [7.0, 6.5, 6.4], [0.05, 0.06, 0.06])
    lever_run(tmp_path, "bert-mini-wsd-decay", {"parent": "bert-mini-wsd", "branch_step": 400, "steps": 200,
                                                "decay": True, "changes": {}},
              parent + curve_rows([500, 600], [6.0, 5.5], [0.10, 0.14]))
    lever_run(tmp_path, "bert-mini-wsd-mask40", {"parent": "bert-mini-wsd", "branch_step": 400, "steps": 200,
                                                 "decay": False, "changes": {"mask_fraction": 0.4}},
              parent + curve_rows([600], [6.35], [0.06]))
    levers = load_levers("bert-mini-wsd", tmp_path)
    assert set(levers) == {"bert-mini-wsd-decay", "bert-mini-wsd-mask40"}  # lr3e-4 has not trained: not listed
    table = lever_table(pd.DataFrame(parent), levers).set_index("lever")
    decay = table.loc["bert-mini-wsd-decay"]
    assert decay["change"] == "learning rate decayed linearly to 0 over 200 steps"
    assert (decay["branch_step"], decay["steps"]) == (400, 200)
    assert decay["lever_mlm_loss_change"] == pytest.approx(-0.9)
    # the control: the parent's own change over the 200 steps before the branch
    assert decay["parent_steps_before"] == 200 and decay["parent_mlm_loss_change_before"] == pytest.approx(-0.1)
    assert decay["mask_accuracy_after"] == pytest.approx(14.0)
    assert table.loc["bert-mini-wsd-mask40", "change"] == "mask_fraction 0.4"
    claims = lever_claims(levers, FLOORS)
    assert set(claims["lever"]) == set(levers) and len(claims) == 6
    best = claims.set_index(["lever", "claim"]).loc[("bert-mini-wsd-decay", "[MASK] accuracy > the best constant guess")]
    assert best["verdict"] == "reproduced" and best["our_effect"] == pytest.approx(8.0)


def test_levers_and_word_order_in_words_read_their_tables():
    from bertsent.experiments.bert_long_run import levers_and_order_in_words
    levers = pd.DataFrame([{"change": "mask_fraction 0.4", "branch_step": 4000, "steps": 400, "lever_mlm_loss_change": -0.05,
                            "parent_mlm_loss_change_before": 0.006, "parent_steps_before": 500, "mask_accuracy_after": 5.98},
                           {"change": "learning_rate 0.0003", "branch_step": 4000, "steps": 400,
                            "lever_mlm_loss_change": -0.08, "parent_mlm_loss_change_before": 0.006,
                            "parent_steps_before": 500, "mask_accuracy_after": 6.41}])
    order = pd.DataFrame([{"model": "run", "shuffled_state_cosine": 0.93, "strongest_neighbour_head": 0.135,
                           "uniform_attention": 0.087},
                          {"model": "untrained", "shuffled_state_cosine": 0.71, "strongest_neighbour_head": 0.09,
                           "uniform_attention": 0.087},
                          {"model": "reference", "shuffled_state_cosine": 0.79, "strongest_neighbour_head": 1.0,
                           "uniform_attention": 0.087}])
    text = levers_and_order_in_words(levers, order)
    assert "2 levers branched at step 4,000 (mask_fraction 0.4; learning_rate 0.0003)" in text
    assert "by -0.080 to -0.050 nats in 400 steps" in text and "5.98-6.41%" in text
    assert "cosine of 0.93" in text and "untrained: 0.71" in text and "reference: 1.00" in text
    assert levers_and_order_in_words(levers.iloc[:0], order.iloc[:0]) == (
        "Word order was not measured: the run's weights are not committed.")
    assert "it has learned a bag of words" in text  # 0.135 is under twice uniform (0.174)

    smaller = pd.DataFrame([{"model": "tiny run", "shuffled_state_cosine": 0.91, "strongest_neighbour_head": 0.22,
                             "uniform_attention": 0.087},
                            {"model": "tiny untrained", "shuffled_state_cosine": 0.70,
                             "strongest_neighbour_head": 0.09, "uniform_attention": 0.087}])
    with_other = pd.concat([order.iloc[:2], smaller, order.iloc[2:]], ignore_index=True)
    text = levers_and_order_in_words(levers, with_other)
    assert "reference: 1.00" in text  # the reference is the last row, whatever comes between
    assert "tiny run: shuffled-state cosine 0.91, strongest neighbour head 0.22 (2.5 times uniform): a head" in text
    quiet = with_other.assign(strongest_neighbour_head=[0.135, 0.09, 0.15, 0.09, 1.0])
    assert "tiny run: shuffled-state cosine 0.91, strongest neighbour head 0.15: no head tracks a neighbour yet" in (
        levers_and_order_in_words(levers, quiet))


def test_word_order_of_a_run_without_committed_weights_is_an_empty_table(tmp_path):
    from bertsent.experiments.bert_long_run import WORD_ORDER_COLUMNS, word_order_table
    (tmp_path / "lever").mkdir()
    (tmp_path / "lever" / "record.json").write_text("{}")
    table = word_order_table("lever", tmp_path)
    assert table.empty and list(table.columns) == WORD_ORDER_COLUMNS


def test_a_from_scratch_lever_is_compared_with_the_run_at_equal_tokens():
    from bertsent.experiments.bert_long_run import equal_tokens_in_words, equal_tokens_table
    run = pd.DataFrame(curve_rows([0, 200, 400], [7.0, 6.5, 6.4], [0.05, 0.06, 0.061]))
    tiny = pd.DataFrame(curve_rows([0, 300], [7.5, 5.0], [0.04, 0.20]))  # 2.4M tokens: the run's step 200 is the match
    record = {"config": {"size": "tiny"}, "stretches": [{"tokens_per_second": 9000.0}]}
    table = equal_tokens_table("mini", run, {"bert-tiny-wsd": (record, tiny)})
    row = table.iloc[0]
    assert row["mini_tokens_millions"] == pytest.approx(1.6) and row["mini_mlm_loss"] == pytest.approx(6.5)
    assert row["mask_accuracy"] == pytest.approx(20.0)
    text = equal_tokens_in_words("mini", table)
    assert text.startswith("BERT-tiny from scratch (bert-tiny-wsd, 9,000 tokens/s) reached 20.00% at [MASK]")
    assert "where mini had 6.00% and 6.500 after 1.6M." in text


def test_the_glue_arms_of_a_long_run_are_its_weights_and_the_same_size_untrained(tmp_path, committed_long_run):
    from bertsent.experiments.bert_long_run import glue_models

    committed_long_run(tmp_path / "training" / "smoke")
    models = glue_models("smoke", tmp_path / "training", cache_dir=tmp_path / "cache")
    assert list(models) == ["pre-trained", "no pre-training"]
    assert models["pre-trained"].key.startswith("weights-") and models["pre-trained"].locate() == tmp_path / "training" / "smoke"
    assert models["no pre-training"].key.startswith("untrained-tiny-s0")
    assert not (tmp_path / "cache").exists()  # made only when a fine-tuning needs it

"""The stall study's recipes, summary table and unigram floor."""
import math

import numpy as np
import pandas as pd
import pytest

from bertsent.experiments.bert_stall import RECIPES, floor_claims, recipe_config, study_table, unigram_entropy


def test_every_recipe_spends_the_same_nominal_token_budget():
    for name in RECIPES:
        config = recipe_config(name, tokens=100_000)
        per_pair = 118 if config.max_length >= 128 else config.max_length - 4
        assert config.max_steps == math.ceil(100_000 / (config.batch_size * per_pair))
        assert config.eval_every == max(1, config.max_steps // 8)
        assert config.corpus_files == ("enwiki-2018.txt.xz",) and config.size == "mini"


def test_recipes_differ_from_the_baseline_only_in_their_declared_fields():
    baseline = recipe_config("baseline", tokens=10**6)
    for name, (_, fields) in RECIPES.items():
        config = recipe_config(name, tokens=10**6)
        changed = {f for f in vars(config) if getattr(config, f) != getattr(baseline, f)} - {"max_steps", "eval_every"}
        assert changed <= set(fields), name


def test_unknown_recipe_names_the_choices():
    with pytest.raises(ValueError, match="Unknown recipe 'fast'.*baseline"):
        recipe_config("fast")


def test_study_table_orders_by_loss_and_compares_with_the_reference():
    history = pd.DataFrame({
        "run": ["baseline", "baseline", "better", "better"], "step": [0, 10, 0, 20], "tokens": [0, 100, 0, 100],
        "change": ["published", "published", "lr", "lr"], "heldout_mlm_loss": [10.0, 7.2, 10.0, 7.0],
        "heldout_mlm_mask_accuracy": [0, .05, 0, .05], "heldout_mlm_unchanged_accuracy": [0, .3, 0, .4],
        "heldout_mlm_accuracy": [0, .08, 0, .09], "heldout_nsp_accuracy": [.5, .6, .5, .5], "run_seconds": [1, 1, 2, 2]})
    continued = history[history["run"] == "baseline"].assign(run="continued_lr1e-3_b32_nodrop",
                                                             heldout_mlm_loss=[6.7, 6.6])
    table = study_table(pd.concat([history, continued]))
    assert list(table["run"]) == ["better", "baseline", "continued_lr1e-3_b32_nodrop"]  # continued runs last
    rows = table.set_index("run")
    assert rows.loc["better", "loss_vs_reference"] == pytest.approx(-0.2)
    assert not rows.loc["continued_lr1e-3_b32_nodrop", "from_scratch"]
    assert rows.loc["continued_lr1e-3_b32_nodrop", "loss_change_from_start"] == pytest.approx(-0.1)
    assert pd.isna(rows.loc["better", "loss_change_from_start"])


def test_unigram_entropy_of_a_toy_corpus():
    tokens = np.array([0, 101, 1000, 1000, 2000, 2000])  # specials below 999 are not predicted
    assert unigram_entropy(tokens, first_word_piece=999) == pytest.approx(math.log(2))


def test_floor_claims_weigh_the_gap_to_the_floor_by_the_positions_counted():
    from bertsent.report.claims import t_quantile

    table = pd.DataFrame({"run": ["left", "stuck"], "tokens": [100, 100],
                          "heldout_mlm_mask_accuracy": [0.07, 0.052]})
    floors = pd.DataFrame({"run": ["left", "stuck"], "mask_positions": [10_000, 10_000],
                           "majority_token": ["the", "the"], "majority_floor": [0.05, 0.05]})
    claims = floor_claims(table, floors).set_index("run")
    assert claims.loc["left", "our_effect"] == pytest.approx(2.0)
    # rule 3: the normal quantile (one run, no seeds) times the binomial SE of the accuracy, in points
    z = t_quantile(math.inf)
    assert z == pytest.approx(1.96, abs=1e-3)
    assert claims.loc["left", "tolerance"] == pytest.approx(100 * z * math.sqrt(0.07 * 0.93 / 10_000))
    assert claims.loc["left", "verdict"] == "reproduced"
    assert claims.loc["stuck", "verdict"] == "within noise"  # +0.2 against 1.96 SE = 0.44
    fewer = floor_claims(table, floors.assign(mask_positions=100)).set_index("run")
    assert fewer.loc["left", "verdict"] == "within noise"  # the same gap on 100 positions is noise

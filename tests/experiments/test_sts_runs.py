"""Training the STS page's runs ahead of the page (``bertsent.experiments.sts_runs``): the same runs the page asks
for, stored where the page reads them, reused when stored, never written into results/ by a non-canonical profile."""
import pytest

from bertsent import book
from bertsent.experiments import sts_runs
from bertsent.experiments.runs import stored_run


# the page's runs as the tests ask for them (the quick profile's own list grows as runs are stored)
GEMMA_RUNS = {"trained_runs": {"gemma-3-270m": [["sg_opt", "stsb_train", [42, 43, 44]], ["sg", "stsb_train"]]}}


def test_a_backbone_with_its_own_seeds_gets_one_run_per_seed():
    runs = sts_runs.page_runs("quick", GEMMA_RUNS, backbones=["gemma-3-270m"])
    got = [(r["method"], r["train_data"], r["seed"]) for r in runs]
    assert got[:3] == [("sg_opt", "stsb_train", 42), ("sg_opt", "stsb_train", 43), ("sg_opt", "stsb_train", 44)]
    assert all(r["config"].seed == r["seed"] and r["config"].loss == {"sg": "base", "sg_opt": "opt3"}[r["method"]]
               for r in runs)
    assert {r["backbone"] for r in runs} == {"gemma-3-270m"}


def test_an_unknown_backbone_is_named_with_the_choices():
    with pytest.raises(ValueError, match="bert-base-uncased: not a backbone of the STS page.*all-minilm-l6-v2"):
        sts_runs.page_runs("quick", backbones=["bert-base-uncased"])


def test_only_canonical_profiles_default_to_results():
    assert sts_runs._results_dir("quick", None, None) is None  # the repository's results/
    elsewhere = sts_runs._results_dir("smoke", None, None)
    assert elsewhere.is_relative_to(book.RERUNS_DIR)
    assert sts_runs._results_dir("quick", {"seeds": [1]}, None).is_relative_to(book.RERUNS_DIR)


def test_runs_are_trained_once_then_reused_where_the_page_reads_them(tmp_path):
    overrides = {"runs_dir": str(tmp_path / "runs")}
    first = sts_runs.train_page_runs("smoke", overrides, results_dir=tmp_path / "results", log=lambda _: None)
    assert [r["stored_before"] for r in first] == [False]
    run = sts_runs.page_runs("smoke", overrides)[0]
    stored = stored_run(run["backbone"], run["train_data"], run["config"], tmp_path / "results", 24)
    assert stored.exists and first[0]["key"] == stored.key
    again = sts_runs.train_page_runs("smoke", overrides, results_dir=tmp_path / "results", log=lambda _: None)
    assert [r["stored_before"] for r in again] == [True]
    skipped = []
    assert sts_runs.train_page_runs("smoke", overrides, results_dir=tmp_path / "other", max_runs=0,
                                    log=skipped.append) == []
    assert skipped and "left for a later call" in skipped[0]


def test_keys_pick_runs_in_the_order_given_and_an_unknown_key_is_refused():
    listed = [stored.key for _, stored in sts_runs.stored_page_runs("quick", GEMMA_RUNS, backbones=["gemma-3-270m"])]
    picked = sts_runs.stored_page_runs("quick", GEMMA_RUNS, keys=[listed[2], listed[0]])
    assert [stored.key for _, stored in picked] == [listed[2], listed[0]]
    with pytest.raises(ValueError, match="no-such-run: not a run of the STS page.*--list"):
        sts_runs.stored_page_runs("quick", GEMMA_RUNS, keys=["no-such-run"])


def test_the_domain_and_ablation_pages_list_the_runs_their_notebooks_train():
    domain = sts_runs.page_runs("quick", {"backbones": ["bert-mini-wiki"], "seeds": [42, 1]}, page="sg_opt_domain")
    assert [(r["train_data"], r["seed"]) for r in domain] == [
        (data, seed) for data in ("stsb_all", "stsb_train", "snli") for seed in (42, 1)]
    assert {r["config"].loss for r in domain} == {"opt3"}
    ablations = sts_runs.page_runs("quick", {"variants": ["sg_opt", "sg"], "seeds": [42], "reference_seeds": [42, 1]},
                                   page="sg_opt_ablations")
    assert [(r["method"], r["seed"], r["config"].loss) for r in ablations] == [
        ("sg_opt", 42, "opt3"), ("sg_opt", 1, "opt3"), ("sg", 42, "base")]


def test_a_run_shared_by_two_pages_has_one_key():
    sts = {s.key for _, s in sts_runs.stored_page_runs("quick", backbones=["bert-mini-wiki"])}
    domain = {s.key for _, s in sts_runs.stored_page_runs("quick", backbones=["bert-mini-wiki"], page="sg_opt_domain")}
    assert len(sts & domain) == 2  # SG-OPT on stsb_all and stsb_train, seed 42


def test_a_page_that_trains_no_sg_runs_is_refused():
    with pytest.raises(ValueError, match="'isotropy' trains no SG runs ahead.*sg_opt_domain"):
        sts_runs.page_runs("quick", page="isotropy")

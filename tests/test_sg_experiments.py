import pandas as pd

from bertsent.sg_experiments import claim_checks, run_id, verdict
from bertsent.training import SelfGuidedConfig


def test_verdict():
    assert verdict(2.0, 10.0) == "reproduced"
    assert verdict(-2.0, 10.0) == "not reproduced"
    assert verdict(0.3, 10.0) == "inconclusive"
    assert verdict(-0.3, -1.0) == "inconclusive"
    assert verdict(-1.0, -1.0) == "reproduced"


def test_claim_checks_compare_differences_not_levels():
    ours = pd.Series({"sg_opt": 78.0, "cls": 74.0, "mean": 79.0})
    paper = pd.Series({"sg_opt": 74.62, "cls": 31.40, "mean": 52.57})
    table = claim_checks(ours, paper, [("sg_opt", "cls"), ("sg_opt", "mean"), ("sg_opt", "sg")])
    assert table["verdict"].tolist() == ["reproduced", "not reproduced"]  # the claim with a missing row is skipped
    assert table["ours"].tolist() == [4.0, -1.0]


def test_run_id_depends_on_every_setting():
    base = SelfGuidedConfig()
    assert run_id("m", "stsb_all", base) == run_id("m", "stsb_all", SelfGuidedConfig())
    assert run_id("m", "stsb_all", base) != run_id("m", "stsb_all", SelfGuidedConfig(seed=1))
    assert run_id("m", "stsb_all", base) != run_id("m", "stsb_train", base)
    assert run_id("m", "stsb_all", base) != run_id("m", "stsb_all", SelfGuidedConfig(view_pooling="mean"))

"""The SG / SG-OPT run cache (``bertsent.experiments.runs``): run keys."""
from bertsent.experiments.runs import run_id
from bertsent.training import SelfGuidedConfig


def test_run_id_depends_on_every_setting():
    base = SelfGuidedConfig()
    assert run_id("m", "stsb_all", base) == run_id("m", "stsb_all", SelfGuidedConfig())
    assert run_id("m", "stsb_all", base) != run_id("m", "stsb_all", SelfGuidedConfig(seed=1))
    assert run_id("m", "stsb_all", base) != run_id("m", "stsb_train", base)
    assert run_id("m", "stsb_all", base) != run_id("m", "stsb_all", SelfGuidedConfig(view_pooling="mean"))

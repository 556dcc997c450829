"""GLUE loaders (``bertsent.data.glue``): published example counts, labelled rows, supported tasks."""
import pytest

from bertsent.data import load_glue


def test_glue_counts():
    expected = {("CoLA", "train"): 8551, ("CoLA", "dev"): 1043, ("SST-2", "train"): 67349, ("SST-2", "dev"): 872,
                ("MRPC", "train"): 3668, ("MRPC", "dev"): 408, ("RTE", "train"): 2490, ("RTE", "dev"): 277,
                ("QNLI", "dev"): 5463}
    for (task, split), count in expected.items():
        frame = load_glue(task, split)
        assert len(frame) == count
        assert frame["label"].notna().all()


def test_unknown_glue_task_is_clear():
    with pytest.raises(ValueError, match="MNLI"):
        load_glue("MNLI", "train")

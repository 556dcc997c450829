"""Transfer-task loaders (``bertsent.data.transfer``): published example counts (SentEval, SNLI)."""
import pytest

from bertsent.data import load_snli, load_transfer


def test_transfer_counts():
    sizes = {name: {s: len(e) for s, e in load_transfer(name).splits.items()} for name in
             ("mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc")}
    assert sizes == {
        "mr": {"all": 10662}, "cr": {"all": 3775}, "subj": {"all": 10000}, "mpqa": {"all": 10606},
        "sst2": {"train": 67349, "dev": 872, "test": 1821}, "trec": {"train": 5452, "test": 500},
        "mrpc": {"train": 4076, "test": 1725},
    }
    assert len(load_snli("dev")) == 9842 and len(load_snli("test")) == 9824


def test_unknown_transfer_task_is_clear():
    with pytest.raises(ValueError, match="Unknown transfer task"):
        load_transfer("imdb")

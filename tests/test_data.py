import shutil

import pytest

from bertsent.data import ChecksumError, load_glue, load_snli, load_sts, load_transfer
from bertsent.data.sts import load_stsb
from bertsent.paths import DataNotFoundError, data_root

# Published sizes (SentEval, GLUE); see data/manifest.csv and the provenance notes of ../shared/data.
STS_COUNTS = {"sts12": 3108, "sts13": 1500, "sts14": 3750, "sts15": 3000, "sts16": 1186}
SPLIT_COUNTS = {"stsb": {"train": 5749, "dev": 1500, "test": 1379}, "sickr": {"train": 4500, "dev": 500, "test": 4927}}


@pytest.mark.parametrize("name,count", STS_COUNTS.items())
def test_sts_year_counts(name, count):
    dataset = load_sts(name)
    assert len(dataset) == count
    for pairs in dataset.subsets.values():
        assert len(pairs.sentences1) == len(pairs.sentences2) == len(pairs.scores)
        assert pairs.scores.min() >= 0 and pairs.scores.max() <= 5


@pytest.mark.parametrize("name", SPLIT_COUNTS)
def test_split_counts(name):
    for split, count in SPLIT_COUNTS[name].items():
        assert len(load_sts(name, split)) == count


def test_empty_gold_lines_are_skipped():
    # STS16 input files hold more lines than scored pairs; only scored ones are kept.
    from bertsent.data.manifest import read_lines

    lines = read_lines("downstream/STS/STS16-en-test/STS.input.headlines.txt")
    assert len(load_sts("sts16").subsets["headlines"]) < len(lines)


def test_transfer_counts():
    sizes = {name: {s: len(e) for s, e in load_transfer(name).splits.items()} for name in
             ("mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc")}
    assert sizes == {
        "mr": {"all": 10662}, "cr": {"all": 3775}, "subj": {"all": 10000}, "mpqa": {"all": 10606},
        "sst2": {"train": 67349, "dev": 872, "test": 1821}, "trec": {"train": 5452, "test": 500},
        "mrpc": {"train": 4076, "test": 1725},
    }
    assert len(load_snli("dev")) == 9842 and len(load_snli("test")) == 9824


def test_glue_counts():
    expected = {("CoLA", "train"): 8551, ("CoLA", "dev"): 1043, ("SST-2", "train"): 67349, ("SST-2", "dev"): 872,
                ("MRPC", "train"): 3668, ("MRPC", "dev"): 408, ("RTE", "train"): 2490, ("RTE", "dev"): 277,
                ("QNLI", "dev"): 5463}
    for (task, split), count in expected.items():
        frame = load_glue(task, split)
        assert len(frame) == count
        assert frame["label"].notna().all()


def test_unknown_names_are_clear():
    with pytest.raises(ValueError, match="Unknown STS dataset 'sts17'.*stsb"):
        load_sts("sts17")
    with pytest.raises(ValueError, match="Unknown transfer task"):
        load_transfer("imdb")
    with pytest.raises(ValueError, match="MNLI"):
        load_glue("MNLI", "train")


@pytest.fixture
def stsb_copy(tmp_path):
    source = data_root() / "downstream/STS/STSBenchmark"
    shutil.copytree(source, tmp_path / "downstream/STS/STSBenchmark")
    return tmp_path


def test_checksum_failure_names_file_and_fix(stsb_copy):
    assert len(load_stsb("test", data_dir=stsb_copy)) == 1379
    target = stsb_copy / "downstream/STS/STSBenchmark/sts-train.csv"
    data = bytearray(target.read_bytes())
    data[100] ^= 1  # one flipped bit
    target.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match=r"sts-train\.csv.*fetch --force"):
        load_stsb("train", data_dir=stsb_copy)


def test_missing_file_and_folder(stsb_copy, tmp_path, monkeypatch):
    (stsb_copy / "downstream/STS/STSBenchmark/sts-dev.csv").unlink()
    with pytest.raises(DataNotFoundError, match=r"Missing data file .*sts-dev\.csv"):
        load_stsb("dev", data_dir=stsb_copy)
    with pytest.raises(DataNotFoundError, match="BERTSENT_DATA"):
        load_stsb("test", data_dir=tmp_path / "nowhere")
    monkeypatch.setenv("BERTSENT_DATA", str(stsb_copy))
    assert data_root() == stsb_copy

"""Files read through the manifest (``bertsent.data.manifest``): checksum failures, missing files and folders."""
import shutil

import pytest

from bertsent.data import ChecksumError
from bertsent.data.sts import load_stsb
from bertsent.paths import DataNotFoundError, data_root


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

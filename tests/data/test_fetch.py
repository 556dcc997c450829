"""``bertsent.data.fetch`` and the ``python -m bertsent.data`` CLI, exercised offline through file:// mirrors."""
import shutil
import subprocess
import sys

import pytest

from bertsent.data.fetch import fetch
from bertsent.data.manifest import ChecksumError, load_manifest
from bertsent.paths import REPO_ROOT, data_root
from bertsent.report.io import sha256_of

ONLY = ["downstream/STS/STS16-en-test/", "downstream/MRPC/", "glue/MRPC/"]


@pytest.fixture(scope="module")
def shared():
    return data_root()


def test_fetch_from_mirror_then_skip(shared, tmp_path):
    manifest = load_manifest()
    fetched = fetch(tmp_path, mirror=shared.as_uri() + "/", only=ONLY, progress=False)
    expected = sorted(p for p in manifest if any(p.startswith(prefix) for prefix in ONLY))
    assert sorted(fetched) == expected
    for path in expected:
        assert (tmp_path / path).is_file()
    train = "glue/MRPC/train.tsv"
    assert fetched[-1] == train  # derived file built after its inputs
    assert sha256_of(tmp_path / train) == manifest[train].sha256
    assert fetch(tmp_path, mirror=shared.as_uri() + "/", only=ONLY, progress=False) == []


def test_corrupt_mirror_raises_and_leaves_nothing(shared, tmp_path):
    relative = "downstream/MRPC/msr_paraphrase_test.txt"
    mirror = tmp_path / "mirror"
    (mirror / relative).parent.mkdir(parents=True)
    shutil.copyfile(shared / relative, mirror / relative)
    with open(mirror / relative, "ab") as handle:
        handle.write(b"corrupted\n")
    dest = tmp_path / "dest"
    with pytest.raises(ChecksumError, match="msr_paraphrase_test.txt"):
        fetch(dest, mirror=mirror.as_uri() + "/", only=[relative], progress=False)
    assert [p for p in dest.rglob("*") if p.is_file()] == []


def test_cli_verify_real_data(shared):
    result = subprocess.run([sys.executable, "-m", "bertsent.data", "verify", "--data-dir", str(shared)],
                            cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "files verified" in result.stdout

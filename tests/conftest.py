import os

# No model hub is reachable where these tests run; fail fast instead of retrying downloads.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest


@pytest.fixture(scope="session")
def minilm():
    from bertsent.encode.backbones import load_backbone

    return load_backbone("all-minilm-l6-v2")


def pytest_addoption(parser):
    parser.addoption("--update-smoke-fixtures", action="store_true", default=False,
                     help="rewrite tests/fixtures/smoke_results from this run's smoke outputs (tests/test_book.py)")


@pytest.fixture
def library_copy(tmp_path, monkeypatch):
    """A copy of lib/ that fingerprints and run keys read instead of the real one (edit it freely)."""
    import shutil

    from bertsent import versions
    from bertsent.paths import REPO_ROOT

    copy = tmp_path / "lib"
    shutil.copytree(REPO_ROOT / "lib" / "bertsent", copy / "bertsent", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(versions, "LIBRARY_DIR", copy)
    return copy / "bertsent"

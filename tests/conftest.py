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

"""Where things live: the repository, its results, its caches, and the benchmark data.

The data folder is found in this order:

1. an explicit ``data_dir`` argument (every loader and notebook takes one);
2. the environment variable ``BERTSENT_DATA``;
3. ``../shared/data`` beside the repository (the machines this book is built on);
4. ``data/downloads`` inside the repository (where ``python -m bertsent.data fetch`` puts it).
"""
from __future__ import annotations

import os
from pathlib import Path

DATA_ENV_VAR = "BERTSENT_DATA"

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "results"
CACHE_DIR = Path(os.environ.get("BERTSENT_CACHE", REPO_ROOT / ".cache"))
# pooled sentence vectors (Encoder(cache=True)); on its own so that a test can give each run a fresh, empty one
EMBEDDINGS_CACHE_DIR = Path(os.environ.get("BERTSENT_EMBEDDINGS_CACHE", CACHE_DIR / "embeddings"))
MANIFEST_PATH = REPO_ROOT / "data" / "manifest.csv"
DOWNLOAD_DIR = REPO_ROOT / "data" / "downloads"
SHARED_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


class DataNotFoundError(FileNotFoundError):
    """The benchmark data folder (or one of its files) is not where the project looks."""


def data_root(data_dir: str | os.PathLike | None = None) -> Path:
    """Return the folder that holds ``downstream/`` (SentEval layout) and ``glue/``."""
    if data_dir is not None:
        candidates = [("the data_dir argument", Path(data_dir))]
    elif os.environ.get(DATA_ENV_VAR):
        candidates = [(f"${DATA_ENV_VAR}", Path(os.environ[DATA_ENV_VAR]))]
    else:
        candidates = [("../shared/data", SHARED_DATA_DIR), ("data/downloads", DOWNLOAD_DIR)]
    for _, path in candidates:
        if (path / "downstream").is_dir() or (path / "glue").is_dir():
            return path
    tried = ", ".join(f"{label} = {path}" for label, path in candidates)
    raise DataNotFoundError(
        f"No benchmark data folder found (looked at: {tried}). "
        f"Fix: point ${DATA_ENV_VAR} (or data_dir=...) at a folder holding downstream/ and glue/, "
        f"or download the data with `python -m bertsent.data fetch`."
    )

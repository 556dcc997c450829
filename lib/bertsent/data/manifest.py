"""The data manifest (``data/manifest.csv``): every file's relative path, sha256, size and public source.

Every loader opens its files through :func:`open_verified`, so a missing or altered file stops the
run with a message that names the file and the fix, instead of producing quietly different numbers.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..paths import MANIFEST_PATH, DataNotFoundError, data_root
from ..report.io import sha256_of

FETCH_HINT = "python -m bertsent.data fetch --force"


class ChecksumError(ValueError):
    """A data file exists but its bytes are not the ones the manifest records."""


@dataclass(frozen=True)
class ManifestEntry:
    path: str
    sha256: str
    bytes: int
    source: str


@lru_cache(maxsize=None)
def load_manifest(manifest_path: Path = MANIFEST_PATH) -> dict[str, ManifestEntry]:
    with open(manifest_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {row["path"]: ManifestEntry(row["path"], row["sha256"], int(row["bytes"]), row["source"]) for row in rows}


@lru_cache(maxsize=None)
def _verified(path: Path, size: int, mtime_ns: int, expected: str) -> None:
    # Keyed on size and mtime so a file is hashed once per process unless it changes.
    actual = sha256_of(path)
    if actual != expected:
        raise ChecksumError(
            f"Checksum mismatch for data file {path}: sha256 {actual}, manifest expects {expected}. "
            f"The file is corrupted or a different version. Fix: restore it, or re-download with `{FETCH_HINT}`."
        )


def verified_path(relative: str, data_dir=None) -> Path:
    """Absolute path of a manifest file under the data root, after checking that it exists and its sha256."""
    manifest = load_manifest()
    if relative not in manifest:
        raise KeyError(f"{relative!r} is not in the data manifest {MANIFEST_PATH}")
    path = data_root(data_dir) / relative
    if not path.is_file():
        raise DataNotFoundError(
            f"Missing data file {path} (listed in {MANIFEST_PATH.name}). Fix: `{FETCH_HINT}` "
            f"or point $BERTSENT_DATA at a complete copy."
        )
    stat = path.stat()
    _verified(path, stat.st_size, stat.st_mtime_ns, manifest[relative].sha256)
    return path


def read_lines(relative: str, data_dir=None, encoding: str = "utf-8") -> list[str]:
    """The file's lines as SentEval reads them (``str.splitlines``: blank lines kept, newlines dropped)."""
    return verified_path(relative, data_dir).read_text(encoding=encoding).splitlines()


def verify_all(data_dir=None) -> list[str]:
    """Check every manifest file; return the problems found (empty when all is well)."""
    problems = []
    for relative in load_manifest():
        try:
            verified_path(relative, data_dir)
        except (DataNotFoundError, ChecksumError) as error:
            problems.append(str(error))
    return problems

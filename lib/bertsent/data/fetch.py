"""Download the benchmark data listed in ``data/manifest.csv`` (``python -m bertsent.data fetch``).

Where the files come from (each manifest row names its exact URL):

* ``downstream/``: the SentEval data files, as mirrored in the GitHub repository
  ``yan-soares/research_embeddings_fine_tuning`` at a pinned commit;
* ``glue/``: the GLUE task files from ``F0restL1n/BERT``'s ``glue_data`` folder at a pinned commit;
* ``glue/MRPC/train.tsv`` (source ``derived:mrpc_train``): rebuilt from SentEval's
  ``msr_paraphrase_train.txt`` minus the GLUE dev pairs, exactly as GLUE's download script
  (``format_mrpc``) does.

The sha256 values in the manifest are those of the files the book's results were computed on; every
file is checked after download and nothing that fails the check is left on disk. Offline, point
``mirror`` (``--mirror``) at any base URL holding the same layout, e.g. ``file:///path/to/data/``.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Iterable

from ..paths import DATA_ENV_VAR, DOWNLOAD_DIR
from ..report.io import sha256_of
from .manifest import ChecksumError, ManifestEntry, load_manifest

DERIVED_PREFIX = "derived:"


class FetchError(RuntimeError):
    """A data file could not be downloaded."""


def _format_mrpc(root: Path, out: Path) -> None:
    """GLUE's ``format_mrpc``: SentEval's MRPC train file without the pairs of GLUE's dev split."""
    with open(root / "glue/MRPC/dev_ids.tsv", encoding="utf8", newline="") as fh:
        dev_ids = [row.strip().split("\t") for row in fh]
    with open(root / "downstream/MRPC/msr_paraphrase_train.txt", encoding="utf8", newline="") as data_fh, \
            open(out, "w", encoding="utf8", newline="") as train_fh:
        train_fh.write(data_fh.readline())  # header verbatim (BOM and line ending included)
        for row in data_fh:
            label, id1, id2, s1, s2 = row.strip().split("\t")
            if [id1, id2] not in dev_ids:
                train_fh.write("%s\t%s\t%s\t%s\t%s\n" % (label, id1, id2, s1, s2))


# derived source name -> (input paths, builder(data root, output file))
DERIVED: dict[str, tuple[tuple[str, ...], Callable[[Path, Path], None]]] = {
    "mrpc_train": (("downstream/MRPC/msr_paraphrase_train.txt", "glue/MRPC/dev_ids.tsv"), _format_mrpc),
}


def _download(url: str, out: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(out, "wb") as handle:
            shutil.copyfileobj(response, handle)
    except (urllib.error.URLError, OSError) as error:
        raise FetchError(
            f"Could not download {url}: {getattr(error, 'reason', error)}. Fix: retry, fetch from a local copy "
            f"with `--mirror file:///path/to/data/`, or point ${DATA_ENV_VAR} at a folder that already holds the data."
        ) from error


def _install(entry: ManifestEntry, target: Path, origin: str, write: Callable[[Path], None]) -> None:
    """Write ``target`` through a temp file in its folder; check its sha256, then move it in place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        actual = sha256_of(tmp)
        if actual != entry.sha256:
            raise ChecksumError(
                f"Checksum mismatch for {entry.path} from {origin}: sha256 {actual}, manifest expects "
                f"{entry.sha256}. Nothing was written; the source differs from the files the book used."
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _selected(only: Iterable[str] | None) -> list[ManifestEntry]:
    """The manifest entries under the ``only`` prefixes, plus the inputs of derived ones; derived last."""
    manifest = load_manifest()
    paths = {p for p in manifest if only is None or any(p.startswith(prefix) for prefix in only)}
    for path in list(paths):
        source = manifest[path].source
        if source.startswith(DERIVED_PREFIX):
            paths.update(DERIVED[source[len(DERIVED_PREFIX):]][0])
    entries = [manifest[p] for p in sorted(paths)]
    return sorted(entries, key=lambda e: e.source.startswith(DERIVED_PREFIX))


def fetch(dest=DOWNLOAD_DIR, force: bool = False, mirror: str | None = None,
          only: Iterable[str] | None = None, progress: bool = True) -> list[str]:
    """Download (or build) every manifest file into ``dest/<path>``; return the paths written.

    Files already present with the right checksum are skipped unless ``force``. ``mirror`` is a base
    URL replacing each file's source (URL = mirror + path); ``only`` restricts to path prefixes.
    """
    dest = Path(dest)
    done = []
    for entry in _selected(only):
        target = dest / entry.path
        if not force and target.is_file() and sha256_of(target) == entry.sha256:
            continue
        if entry.source.startswith(DERIVED_PREFIX):
            _, build = DERIVED[entry.source[len(DERIVED_PREFIX):]]
            _install(entry, target, entry.source, lambda out: build(dest, out))
        else:
            url = mirror.rstrip("/") + "/" + entry.path if mirror else entry.source
            _install(entry, target, url, lambda out: _download(url, out))
        done.append(entry.path)
        if progress:
            print(f"  {entry.path}", flush=True)
    return done

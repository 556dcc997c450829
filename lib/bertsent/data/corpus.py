"""The pre-training text: English Wikipedia and English novels, read in place, streaming the ``.xz`` files.

The corpus folder is found in this order: an explicit ``corpus_dir`` argument, ``$BERTSENT_CORPUS``,
``../shared/corpus`` beside the repository, ``data/corpus`` inside it. Its layout: one paragraph a line,
an empty line between documents. A fixed 1% of the documents (chosen by a hash of their text, so the
choice does not depend on the order of reading; at least two per file) is held out for validation.
"""
from __future__ import annotations

import lzma
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..paths import REPO_ROOT
from ..report.io import sha256_of

METHOD_VERSION = 1  # bump when the maths changes

CORPUS_ENV_VAR = "BERTSENT_CORPUS"
SHARED_CORPUS_DIR = REPO_ROOT.parent / "shared" / "corpus"
LOCAL_CORPUS_DIR = REPO_ROOT / "data" / "corpus"

# file name -> sha256 (the corpus's SHA256SUMS); the two kinds of text BERT was trained on
CORPUS_FILES = {
    "enwiki-2015-part0.txt.xz": "a09a0c674407e0dbf0d8b4584532bbfa3acde81d2955aa5e1a45dd2c9a07884f",
    "enwiki-2015-part1.txt.xz": "b42a9bbe8e72e77ecc615a171c450f72c1a5caf53f96fb66fc7669e7be51c04e",
    "enwiki-2015-part2.txt.xz": "6c9e4d1ef392a7219e738b30b3f9bd6fefbcdcecdbdcacd41a4c42cc46a8a0b8",
    "enwiki-2015-part3.txt.xz": "4c4d95b6b118abfa4f440ecfa63951a335b41473c740aecaabb51636391eaafd",
    "enwiki-2018.txt.xz": "91a25efe943c1f317d548aebdfdb26e806b579cc77e62b6ac6d1bc57d598cee3",
    "eltec-eng-novels.txt.xz": "97209729f18c72dbdea27ff4f3675ebdbf887e5a221a734470ab5dbd85d82d0c",
}
CORPUS_SOURCES = (
    "Wikipedia: github.com/jason-feng/wikiVisual @ 1c0fac92 (text/A[A-D]/wiki_*) and "
    "github.com/Vibhas-hs-edu/WikiTasks @ 52b1f163 (text/AA/wiki_00..63), cleaned; "
    "novels: github.com/COST-ELTeC/ELTeC-eng @ 3db3b673 (level1/*.xml)"
)
HELD_OUT_PERCENT = 1

# a sentence ends at . ! ? (and any closing quotes or brackets) followed by space and an upper-case
# letter, digit or opening quote; good enough to cut paragraphs into the segments BERT pairs up
_SENTENCE_END = re.compile(r"(?<=[.!?])([\"'\u201d\u2019)\]]*)\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")


class CorpusNotFoundError(FileNotFoundError):
    pass


class CorpusChecksumError(ValueError):
    pass


def corpus_root(corpus_dir: str | os.PathLike | None = None) -> Path:
    """The folder holding the ``.xz`` files (see the module docstring for the search order)."""
    if corpus_dir is not None:
        candidates = [Path(corpus_dir)]
    elif os.environ.get(CORPUS_ENV_VAR):
        candidates = [Path(os.environ[CORPUS_ENV_VAR])]
    else:
        candidates = [SHARED_CORPUS_DIR, LOCAL_CORPUS_DIR]
    for path in candidates:
        if any((path / name).is_file() for name in CORPUS_FILES):
            return path
    raise CorpusNotFoundError(
        "No pre-training corpus found (looked in " + ", ".join(map(str, candidates)) + "). Fix: put the "
        f"files {', '.join(CORPUS_FILES)} in one folder and set ${CORPUS_ENV_VAR} to it, or pass corpus_dir. "
        f"Sources: {CORPUS_SOURCES}."
    )


def corpus_file(name: str, corpus_dir=None, verify: bool = True) -> Path:
    """The path of one corpus file, its sha256 checked against :data:`CORPUS_FILES`."""
    if name not in CORPUS_FILES:
        raise ValueError(f"Unknown corpus file {name!r}; known: {', '.join(CORPUS_FILES)}")
    path = corpus_root(corpus_dir) / name
    if not path.is_file():
        raise CorpusNotFoundError(f"{path} is missing. Fix: copy {name} into {path.parent} ({CORPUS_SOURCES}).")
    if verify:
        actual = sha256_of(path)
        if actual != CORPUS_FILES[name]:
            raise CorpusChecksumError(
                f"{path} has sha256 {actual}, expected {CORPUS_FILES[name]}: the file is damaged or "
                f"a different version. Fix: copy it again from the source ({CORPUS_SOURCES})."
            )
    return path


def iter_documents(path: str | os.PathLike) -> Iterator[list[str]]:
    """Yield each document of a corpus file as its list of paragraphs (``.xz`` or plain text)."""
    opener = lzma.open if str(path).endswith(".xz") else open
    paragraphs: list[str] = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line:
                paragraphs.append(line)
            elif paragraphs:
                yield paragraphs
                paragraphs = []
    if paragraphs:
        yield paragraphs


def split_sentences(paragraph: str) -> list[str]:
    """Cut a paragraph into sentences at ``.``, ``!`` or ``?`` followed by a capitalised word."""
    pieces = _SENTENCE_END.split(paragraph)
    # re.split returns [text, closing, text, closing, ...]: glue each closing run back onto its sentence
    sentences = [pieces[0] + (pieces[1] if len(pieces) > 1 else "")]
    for i in range(2, len(pieces), 2):
        sentences.append(pieces[i] + (pieces[i + 1] if i + 1 < len(pieces) else ""))
    return [s.strip() for s in sentences if s.strip()]


def document_hash(document: list[str]) -> int:
    """A stable hash of a document (its first paragraph), independent of where the document is read."""
    return zlib.crc32(document[0].encode("utf-8"))


def held_out_documents(hashes, percent: int = HELD_OUT_PERCENT, minimum: int = 2) -> np.ndarray:
    """Which documents of one file are held out: those whose hash modulo 100 is below ``percent``.

    A file with few long documents (the 99 novels) would hold out none; it gives up at least ``minimum``
    documents (the lowest hashes modulo 100), so next-sentence pairs can draw a random other document.
    """
    remainders = np.asarray(hashes, dtype=np.int64) % 100
    flags = remainders < percent
    if flags.sum() < minimum and len(remainders) > 2 * minimum:
        flags[np.argsort(remainders, kind="stable")[:minimum]] = True
    return flags


# --- checked before any work ------------------------------------------------------------------------------------

# the share of a corpus file's first words (letters only, lower-cased) that are whole entries of the tokenizer's
# vocabulary: 0.92-0.95 for the six files (the first 256 KiB of text), 0.12 for random letters, 0.32 for German
KNOWN_WORD_SHARE = 0.8
_SAMPLE_CHARACTERS = 1 << 18


class CorpusContentError(ValueError):
    pass


def listed_checksums(root: Path) -> dict:
    """The ``SHA256SUMS`` beside the corpus files (``<sha256>  <name>`` a line) as name -> sha256 ({} without one)."""
    path = Path(root) / "SHA256SUMS"
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 2:
            found[parts[1].lstrip("*")] = parts[0]
    return found


def known_word_share(path: Path, vocabulary) -> float:
    """The share of the first words of ``path`` (up to 256 KiB of text) that are entries of ``vocabulary``."""
    opener = lzma.open if str(path).endswith(".xz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            text = handle.read(_SAMPLE_CHARACTERS)
    except (lzma.LZMAError, EOFError, OSError) as error:
        raise CorpusContentError(f"{path} cannot be read as xz-compressed text ({error}). Fix: copy it again from "
                                 f"the source ({CORPUS_SOURCES}).") from None
    words = re.findall(r"[^\W\d_]+", text.lower())
    return sum(word in vocabulary for word in words) / len(words) if words else 0.0


def _verified_file() -> Path:
    from ..paths import CACHE_DIR

    return CACHE_DIR / "corpus" / "verified.json"


def verify_corpus(files=None, corpus_dir=None, vocabulary=None) -> dict:
    """Check the corpus files a run reads before its first step: each present, its sha256 that of the corpus's
    ``SHA256SUMS`` (and of :data:`CORPUS_FILES`, which must agree with it), and, with ``vocabulary`` (the
    tokenizer's entries), at least :data:`KNOWN_WORD_SHARE` of its first words known word pieces. A file checked
    once is not hashed again while its path, size and modification time are unchanged (the results are kept in
    ``.cache/corpus/verified.json``): six files of 150 MB take about a second to hash, a stat nothing. Raises
    :class:`CorpusNotFoundError`, :class:`CorpusChecksumError` or :class:`CorpusContentError`, each one line with
    the fix. Returns name -> the file's known-word share (None without ``vocabulary``)."""
    import json

    from ..report.io import write_json_atomic

    names = list(files or CORPUS_FILES)
    root = corpus_root(corpus_dir)
    listed = listed_checksums(root)
    record_path = _verified_file()
    try:
        record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else {}
    except ValueError:
        record = {}
    shares, changed = {}, False
    for name in names:
        if name not in CORPUS_FILES:
            raise ValueError(f"Unknown corpus file {name!r}; known: {', '.join(CORPUS_FILES)}")
        expected = CORPUS_FILES[name]
        if name in listed and listed[name] != expected:
            raise CorpusChecksumError(f"{root / 'SHA256SUMS'} lists {name} with sha256 {listed[name]}, the library "
                                      f"expects {expected}: another version of the corpus. Fix: copy the corpus "
                                      f"again from the source ({CORPUS_SOURCES}).")
        path = root / name
        if not path.is_file():
            raise CorpusNotFoundError(f"{path} is missing. Fix: copy {name} into {root} ({CORPUS_SOURCES}).")
        stat = path.stat()
        stamp = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": expected}
        seen = record.get(str(path.resolve()), {})
        if {k: seen.get(k) for k in stamp} != stamp:
            corpus_file(name, corpus_dir)  # the sha256 (CorpusChecksumError names both hashes and the fix)
            seen, changed = dict(stamp), True
        if vocabulary is not None and seen.get("known_word_share") is None:
            seen["known_word_share"] = round(known_word_share(path, vocabulary), 4)
            changed = True
        share = seen.get("known_word_share")
        if vocabulary is not None and share < KNOWN_WORD_SHARE:
            raise CorpusContentError(f"{path}: only {share:.0%} of its first words are in the tokenizer's vocabulary "
                                     f"(English text: over {KNOWN_WORD_SHARE:.0%}): not the expected text. Fix: copy "
                                     f"it again from the source ({CORPUS_SOURCES}).")
        record[str(path.resolve())] = seen
        shares[name] = share
    if changed:
        try:
            write_json_atomic(record_path, record)
        except OSError:
            pass  # a read-only cache: checked again next time
    return shares

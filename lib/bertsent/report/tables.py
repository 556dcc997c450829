"""Writing results: tables go to CSV under ``results/`` atomically, and say where they went."""
from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from ..paths import REPO_ROOT, RESULTS_DIR
from .io import staged, write_csv_atomic

METHOD_VERSION = 1  # bump when the maths changes (here: how the numbers are written)


def results_path(results_dir, *parts: str) -> Path:
    """``results_dir`` (default: the repository's ``results/``) joined with ``parts``."""
    return Path(results_dir or RESULTS_DIR).joinpath(*parts)


def format_float(value: float) -> str:
    """Four decimals (scores, seconds), but four significant digits below 0.01, so that a learning rate of
    5e-5 is not written as 0.0001."""
    if value != 0 and abs(value) < 0.01:
        return f"{value:.4g}"
    return f"{value:.4f}"


def as_written(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the values :func:`write_table` puts in its CSV (floats at :func:`format_float`'s precision),
    read back. A page that judges claims from a table it writes judges them from this, so that the chapter's claims
    page, which re-judges them from the CSV, writes the same numbers."""
    return pd.read_csv(io.StringIO(table.to_csv(index=False, float_format=format_float, na_rep="")))


def write_table(table: pd.DataFrame, path: Path) -> Path:
    """Write a CSV atomically (a crash never leaves half a file) and print ``wrote <path>``.

    Floats are written by :func:`format_float`; undefined scores (NaN) as empty fields. In a canonical page run
    the file goes to the run's staging folder (:func:`~bertsent.report.io.staged`) and the line still names
    ``path``, where the runner puts it once the page has finished; the path written to is returned.
    """
    path = Path(path)
    write_csv_atomic(table, staged(path), index=False, float_format=format_float, na_rep="")
    shown = path.resolve().relative_to(REPO_ROOT) if path.resolve().is_relative_to(REPO_ROOT) else path
    print(f"wrote {shown}")
    return staged(path)

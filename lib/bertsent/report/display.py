"""Tables formatted for reading on a page (the CSVs under ``results/`` are written by :mod:`.tables`).

``display(readable(frame))`` in a notebook shows ``frame`` without the pandas row numbers (a named index becomes
ordinary columns), missing values (NaN, ``<NA>``, None) as blanks, whole numbers without decimals, and numbers too
small or too large for fixed decimals (a learning rate of 5e-5) in scientific notation, never as ``0.00``.
Nothing here changes a number: it only decides how it is written.

A claims table (:func:`bertsent.report.claims.claims_table`: it has ``verdict`` and ``noise_source``) is laid out
for scanning: the claim and where it was tested, then ours, the paper's, their ratio, the tolerance and the
verdict side by side; the noise's source, a sentence per row, moves out of the row into a tooltip on its tolerance
(and into the plain-text form's last column).
"""
from __future__ import annotations

import html
import math
import numbers

import pandas as pd

# a claims table's numbers, renamed for the page, in the order a reader compares them
CLAIM_NUMBERS = {"our_effect": "ours", "paper_effect": "paper", "ratio": "ratio", "tolerance": "tolerance",
                 "seeds": "seeds", "verdict": "verdict"}


def _missing(value) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # lists, arrays
        return False


def format_number(value, decimals: int = 2, integral: bool = False) -> str:
    """One cell: blank if missing; ``integral``: no decimals; scientific (``5e-5``, ``1.5e-4``) when fixed
    decimals would round it to zero (below ``10**-decimals``) or it has more than seven digits."""
    if _missing(value):
        return ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    value = float(value)
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if integral:
        return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.0f}"
    if value != 0 and (abs(value) < 10 ** -decimals or abs(value) >= 1e7):
        mantissa, exponent = f"{value:.2e}".split("e")  # 5.00e-05 -> 5e-5, 1.50e-04 -> 1.5e-4
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    return f"{value:.{decimals}f}"


def _integral(column: pd.Series) -> bool:
    """Whether a column holds counts: an integer dtype, or floats that are all whole numbers with one of at least
    10 (integers made floats by a missing value: steps, tokens); a score column of 0.0 and 1.0 keeps decimals."""
    values = [v for v in column if not _missing(v)]
    if not values or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        return False
    if pd.api.types.is_integer_dtype(column.dtype):
        return True
    return (all(float(v).is_integer() and abs(float(v)) < 1e15 for v in values)
            and max(abs(float(v)) for v in values) >= 10)


def readable_frame(frame: pd.DataFrame, decimals: int = 2, decimals_by_column: dict | None = None) -> pd.DataFrame:
    """``frame`` as strings for reading: index turned into columns (a plain 0..n-1 index dropped), every cell
    through :func:`format_number` (``decimals_by_column``: column -> decimals, for the few that need other)."""
    frame = frame.copy()
    plain_index = frame.index.nlevels == 1 and frame.index.name is None and isinstance(frame.index, pd.RangeIndex)
    frame = frame.reset_index(drop=plain_index)
    out = {}
    for position, name in enumerate(frame.columns):
        column = frame.iloc[:, position]
        places = (decimals_by_column or {}).get(name, decimals)
        integral = _integral(column)
        out[position] = [format_number(v, places, integral) for v in column]
    shown = pd.DataFrame(out)
    shown.columns = frame.columns
    return shown


class ReadableTable:
    """A table as :func:`readable` formats it: HTML for the page (pandas' ``dataframe`` class, no index), plain
    text elsewhere. ``.frame`` holds the formatted strings; ``.notes`` (a claims table's noise sources, one per row)
    become tooltips on the ``tolerance`` cells."""

    def __init__(self, frame: pd.DataFrame, notes: list[str] | None = None):
        self.frame = frame
        self.notes = notes

    def _repr_html_(self) -> str:
        if not self.notes:
            return self.frame.to_html(index=False, na_rep="", escape=True, border=0, classes="readable")
        columns = list(self.frame.columns)
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        rows = []
        for (_, row), note in zip(self.frame.iterrows(), self.notes):
            cells = []
            for column in columns:
                text = html.escape(str(row[column]))
                if column == "tolerance" and note:
                    cells.append(f'<td title="{html.escape(note, quote=True)}" style="text-decoration: underline '
                                 f'dotted; cursor: help">{text}</td>')
                else:
                    cells.append(f"<td>{text}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        return (f'<table border="0" class="dataframe readable claims"><thead><tr>{head}</tr></thead><tbody>'
                + "".join(rows) + "</tbody></table><p><small>Hover over a tolerance for where its noise comes "
                "from.</small></p>")

    def __repr__(self) -> str:
        shown = self.frame if not self.notes else self.frame.assign(noise_source=self.notes)
        return shown.to_string(index=False, na_rep="")


def is_claims_table(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` is a claims table (:func:`bertsent.report.claims.claims_table`)."""
    return {"claim", "verdict", "noise_source"} <= set(frame.columns)


def readable(frame: pd.DataFrame, decimals: int = 2, decimals_by_column: dict | None = None) -> ReadableTable:
    """``frame`` formatted for reading (see the module docstring); display it with ``display(readable(frame))``.
    A claims table is laid out for scanning (the module docstring)."""
    if not is_claims_table(frame):
        return ReadableTable(readable_frame(frame, decimals, decimals_by_column))
    numbers = [c for c in CLAIM_NUMBERS if c in frame.columns]
    context = [c for c in frame.columns if c not in numbers and c != "noise_source"]
    ordered = frame.reset_index(drop=True)[context + numbers].rename(columns=CLAIM_NUMBERS)
    notes = ["" if _missing(n) else str(n) for n in frame["noise_source"]]
    by_column = {CLAIM_NUMBERS.get(k, k): v for k, v in (decimals_by_column or {}).items()}
    return ReadableTable(readable_frame(ordered, decimals, by_column), notes)

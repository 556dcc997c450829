"""What the book shows and writes: result tables as CSV (``tables``), figures (``plots``), the papers'
reported numbers (``reported``), every verdict on a paper's claim (``claims``: one rule for the whole book) and
the atomic writers and file checksum every stage uses (``io``)."""

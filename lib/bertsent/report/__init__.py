"""What the book shows and writes: result tables as CSV (``tables``), figures (``plots``), the papers'
reported numbers (``reported``) and the atomic writers and file checksum every stage uses (``io``)."""

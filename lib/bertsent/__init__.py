"""bertsent: BERT sentence embeddings, reproduced.

The library behind the book: data loaders with checksums (``bertsent.data``), named offline
backbones (``bertsent.backbones``), poolings (``bertsent.pooling``), an every-layer encoder
(``bertsent.encoder``), STS evaluation (``bertsent.evaluation``), the book's tables
(``bertsent.sts_tables``), plots (``bertsent.plots``) and the notebook runner (``bertsent.book``).
"""
__version__ = "0.1.0"

import warnings

# transformers imports tqdm.auto, which warns in Jupyter kernels without ipywidgets; plain text bars are fine.
warnings.filterwarnings("ignore", message="IProgress not found")

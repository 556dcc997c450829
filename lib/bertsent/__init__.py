"""bertsent: BERT sentence embeddings, reproduced.

The library behind the book, one package per stage: ``data`` (benchmark loaders with checksums, training
sentences, the pre-training corpus and its examples) -> ``encode`` (backbones, poolings, the every-layer
encoder, whitening) -> ``models`` and ``losses`` (SG / SG-OPT, BERT pre-training, classifiers) -> ``training``
(SG / SG-OPT, BERT pre-training, GLUE fine-tuning) -> ``evaluation`` (STS, transfer, geometry) -> ``report``
(tables, plots, the papers' numbers, atomic writers); ``experiments`` (the book's experiments, on top of the
stages) and the notebook runner ``book``.
"""
__version__ = "0.1.0"

import warnings

# transformers imports tqdm.auto, which warns in Jupyter kernels without ipywidgets; plain text bars are fine.
warnings.filterwarnings("ignore", message="IProgress not found")

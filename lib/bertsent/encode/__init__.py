"""Sentences to vectors: named offline backbones (``backbones``), poolings (``pooling``), the every-layer
encoder with its disk cache (``encoder``) and whitening, a post-processing of the vectors (``whitening``)."""

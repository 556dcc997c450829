"""Benchmark data, read in place and verified against ``data/manifest.csv``."""
from .glue import GLUE_TASKS, load_glue
from .manifest import ChecksumError, load_manifest, verified_path, verify_all
from .sts import STS_DATASETS, SentencePairs, STSDataset, load_sickr, load_sts, load_stsb
from .transfer import TRANSFER_TASKS, ClassificationTask, Examples, load_snli, load_transfer

__all__ = [
    "GLUE_TASKS", "load_glue", "ChecksumError", "load_manifest", "verified_path", "verify_all",
    "STS_DATASETS", "SentencePairs", "STSDataset", "load_sickr", "load_sts", "load_stsb",
    "TRANSFER_TASKS", "ClassificationTask", "Examples", "load_snli", "load_transfer",
]

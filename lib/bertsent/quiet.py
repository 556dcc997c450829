"""Loading local checkpoints without noise."""
from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def quiet_transformers():
    """Silence ``transformers``' progress bars and load reports inside the block.

    The book loads local checkpoints on purpose into other shapes (an encoder without its pooler, a pre-training
    checkpoint as a classifier with a new head); the reports of dropped or new weights say nothing a reader needs,
    and a progress bar for a local file that loads in a second is noise. Errors still show.
    """
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)

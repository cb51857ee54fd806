"""Quieting a library's logger for a block, where irlens reads the outcome another way."""
from __future__ import annotations

import contextlib
import logging


@contextlib.contextmanager
def quiet_logger(name: str, level: int = logging.ERROR):
    """Within the block, logger `name` passes only records at `level` and above; then its own level again."""
    log = logging.getLogger(name)
    before = log.level
    log.setLevel(level)
    try:
        yield
    finally:
        log.setLevel(before)

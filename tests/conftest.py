import os

import pytest
import torch

# Inductor's CPU compiles dominate the suite's time; keep its caches across tests.
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
# A node an adapter emits off its op's declared schema raises (irlens.core.ops.conform), here and in workers.
os.environ.setdefault("IRLENS_STRICT_OPS", "1")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; none on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _thunder_capture_per_test(monkeypatch):
    """A CLI call in a test with `--thunder-capture` sets it for its whole process (the variable
    the workers inherit): each test starts from the default, and its setting ends with it."""
    from irlens.frontends.thunder.capture import CAPTURE_ENV

    monkeypatch.setenv(CAPTURE_ENV, "auto")

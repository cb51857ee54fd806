import os

import pytest
import torch

# Inductor's CPU compiles dominate the suite's time; keep its caches across tests.
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
# A node an adapter emits off its op's declared schema raises (irlens.ops.conform), here and in workers.
os.environ.setdefault("IRLENS_STRICT_OPS", "1")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; none on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

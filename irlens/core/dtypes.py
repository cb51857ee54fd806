"""Dtype names, one table: the names the common view and the CLI use, and their torch dtypes."""
from __future__ import annotations

import torch

from irlens.names import COMPUTE_DTYPES  # noqa: F401  (`--dtype`: declared without torch for the command line)

# every dtype name a common-view value may carry that torch computes in
TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
                "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool, "complex64": torch.complex64,
                "complex128": torch.complex128, "complex32": torch.complex32, "float8_e4m3fn": torch.float8_e4m3fn,
                "float8_e5m2": torch.float8_e5m2, "uint16": torch.uint16, "uint32": torch.uint32,
                "uint64": torch.uint64}

# half precision, which ATen's kernels compute in float32 inside an op (their opmath type)
HALF_DTYPES = ("bfloat16", "float16")

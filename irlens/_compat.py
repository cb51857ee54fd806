"""Version shims, applied once before the libraries that need them are imported.

Each shim names the upstream problem it works around and the condition under which it
can be removed; nothing else in irlens patches third-party code.
"""
from __future__ import annotations

import functools

# lightning-thunder <= 0.2.6 registers every torch.Tensor method it knows, including the
# named-tensor methods that torch 2.13 removed; `import thunder` then fails with
# AttributeError. Stand-ins that raise keep thunder importable; irlens never calls them.
# Drop once thunder ships lightning-thunder PR 2829 (guarded by hasattr, so harmless after).
_REMOVED_NAMED_TENSOR_METHODS = ("align_as", "align_to", "has_names", "refine_names", "rename")


def _named_tensor_standin(name: str):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"torch.Tensor.{name} was removed in this torch version")

    # thunder checks that a registered function's __name__ matches the attribute name.
    method.__name__ = method.__qualname__ = name
    return method


@functools.cache
def patch_torch_for_thunder() -> None:
    import torch

    for name in _REMOVED_NAMED_TENSOR_METHODS:
        if not hasattr(torch.Tensor, name):
            setattr(torch.Tensor, name, _named_tensor_standin(name))
    # thunderfx on torch 2.13 fails with "object of type 'MappingKeysView' has no len()"
    # when Dynamo hands it a lazy graph module.
    torch._dynamo.config.use_lazy_graph_module = False


@functools.cache
def import_thunder():
    """`import thunder` with the shims above; raises ImportError if thunder is absent."""
    import warnings

    patch_torch_for_thunder()
    with warnings.catch_warnings():
        # thunder warns at import about optional executors (transformer_engine, ...) it lacks.
        warnings.simplefilter("ignore", UserWarning)
        import thunder
    return thunder


# The torchvision 0.28.0 wheel the package registry serves is a CUDA build: beside the CPU torch
# 2.13.0 its C extension does not load, and `import torchvision` then dies registering fake
# kernels for `torchvision::nms` / `qnms` ("operator torchvision::nms does not exist"). timm
# imports torchvision. Defining the two schemas (the ops stay without kernels; no zoo model calls
# them) lets the import go through. Only where the first import failed so: a torchvision whose
# extension loads defines the library itself, and a second definition would stop it loading.
_TORCHVISION_SCHEMAS = ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
                        "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
_torchvision_library = None  # the Library that defines them (kept alive: dropping it undefines them)


@functools.cache
def import_torchvision():
    """`import torchvision`, with the schemas above where its extension did not load."""
    import sys

    import torch

    global _torchvision_library
    try:
        import torchvision
    except RuntimeError as e:
        if "torchvision::nms" not in str(e):
            raise
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        _torchvision_library = torch.library.Library("torchvision", "DEF")
        for schema in _TORCHVISION_SCHEMAS:
            _torchvision_library.define(schema)
        import torchvision
    return torchvision


@functools.cache
def import_timm():
    """`import timm` (which imports torchvision: see import_torchvision)."""
    import_torchvision()
    import timm

    return timm

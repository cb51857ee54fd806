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



# The torchvision wheel the registry serves (0.28.0) is a CUDA build: on the CPU torch its C
# extension does not load (silently), and `import torchvision` then dies registering fake
# kernels for `torchvision::nms` ("operator torchvision::nms does not exist"). timm imports
# torchvision, and so does transformers (its image utilities). Declaring the two ops' schemas
# lets the import finish; calling them would still fail, and no model irlens takes calls them.
# Only applied where that import fails so: a matching build imports untouched.
_TORCHVISION_OPS = ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
                    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
_torchvision_library = None  # kept: a Library's definitions are removed when it is collected


@functools.cache
def import_torchvision():
    """`import torchvision` (before timm or transformers), with the shim above where needed;
    raises ImportError if torchvision is absent."""
    global _torchvision_library
    import sys

    import torch

    try:
        import torchvision
        return torchvision
    except RuntimeError as e:
        if "torchvision::nms does not exist" not in str(e):
            raise
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]  # the failed import's halves; the import below runs them again
    _torchvision_library = torch.library.Library("torchvision", "DEF")
    for schema in _TORCHVISION_OPS:
        _torchvision_library.define(schema)
    import torchvision
    return torchvision

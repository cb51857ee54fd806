"""`irlens repro`: from a cell (workload x backend x mode x dtype x device) to a standalone file
that reproduces what it does, and for a failing cell to the smallest graph that still fails.

    from irlens.repro import CellSpec, repro
    result = repro(CellSpec("minigpt", "nvfuser", "fwdbwd", "bfloat16", "cuda", "bench"), "out/", reduce=True)

The pieces: `cell_file` (a cell's file: Dynamo's graph of the module as code, the weights;
`graphnet_sample`: a GraphNet sample's own model.py instead),
`emit` (the file itself), `paths` (the backend and its `repro_path`: how a file and the reducer run it), `cases`,
`graphs` and `reduce` (delta debugging over the common view), `run_graph` (a candidate in a
worker), `nvfuser_regions` (Thunder's own nvFuser regions, for a crash), `jax_source` (a jaxpr
as code), `tensors` (values as code), `pipeline` (the command from start to end); the
command's options are `irlens.cli.repro`. Importing the package is cheap; the API loads on first use.
"""
_API = {"CellSpec": "irlens.matrix.spec", "Outcome": "irlens.repro.cell", "ReproResult": "irlens.repro.pipeline",
        "repro": "irlens.repro.pipeline"}
__all__ = list(_API)


def __getattr__(name: str):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'irlens.repro' has no attribute {name!r}")

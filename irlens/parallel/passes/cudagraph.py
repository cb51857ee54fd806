"""The `cudagraph` pass: record a compiled forward or backward once, replay it every step.

A CUDA graph replays fixed kernels on fixed addresses. The first call runs eagerly (lazy
initializations: NCCL communicators, cuBLAS handles, Triton autotuning); the second records
the graph, and every later call replays it and returns the graph's own (static) outputs, which
the next replay overwrites: the train loop consumes them first (one forward, then its backward,
per step).

Memory: the graph reads its inputs where they already stay put, with no copies: parameters and
buffers (the optimizer updates them in place: the same address as in the first call), and the
static inputs and outputs of the step's other graph (the backward reads the activations the
recorded forward saved, at the forward's static output addresses). Only inputs new each call
(the batch, the loss's gradient) get a static buffer they are copied into. The forward and
backward graphs share one memory pool (`CUDAGraphGroup`), recorded and replayed in the same
order, so the backward's scratch reuses the forward's. Recording starts from the first call's
warm-up: no extra warm-up run, whose copies of every saved activation used to double the
memory of a step (out of memory at batch 8 of llama3:1B on an H100, where eager fits).
Collectives inside the graph are fine with NCCL (recorded on the capture stream).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import fx

from irlens.parallel.passes.registry import GRAPH_PASSES, require_gpu
from irlens.parallel.passes.run import run_graph
from irlens.parallel.passes.summary import PassContext

WARMUP_CALLS = 1  # eager calls before recording
_RECORDED: "weakref.WeakSet[CUDAGraphWrapper]" = weakref.WeakSet()


def release_graphs() -> None:
    """Delete every recorded graph. NCCL cannot destroy a communicator that a live graph recorded
    collectives on: destroy_process_group would hang (pytorch/pytorch#115388)."""
    for wrapper in list(_RECORDED):
        if wrapper.graph is not None:
            wrapper.graph.reset()
            wrapper.graph = None


@dataclass
class CUDAGraphGroup:
    """The graphs of one compiled step (forward, backward): their memory pool, and the addresses of
    the tensors their recordings hold (static inputs and outputs), which stay put."""

    pool: tuple = field(default_factory=lambda: torch.cuda.graph_pool_handle())
    static_ptrs: set[int] = field(default_factory=set)


class CUDAGraphWrapper:
    _boxed_call = True  # AOTAutograd calls it with one list of arguments

    def __init__(self, fn: Callable, stage: str, group: CUDAGraphGroup):
        self.fn, self.stage, self.group = fn, stage, group
        self.calls = 0
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_inputs: list = []
        self.static_outputs = None
        self.warmup_ptrs: list[int | None] = []
        self.copied_inputs = 0  # inputs recorded into a static buffer (copied in at each replay)

    def __call__(self, args: list) -> list:
        if self.calls < WARMUP_CALLS:
            self.calls += 1
            self.warmup_ptrs = [_ptr(x) for x in args]
            return self.fn(list(args))
        if self.graph is None:
            return self._record(args)
        for static, x in zip(self.static_inputs, args):
            if isinstance(x, torch.Tensor) and x.data_ptr() != static.data_ptr():
                static.copy_(x)
        self.graph.replay()
        return list(self.static_outputs)

    def _stays_put(self, x, warmup_ptr: int | None) -> bool:
        """Not a tensor, or where it was in the warm-up (a parameter) or where the group's other
        recording holds it (the forward's saved activations, read by the backward)."""
        if not isinstance(x, torch.Tensor):
            return True
        return x.data_ptr() == warmup_ptr or x.data_ptr() in self.group.static_ptrs

    def _record(self, args: list) -> list:
        self.static_inputs = [x if self._stays_put(x, seen) else x.clone() for x, seen in zip(args, self.warmup_ptrs)]
        self.copied_inputs = sum(s is not x for s, x in zip(self.static_inputs, args))
        self.graph = torch.cuda.CUDAGraph()
        _RECORDED.add(self)
        # capture runs no kernel: the inputs are intact for the replay below, even where the
        # compiled backward reuses its saved-activation inputs as scratch (AOTAutograd donates them)
        with torch.cuda.graph(self.graph, pool=self.group.pool):
            self.static_outputs = self.fn(list(self.static_inputs))
        self.group.static_ptrs.update(_ptr(x) for x in (*self.static_inputs, *self.static_outputs)
                                      if isinstance(x, torch.Tensor))
        self.graph.replay()
        return list(self.static_outputs)


def _ptr(x) -> int | None:
    return x.data_ptr() if isinstance(x, torch.Tensor) else None


def cudagraph(compiled: Callable, ctx: PassContext) -> Callable:
    require_gpu(GRAPH_PASSES["cudagraph"])

    if "cudagraph" not in ctx.shared:  # the forward's and the backward's graphs share one
        ctx.shared["cudagraph"] = CUDAGraphGroup()
    fn = run_graph(compiled) if isinstance(compiled, fx.GraphModule) else compiled
    return CUDAGraphWrapper(fn, ctx.stage, ctx.shared["cudagraph"])

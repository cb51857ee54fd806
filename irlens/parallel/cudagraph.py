"""The `cudagraph` pass: record a compiled forward or backward once, replay it every step.

A CUDA graph replays fixed kernels on fixed addresses, so each call copies its inputs into
the recorded (static) input buffers, skipping those already there (parameters: the optimizer
updates them in place), and returns the static outputs. Those outputs are overwritten by the
next replay; the train loop consumes them first (one forward, then its backward, per step).
Collectives inside the graph are fine with NCCL (recorded on the capture stream).
"""
from __future__ import annotations

import weakref
from typing import Callable

import torch

WARMUP_CALLS = 1  # eager calls before recording: lazy initializations (NCCL comms, cuBLAS handles)
_RECORDED: "weakref.WeakSet[CUDAGraphWrapper]" = weakref.WeakSet()


def release_graphs() -> None:
    """Delete every recorded graph. NCCL cannot destroy a communicator that a live graph recorded
    collectives on: destroy_process_group would hang (pytorch/pytorch#115388)."""
    for wrapper in list(_RECORDED):
        if wrapper.graph is not None:
            wrapper.graph.reset()
            wrapper.graph = None


class CUDAGraphWrapper:
    _boxed_call = True  # AOTAutograd calls it with one list of arguments

    def __init__(self, fn: Callable, stage: str):
        self.fn, self.stage = fn, stage
        self.calls = 0
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_inputs: list = []
        self.static_outputs = None
        self.warmup_ptrs: list[int | None] = []

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

    def _record(self, args: list) -> list:
        # inputs at the same address as in the warm-up (parameters, updated in place) are recorded
        # in place; the others get a static buffer that each call copies into
        self.static_inputs = [x if not isinstance(x, torch.Tensor) or _ptr(x) == seen else x.clone()
                              for x, seen in zip(args, self.warmup_ptrs)]
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            # one more warm-up on the side stream, as capture requires, on copies of the inputs:
            # a compiled backward may reuse its saved-activation inputs as scratch (AOTAutograd
            # donates them), and the replay below must read them intact
            self.fn([x.clone() if isinstance(x, torch.Tensor) else x for x in self.static_inputs])
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        _RECORDED.add(self)
        with torch.cuda.graph(self.graph):
            self.static_outputs = self.fn(list(self.static_inputs))
        self.graph.replay()
        return list(self.static_outputs)


def _ptr(x) -> int | None:
    return x.data_ptr() if isinstance(x, torch.Tensor) else None

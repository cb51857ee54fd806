"""Checkpoint and resume with torch.distributed.checkpoint: each rank writes its own shards.

The state is the model's sharded DTensor parameters, the optimizer's state keyed by parameter
name (get_state_dict), and the step reached. Data is a function of the step, so resuming at
step k replays exactly the batches an uninterrupted run would have seen.
"""
from __future__ import annotations

import warnings

import torch
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict


def _state(model: nn.Module, optimizer: torch.optim.Optimizer, step: int) -> dict:
    model_sd, optim_sd = get_state_dict(model, optimizer)
    return {"model": model_sd, "optimizer": optim_sd, "step": torch.tensor(step)}


def save(path: str, model: nn.Module, optimizer: torch.optim.Optimizer, step: int) -> None:
    """Write (or overwrite: resuming saves back into the directory it loaded) the checkpoint in `path`."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Detected an existing checkpoint")
        dcp.save(_state(model, optimizer, step), checkpoint_id=path)


def load(path: str, model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Load the checkpoint in `path` into model and optimizer in place; returns its step."""
    state = _state(model, optimizer, 0)
    dcp.load(state, checkpoint_id=path)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    return int(state["step"])

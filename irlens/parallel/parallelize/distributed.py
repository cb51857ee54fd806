"""Process groups and meshes: run under torchrun, or spawn the ranks ourselves.

gloo on the CPU, NCCL on the GPU. `spawn` starts `world_size` processes with the env vars
torchrun would set and hands rank 0's return value back to the caller.
"""
from __future__ import annotations

import gc
import os
import socket
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

from irlens.parallel.parallelize.simple_fsdp import DP_DIM, TP_DIM


@dataclass(frozen=True)
class ParallelDims:
    dp_shard: int = 1
    tp: int = 1
    ep: int = 1  # expert parallelism: borrows its ranks from dp_shard (which it must divide)

    def __post_init__(self):
        if self.dp_shard < 1 or self.tp < 1 or self.ep < 1:
            raise ValueError(f"--dp-shard, --tp and --ep must be >= 1, got {self.dp_shard}, {self.tp} and {self.ep}")
        if self.dp_shard % self.ep:
            raise ValueError(f"--ep {self.ep} must divide --dp-shard {self.dp_shard}: expert-parallel ranks are "
                             f"data-parallel ranks")

    @property
    def world_size(self) -> int:
        return self.dp_shard * self.tp

    def build_mesh(self, device_type: str) -> DeviceMesh:
        """(dp_shard, tp), or just (dp_shard,) without tensor parallelism."""
        if dist.get_world_size() != self.world_size:
            raise ValueError(f"dp_shard {self.dp_shard} x tp {self.tp} = {self.world_size} ranks, "
                             f"but the process group has {dist.get_world_size()}")
        if self.tp > 1:
            return init_device_mesh(device_type, (self.dp_shard, self.tp), mesh_dim_names=(DP_DIM, TP_DIM))
        return init_device_mesh(device_type, (self.dp_shard,), mesh_dim_names=(DP_DIM,))

    def build_expert_mesh(self, device_type: str) -> DeviceMesh:
        """(dp_shard_mod_ep, ep[, tp]) over the same ranks, in the same order, as build_mesh's mesh:
        dense rank (d, t) is expert rank (d // ep, d % ep, t)."""
        from irlens.parallel.parallelize.expert_parallel import EFSDP_DIM, EP_DIM

        shape, names = (self.dp_shard // self.ep, self.ep), (EFSDP_DIM, EP_DIM)
        if self.tp > 1:
            shape, names = (*shape, self.tp), (*names, TP_DIM)
        return init_device_mesh(device_type, shape, mesh_dim_names=names)


def mesh_groups(mesh: DeviceMesh) -> dict[str, str]:
    """Each mesh dimension's process group name (what the graphs' collectives name their group by)."""
    return {name: mesh.get_group(name).group_name for name in mesh.mesh_dim_names or ()}


def launched_by_torchrun() -> bool:
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def init_process_group(device: str) -> torch.device:
    """Join the group described by the env vars; returns this rank's device."""
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda asked for, but torch sees no CUDA device")
        local_rank = int(os.environ.get("LOCAL_RANK", os.environ["RANK"]))
        torch.cuda.set_device(local_rank)
        dev = torch.device("cuda", local_rank)
        if not dist.is_initialized():
            dist.init_process_group("nccl", device_id=dev)
        return dev
    if not dist.is_initialized():
        dist.init_process_group("gloo")
    return torch.device("cpu")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_entry(rank: int, world_size: int, port: int, fn: Callable, args: tuple, results) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    # ranks share the machine's cores: one intra-op thread each keeps them from oversubscribing
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
    try:
        out = fn(*args)
        if rank == 0:
            results.put(out)
    finally:
        shutdown()


def shutdown() -> None:
    """Leave the process group: CUDA graphs that recorded its collectives go first (see
    irlens.parallel.passes.cudagraph.release_graphs)."""
    if not dist.is_initialized():
        return
    if torch.cuda.is_initialized():
        from irlens.parallel.passes.cudagraph import release_graphs

        release_graphs()
        torch.cuda.synchronize()
    dist.destroy_process_group()
    # gloo's finished work objects can hold the last references to tensors; freed at interpreter
    # exit instead, they sometimes abort the process (std::terminate; about 1 in 4 torchrun runs of
    # a mesh and an all-reduce on torch 2.13's CPU build). Collected here, none did in 36.
    gc.collect()


def spawn(fn: Callable, world_size: int, *args: Any) -> Any:
    """Run `fn(*args)` on `world_size` spawned ranks; returns rank 0's result (it must pickle)."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    mp.start_processes(_rank_entry, args=(world_size, _free_port(), fn, args, results),
                       nprocs=world_size, start_method="spawn", join=True)
    return results.get()

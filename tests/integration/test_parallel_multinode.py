"""`irlens train` beyond one machine: two torchrun node agents (`--nnodes 2 --nproc-per-node 1`)
meeting at a c10d rendezvous, simulated on this host, gloo between them. The two-node run must
train exactly as the two ranks `irlens train` spawns itself."""
import json
import socket
import subprocess
import sys

import pytest

from irlens.parallel.config import ModelConfig, OptimizerConfig, ParallelismConfig, TrainConfig, TrainingConfig
from irlens.parallel.train.loop import run_training

ARGS = ["--model", "llama3:tiny", "--dp-shard", "2", "--steps", "3", "--lr", "1e-2"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_agent(port: int) -> subprocess.Popen:
    """One node: a torchrun agent starting one worker, which runs `irlens train`."""
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
            "--rdzv-backend", "c10d", "--rdzv-endpoint", f"localhost:{port}", "--rdzv-id", "irlens-test",
            "-m", "irlens", "train", *ARGS]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_two_torchrun_nodes_train_as_two_spawned_ranks():
    port = _free_port()
    agents = [_node_agent(port) for _ in range(2)]
    outs = []
    try:
        for agent in agents:
            out, err = agent.communicate(timeout=240)
            assert agent.returncode == 0, err[-2000:]
            outs.append(out)
    finally:
        for agent in agents:
            agent.kill()
    # rank 0 (on whichever node the rendezvous made it) prints the steps and the summary
    (rank0,) = [out for out in outs if out.strip()]
    lines = rank0.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["status"] == "ok" and summary["config"]["parallelism"]["dp_shard"] == 2
    steps = [line for line in lines if line.startswith("step ")]
    assert len(steps) == 3

    reference = run_training(TrainConfig(ModelConfig("llama3:tiny"), ParallelismConfig(dp_shard=2),
                                         TrainingConfig(steps=3), OptimizerConfig(lr=1e-2)))
    assert (summary["final_loss"], summary["final_grad_norm"]) == (reference["final_loss"],
                                                                   reference["final_grad_norm"])

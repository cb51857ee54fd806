"""RMSNorm as an irlens workload, with a JAX twin.

    irlens compare --workloads examples/rmsnorm.py:rmsnorm
    python examples/rmsnorm.py            # the same, from Python
"""
import torch

import irlens

EPS = 1e-6


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        # Not all ones, so that a twin that forgets the weight disagrees.
        self.weight = torch.nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def rmsnorm_jax(params, x):
    """The twin: same math in JAX; `params` holds the module's parameters by name."""
    import jax
    import jax.numpy as jnp

    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS) * params["weight"]


def loss(outputs):
    """For fwdbwd; works on torch tensors and JAX arrays. Not the default mean of squares: the
    mean square of a normalized output is nearly constant, so its input gradient nearly cancels
    and a low-precision run could not be told apart from a wrong one."""
    (y,) = outputs
    return (y * y * y).mean()


rmsnorm = irlens.Workload.from_module(
    "rmsnorm", RMSNorm(64), example_inputs=((4, 16, 64),), jax=rmsnorm_jax, loss=loss,
    description="x / rms(x) * weight over the last dimension",
)

if __name__ == "__main__":
    doc = irlens.compare(rmsnorm, progress=True)
    print(irlens.compare_table(doc))

"""The float32 precision policy: one per run, the same on every stack, applied in every process that computes.

float32 is not one arithmetic on a GPU: by default torch's cuDNN convolutions use TF32 and its
cuBLAS matmuls do not, and XLA's dots and convolutions follow `jax_default_matmul_precision`
(docs/numerics.md, "Float32 precision on each stack"). A policy names one arithmetic for all:

  ieee  float32 products in IEEE float32: cuBLAS and cuDNN without TF32 (torch's float32 matmul
        precision "highest", which Inductor's Triton dots and matmul templates follow, and which
        Thunder's and nvFuser's matmuls follow through the ATen calls they make), XLA at "highest"
  tf32  TF32 on for all of them: cuBLAS, cuDNN, Inductor ("high"), XLA at "tensorfloat32"

`apply(policy)` sets it in this process and in every worker started after it: the environment
carries it (ENV) and irlens.runtime.isolation applies it as a worker starts, before the worker imports
anything else. `current()` is the policy this process applied (a Row records it).
"""
from __future__ import annotations

import os
import sys

from irlens.errors import UsageError

POLICIES = ("ieee", "tf32")
DEFAULT = "ieee"
ENV = "IRLENS_PRECISION"  # the run's policy, for the workers it starts
# jax reads a config's default from its upper-cased name at import: a worker that imports jax later gets it too
JAX_ENV = "JAX_DEFAULT_MATMUL_PRECISION"
JAX_PRECISION = {"ieee": "highest", "tf32": "tensorfloat32"}
TORCH_MATMUL_PRECISION = {"ieee": "highest", "tf32": "high"}

_applied: str | None = None


def check(policy: str) -> str:
    """`policy` if it is one of POLICIES, else a UsageError naming them."""
    if policy not in POLICIES:
        raise UsageError(f"unknown precision policy {policy!r}; choose from: {', '.join(POLICIES)}")
    return policy


def apply(policy: str) -> None:
    """Set `policy` in this process (torch's flags, jax's default matmul precision) and in the
    environment the workers it starts inherit."""
    import torch

    tf32 = check(policy) == "tf32"
    torch.set_float32_matmul_precision(TORCH_MATMUL_PRECISION[policy])  # cuBLAS and Inductor's Triton dots
    torch.backends.cuda.matmul.allow_tf32 = tf32  # the same switch as the line above, said plainly
    # convolutions (torch's default is True); a process that imported torch's testing utilities (the
    # conformance corpus's OpInfo) has these switches frozen, so set them the way torch's own flags() does
    with torch.backends.__allow_nonbracketed_mutation():
        torch.backends.cudnn.allow_tf32 = tf32
    os.environ[ENV] = policy
    os.environ[JAX_ENV] = JAX_PRECISION[policy]
    if "jax" in sys.modules:  # imported already: its config read the environment then
        sys.modules["jax"].config.update("jax_default_matmul_precision", JAX_PRECISION[policy])
    global _applied
    _applied = policy


def apply_inherited() -> str:
    """Apply the policy the parent process put in the environment (the default where none): a worker's start."""
    policy = os.environ.get(ENV) or DEFAULT
    apply(policy)
    return policy


def current() -> str | None:
    """The policy this process applied; None where none was (a cell run outside a plan's run)."""
    return _applied


def jax_matmul_precision() -> str:
    """The matmul precision XLA compiles at under this process's policy (the default's where none was applied)."""
    return JAX_PRECISION[_applied or DEFAULT]


def describe(policy: str | None, device: str | None) -> str:
    """What `policy` meant on `device` (cpu, cuda, cuda:1, or a merged document's device text), in one line."""
    if policy is None:
        return "not recorded (written before irlens recorded its precision policy)"
    gpu = "cuda" in (device or "")
    if policy == "ieee":
        return ("ieee float32 (TF32 off on cuBLAS, cuDNN and Inductor's Triton dots; XLA at matmul precision highest)"
                if gpu else "ieee float32 (on the CPU every stack computes float32 products in float32)")
    if gpu:
        return "tf32 (TF32 on cuBLAS, cuDNN and Inductor's Triton dots; XLA at matmul precision tensorfloat32)"
    return "tf32 (on the CPU: oneDNN's matmuls may use TF32 where the CPU has it; XLA's precision has no effect)"


def describe_rows(rows, device: str | None) -> str:
    """One line for a page: the policy of each of its rows that ran, on its device (a merged
    document's row names its own, else `device`), each distinct one once, `; ` between."""
    described = dict.fromkeys(describe(r.precision, r.device or device) for r in rows if r.ran)
    return "; ".join(described) or "no row ran"


def add_option(parser) -> None:
    """`--tf32` (compare, bench, zoo): the run's policy, as `args.precision`."""
    parser.add_argument("--tf32", dest="precision", action="store_const", const="tf32", default=DEFAULT,
                        help="float32 products in TF32 on every stack (cuBLAS, cuDNN, Inductor, XLA); without it, "
                             "IEEE float32 products on every stack (docs/numerics.md)")

"""Built-in workloads, their float64 references and their acquisitions, each made once per test
process (the tests that walk workloads x modes x frontends share them)."""
from __future__ import annotations

import functools

import pytest

from irlens.frontends import get_frontend
from irlens.workloads.builtin import get_workload
from irlens.workloads.workload import run_eager


@functools.cache
def instance(name: str):
    return get_workload(name).instantiate("tiny")


@functools.cache
def reference(name: str, mode: str) -> dict:
    ref = instance(name).cast("float64")
    return run_eager(ref.module, ref, mode)


@functools.cache
def acquired(name: str, mode: str, frontend: str):
    """The frontend's acquisition of the tiny instance; the test is skipped where the frontend
    is not available."""
    fe = get_frontend(frontend)
    if not fe.availability():
        pytest.skip(f"{frontend}: {fe.availability().reason}")
    return fe.acquire(instance(name), mode)

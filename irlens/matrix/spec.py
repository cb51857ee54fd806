"""One cell, as it travels: from the plan (or `irlens repro`, `irlens explain`) to a worker and back.

A `CellSpec` names everything a process needs to run a cell: the workload's key (a built-in name
or a `path/to/file.py:NAME` reference a worker resolves), the backend's, the acquiring frontend of
a cross cell, mode, device, preset, dtype, the float32 precision policy and its timing settings.
What a worker computes of a workload alone, with no backend, has a spec of its own: a
`ReferenceSpec` (its float64 reference; its JAX twin's check) and a `WorkSpec` (the work its steps
must do, `irlens bench`'s roofline). `validate_coordinates` is the one check of their coordinates;
`to_json`/`from_json` are how each crosses a process boundary (the worker's one entry point:
`irlens.worker.entry.run_spec`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from irlens.core.dtypes import COMPUTE_DTYPES
from irlens.errors import UsageError
from irlens.core.json_values import BadDocument, read_record, to_plain
from irlens.core.precision import DEFAULT as DEFAULT_PRECISION, check as check_precision
from irlens.workloads.workload import MODES, PRESETS

DEVICES = ("cpu", "cuda")
ENTRY = "irlens.worker.entry:run_spec"  # the worker's one entry point for a spec (irlens.runtime.isolation calls it by name)
# what a worker that runs ENTRY imports before it says it is ready, so that none of it counts
# against its first call's timeout
ENTRY_PRELOAD = ("irlens.worker.entry", "irlens.backends", "irlens.workloads.builtin")


def check_choice(kind: str, value: str, choices) -> None:
    if value not in choices:
        raise UsageError(f"unknown {kind} {value!r}; choose from: {', '.join(choices)}")


def validate_coordinates(modes: Sequence[str], device: str, preset: str, dtypes: Sequence[str | None] = (),
                         precision: str | None = None) -> None:
    """Raise a UsageError naming the first of them that does not exist (a device by its family:
    cuda:1 is cuda; a dtype None is the workload's own; a precision None: the spec names none)."""
    for mode in modes:
        check_choice("mode", mode, MODES)
    check_choice("device", device.split(":")[0], DEVICES)
    check_choice("preset", preset, PRESETS)
    for dtype in dtypes:
        if dtype is not None:
            check_choice("dtype", dtype, COMPUTE_DTYPES)
    if precision is not None:
        check_precision(precision)


class Spec:
    """What a worker is asked to compute on, as one value (a frozen dataclass): its JSON form and
    its one check."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("workload",)  # the fields its JSON must name

    def validate(self) -> None:
        """Raise a UsageError on a coordinate that does not exist (`validate_coordinates`)."""
        raise NotImplementedError

    def to_json(self) -> dict:
        return to_plain(dataclasses.asdict(self))  # a tuple as the JSON list it crosses as

    @classmethod
    def from_json(cls, d, where: str = "the spec"):
        """The spec `to_json` wrote; a BadDocument naming the field that is missing, unknown, of
        the wrong type or not one of its choices."""
        spec = read_record(cls, d, where, required=cls.REQUIRED)
        try:
            spec.validate()
        except UsageError as e:
            raise BadDocument(f"{where}: {e}") from None
        return spec


def check_device_present(device: str) -> None:
    """Raise a UsageError where `device` is a CUDA device and torch sees none: said before any
    work, not as the first tensor put on it fails deep inside a run."""
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"device {device!r} asked for, but torch sees no CUDA device here")


@dataclass(frozen=True)
class CellSpec(Spec):
    workload: str  # a built-in name or path/to/file.py:NAME (`<object>:NAME`: a Workload only this process has)
    backend: str  # a registered name or path/to/file.py:NAME (a Backend instance)
    mode: str = "fwd"
    dtype: str | None = None  # None: the workload's own
    device: str = "cpu"
    preset: str = "tiny"
    frontend: str | None = None  # a cross cell: the frontend whose graphs the backend executes; None: its own
    precision: str = DEFAULT_PRECISION  # the float32 policy its processes compute under (irlens.core.precision)
    # how long it may run: not which cell it is (a cell compiled ahead under one timeout is timed under another)
    timeout_s: float | None = field(default=None, compare=False)
    device_timing: bool = False  # also time its kernels on the device (CUDA; `irlens bench`)

    REQUIRED: ClassVar[tuple[str, ...]] = ("workload", "backend")

    def validate(self) -> None:
        """Raise a UsageError on a mode, device, preset, dtype or precision policy that does not exist."""
        validate_coordinates((self.mode,), self.device, self.preset, (self.dtype,), self.precision)

    def label(self, dtype: str, name: str | None = None, backend: str | None = None) -> str:
        """`name` and `backend`: the workload's and the backend's names where the spec holds references."""
        return (f"{name or self.workload} {self.mode} {dtype} on {self.device} through {backend or self.backend} "
                f"(preset {self.preset})")

    def command(self) -> str:
        """The `irlens repro` command line of this cell."""
        dtype = f" --dtype {self.dtype}" if self.dtype else ""
        return (f"irlens repro {self.workload} --backend {self.backend} --mode {self.mode}{dtype} "
                f"--device {self.device} --preset {self.preset}")


@dataclass(frozen=True)
class ReferenceSpec(Spec):
    """A workload's float64 reference in a mode (irlens.matrix.references): a cell's coordinates
    but the backend, the same for every backend. Its JAX twin is checked on the reference of its
    own (`twin_problem`: fwd, at the small preset) in this spec's device and dtype."""

    workload: str  # as CellSpec's
    mode: str = "fwd"
    dtype: str | None = None  # None: the workload's own
    device: str = "cpu"
    preset: str = "tiny"

    def validate(self) -> None:
        validate_coordinates((self.mode,), self.device, self.preset, (self.dtype,))


@dataclass(frozen=True)
class WorkSpec(Spec):
    """The work one step of a workload must do, per mode and per dtype (`irlens bench`'s roofline:
    irlens.bench.run.work_in_worker): counted once for all of them, as the flops are the same in
    every dtype."""

    workload: str  # as CellSpec's
    modes: tuple[str, ...]
    dtypes: tuple[str, ...]
    device: str = "cpu"
    preset: str = "tiny"

    REQUIRED: ClassVar[tuple[str, ...]] = ("workload", "modes", "dtypes")

    def validate(self) -> None:
        validate_coordinates(self.modes, self.device, self.preset, self.dtypes)

"""Each backend declares how `irlens repro` runs it (irlens.backends.repro_path.ReproPath, its attribute
`repro_path`), and a path says what its program is in words irlens.repro knows."""
from __future__ import annotations

import pytest

from irlens.backends import BACKENDS
from irlens.backends.repro_path import PROGRAMS, ReproPath


def test_every_built_in_backend_declares_its_own_path():
    paths = {name: BACKENDS[name].repro_path for name in BACKENDS}
    assert all(path is not None and path.name == name and path.program in PROGRAMS for name, path in paths.items())
    assert {name for name, path in paths.items() if path.program != "torch"} == {"nvfuser", "xla"}


def test_a_path_with_a_program_irlens_repro_cannot_run_is_refused():
    with pytest.raises(ValueError, match="program 'cuda'; choose from torch, fusions, jax"):
        ReproPath("mine", "torch", "my compiler", "def compile_fn(fn):\n    return fn\n", program="cuda")

"""The names the parser offers without importing torch (irlens.names, irlens.cli.frontend_settings)
are the ones the registries hold once their modules are imported."""
from __future__ import annotations

import argparse

import pytest

from irlens import names
from irlens.backends import BACKENDS
from irlens.cli.command import backends
from irlens.cli.frontend_settings import declared, imported, read_source
from irlens.frontends import FRONTENDS


@pytest.mark.parametrize("declared_names, registry", [(names.BACKENDS, BACKENDS), (names.FRONTENDS, FRONTENDS)],
                         ids=["backends", "frontends"])
def test_each_declared_name_is_registered_by_its_module_in_order(declared_names, registry):
    # every entry irlens itself registers (a test may register its own besides)
    builtins = [name for name in registry if type(registry[name]).__module__.startswith("irlens.")]
    assert builtins == list(declared_names)
    for name, module in declared_names.items():
        assert type(registry[name]).__module__.startswith(module), f"{name} is not registered by {module}"


def test_the_settings_read_from_source_are_the_imported_ones():
    assert declared() == [d for frontend in names.FRONTENDS for d in imported(frontend)]
    assert any(d.option == "--thunder-capture" for d in declared())


def test_a_setting_not_written_as_literals_is_left_to_the_import():
    computed = 'class F(Frontend):\n    name = "f"\n    settings = (Setting("a", METAVAR, "help", apply),)\n'
    inherited = 'class F(Other):\n    name = "f"\n'
    plain = 'class F(Frontend):\n    name = "f"\n'
    assert read_source("f", computed) is None
    assert read_source("f", inherited) is None
    assert read_source("f", plain) == []
    assert read_source("g", plain) is None  # no class of that name: imported


def test_backends_are_checked_by_name_and_references_left_for_the_run():
    assert backends("eager,nvfuser") == ["eager", "nvfuser"]
    assert backends("my/file.py:MINE") == ["my/file.py:MINE"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown backend 'nope'; choose from: eager, inductor"):
        backends("eager,nope")

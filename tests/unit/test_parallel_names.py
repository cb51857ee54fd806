"""What irlens.parallel.names declares without torch (for `irlens train` and `irlens dump --frontend
joint`) is what the torch side holds: the passes' Registries, each family's presets, the
TrainConfig dataclasses' defaults and the joint dump's, and `irlens train`'s description."""
from __future__ import annotations

import dataclasses
import importlib

from irlens.cli import build_parser
from irlens.cli.train import description, train_config
from irlens.parallel import config, names
from irlens.parallel.dump import capture_config
from irlens.parallel.models.families import FAMILIES, resolve
from irlens.parallel.passes.registry import GRAPH_PASSES, JOINT_PASSES
from irlens.parallel.train import loop


def test_the_families_and_their_presets_in_order():
    assert list(FAMILIES) == list(names.MODEL_PRESETS)
    for family in FAMILIES.values():
        presets = importlib.import_module(family.config.__module__).PRESETS  # its model.py's
        assert tuple(presets) == names.MODEL_PRESETS[family.name], family.name


def test_a_family_named_alone_takes_the_default_preset():
    for name in names.MODEL_PRESETS:
        assert resolve(name) == resolve(f"{name}:{names.DEFAULT_PRESET}"), name


def test_the_passes_in_order():
    assert tuple(JOINT_PASSES) == names.JOINT_PASSES
    assert tuple(GRAPH_PASSES) == names.GRAPH_PASSES


def test_the_reduce_dtypes():
    assert tuple(config.REDUCE_DTYPES) == names.REDUCE_DTYPES


def test_the_defaults_are_the_dataclasses_and_the_joint_dumps():
    assert dataclasses.asdict(config.TrainConfig()) == names.TRAIN_DEFAULTS
    assert dataclasses.asdict(capture_config()) == names.CAPTURE_DEFAULTS


def test_irlens_train_without_options_is_the_default_train_config():
    assert train_config(build_parser().parse_args(["train"])) == config.TrainConfig()


def test_the_description_read_from_source_is_the_loops_docstring():
    assert description() == loop.__doc__.split("\n\n")[0]

"""The parallel path takes a typed config: nothing in irlens.parallel parses flags (the CLI builds
the TrainConfig), and what the joint dump captures is the TrainConfig its options describe."""
from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

import irlens.parallel
from irlens.cli import build_parser
from irlens.parallel.dump import DumpRequest, capture_config
from irlens.parallel.config import CompileConfig, ModelConfig, ParallelismConfig, TrainConfig

PARALLEL = Path(irlens.parallel.__file__).resolve().parent


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= {node.module or ""} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def test_the_parallel_package_parses_no_flags():
    files = sorted(PARALLEL.rglob("*.py"))
    assert PARALLEL / "train" / "loop.py" in files and PARALLEL / "dump.py" in files
    for path in files:
        names = imported_modules(path)
        assert not {n for n in names if n.split(".")[0] in ("argparse", "optparse", "getopt")}, path.name
        assert not {n for n in names if n.startswith("irlens.cli")}, f"{path.name} imports the CLI"
        assert "sys.argv" not in path.read_text(), path.name


def test_the_cli_builds_the_train_config():
    args = build_parser().parse_args(["train", "--model", "deepseek_v3:tiny", "--dp-shard", "2", "--ep", "2",
                                      "--no-sequence-parallel", "--mode", "compiled", "--passes",
                                      "transformer_block_bucketing", "--seq-len", "32"])
    from irlens.cli.train import train_config

    assert train_config(args) == TrainConfig(
        model=ModelConfig("deepseek_v3:tiny", seq_len=32),
        parallelism=ParallelismConfig(dp_shard=2, ep=2, sequence_parallel=False),
        compile=CompileConfig("compiled", passes=["transformer_block_bucketing"]))


def test_every_train_option_sets_a_field_of_its_part():
    """The map from `irlens train`'s options to the TrainConfig's parts names every field of every
    part, each option once, and only options the command has."""
    import dataclasses

    from irlens.cli.train import PARTS

    tc, args = TrainConfig(), vars(build_parser().parse_args(["train"]))
    assert set(PARTS) == {f.name for f in dataclasses.fields(tc)}
    for part, fields in PARTS.items():
        assert set(fields) == {f.name for f in dataclasses.fields(getattr(tc, part))}, part
    options = [dest for fields in PARTS.values() for dest in fields.values()]
    assert len(options) == len(set(options)) and set(options) <= set(args)


def test_a_train_config_crosses_to_a_worker_as_json_and_back():
    import json

    args = build_parser().parse_args(["train", "--tp", "2", "--mode", "compiled", "--joint-passes",
                                      "inductor_decomposition", "--profile", "p", "--checkpoint", "c", "--resume"])
    from irlens.cli.train import train_config

    tc = train_config(args)
    assert TrainConfig.from_json(json.loads(json.dumps(tc.to_json()))) == tc
    from irlens.core.json_values import BadDocument

    bad = tc.to_json()
    bad["parallelism"]["tp"] = "two"
    with pytest.raises(BadDocument, match="field 'parallelism': field 'tp' is 'two', not an integer"):
        TrainConfig.from_json(bad)


def test_the_joint_dump_captures_the_config_its_options_describe(monkeypatch, capsys):
    captured = []  # the capture itself (seconds) is the other tests'
    monkeypatch.setattr("irlens.parallel.dump.capture", lambda tc: captured.append(tc) or SimpleNamespace(records=[]))
    monkeypatch.setattr("irlens.parallel.dump.render", lambda step, stage, *how: f"<{stage} graph>")
    from irlens.cli import main

    assert main(["dump", "llama3", "--frontend", "joint", "--tp", "1", "--joint-passes",
                 "selective_activation_checkpoint", "--no-sequence-parallel"]) == 0
    assert capsys.readouterr().out == "<joint graph>\n"
    assert captured == [capture_config("llama3:debug", ParallelismConfig(dp_shard=4, tp=1, sequence_parallel=False),
                                       compile=CompileConfig(joint_passes=["selective_activation_checkpoint"]))]
    # the dump's own defaults for what is not given: DP4, one sequence per rank, compiled, no mixed precision
    tc = captured[0]
    assert (tc.parallelism.dp_shard, tc.training.batch_size, tc.compile.mode, tc.training.mixed_precision) == \
        (4, 1, "compiled", False)


def test_a_bad_stage_is_a_usage_error(capsys):
    from irlens.cli import main

    with pytest.raises(ValueError, match="unknown stage 'nope'"):
        DumpRequest(stages=("nope",))
    assert main(["dump", "llama3:tiny", "--frontend", "joint", "--stage", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown stage 'nope' for the joint frontend; choose from: joint, forward, backward" in err


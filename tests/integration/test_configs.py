"""Named run configurations (irlens.cli.configs): each one's command line parses with its program's own
parser into the configuration's fields; `--config NAME` puts them first and the options given beside
it replace them; a bad name is one line and exit 2; the plan printed first names the command line and
the expected time: a figure that agrees with the committed run it cites, and where a budget and a
timeout are set, the bound they give, said to be one and above every committed run's figure."""
from __future__ import annotations

import gzip
import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from irlens.cli import build_parser, main
from irlens.cli.configs import CONFIGS
from irlens.cli.configs.__main__ import main as runs_main
from irlens.cli.configs.kinds import OUTPUTS, RESULTS_ENV, START_S, GpuTests, IrlensCommand, Table

ROOT = Path(__file__).resolve().parents[2]
IRLENS = [c for c in CONFIGS.values() if isinstance(c, IrlensCommand)]
TESTS = [c for c in CONFIGS.values() if isinstance(c, GpuTests)]
TABLES = [c for c in CONFIGS.values() if isinstance(c, Table)]


@pytest.fixture(autouse=True)
def results_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "results"))
    return tmp_path / "results"


def parsed(argv: list[str]) -> dict:
    """`irlens ARGV` as the command parses it, less what names the handler."""
    return {k: v for k, v in vars(build_parser().parse_args(argv)).items() if k not in ("command", "command_handler")}


def test_every_kind_has_configurations():
    assert IRLENS and TESTS and TABLES
    assert {c.command for c in IRLENS} == {"bench", "zoo", "compare"}


@pytest.mark.parametrize("config", IRLENS, ids=lambda c: c.name)
def test_an_irlens_configurations_command_line_parses_into_its_fields(config, results_in_tmp):
    line = config.command_line()
    assert line[:2] == ["irlens", config.command]
    args = parsed(line[1:])
    fields = dict(config.own_fields())
    assert fields, f"{config.name} sets nothing"
    for dest, value in fields.items():
        want = str(results_in_tmp / value) if dest in OUTPUTS else list(value) if isinstance(value, tuple) else value
        got = args[dest]
        assert got == want or (dest == "precision" and got == value), (config.name, dest, got, want)


@pytest.mark.parametrize("config", TESTS, ids=lambda c: c.name)
def test_a_test_subset_names_test_files_that_exist(config):
    line = config.command_line()
    assert line[:3] == ["python", "-m", "pytest"] and "gpu" == line[line.index("-m", 3) + 1]
    named = [*config.files, *config.ignore]
    assert named and all((ROOT / path).exists() for path in named), [p for p in named if not (ROOT / p).exists()]
    if config.workers:
        pytest.importorskip("xdist")


@pytest.fixture(scope="module")
def table_script():
    path = ROOT / "scripts" / "parallel_table.py"
    spec = importlib.util.spec_from_file_location("parallel_table_for_configs", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    help_text = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, cwd=ROOT,
                               check=True).stdout
    return module, help_text


@pytest.mark.parametrize("config", TABLES, ids=lambda c: c.name)
def test_a_table_configuration_names_the_scripts_options_presets_and_rows(config, table_script):
    module, help_text = table_script
    line = config.command_line()
    assert line[:2] == ["python", "scripts/parallel_table.py"]
    options = [word for word in line[2:] if word.startswith("--")]
    assert options and all(re.search(rf"{o}\b", help_text) for o in options), options
    assert config.table is None or config.table in module.TABLES
    assert config.table or config.model, "a table needs a preset or a model"
    for row in config.rows or ():  # typed rows, named on the command line as the script reads them back
        assert isinstance(row, module.Row) and module.parse_row(row.name) == row


def test_an_option_given_beside_config_replaces_the_configurations(capsys):
    config = CONFIGS["bench-1gpu-bf16"]
    for argv in (["bench", "--config", config.name, "--jobs", "1"], ["bench", "--jobs", "1", "--config", config.name]):
        args = parsed(argv)
        assert args["jobs"] == 1 != config.jobs
        assert args["dtypes"] == list(config.dtypes) and args["timeout"] == config.timeout  # the rest: the config's
        assert args["config"] == config.name
    err = capsys.readouterr().err
    assert "irlens: as given here, not the configuration's: --jobs" in err
    # the printed command line holds the override once, not the configuration's value
    line = next(line for line in err.splitlines() if line.startswith("irlens: runs: "))
    words = shlex.split(line.removeprefix("irlens: runs: "))
    assert words.count("--jobs") == 1 and words[words.index("--jobs") + 1] == "1"
    assert parsed(words[1:])["jobs"] == 1


def test_config_with_an_equals_sign_and_an_abbreviation_expand_too():
    name = "cross-gpu-gelu"
    for argv in (["compare", f"--config={name}"], ["compare", "--conf", name]):
        args = parsed(argv)
        assert args["cross"] is True and args["workloads"] == ["gelu"] and args["device"] == "cuda"


@pytest.mark.parametrize("config", [CONFIGS["bench-1gpu-bf16"], CONFIGS["bench-1gpu"], CONFIGS["zoo-gpu-bf16-fwd"]],
                         ids=lambda c: c.name)
def test_the_plan_names_the_command_line_and_the_expected_time(config, capsys, results_in_tmp):
    parsed([config.command, "--config", config.name])
    err = capsys.readouterr().err
    assert f"irlens: configuration {config.name}: {config.description}" in err
    assert f"irlens: runs: {shlex.join(config.command_line())}" in err
    assert str(results_in_tmp) in err  # outputs under the results folder
    expected = next(line for line in err.splitlines() if line.startswith("irlens: expected wall time: "))
    if config.expected_s is None:
        assert "unknown" in expected
    else:
        assert f"{config.expected_s:.0f} s" in expected and config.expected_from in expected
    assert config.expected() in expected


BUDGETED = [c for c in CONFIGS.values() if getattr(c, "budget_s", None) and getattr(c, "timeout", None)]


def test_a_configuration_with_a_budget_and_a_timeout_states_the_bound_they_give():
    assert {"zoo-gpu-bf16-fwd", "bench-1gpu-bf16", "parallel-llama3-1b-1gpu"} <= {c.name for c in BUDGETED}
    zoo = CONFIGS["zoo-gpu-bf16-fwd"]  # no committed run: the bound alone, and said to be one
    assert zoo.bound_s() == 360 + 170 + START_S
    assert zoo.expected() == ("unknown (no committed run of this command line); at most about 9.8 min (a bound from "
                              f"its options, not a measurement: --budget-s 360 + --timeout 170 + {START_S:.0f} s to "
                              "start and write)")
    measured = CONFIGS["bench-1gpu-bf16"]  # a committed run: its figure first, the bound beside it
    assert measured.expected().startswith("about 4.0 min (241 s on one H100, tests/data/h100-bench.json.gz); "
                                          "at most about 7.0 min (a bound from its options, not a measurement:")
    for config in CONFIGS.values():
        if config not in BUDGETED:
            assert config.bound_s() is None and "at most" not in config.expected(), config.name


@pytest.mark.parametrize("config", [c for c in BUDGETED if c.expected_s is not None], ids=lambda c: c.name)
def test_a_committed_runs_wall_time_is_within_its_configurations_bound(config):
    assert config.expected_s <= config.bound_s()


def test_an_unknown_configuration_exits_2_with_one_line_naming_the_valid_ones(capsys):
    assert main(["zoo", "--config", "no-such-config"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'no-such-config'" in err
    assert all(c.name in err for c in IRLENS if c.command == "zoo")
    assert not any(c.name in err for c in IRLENS if c.command != "zoo")


def test_another_commands_configuration_exits_2(capsys):
    assert main(["bench", "--config", "zoo-gpu-bf16-fwd"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "runs `irlens zoo`, not `irlens bench`" in err


def test_list_configs_lists_every_configuration_with_its_command_line(capsys):
    assert main(["list", "--configs"]) == 0
    text = capsys.readouterr().out
    for config in CONFIGS.values():
        assert config.name in text and shlex.join(config.command_line()) in text
    assert main(["list", "--configs", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["configs"]
    assert [r["name"] for r in rows] == CONFIGS.names()
    assert all(r["expected"] == CONFIGS[r["name"]].expected() and r["bound_s"] == CONFIGS[r["name"]].bound_s()
               for r in rows)


def test_the_runner_refuses_an_unknown_name_with_exit_2(capsys):
    assert runs_main(["no-such-config"]) == 2
    assert "no-such-config" in capsys.readouterr().err


@pytest.mark.parametrize("config", [c for c in CONFIGS.values() if c.expected_s is not None], ids=lambda c: c.name)
def test_an_expected_time_is_the_wall_time_of_the_committed_run_it_cites(config):
    source = ROOT / config.expected_from.split(", ")[-1]
    if source.name.endswith(".json.gz"):
        doc = json.loads(gzip.decompress(source.read_bytes()))
        assert round(doc["wall_s"]) == config.expected_s
        # the document's command is this configuration's, but where it wrote
        (command,) = doc["commands"]
        theirs, ours = parsed(shlex.split(command)[1:]), parsed(config.command_line()[1:])
        for args in (theirs, ours):
            for dest in OUTPUTS:
                args.pop(dest, None)
        assert theirs == ours
    else:  # a times.txt: `NAME: rc=N, wall S s, ...` per run
        walls = [int(s) for s in re.findall(r"wall (\d+) s", source.read_text())]
        assert config.expected_s in walls

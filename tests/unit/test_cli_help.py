"""The command line as its help describes it: every option of every subcommand has help text and
shows its default, every accepted value is listed, and what help offers is accepted."""
from __future__ import annotations

import argparse
import json

import pytest

from irlens.cli import COMMANDS, build_parser, main


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for sub in action.choices.values():
        sub.format_help()  # adds the subcommand's arguments
    return dict(action.choices)


def expanded_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """An option's help as `--help` prints it (its default added), on one line."""
    return " ".join(parser._get_formatter()._expand_help(action).split())


def option_help(parser: argparse.ArgumentParser, option: str) -> str:
    return expanded_help(parser, next(a for a in parser._actions if option in a.option_strings))


def not_given(default) -> bool:
    return default is None or default is False or (isinstance(default, (list, tuple)) and not default)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help_and_shows_its_default(command):
    parser = subparsers()[command]
    text = "".join(parser.format_help().split())  # wrapped lines joined, hyphenated words whole
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"irlens {command}: {name} has no help text"
        help_text = expanded_help(parser, action)
        assert "".join(help_text.split()) in text
        if action.option_strings and action.nargs != 0 and not not_given(action.default):
            assert "default" in help_text, f"irlens {command}: {name}'s help does not show its default: {help_text}"
        if not_given(action.default) and action.option_strings and action.nargs != 0 and not action.required:
            # what happens when it is not given is said, unless leaving it out simply means "none"
            assert "default" in help_text or action.dest in NONE_MEANS_NOTHING.get(command, ()), \
                f"irlens {command}: {name} does not say what happens without it: {help_text}"
        for choice in action.choices or ():
            assert str(choice) in text, f"irlens {command}: {name} accepts {choice!r} but its help does not list it"
            assert str(choice) in parser.format_usage(), f"irlens {command}: {name}: {choice!r} not in the usage"


# options whose absence means only "nothing of that" (no file written, no limit, no kernel picked, ...)
NONE_MEANS_NOTHING = {
    "compare": ("json",), "bench": ("json", "md", "budget_s", "rerun"), "report": ("workloads",),
    "explain": ("kernel",), "repro": ("json",), "conformance": ("limit", "json", "md", "patterns"),
    "dump": ("frontend", "backend", "stage", "out", "joint_passes", "passes", "dp_shard", "tp", "ep"),
    "train": ("checkpoint", "profile", "joint_passes", "passes"),
}


@pytest.mark.parametrize("command", ["compare", "bench", "report"])
def test_several_modes_are_comma_separated_and_both_is_not_offered(command, capsys):
    parser = subparsers()[command]
    assert "both" not in parser.format_help()
    assert parser.parse_args(["--mode", "fwd,fwdbwd"]).modes == ["fwd", "fwdbwd"]
    assert parser.parse_args(["--mode", "fwdbwd"]).modes == ["fwdbwd"]
    assert main([command, "--mode", "both"]) == 2
    assert "invalid value 'both': each of fwd, fwdbwd, comma-separated" in capsys.readouterr().err


def test_one_mode_commands_list_their_modes(capsys):
    for command in ("explain", "repro", "dump"):
        assert main([command, "gelu", "--backend", "eager", "--mode", "both"]) == 2
        err = capsys.readouterr().err
        assert "argument --mode: invalid choice: 'both'" in err and "fwdbwd" in err.split("choose from", 1)[1]


def test_train_help_names_every_preset_and_its_defaults():
    from irlens.parallel.models.deepseek_v3.model import PRESETS as DEEPSEEK
    from irlens.parallel.models.llama3.model import PRESETS as LLAMA3
    from irlens.parallel.config import TrainConfig

    train = subparsers()["train"]
    model = option_help(train, "--model")
    assert "8B" in LLAMA3 and all(p in model for p in [*LLAMA3, *DEEPSEEK])
    d = TrainConfig()
    for option, default in (("--steps", d.training.steps), ("--mode", d.compile.mode), ("--device", d.training.device),
                            ("--seed", d.training.seed), ("--lr", f"{d.optimizer.lr:g}"),
                            ("--profile-steps", d.profiling.steps)):
        assert option_help(train, option).endswith(f"(default: {default})"), option


def test_list_shows_the_joint_frontend_dump_accepts(capsys):
    assert main(["list", "--format", "json"]) == 0
    frontends = {f["name"]: f for f in json.loads(capsys.readouterr().out)["frontends"]}
    assert "joint" in frontends and frontends["joint"]["available"]
    assert main(["list"]) == 0
    assert "joint" in capsys.readouterr().out.split("frontends:")[1].split("backends:")[0]
    # every frontend `irlens list` names is one `irlens dump --frontend` takes
    dump = subparsers()["dump"]
    for name in frontends:
        assert dump.parse_args(["gelu", "--frontend", name]).frontend == name

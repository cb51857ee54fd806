"""scripts/parallel_table.py: its typed rows and their names, its presets, and one small table on the CPU."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).parents[2] / "scripts" / "parallel_table.py"


@pytest.fixture(scope="module")
def pt():
    spec = importlib.util.spec_from_file_location("parallel_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_typed_row_gives_its_train_config_and_its_name_parses_back(pt):
    from irlens.parallel.config import CompileConfig, ModelConfig, ParallelismConfig, TrainConfig, TrainingConfig
    from irlens.parallel.table_rows import ASYNC_TP_FULL_INDUCTOR, EAGER, FLEX_BLOCK_BUCKETING_REGIONAL, Mesh, Row

    base = TrainConfig(ModelConfig("llama3:1B"), ParallelismConfig(ep=1), TrainingConfig(steps=8, device="cuda"))
    row = Row(ASYNC_TP_FULL_INDUCTOR, Mesh(dp_shard=2, tp=2), sequence_parallel=False, bf16_reduce=True, n_layers=16,
              batch=4)
    assert row.name == "dp2tp2/async_tp_full_inductor+no_sp+bf16_reduce+layers16@4"
    assert pt.parse_row(row.name) == row
    # modifiers in any order: the same row, named one way
    assert pt.parse_row("dp2tp2/async_tp_full_inductor+layers16+bf16_reduce+no_sp@4") == row
    assert pt.row_config(row, base) == TrainConfig(
        ModelConfig("llama3:1B", n_layers=16), ParallelismConfig(dp_shard=2, tp=2, sequence_parallel=False),
        TrainingConfig(steps=8, device="cuda", batch_size=4, reduce_dtype="bfloat16"),
        compile=CompileConfig("compiled", ["inductor_decomposition"],
                              ["async_tensor_parallel", "autobucketing_reordering", "full_inductor_compilation"]))
    assert pt.row_config(Row(EAGER), base) == base
    assert pt.row_config(Row(EAGER, Mesh(tp=4)), base).parallelism == ParallelismConfig(tp=4)
    assert Row(EAGER, Mesh(dp_shard=4, ep=4)).name == "dp4ep4/eager" and Row(EAGER, batch=8).name == "eager@8"
    flex = pt.row_config(Row(FLEX_BLOCK_BUCKETING_REGIONAL), base)
    assert flex.model.flex and flex.compile.passes == ["transformer_block_bucketing", "regional_inductor"]
    assert pt.passes_text(flex) == "flex; passes: transformer_block_bucketing, regional_inductor"
    from irlens.parallel.passes.registry import GRAPH_PASSES, JOINT_PASSES

    for way in pt.WAYS.values():  # every pass a way names is one irlens train has
        assert set(way.joint) <= set(JOINT_PASSES) and set(way.passes) <= set(GRAPH_PASSES)
        assert pt.parse_row(way.name) == Row(way)


def test_a_way_irlens_train_would_refuse_is_refused_where_declared():
    from irlens.parallel.table_rows import Row, Way, compiled

    with pytest.raises(ValueError, match="unknown passes nope"):
        compiled("x", "cudagraph", "nope")
    with pytest.raises(ValueError, match="passes apply to compiled ways only"):
        Way("x", joint=("inductor_decomposition",))
    with pytest.raises(ValueError, match="batch 0 is not >= 1"):
        Row(Way("eager"), batch=0)


@pytest.mark.parametrize("text, match", [
    ("dp2x/eager", "mesh 'dp2x' is not like dp2"),
    ("tp0/eager", "row 'tp0/eager': mesh tp0: a degree is < 1"),
    ("tp2/nope", "unknown way 'nope'"),
    ("tp2/eager+sp", "unknown modifier 'sp'"),
    ("eager+layers8+layers16", "modifier 'layers16' sets what another one does"),
    ("eager+no_sp+no_sp", "modifier 'no_sp' sets what another one does"),
    ("eager+layers0", "row 'eager\\+layers0': layers 0 is not >= 1"),
    ("eager@b", "@b is not a batch size"),
    ("eager@", "@ is not a batch size"),
    ("eager@0", "batch 0 is not >= 1"),
])
def test_a_bad_row_name_says_which_part_is_wrong(pt, text, match):
    with pytest.raises(ValueError, match=match):
        pt.parse_row(text)


def test_the_command_line_refuses_a_bad_row_before_any_run(pt, tmp_path, monkeypatch, capsys):
    out = tmp_path / "t"
    monkeypatch.setattr(sys, "argv", ["parallel_table.py", "--model", "llama3:tiny", "--rows", "dp2/eager,tp2/nope",
                                      "--out", str(out)])
    with pytest.raises(SystemExit) as exit:
        pt.main()
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"parallel_table.py: error: row 'tp2/nope': unknown way 'nope'; known: {', '.join(pt.WAYS)}")
    assert list(tmp_path.iterdir()) == []  # no output, no logs folder


def test_every_preset_row_is_typed_and_fits_its_gpus(pt):
    for name, table in pt.TABLES.items():
        for row in table.rows:
            assert isinstance(row, pt.Row) and pt.parse_row(row.name) == row
            mesh = row.mesh.degrees()
            assert mesh.get("dp_shard", 1) * mesh.get("tp", 1) == table.gpus, (name, row.name)


def test_the_committed_tables_row_labels_are_the_rows_names(pt):
    """The labels the committed parallel tables print are the names the typed rows write."""
    labels = [r["row"] for path in sorted((SCRIPT.parents[1] / "docs" / "results").glob("parallel-*/*.json"))
              for r in json.loads(path.read_text())["rows"]]
    assert len(labels) >= 20
    assert [pt.parse_row(label).name for label in labels] == labels


def test_times_eager_is_against_the_eager_row_of_the_same_mesh(pt):
    from irlens.parallel.table_rows import AUTOBUCKETING_FULL_INDUCTOR_CUDAGRAPH as BEST, EAGER, FLEX_EAGER, Mesh, Row

    def ran(row, tokens_per_s):
        config = {"parallelism": {"dp_shard": 2}, "training": {"batch_size": 8}, "model": {}}
        return row, {"row": row.name, "options": "-", "status": "ok", "tokens_per_s": tokens_per_s, "config": config}

    dp2 = Mesh(dp_shard=2)
    md = pt.table([ran(Row(FLEX_EAGER, dp2), 50.0), ran(Row(EAGER, dp2), 100.0), ran(Row(BEST, dp2), 150.0)], "cmd")
    lines = {line.split(" | ")[0].removeprefix("| "): line.split(" | ") for line in md.splitlines() if "|" in line}
    assert lines["dp2/autobucketing_full_inductor_cudagraph"][5] == "1.50"
    assert lines["dp2/flex_eager"][5] == "0.50"  # flex eager is a row of its own, not the reference


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU's not-run row")
def test_cpu_table_runs_rows_and_says_which_could_not(tmp_path):
    out = tmp_path / "t"
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--model", "llama3:tiny", "--steps", "1",
                           "--rows", "tp2/async_tp_full_inductor,dp2/eager+bf16_reduce", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # not every row ran
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["not run", "ok"]
    assert rows[0]["reason"].startswith("async_tensor_parallel: symmetric memory needs CUDA devices")
    assert rows[1]["config"]["training"]["reduce_dtype"] == "bfloat16" and rows[1]["final_loss"] > 0
    md = out.with_suffix(".md").read_text()
    assert "| tp2/async_tp_full_inductor | TP2 | not run: async_tensor_parallel" in md
    assert (tmp_path / "t-logs" / "dp2-eager-bf16_reduce.log").exists()

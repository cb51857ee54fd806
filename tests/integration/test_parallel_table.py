"""scripts/parallel_table.py: its row specs, its presets, and one small table on the CPU."""
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


def test_row_specs_give_train_configs_of_mesh_passes_modifiers_and_batch(pt):
    from irlens.parallel.config import CompileConfig, ModelConfig, ParallelismConfig, TrainConfig, TrainingConfig

    base = TrainConfig(ModelConfig("llama3:1B"), ParallelismConfig(ep=1), TrainingConfig(steps=8, device="cuda"))
    tc = pt.row_config("dp2tp2/async_tp_full_inductor+no_sp+bf16_reduce+layers16@4", base)
    assert tc == TrainConfig(
        ModelConfig("llama3:1B", n_layers=16), ParallelismConfig(dp_shard=2, tp=2, sequence_parallel=False),
        TrainingConfig(steps=8, device="cuda", batch_size=4, reduce_dtype="bfloat16"),
        compile=CompileConfig("compiled", ["inductor_decomposition"],
                              ["async_tensor_parallel", "autobucketing_reordering", "full_inductor_compilation"]))
    assert pt.row_config("eager", base) == base
    assert pt.row_config("tp4/eager", base).parallelism == ParallelismConfig(tp=4)
    flex = pt.row_config("flex_block_bucketing_regional", base)
    assert flex.model.flex and flex.compile.passes == ["transformer_block_bucketing", "regional_inductor"]
    assert pt.passes_text(flex) == "flex; passes: transformer_block_bucketing, regional_inductor"
    from irlens.parallel.passes.registry import GRAPH_PASSES, JOINT_PASSES

    for way in pt.ROWS.values():  # every pass a row names is one irlens train has
        assert set(way.compile.joint_passes) <= set(JOINT_PASSES) and set(way.compile.passes) <= set(GRAPH_PASSES)


@pytest.mark.parametrize("spec, match", [
    ("dp2x/eager", "mesh 'dp2x' is not like dp2"),
    ("tp2/nope", "unknown NAME 'nope'"),
    ("tp2/eager+sp", "unknown modifier 'sp'"),
    ("eager@b", "@b is not a batch size"),
])
def test_bad_row_specs_say_what_is_wrong(pt, spec, match):
    with pytest.raises(ValueError, match=match):
        pt.parse_row(spec)


def test_every_preset_row_parses_and_fits_its_gpus(pt):
    for name, table in pt.TABLES.items():
        for spec in table.rows:
            mesh, *_ = pt.parse_row(spec)
            world = mesh.get("dp_shard", 1) * mesh.get("tp", 1)
            assert world == table.gpus, (name, spec)


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

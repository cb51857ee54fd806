import os

import pytest
import torch

# Inductor's CPU compiles dominate the suite's time; keep its caches across tests.
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
# A node an adapter emits off its op's declared schema raises (irlens.ops.conform), here and in workers.
os.environ.setdefault("IRLENS_STRICT_OPS", "1")


# The long tail, marked slow and so left out of the README's test command (`-m "not slow"` in
# pyproject.toml; `pytest -m slow` runs it): each of these took 12 s or more on the loaded 2-core
# development machine (`pytest --durations=120`, 2026-11-26), and what it checks has a faster
# test beside it. Node-id prefixes; tests marked slow in their own files are not repeated here.
LONG_TAIL = (
    "tests/integration/test_thunderfx.py::test_a_timm_cnn_fwdbwd_splits_off_what_thunder_has_no_gradient_for",
    "tests/integration/test_thunderfx.py::test_a_transformers_model_goes_through_thunderfx[mamba-",
    "tests/integration/test_thunder_vocabulary.py::test_each_call_becomes_its_entrys_op[torch]",
    "tests/integration/test_thunder_vocabulary.py::test_each_call_becomes_its_entrys_op[prims]",
    "tests/integration/test_thunder_vocabulary.py::test_the_interpreter_reproduces_every_call[prims-",
    "tests/test_cost.py::test_bench_rerun_runs_only_the_rows_not_ok_and_replaces_them",
    "tests/test_cost.py::test_bench_over_two_gpus_keeps_each_gpus_ceilings",
    "tests/integration/test_compare_cross.py::test_graphs_of_one_stack_run_on_another_backend[jax-inductor-block-",
    "tests/integration/test_timing_vs_benchmark.py::test_tinyhead_rows_read_what_torch_benchmark_reads",
    "tests/integration/test_repro.py::test_reducer_finds_the_broken_op_and_the_files_reproduce_it_in_a_fresh_process[crash-",
    "tests/integration/test_repro.py::test_reducer_finds_the_broken_op_and_the_files_reproduce_it_in_a_fresh_process[raise-",
    "tests/integration/test_repro.py::test_slow_file_is_timed_and_names_its_dominant_kernel_with_its_source",
    "tests/integration/test_compare_isolation.py::test_on_a_shared_gpu_a_jax_cells_worker_ends_with_it",
    "tests/test_roofline.py::test_inductor_kernel_bytes_are_its_argument_buffers[block-fwdbwd-",
    "tests/integration/test_compare_verdicts.py::test_a_compiled_module_skewed_by_1_5_percent_is_a_mismatch[bfloat16]",
    "tests/integration/test_dump_backend_stages.py::test_xla_cpu_dump_compile_of_block_fwdbwd_bf16_does_not_crash",
    "tests/integration/test_faithfulness.py::test_common_views_reproduce_the_workload[minigpt-fwdbwd-",
    "tests/integration/test_thunder.py::test_every_stage_dumps[minigpt-",
    "tests/integration/test_jax.py::test_jax_stages_dump[minigpt-",
    "tests/test_roofline.py::test_launches_per_step_have_one_definition_on_the_cpu",
    "tests/integration/test_repro.py::test_cell_files_of_ok_cells_run_ok[gelu-thunder+torchcompile-",
    "tests/integration/test_repro.py::test_cell_files_of_ok_cells_run_ok[tinyhead-xla-fwdbwd-",
    "tests/integration/test_kernel_mapping.py::test_a_cell_whose_kernels_cannot_be_mapped_keeps_its_verdict_in_every_output",
    "tests/test_cost.py::test_bench_counts_the_work_in_a_worker_and_its_process_does_none",
    "tests/integration/test_compare_isolation.py::test_a_timed_cell_out_of_memory_beside_others_runs_again_alone",
    "tests/integration/test_compare_isolation.py::test_a_reference_out_of_gpu_memory_is_computed_on_the_cpu",
    "tests/integration/test_compare_cross.py::test_nvfuser_lowering_regions_compute_the_graph[dynamo-block-fwdbwd]",
    "tests/integration/test_user_workload.py::test_a_hanging_forward_ends_with_the_timeout_the_reference_included",
    "tests/integration/test_explain.py::test_explain_eager_says_it_has_no_kernels",
    "tests/integration/test_parallel_tp.py::test_async_tp_fuses_the_sequence_parallel_pairs[2]",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(LONG_TAIL):
            item.add_marker(pytest.mark.slow)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; none on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _thunder_capture_per_test(monkeypatch):
    """A CLI call in a test with `--thunder-capture` sets it for its whole process (the variable
    the workers inherit): each test starts from the default, and its setting ends with it."""
    from irlens.frontends.thunder.capture import CAPTURE_ENV

    monkeypatch.setenv(CAPTURE_ENV, "auto")

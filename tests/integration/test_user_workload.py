"""Bring your own workload: a user's file, named by path, through every backend; bad references exit 2."""
import json
import re
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import irlens
import irlens.matrix as cmp
from irlens.matrix.references import twin_problem
from irlens.backends import BACKENDS
from irlens.cli.compare import run as compare_main
from irlens.numerics.verdicts import TwinMismatch

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "rmsnorm.py"

SWIGLU_FILE = '''
import torch
import irlens


class SwiGLU(torch.nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate = torch.nn.Linear(dim, hidden, bias=False)
        self.up = torch.nn.Linear(dim, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def swiglu_jax(params, x):
    import jax
    gate = x @ params["gate.weight"].T
    return ({act}(gate) * (x @ params["up.weight"].T)) @ params["down.weight"].T


swiglu = irlens.Workload.from_module("swiglu", SwiGLU(32, 64), example_inputs=((2, 8, 32),), jax=swiglu_jax)
not_a_workload = SwiGLU(4, 8)
'''


def write_swiglu(tmp_path, twin_activation="jax.nn.silu") -> Path:
    path = tmp_path / "my_mlp.py"
    path.write_text(SWIGLU_FILE.replace("{act}", twin_activation))
    return path


def _args(workloads, **kw):
    base = dict(workloads=workloads, backends=None, device="cpu", modes=["fwd", "fwdbwd"], preset="tiny",
                dtype=None, json=None, timeout=300.0, jobs=1)
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.slow
def test_compare_user_workload_by_path_through_every_backend(tmp_path):
    """`irlens compare --workloads FILE:NAME` on a file irlens has never seen: every available
    backend runs it (each cell in its own worker) and its outputs and gradients are checked."""
    path = write_swiglu(tmp_path)
    out = tmp_path / "swiglu.json"
    proc = subprocess.run(
        [sys.executable, "-m", "irlens.cli", "compare", "--workloads", f"{path}:swiglu", "--mode", "fwdbwd",
         "--json", str(out), "--jobs", "2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    backends = BACKENDS.names()
    assert {r["backend"] for r in rows} == set(backends)
    for r in rows:
        if r["status"] == "unavailable":
            assert r["reason"] and r["backend"] != "eager"
            continue
        assert r["status"] == "ok" and r["max_rel_err"] <= r["tol"], r
        assert {"out0", "loss", "grad:input0", "grad:gate.weight", "grad:down.weight"} <= set(r["per_result"])
    assert "swiglu" in proc.stdout  # the table


def test_compare_mixes_built_in_names_and_references(tmp_path):
    path = write_swiglu(tmp_path)
    plan = cmp.plan_matrix([f"{path}:swiglu,gelu"], ["eager"], None, "cpu", "tiny", None)
    assert [wl.name for wl in plan.workloads.values()] == ["swiglu", "gelu"]
    assert list(plan.workloads) == [f"{path}:swiglu", "gelu"]  # what a worker re-resolves


def test_compare_example_rmsnorm_from_python():
    """examples/rmsnorm.py's workload through the Python API (in this process): eager, and xla
    through its JAX twin (a user workload through every backend is the test above's)."""
    ref = f"{EXAMPLE}:rmsnorm"
    doc = irlens.compare(ref, backends=["eager", "xla"], isolate=False)
    assert [(r["backend"], r["mode"]) for r in doc["rows"]] == [
        ("eager", "fwd"), ("xla", "fwd"), ("eager", "fwdbwd"), ("xla", "fwdbwd")]
    for r in doc["rows"]:
        assert r["workload"] == "rmsnorm"
        assert r["status"] == "ok", r["reason"]


def test_compare_api_takes_a_workload_object_built_anywhere():
    w = torch.nn.Linear(16, 8)
    wl = irlens.Workload.from_module("local_linear", w, example_inputs=(torch.randn(4, 16),))
    with pytest.warns(UserWarning, match="in this process"):
        doc = irlens.compare(wl, backends=["eager"], modes=["fwdbwd"])
    (row,) = doc["rows"]
    assert row["status"] == "ok" and {"grad:weight", "grad:bias", "grad:input0"} <= set(row["per_result"])
    assert torch.equal(w.weight, wl.instantiate().module.weight)  # the user's weights, not fresh ones


class MaskedLinear(torch.nn.Module):
    """A Linear whose outputs a buffer masks."""

    def __init__(self, dim):
        super().__init__()
        self.proj = torch.nn.Linear(dim, dim)
        self.register_buffer("keep", torch.ones(dim))

    def forward(self, x):
        return self.proj(x) * self.keep


def test_buffers_reach_a_user_twin_by_name():
    """`params` holds the module's buffers beside its parameters: a twin that reads `keep` agrees
    (the XLA rows included, fwdbwd with no gradient for a buffer), one that ignores it disagrees."""
    module = MaskedLinear(8)
    module.keep.copy_(torch.arange(8) % 2)  # as a checkpoint set it, not what __init__ made

    def reads(params, x):
        return (x @ params["proj.weight"].T + params["proj.bias"]) * params["keep"]

    def ignores(params, x):
        return x @ params["proj.weight"].T + params["proj.bias"]

    wl = irlens.Workload.from_module("masked_linear", module, example_inputs=((4, 8),), jax=reads)
    assert twin_problem(wl, "cpu", None) == ""
    ignoring = irlens.Workload.from_module("masked_linear", module, example_inputs=((4, 8),), jax=ignores)
    assert "the JAX twin of workload 'masked_linear' disagrees" in twin_problem(ignoring, "cpu", None)
    doc = irlens.compare(wl, backends=["eager", "xla"], isolate=False)
    assert {(r["backend"], r["mode"]) for r in doc["rows"]} == {(b, m) for b in ("eager", "xla") for m in ("fwd", "fwdbwd")}
    for r in doc["rows"]:
        assert r["status"] == "ok", r["reason"]
        if r["mode"] == "fwdbwd":
            assert {"grad:proj.weight", "grad:input0"} <= set(r["per_result"]) and "grad:keep" not in r["per_result"]


@pytest.mark.parametrize("case,message", [
    ("missing file", "no such file: "),
    ("missing name", "has no name 'nope'; Workloads it defines: swiglu"),
    ("not a Workload", "is a SwiGLU, not an irlens Workload"),
    pytest.param("twin disagrees", "the JAX twin of workload 'swiglu' disagrees with its torch module",
                 marks=pytest.mark.slow),
])
def test_compare_bad_user_workload_reference_exits_2(tmp_path, capsys, case, message):
    # The twin that disagrees has a classic slip: sigmoid where SwiGLU has silu.
    path = write_swiglu(tmp_path, "jax.nn.sigmoid" if case == "twin disagrees" else "jax.nn.silu")
    ref = {"missing file": f"{tmp_path}/absent.py:swiglu", "missing name": f"{path}:nope",
           "not a Workload": f"{path}:not_a_workload", "twin disagrees": f"{path}:swiglu"}[case]
    assert compare_main(_args([ref], backends=["eager"])) == 2
    err = capsys.readouterr().err
    assert message in err
    if case == "twin disagrees":
        assert "out0: rel err" in err


def test_compare_twin_check_names_the_output(tmp_path):
    path = tmp_path / "two_outputs.py"
    path.write_text(textwrap.dedent('''
        import torch, irlens
        wl = irlens.Workload.from_module(
            "two", lambda x: (x * 2.0, torch.exp(x)), example_inputs=((3, 4),),
            jax=lambda params, x: (x * 2.0, x + 1.0))
    '''))
    with pytest.raises(TwinMismatch, match=r"out1: rel err .* > tol") as e:
        irlens.compare(f"{path}:wl", backends=["eager"], isolate=False)
    assert "out0" not in str(e.value)


def test_user_workload_file_is_not_added_to_irlens(tmp_path):
    from irlens.workloads.builtin import workload_names
    from irlens.workloads.user_code import load_workload_ref

    wl = load_workload_ref(f"{write_swiglu(tmp_path)}:swiglu")
    assert wl.name == "swiglu" and "swiglu" not in workload_names()
    assert load_workload_ref(f"{tmp_path}/my_mlp.py:swiglu") is wl  # loaded once per process
    assert not any(p.name.startswith("my_mlp") for p in (REPO / "irlens").rglob("*"))
    assert os.path.exists(tmp_path / "my_mlp.py")


def test_report_api_renders_a_compare_document(tmp_path):
    doc = irlens.compare(f"{EXAMPLE}:rmsnorm", backends=["eager"], modes=["fwd"], isolate=False)
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    paths = irlens.report(str(tmp_path / "doc.json"), out=str(tmp_path / "rep"), frontends=False)
    assert "rmsnorm" in paths["html"].read_text() and "rmsnorm" in paths["md"].read_text()
    assert paths["json"] == tmp_path / "rep" / "results.json"  # the rows drawn, as `irlens report` writes them
    assert json.loads(paths["json"].read_text())["rows"] == doc["rows"]


def test_dump_api_gives_the_common_view_of_a_user_workload():
    from irlens.core.ir import Graph

    graph = irlens.dump(f"{EXAMPLE}:rmsnorm", "jax", level="primitive")
    assert isinstance(graph, Graph) and graph.name == "rmsnorm" and graph.frontend == "jax"
    assert {"mul", "rsqrt"} <= set(graph.op_counts())
    assert "weight" in irlens.dump(f"{EXAMPLE}:rmsnorm", "dynamo", native=True)


def test_api_functions_survive_importing_their_namesake_modules(tmp_path):
    import irlens.matrix  # noqa: F401  (no submodule may hide the API functions compare and report)
    import irlens.reporting  # noqa: F401

    doc = irlens.compare("gelu", backends=["eager"], modes=["fwd"], isolate=False)
    assert doc["rows"][0]["status"] == "ok"
    assert irlens.report(doc, out=str(tmp_path), frontends=False)["html"].exists()


LOAD_FAILURES = {  # what a workload's file or module does while it loads -> what the message says
    "sys.exit(0)": "failed to load: SystemExit: 0 (it calls sys.exit while it loads)",
    "sys.exit(3)": "failed to load: SystemExit: 3 (it calls sys.exit while it loads)",
    "raise RuntimeError('no GPU, no model')": "failed to load: RuntimeError: no GPU, no model",
    "import irlens_no_such_dependency": "failed to load: ModuleNotFoundError: No module named 'irlens_no_such_dependency'",
}


def _failing_reference(tmp_path, monkeypatch, form: str, body: str) -> tuple[str, str]:
    """(a reference to a workload whose file or module runs `body` while it loads, how the message names it)."""
    stem = f"loads_badly_{form}_{list(LOAD_FAILURES).index(body)}"  # a module of its own: nothing cached between cases
    path = tmp_path / f"{stem}.py"
    path.write_text(f"import sys\n{body}\n")
    if form == "file":
        return f"{path}:wl", str(path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{stem}:wl", f"module {stem!r}"


@pytest.mark.parametrize("form", ["file", "module"])
@pytest.mark.parametrize("body", list(LOAD_FAILURES))
def test_a_workload_that_exits_or_raises_while_it_loads_is_bad_input(tmp_path, monkeypatch, capsys, form, body):
    """`path/to/file.py:NAME` and `package.module:NAME` alike: a workload whose loading exits
    (sys.exit, 0 included) or raises ends its loading, not irlens: exit 2, and the message says which and why."""
    from irlens.cli import main

    ref, what = _failing_reference(tmp_path, monkeypatch, form, body)
    assert main(["compare", "--workloads", ref, "--backends", "eager", "--mode", "fwd"]) == 2
    err = capsys.readouterr().err
    assert f"irlens compare: error: {what} {LOAD_FAILURES[body]}" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [["explain"], ["repro", "--no-run", "--out"]])
def test_explain_and_repro_take_a_module_that_exits_as_bad_input(tmp_path, monkeypatch, capsys, command):
    from irlens.cli import main

    ref, what = _failing_reference(tmp_path, monkeypatch, "module", "sys.exit(0)")
    argv = [command[0], ref, "--backend", "eager", *command[1:]] + ([str(tmp_path / "out")] if len(command) > 1 else [])
    assert main(argv) == 2
    assert f"irlens {command[0]}: error: {what} {LOAD_FAILURES['sys.exit(0)']}" in capsys.readouterr().err


def test_a_missing_module_is_named_as_such(tmp_path, capsys):
    from irlens.cli import main

    assert main(["compare", "--workloads", "irlens_no_such_package.models:wl", "--backends", "eager"]) == 2
    assert "cannot import module 'irlens_no_such_package.models': No module named 'irlens_no_such_package'" \
        in capsys.readouterr().err


@pytest.mark.slow
def test_a_hanging_forward_ends_with_the_timeout_the_reference_included(tmp_path):
    """The float64 reference obeys `--timeout` like the cells: a forward that never returns costs
    the timeout once (not the reference's own minutes), and its cells fail saying why."""
    import time

    path = tmp_path / "hangs.py"
    path.write_text("import time, irlens\n"
                    "wl = irlens.Workload.from_module('hangs', lambda x: time.sleep(3600) or x, example_inputs=((4, 4),))\n")
    out = tmp_path / "hangs.json"
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "irlens", "compare", "--workloads", f"{path}:wl", "--backends",
                           "eager,inductor", "--mode", "fwd", "--timeout", "8", "--json", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240)
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert [(r["backend"], r["status"], r["phase"]) for r in rows] == [("eager", "failed", "reference"),
                                                                      ("inductor", "failed", "reference")]
    assert all(re.fullmatch(r"the float64 eager reference failed: timed out after 8 s "
                            r"\(computing the float64 reference on cpu, its last \d+ s\)", r["reason"])
               for r in rows), [r["reason"] for r in rows]
    assert elapsed < 120, f"{elapsed:.0f} s for a run whose only wait is one 8 s timeout"


def test_a_file_that_imports_timm_loads_where_torchvision_cannot_load_its_extension(tmp_path):
    """The registry's torchvision 0.28.0 is a CUDA build whose extension does not load beside the
    CPU torch 2.13.0: a bare `import timm` dies there. A workload file that imports timm loads in
    irlens all the same (in a fresh process, so nothing imported torchvision before)."""
    import importlib.util

    if importlib.util.find_spec("timm") is None:
        pytest.skip("timm is not installed (the [zoo] extra)")
    path = tmp_path / "vision.py"
    path.write_text(textwrap.dedent("""
        import timm
        import irlens

        net = irlens.Workload.from_module("net", timm.create_model("resnet18", pretrained=False, num_classes=3).eval(),
                                          example_inputs=((1, 3, 32, 32),))
    """))
    code = (f"from irlens.workloads.user_code import load_object; w = load_object({str(path) + ':net'!r}); "
            "inst = w.instantiate('tiny'); print(tuple(inst.module(*inst.inputs).shape))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("(1, 3)")

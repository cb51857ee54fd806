"""`irlens report`: the fusion map against the kernel records, the HTML/Markdown pages, a real CPU
matrix, and the page in headless Chromium."""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from irlens.cli.report import run as report_main
from irlens.matrix import Document, Row
from irlens.reporting import write_report
from irlens.reporting.build import build_report
from irlens.reporting.frontend_table import compress_stages
from irlens.reporting.fusion_map import build_fusion_map, render_svg
from irlens.reporting.html import render_html
from irlens.reporting.markdown import render_markdown
from irlens.reporting.records import group_rows, kernel_stage
from tests.support.report_fixtures import synthetic_document

SVG = "{http://www.w3.org/2000/svg}"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def typed(rows: list[dict]) -> list[Row]:
    """Rows of a compare document as the report reads them."""
    return [Row.from_json(r) for r in rows]


def assert_map_matches_records(rows: list[dict]) -> None:
    """Every kernel is drawn, and every node sits in exactly the kernels whose records name it:
    in the map's data structure and in the SVG drawn from it."""
    workload, mode = rows[0]["workload"], rows[0]["mode"]
    fmap = build_fusion_map(workload, mode, typed(rows))
    svg = ET.fromstring(render_svg(fmap))
    mapped = [r for r in rows if r.get("graphs") and r["status"] in ("ok", "mismatch")]
    assert [c.backend for c in fmap.columns] == [r["backend"] for r in mapped]
    for column, row in zip(fmap.columns, mapped):
        (read,) = typed([row])
        records, graphs = read.kernels, read.graphs
        assert [(k.index, k.name) for k in column.kernels] == list(enumerate(k.name for k in records))
        drawn = {(p.stage, m.id): m for p in column.panels for m in p.nodes}
        for stage, graph in graphs.items():
            for node in graph.nodes:
                owners = [i for i, k in enumerate(records) if kernel_stage(k, graphs) == stage and node.id in k.node_ids]
                again = [i for i, k in enumerate(records) if kernel_stage(k, graphs) == stage and node.id in k.recompute]
                if owners or again:
                    assert (stage, node.id) in drawn, f"{row['backend']}: {node.id} is in a kernel but not drawn"
                if (stage, node.id) in drawn:
                    assert drawn[(stage, node.id)].kernels == owners, (row["backend"], node.id)
                    assert drawn[(stage, node.id)].recomputed_by == again, (row["backend"], node.id)
        # The SVG says the same: one legend chip per kernel, the same nodes with the same groups.
        g = svg.find(f"{SVG}g[@data-backend='{row['backend']}']")
        assert g is not None
        chips = [(int(c.get("data-kernel")), c.get("data-name")) for c in g.iter(f"{SVG}g") if c.get("class") == "kernel"]
        assert chips == [(k.index, k.name) for k in column.kernels]
        for panel_el in (e for e in g.iter(f"{SVG}g") if e.get("class") == "panel"):
            stage = panel_el.get("data-stage")
            nodes = {e.get("data-node"): e for e in panel_el.iter(f"{SVG}g") if e.get("class") == "node"}
            assert set(nodes) == {nid for (s, nid) in drawn if s == stage}
            for nid, e in nodes.items():
                assert [int(i) for i in e.get("data-kernels").split()] == drawn[(stage, nid)].kernels
                assert [int(i) for i in e.get("data-recomputed-by").split()] == drawn[(stage, nid)].recomputed_by
        for k in column.kernels:  # drawn: it colours at least one node, or the column says why not
            assert any(k.index in m.kernels or k.index in m.recomputed_by for m in drawn.values()) \
                or any(n.startswith(f"k{k.index} ") for n in column.notes), k.name


def test_fusion_map_matches_records_synthetic():
    doc = synthetic_document()
    assert_map_matches_records(doc["rows"])
    fmap = build_fusion_map("tinyhead", "fwd", typed(doc["rows"]))
    inductor, xla = fmap.columns
    # The softmax: one kernel in Inductor's column, split over two fusions in XLA's.
    ind = {m.op: m.kernels for m in inductor.panels[0].nodes}
    assert ind["amax"] == ind["exp"] == ind["div"] == [1]
    jx = {m.id: m for m in xla.panels[0].nodes}
    assert jx["e"].kernels == [1] and jx["j"].kernels == [2] and jx["d"].recomputed_by == [2]
    # Rows are shared: the same op on the same row in both columns, broadcasts in a lane above.
    rows_of = lambda col: {m.op: m.row for m in col.panels[0].nodes if m.compute}  # noqa: E731
    assert rows_of(inductor) == rows_of(xla)
    assert {m.y for m in inductor.panels[0].nodes if m.op == "exp"} == {m.y for m in xla.panels[0].nodes if m.op == "exp"}
    # eager has no graph: it is named, not drawn; the unavailable and failed rows say why.
    assert any(n.startswith("eager:") for n in fmap.notes)
    assert any("nvFuser needs CUDA" in n for n in fmap.notes) and any("boom" in n for n in fmap.notes)


def test_fusion_map_contracts_data_movement_outside_kernels():
    doc = synthetic_document()
    fmap = build_fusion_map("tinyhead", "fwd", typed(doc["rows"]))
    panel = fmap.columns[0].panels[0]
    assert "t" not in {m.id for m in panel.nodes} and panel.hidden == 1  # the transpose no kernel covers
    mm = next(m for m in panel.nodes if m.id == "mm")
    assert mm.preds == []  # its edge from the contracted permute has no drawn source


def test_report_pages_synthetic(tmp_path):
    paths, _ = write_report(Document.from_json(synthetic_document()), tmp_path, frontends=False)
    html = paths["html"].read_text()
    assert "<script" not in html.lower()
    assert 'src="http' not in html and 'href="http' not in html and "@import" not in html  # no network
    for text in ("Fusion map", "cpp_fused__softmax_add_0", "fusion.2", "nvFuser needs CUDA; no GPU here",
                 "run: RuntimeError: boom", "Numerics", "% of ceiling", "2.1e-07", "3.0e-04"):
        assert text in html, text
    assert 'class="bad"' in html  # the mismatching xla error is flagged
    md = paths["md"].read_text()
    assert "| tinyhead | fwd | inductor | ok | 2.1e-07 | - | 1e-04 | 2 | 1.50 | 42.0 |  |" in md
    assert "| tinyhead | fwd | xla | **mismatch** ✗ |" in md
    assert "nvFuser needs CUDA" in md and "cpp_fused__softmax_add_0" in md
    assert "inductor k1 `cpp_fused__softmax_add_0` (fused): add, amax, sub, exp, sum, div" in md
    svg = tmp_path / "figures" / "fusion-tinyhead-fwd.svg"
    assert f"figures/{svg.name}" in md and ET.parse(svg).getroot().tag == f"{SVG}svg"


def test_report_main_reads_results_and_rejects_bad_files(tmp_path, capsys):
    import json

    src = tmp_path / "results.json"
    src.write_text(json.dumps(synthetic_document()))
    assert report_main(SimpleNamespace(from_=[str(src)], out=str(tmp_path / "out"), frontends=False)) == 0
    assert (tmp_path / "out" / "report.html").exists() and (tmp_path / "out" / "report.md").exists()
    assert report_main(SimpleNamespace(from_=[str(tmp_path / "missing.json")], out=str(tmp_path / "o2"))) == 2
    assert "cannot read compare results" in capsys.readouterr().err


def test_merged_documents_keep_devices_apart():
    cpu, gpu = synthetic_document(), synthetic_document()
    gpu.update(device="cuda", device_name="NVIDIA H100 80GB HBM3")
    from irlens.matrix.join import UNION, join

    doc = join([Document.from_json(cpu), Document.from_json(gpu)], UNION)
    assert set(group_rows(doc.rows)) == {("tinyhead", "fwd", "cpu"), ("tinyhead", "fwd", "cuda")}
    html = render_html(build_report(doc))
    assert "tinyhead · fwd · cuda" in html and "tinyhead · fwd · cpu" in html
    # a shard that had nothing to run (no rows, no GPU name) adds no device to the joined one's
    empty = dict(synthetic_document(), rows=[], device="cuda", device_name=None)
    for order in ([gpu, empty], [empty, gpu]):
        doc = join([Document.from_json(d) for d in order], UNION)
        assert (doc.device, doc.device_name) == ("cuda (NVIDIA H100 80GB HBM3)", "NVIDIA H100 80GB HBM3")

def test_percent_of_ceiling():
    from irlens.core.ceilings import Ceilings
    from irlens.core.ir import Kernel
    from irlens.reporting.ceiling import backend_pct, ceiling_for, kernel_pct

    h100 = ceiling_for(Ceilings("H100", 3350.0, "copy", {"bfloat16": 989.0, "float32": 67.0}))  # as `irlens bench` measures
    k = Kernel("inductor", "k", "fused", [], time_us=5.0, bytes=80_000)
    assert kernel_pct(k, h100, "float32") == pytest.approx(100 * 80_000 / 3.35e12 * 1e6 / 5.0)
    mm = Kernel("inductor", "mm", "matmul", [], time_us=10.0, bytes=1_000, flops=67_000_000)  # compute-bound
    assert kernel_pct(mm, h100, "float32") == pytest.approx(10.0)
    assert backend_pct([k, mm], h100, "float32").pct == pytest.approx(100 * (80_000 / 3.35e6 + 1.0) / 15.0)
    assert kernel_pct(k, ceiling_for(None), "float32") is None  # nothing measured (CPU runs)
    assert kernel_pct(Kernel("x", "k", "fused", [], bytes=10), h100, "float32") is None  # not timed


def test_compress_stages():
    names = ["thunder.trace[0]", "thunder.trace[1]", "thunder.trace[2]", "thunder.backward[0]", "jax.jaxpr"]
    assert compress_stages(names) == ["thunder.trace[0–2]", "thunder.backward[0]", "jax.jaxpr"]


# --- a real CPU matrix ------------------------------------------------------------------------

CPU_BACKENDS = ("eager", "inductor", "thunder+torchcompile", "xla")


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    """A real compare of two small workloads x the CPU backends registered here (fwd, and
    tinyhead fwdbwd), rendered with the frontend table."""
    from irlens.backends import BACKENDS
    from irlens.matrix import run_matrix

    backends = [b for b in CPU_BACKENDS if b in BACKENDS]
    fwd = run_matrix(["gelu", "tinyhead"], backends, ["fwd"], device="cpu", preset="tiny", progress=False,
                     isolate=False)
    bwd = run_matrix(["tinyhead"], backends, ["fwdbwd"], device="cpu", preset="tiny", progress=False, isolate=False)
    doc = dataclasses.replace(fwd, rows=fwd.rows + bwd.rows)
    out = tmp_path_factory.mktemp("report")
    return doc, write_report(doc, out)[0]


@pytest.mark.slow
def test_report_real_matrix(real_report):
    doc, paths = real_report
    rows = doc.rows
    assert all(r.status == "ok" for r in rows), [(r.backend, r.reason) for r in rows if r.status != "ok"]
    for group in group_rows(rows).values():
        assert_map_matches_records([r.to_json() for r in group])
    html = paths["html"].read_text()
    assert "<script" not in html.lower()
    for r in rows:
        for k in r.kernels:
            assert k.name in html
    # The frontend table is computed: dynamo takes torch code, JAX needs the twin.
    assert "Frontends" in html and "GraphModule" in html and "no: it traces the workload" in html


def png_pixels(path: Path):
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes) into an (h, w, c) array.
    Plain zlib + numpy: the suite does not depend on PIL."""
    import struct
    import zlib

    import numpy as np

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        (n,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    bpp = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * bpp)
    out = np.zeros((h, w * bpp), np.uint8)
    prev = np.zeros(w * bpp, np.uint8)
    for y in range(h):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            cur = line.copy()
        elif kind == 1:  # Sub: a running sum per channel (uint8 arithmetic wraps mod 256)
            cur = np.cumsum(line.reshape(w, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif kind == 2:  # Up
            cur = line + prev
        else:  # Average, Paeth: depend on the byte to the left, so byte by byte
            cur, up = line.astype(np.int32).tolist(), prev.astype(np.int32).tolist()
            for i in range(len(cur)):
                a = cur[i - bpp] if i >= bpp else 0
                b = up[i]
                if kind == 3:
                    cur[i] = (cur[i] + (a + b) // 2) & 255
                else:
                    c = up[i - bpp] if i >= bpp else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            cur = np.array(cur, np.uint8)
        out[y], prev = cur, cur
    return out.reshape(h, w, bpp)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(real_report, tmp_path):
    import numpy as np

    _, paths = real_report
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0", "--window-size=1400,2400",
         f"--screenshot={shot}", paths["html"].resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not errors, errors
    pixels = png_pixels(shot)[:, :, :3]
    assert pixels.shape == (2400, 1400, 3)
    rgb = pixels.astype(np.uint32)
    colours = np.unique((rgb[:, :, 0] << 16) | (rgb[:, :, 1] << 8) | rgb[:, :, 2])
    assert len(colours) > 50, f"the screenshot is (nearly) blank: {len(colours)} colours"
    # Not all white either: a good part of the page is text, tables and drawings.
    assert (pixels.min(axis=2) < 200).mean() > 0.01


def test_a_bench_document_keeps_its_dtypes_apart():
    bf16, fp32 = synthetic_document()["rows"], synthetic_document()["rows"]
    rows = [{**r, "dtype": "bfloat16"} for r in bf16] + [{**r, "dtype": "float32"} for r in fp32]
    assert set(group_rows(typed(rows))) == {("tinyhead", "fwd", "bfloat16"), ("tinyhead", "fwd", "float32")}
    html = render_html(build_report(Document.from_json({**synthetic_document(), "rows": rows})))
    assert "tinyhead · fwd · bfloat16" in html and "tinyhead · fwd · float32" in html
    summary = build_report(Document.from_json({**synthetic_document(), "rows": rows})).sections[1].blocks[0]
    assert summary.header[:4] == ["workload", "mode", "dtype", "backend"]
    assert [row[2] for row in summary.rows] == ["bfloat16"] * len(bf16) + ["float32"] * len(fp32)
    # one dtype throughout (a compare run): no dtype in the section names
    assert set(group_rows(typed([{**r, "dtype": "float32"} for r in fp32]))) == {("tinyhead", "fwd", "")}
    # a row that never instantiated its workload (nvFuser on a CPU) has no dtype: it joins the
    # sections of its workload and mode, and its note goes there, not into a section of its own
    unavailable = {**fp32[0], "backend": "nvfuser", "status": "unavailable", "reason": "nvFuser needs CUDA",
                   "dtype": None}
    compare = typed([{**r, "dtype": "float32"} for r in fp32] + [unavailable])
    assert {k: [r.backend for r in v][-1] for k, v in group_rows(compare).items()} == {("tinyhead", "fwd", ""): "nvfuser"}
    bench = group_rows(typed(rows + [unavailable]))
    assert set(bench) == {("tinyhead", "fwd", "bfloat16"), ("tinyhead", "fwd", "float32")}
    assert all(group[-1].backend == "nvfuser" for group in bench.values())
    md = render_markdown(build_report(Document.from_json({**synthetic_document(), "rows": [
        {**r, "dtype": "float32"} for r in fp32] + [unavailable]})))
    assert md.count("## tinyhead · fwd") == 1 and "> nvfuser: unavailable: nvFuser needs CUDA" in md


# --- documents read back -----------------------------------------------------------------------

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("name", ["h200-bench.json.gz", "cross-h200-gelu.json", "cross-h200-block.json"])
def test_committed_documents_read_back_with_every_field(name):
    """Every results document irlens wrote (GPU benches and cross grids, kept in tests/data) is read into Rows and
    written back with the same fields and values, in the one form of the current version: a bench row's own
    fields in its "bench", a cross row's in its "cross", its frontend and backend by those names, the
    first bench documents' ceilings (one copy, 8192³ products) in the form of every field."""
    import gzip
    import json

    from irlens.matrix import read_document
    from irlens.matrix.records import BenchRecord
    from irlens.matrix.schema import SCHEMA, full_ceilings

    data = json.loads(gzip.open(DATA / name).read() if name.endswith(".gz") else (DATA / name).read_text())
    doc = read_document(DATA / name)
    assert doc.kind == ("cross" if name.startswith("cross") else "bench") and len(doc.rows) == len(data["rows"])
    written = doc.to_json()
    assert "schema" not in data and written["schema"] == SCHEMA
    header = {k: v for k, v in written.items() if k not in ("schema", "rows")}
    wanted = {k: v for k, v in data.items() if k != "rows"}
    if "parts" in wanted:
        wanted["parts"] = [{**p, "ceilings": full_ceilings(p["ceilings"])} for p in wanted["parts"]]
    assert header == wanted
    bench_fields = [f.name for f in dataclasses.fields(BenchRecord)]
    for raw, row in zip(data["rows"], written["rows"]):
        if doc.kind == "cross":  # and the fields every row has, which the cross form left out
            renamed = {"acquired_by": "frontend", "executed_by": "backend"}
            wanted = {renamed.get(k, k): v for k, v in raw.items() if k not in ("native", "graphs")}
            wanted |= {"cross": {"native": raw["native"], "lowered": raw["graphs"]}, "notes": {}, "graphs": {},
                       "coverage": None}
        else:
            own = {k: full_ceilings(raw[k]) if k == "ceilings" else raw[k] for k in bench_fields if raw.get(k) is not None}
            wanted = {k: v for k, v in raw.items() if k not in bench_fields} | ({"bench": own} if own else {})
        assert row == wanted


@pytest.mark.parametrize("path", ["h100-bench.json.gz", "h100-checks.json.gz", "zoo-cpu-tiny.json.gz",
                                  "cross-h100-gelu.json", "h100-single1.json.gz"])
def test_older_documents_read_as_typed_records_and_write_again_the_same(path):
    """Documents written before a field was recorded (a kernel's bytes read, a row's flagged
    kernels) read into typed records; written and read again they are the same rows. A field
    written as null then is left out now (it reads back as None either way)."""
    from irlens.matrix import Document, read_document
    from irlens.matrix.records import KernelRecord

    doc = read_document(DATA / path)
    kernels = [k for r in doc.rows for k in r.kernels]
    assert kernels and all(isinstance(k, KernelRecord) and isinstance(k.node_ids, list) for k in kernels)
    assert Document.from_json(doc.to_json()).rows == doc.rows


@pytest.mark.parametrize("damage, message", [
    (lambda row: row.pop("mode"), "row 2 of 5: missing field 'mode'"),
    (lambda row: row.update(speedup=2.0), "row 2 of 5: unknown field 'speedup'"),
    (lambda row: row.update(status="great"), "row 2 of 5: field 'status' is 'great', not one of ok, mismatch"),
    # nested and typed fields: read as their types, not found wrong later as a KeyError
    (lambda row: row.update(max_rel_err="abc"), "row 2 of 5: field 'max_rel_err' is 'abc', not a number"),
    (lambda row: row["per_result"].update(out0=True), "row 2 of 5: field 'per_result'['out0'] is True, not a number"),
    (lambda row: row["per_result"].update(out0="abc"), "row 2 of 5: field 'per_result'['out0'] is 'abc', not a number"),
    (lambda row: row.update(per_result_allowed={"out0": None}),
     "row 2 of 5: field 'per_result_allowed'['out0'] is None, not a number"),
    (lambda row: row.update(ill_conditioned={"out0": 1}), "row 2 of 5: field 'ill_conditioned'['out0'] is 1, not a string"),
    (lambda row: row.update(coverage={"compute_nodes": "7", "uncovered": [], "duplicates": []}),
     "row 2 of 5: field 'coverage': field 'compute_nodes' is '7', not an integer"),
    (lambda row: row.update(coverage={"compute_nodes": 7, "uncovered": []}),
     "row 2 of 5: field 'coverage': missing field 'duplicates'"),
    (lambda row: row.update(notes={"graph_breaks": "two"}), "row 2 of 5: field 'notes'['graph_breaks'] is 'two', not an integer"),
    (lambda row: row.update(notes={"thunderfx": {"regions": [{"region": "g0.thunder_0", "taken_by": "thunder"}]}}),
     "row 2 of 5: field 'notes'['thunderfx']: field 'regions' item 1: missing field 'ops'"),
    (lambda row: row["graphs"]["aot.forward"].pop("nodes"),
     "row 2 of 5: field 'graphs'['aot.forward']: not a common-view graph (missing field 'nodes')"),
    (lambda row: row["graphs"].update(extra=[1]), "row 2 of 5: field 'graphs'['extra'] is not a JSON object"),
    (lambda row: row["kernels"][1].pop("name"), "row 2 of 5: field 'kernels' item 2: missing field 'name'"),
    (lambda row: row["kernels"].append({}), "row 2 of 5: field 'kernels' item 3: missing field 'backend'"),
    (lambda row: row["kernels"][0].update(time_us="fast"),
     "row 2 of 5: field 'kernels' item 1: field 'time_us' is 'fast', not a number"),
    (lambda row: row["kernels"][0].update(nodes="mm"), "row 2 of 5: field 'kernels' item 1: field 'nodes' is 'mm', not a list"),
    # a bench row's fields, in an older document beside the others, are its record's now
    (lambda row: row.update(device_timing={"device_us": 1.0}),
     "row 2 of 5: field 'bench': field 'device_timing': missing field 'device_us_repeat'"),
    (lambda row: row.update(roofline={"gbps": 1, "tflops": 1, "pct_of_ceiling": 9, "bound": "memory", "speed": 3}),
     "row 2 of 5: field 'bench': field 'roofline': unknown field 'speed'"),
    (lambda row: row.update(bench={"gpu": 0}), "row 2 of 5: field 'bench': field 'gpu' is 0, not a string"),
    (lambda row: row.update(cross={"native": "yes"}), "row 2 of 5: field 'cross': field 'native' is 'yes', not true or false"),
    (lambda row: row.update(cross={"lowered": [{"stage": "aot.forward"}]}),
     "row 2 of 5: field 'cross': field 'lowered' item 1: missing field 'nodes'"),
])
def test_report_from_a_damaged_document_names_the_row_and_field(tmp_path, capsys, damage, message):
    import json

    from irlens.cli import main

    doc = synthetic_document()
    damage(doc["rows"][1])
    src = tmp_path / "results.json"
    src.write_text(json.dumps(doc))
    assert main(["report", "--from", str(src), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"irlens report: error: {src}: {message}" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_graph_out_of_topological_order_is_drawn_and_says_so():
    """A stored graph whose nodes read values made further down (an older reader's, see the jax
    HLO reader's value names) draws without those edges, and the column names them."""
    import copy

    rows = copy.deepcopy(synthetic_document()["rows"])
    row = next(r for r in rows if r["backend"] == "inductor")
    graph = next(iter(row["graphs"].values()))
    graph["nodes"].reverse()
    fmap = build_fusion_map("tinyhead", "fwd", typed(rows))
    column = next(c for c in fmap.columns if c.backend == "inductor")
    assert column.panels and any("before" in n and "edge not drawn" in n for n in column.notes)


def test_a_kernel_table_without_graphs_says_why_its_ops_are_not_shown():
    """A corpus document (zoo, GraphNet) keeps no graphs: its kernel tables say so, once per row."""
    doc = synthetic_document()
    kept = render_markdown(build_report(Document.from_json(doc)))
    assert "ops not shown" not in kept
    without = render_markdown(build_report(Document.from_json({**doc, "rows": [{**r, "graphs": {}} for r in doc["rows"]]})))
    with_kernels = [r for r in doc["rows"] if r.get("kernels")]
    assert with_kernels and without.count("ops not shown: the document keeps no graphs of") == len(with_kernels)

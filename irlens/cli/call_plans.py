"""`--plan-calls SECONDS` and `--cells FILE` of `irlens zoo` and `irlens graphnet`: a run too long for
one command of a machine that limits them, split into calls by the time its cells took before
(irlens.matrix.call_plan); each call's cells written as a list that the run command takes back, and
the commands to run and join them printed."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from irlens.cli.command import positive_float
from irlens.errors import UsageError
from irlens.names import MODES


def add_options(p, command: str) -> None:
    p.add_argument("--plan-calls", type=positive_float, default=None, metavar="SECONDS",
                   help="do not run: split the selection into calls of at most SECONDS each (a machine's limit "
                        "per command), by the times its cells took in the documents given with --from (a default "
                        "per backend for cells they lack); write each call's cells to OUT/call-NN.cells (replacing "
                        "an earlier plan's) and print "
                        f"the `irlens {command} --cells` command of each and the join (default: run)")
    p.add_argument("--cells", default=None, metavar="FILE",
                   help="run exactly the cells FILE lists, one `NAME MODE BACKEND` a line (# starts a comment), "
                        "as --plan-calls writes them; each must be in the selection (default: every cell of it)")


def read_cells(path: str) -> frozenset[tuple[str, str, str]]:
    """The (name, mode, backend) lines of a `--cells` file; a UsageError for a missing file, a bad line or none."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--cells {path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    cells = set()
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if words and (len(words) != 3 or words[1] not in MODES):
            raise UsageError(f"--cells {path}:{number}: {line.strip()!r} is not `NAME MODE BACKEND` "
                             f"(MODE one of {', '.join(MODES)})")
        if words:
            cells.add(tuple(words))
    if not cells:
        raise UsageError(f"--cells {path}: lists no cell")
    return frozenset(cells)


def check_documents(docs: list, device: str, preset: str) -> None:
    """The --from documents' rows are of the cells planned: compare documents of the device's type and the preset."""
    for d in docs:
        theirs = (d.device or "").split(" ")[0].split(":")[0]
        if d.kind != "compare" or theirs != device.split(":")[0] or d.preset != preset:
            raise UsageError(f"--from: a {d.kind} document of {d.device or 'no device'}, preset {d.preset}: its times "
                             f"are not those of {device} cells at preset {preset}")


def plan_calls(command: str, cells, docs: list, limit_s: float, jobs: int, timeout_s: float, out: Path,
               run_options: list[str], key=lambda name: name) -> None:
    """Pack `cells` into calls of `limit_s` by the `docs`' rows (`key`: a row's workload as the cells
    name it), write OUT/call-NN.cells and print the plan, each call's command and the join."""
    from irlens.matrix.call_plan import CALL_START_S, CELL_OVERHEAD_S, MARGIN, eager_companions, estimate_costs, \
        pack_calls
    from irlens.wording import plural

    if not cells:
        print(f"irlens {command}: the selection holds no cell to run: no call to plan", file=sys.stderr)
        return
    costs = estimate_costs(cells, [r for d in docs for r in d.rows], timeout_s, key)
    plan = pack_calls(costs, limit_s, jobs, eager_companions(cells))
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("call-*.cells"):  # an earlier plan's lists: a call this plan has not would run them again
        stale.unlink()
    sources = {s: sum(c.source == s for c in costs.values())
               for s in ("recorded", "timed out", "its backend's", "default")}
    alike = sources["its backend's"]
    print(f"irlens {command} --plan-calls {limit_s:g}: {plural(len(costs), 'cell')} in {plural(len(plan.calls), 'call')}, "
          f"{jobs} at once in each; of each call's {limit_s:g} s, {plan.usable_s:.0f} s for its cells ({MARGIN:.0%} margin, "
          f"{CALL_START_S:.0f} s to start)")
    print(f"estimates ({CELL_OVERHEAD_S:.0f} s a cell beside its compile and steps): {sources['recorded']} from "
          f"earlier rows, {sources['timed out']} timed out before (at least that), {alike} from "
          f"their backend's recorded cells (upper quartile), {sources['default']} defaults "
          f"(no row of theirs); {sum(c.times_out for c in costs.values())} will time out "
          f"(over --timeout {timeout_s:g} s)")
    commands = []
    for i, call in enumerate(plan.calls, 1):
        name = f"call-{i:02d}"
        path = out / f"{name}.cells"
        path.write_text(f"# irlens {command} --plan-calls {limit_s:g}: call {i} of {len(plan.calls)}, about "
                        f"{call.estimate_s:.0f} s\n" + "".join(" ".join(c) + "\n" for c in call.cells))
        warn = ("  OVER THE LIMIT: its cell alone does not fit a call, it will time out" if call.over_limit else
                "  (no quick cell: nothing is written before its first slow one ends)" if not call.writes_early else "")
        print(f"\n{name}: about {call.estimate_s:.0f} s, {plural(len(call.cells), 'cell')} -> {path}{warn}")
        for c in sorted(call.cells, key=lambda c: (-costs[c].seconds, c)):
            cost = costs[c]
            note = {"timed out": "  (timed out before)", "its backend's": "  (its backend's)",
                    "default": "  (default)"}.get(cost.source, "")
            print(f"  {cost.seconds:6.0f} s  {' '.join(c)}{note}{'  (will time out)' if cost.times_out else ''}")
        commands.append(["irlens", command, "--cells", str(path), *run_options, "--out", str(out / name),
                         "--json", str(out / f"{name}.json")])
    twice = len({c for call in plan.calls for c in call.cells}) < sum(len(call.cells) for call in plan.calls)
    print("\nrun each call (its document is written after every row):")
    print("".join(f"  {shlex.join(c)}\n" for c in commands), end="")
    # eager beside each call's cells is in several calls: the join keeps each row's own speedup base
    join = ["irlens", command, "--from", f"{out}/call-*.json", *(["--rerun"] if twice else []), "--out", f"{out}/joined"]
    print(f"then join them:\n  {' '.join(shlex.quote(w) if '*' not in w else w for w in join)}")

"""Speed of acquisition: all three frontends' forward+backward graphs of `block` (tiny),
acquired and normalized to the common view at both levels. Run twice in one process; the
second (warm) run is the figure the README quotes.

    python scripts/bench_acquire.py [--workload block] [--repeats 2]
"""
from __future__ import annotations

import argparse
import platform
import time

from irlens.frontends import get_frontend
from irlens.core.ir import LEVELS
from irlens.workloads.builtin import get_workload


def acquire_all(workload: str) -> dict[str, float]:
    inst = get_workload(workload).instantiate("tiny")
    seconds = {}
    for name in ("dynamo", "thunder", "jax"):
        start = time.perf_counter()
        acq = get_frontend(name).acquire(inst, "fwdbwd")
        nodes = sum(len(s.common(level).nodes) for s in acq.stages.values() if s.to_common for level in LEVELS)
        seconds[name] = time.perf_counter() - start
        print(f"  {name:<8} {len(acq.stages):>2} stages, {nodes:>5} common-view nodes, {seconds[name]:6.2f} s")
    return seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="block")
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    print(f"{platform.processor() or platform.machine()}, {__import__('os').cpu_count()} cores")
    for i in range(args.repeats):
        print(f"run {i + 1} ({'cold' if i == 0 else 'warm'}):")
        total = sum(acquire_all(args.workload).values())
        print(f"  total    {total:6.2f} s")


if __name__ == "__main__":
    main()

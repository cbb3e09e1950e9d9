"""`kapla explore` and `kapla dataflows` on every zoo network and hardware preset.

Run: python benchmarks/explore_zoo.py [--archs interstellar,eyeriss,edge,multinode] [--nets NAME,...]
                                      [--batch 1] [--jobs 2] [--store DIR] [--no-dataflows]

For each hardware and network: a small hardware grid (`kapla explore` with
the register file and the global buffer each at their size and twice it: 4
points) and every dataflow of the network's taxonomy (`kapla dataflows`: 21
for a CNN, 3 for an MLP, ... each a whole-network schedule). One line per
(hardware, network): how many points finished, how many were infeasible
(reported, not dropped), whether every finished schedule passed the
evaluator's check, and the seconds. The last line counts the checks that
failed (0 expected). With --store DIR, finished points are kept and a rerun
goes on where a stopped one was (the full run takes hours on 2 cores).
"""

from __future__ import annotations

import argparse
import sys
import time

from kapla.arch import load_arch
from kapla.arch.energy_tables import format_bytes
from kapla.explore.dataflows import dataflows
from kapla.explore.explore import explore
from kapla.explore.sweep import INFEASIBLE, OK
from kapla.workload.load import load_network
from kapla.workload.zoo import ZOO


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default="interstellar,eyeriss,edge,multinode")
    parser.add_argument("--nets", default=",".join(ZOO))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--store", default=None)
    parser.add_argument("--dataflows", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    print(f"# python benchmarks/explore_zoo.py --archs {args.archs} --nets {args.nets} --batch {args.batch}"
          + ("" if args.dataflows else " --no-dataflows"), flush=True)
    bad = total = 0
    for arch_name in args.archs.split(","):
        arch = load_arch(arch_name)
        grid = [f"{name}.capacity={format_bytes(size).replace(' ', '')},{format_bytes(2 * size).replace(' ', '')}"
                for name in arch.level_names[:2] if (size := arch.capacity_bytes(name)) is not None]
        for net_name in args.nets.split(","):
            net = load_network(net_name, batch=args.batch)
            for what in ("explore", "dataflows") if args.dataflows else ("explore",):
                start = time.perf_counter()
                result = (explore(net, arch, grid, jobs=args.jobs, store=args.store) if what == "explore"
                          else dataflows(net, arch, jobs=args.jobs, store=args.store))
                rows = result.rows
                done = [r for r in rows if r["status"] == OK]
                infeasible = sum(r["status"] == INFEASIBLE for r in rows)
                failed = [r for r in rows if r["status"] not in (OK, INFEASIBLE) or (r["status"] == OK
                                                                                    and not r["valid"])]
                total += len(rows)
                bad += len(failed)
                print(f"{arch_name:<13} {net_name:<17} {what:<9} {len(done):3}/{len(rows):<3} scheduled, "
                      f"{infeasible} infeasible, {'all valid' if not failed else f'{len(failed)} FAILED'}, "
                      f"{time.perf_counter() - start:7.1f} s", flush=True)
                for r in failed:
                    print(f"    {r['vary']}: {r['status']}: {r.get('message')}", flush=True)
    print(f"{total} points, {bad} failed or invalid", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Every zoo network on every hardware preset (and the 4-level example), KAPLA.

Run: python benchmarks/hardware_sweep.py [--archs NAME,...] [--nets NAME,...] [--batches 1,64]
                                         [--modes inference,training] [--jobs N]

One line per (hardware, batch, mode, network), printed as it finishes: whether
the schedule is valid (the evaluator's check of every layer, and a scheme for
every layer), its energy and time, and the solver's wall time; a failure is
printed with its one-line reason. The last line counts the valid schedules.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import kapla
from kapla.arch import list_presets
from kapla.errors import KaplaError
from kapla.workload.zoo import ZOO

EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "four_level.yaml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default=",".join(list_presets() + [EXAMPLE]))
    parser.add_argument("--nets", default=",".join(ZOO))
    parser.add_argument("--batches", default="1,64")
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    total = valid = 0
    for arch in args.archs.split(","):
        label = Path(arch).stem
        for batch in (int(b) for b in args.batches.split(",")):
            for mode in args.modes.split(","):
                for net in args.nets.split(","):
                    total += 1
                    start = time.perf_counter()
                    try:
                        r = kapla.schedule(net, arch, batch=batch, training=mode == "training", jobs=args.jobs)
                    except KaplaError as exc:
                        print(f"{label:<14} b{batch:<3} {mode:<9} {net:<10} FAILED: {exc}", flush=True)
                        continue
                    valid += r.valid
                    print(f"{label:<14} b{batch:<3} {mode:<9} {net:<10} {'valid' if r.valid else 'INVALID':<7} "
                          f"{len(r.layers):4d} layers {r.energy_j * 1e3:12.3f} mJ {r.time:14,.0f} cycles "
                          f"{time.perf_counter() - start:7.1f} s", flush=True)
    print(f"{valid} of {total} schedules valid")


if __name__ == "__main__":
    main()

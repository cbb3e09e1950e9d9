"""Every zoo network on every hardware preset (and the 4-level example), KAPLA.

Run: python benchmarks/hardware_sweep.py [--archs NAME,...] [--nets NAME,...] [--batches 1,64]
                                         [--modes inference,training] [--jobs N]

It runs the `grid` study (kapla.explore.studies.grid), one hardware at a
time. One line per (hardware, batch, mode, network): whether
the schedule is valid (the evaluator's check of every layer, and a scheme for
every layer), its energy and time, and the solver's wall time; a failure is
printed with its one-line reason. The last line counts the valid schedules.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kapla.arch import list_presets, load_arch
from kapla.explore.study import make_study
from kapla.explore.sweep import OK, run_points
from kapla.workload.zoo import ZOO

EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "four_level.yaml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default=",".join(list_presets() + [EXAMPLE]))
    parser.add_argument("--nets", default=",".join(ZOO))
    parser.add_argument("--batches", default="1,64")
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--jobs", type=int, default=2, help="points scheduled side by side")
    args = parser.parse_args()
    study = make_study("grid", {"nets": args.nets, "archs": args.archs, "batches": args.batches,
                                "modes": args.modes})
    rows = []
    for arch in args.archs.split(","):  # one hardware at a time, so its lines come as they finish
        for row in run_study_points(study, arch, args.jobs):
            rows.append(row)
            head = f"{Path(arch).stem:<14} b{row['batch']:<3} {row['mode']:<9} {row['network']:<10}"
            if row["status"] != OK:
                print(f"{head} FAILED: {row['message']}", flush=True)
                continue
            print(f"{head} {'valid' if row['valid'] else 'INVALID':<7} {row['energy_j'] * 1e3:12.3f} mJ "
                  f"{row['time_cycles']:14,.0f} cycles {row['seconds']:7.1f} s", flush=True)
    print(f"{sum(r['status'] == OK and r['valid'] for r in rows)} of {len(rows)} schedules valid")


def run_study_points(study, arch: str, jobs: int) -> list[dict]:
    """The study's points on hardware ``arch`` (by its name in the spec)."""
    name = load_arch(arch).name
    return run_points([p for p in study.points() if p.arch.name == name], jobs)


if __name__ == "__main__":
    main()

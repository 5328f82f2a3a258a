"""Run every benchmark and print its table.

``python -m benchmarks`` runs them all (the MILP benchmark on its quick grid);
``python -m benchmarks milp [--full]`` only the MILP-vs-Flux benchmark (``--full``: the issue's
whole grid, and the backend comparison).
"""
import argparse

from benchmarks import milp_vs_flux, planner_speed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("only", nargs="?", choices=["speed", "milp"], help="run one benchmark")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per cell (median kept)")
    parser.add_argument("--full", action="store_true", help="the MILP benchmark's whole grid")
    args = parser.parse_args()
    if args.only in (None, "speed"):
        print(planner_speed.run(repeat=args.repeat))
    if args.only in (None, "milp"):
        print(milp_vs_flux.run(full=args.full))
        if args.full:
            print(milp_vs_flux.backends())


if __name__ == "__main__":
    main()

"""Run every benchmark and print its table."""
import argparse

from benchmarks import planner_speed, stats_speed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per cell (median kept)")
    parser.add_argument("--full", action="store_true", help="stats: the whole flights year")
    args = parser.parse_args()
    print(planner_speed.run(repeat=args.repeat))
    print()
    print(stats_speed.run(full=args.full))


if __name__ == "__main__":
    main()

"""Run every benchmark and print its table."""
import argparse

from benchmarks import planner_speed, stats_speed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per cell (median kept)")
    parser.add_argument("--stats-days", type=int, default=None,
                        help="stats benchmark: first N days of the flights (default: the year)")
    args = parser.parse_args()
    print(planner_speed.run(repeat=args.repeat))
    print()
    print(stats_speed.run(days=args.stats_days))


if __name__ == "__main__":
    main()

"""Run every benchmark and print its table."""
import argparse

from benchmarks import planner_speed, ssm_speed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per cell (median kept)")
    args = parser.parse_args()
    print(planner_speed.run(repeat=args.repeat))
    print()
    print(ssm_speed.run(repeat=args.repeat))


if __name__ == "__main__":
    main()

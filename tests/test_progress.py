import io

from albic.base.progress import progress


def test_progress_draws_counts_when_enabled_and_passes_items_through():
    out = io.StringIO()
    assert list(progress(range(4), "work", enabled=True, stream=out)) == [0, 1, 2, 3]
    text = out.getvalue()  # tqdm's bar: "work: 100%|...| 4/4 [00:00<00:00, ...]"
    assert text.startswith("\rwork") and "4/4" in text and text.endswith("\n")


def test_progress_is_silent_off_a_terminal():
    out = io.StringIO()  # not a tty
    assert list(progress(iter("ab"), "work", stream=out)) == ["a", "b"]
    assert out.getvalue() == ""

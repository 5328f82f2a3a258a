"""The first notebook runs end to end with small parameters (one day, the pandas twin)."""


def test_notebook_01_runs(run_notebook, tmp_path):
    nb = run_notebook(
        "01_load_balancing_on_flights.ipynb",
        START="2013-11-27", DAYS=1, KEY_GROUPS=8, ENGINE="pandas", TIME_LIMIT=0.2,
        OUT=str(tmp_path / "nb"),
    )
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 3
    assert (tmp_path / "nb" / "figures" / "load_distance.png").exists()

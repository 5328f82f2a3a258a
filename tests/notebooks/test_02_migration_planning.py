"""Notebook 02 runs end to end with small parameters (PMC in-process; Spark's path is tested in
tests/spark) and reports every planner."""


def test_migration_planning_notebook(run_notebook):
    nb = run_notebook(
        "02_migration_planning.ipynb", MIGRATIONS=6, BLOCKS=8, USE_SPARK=False, TAU=0.8,
    )
    text = "".join(
        out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
        for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    )
    for name in ("SSM", "MTM", "consistent hashing", "Storm default", "Flux"):
        assert name in text
    assert "6 migrations from" in text

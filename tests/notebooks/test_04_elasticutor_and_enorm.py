"""The Elasticutor and Enorm notebook runs end to end with small parameters."""


def test_notebook_runs_with_small_parameters(run_notebook):
    nb = run_notebook("04_elasticutor_and_enorm.ipynb", N_JOBS=3, SIZES=[12, 20], DAYS=1, KEY_GROUPS=8,
                      NODES=4)
    outputs = "\n".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "COMM has the least inter-component traffic" in outputs
    assert "24 hours from 2013-07-01" in outputs

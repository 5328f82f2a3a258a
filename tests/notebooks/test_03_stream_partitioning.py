def test_the_stream_partitioning_notebook_runs_with_small_parameters(run_notebook):
    nb = run_notebook("03_stream_partitioning.ipynb", n_messages=40_000, n_words=2_000,
                      simulation_messages=30_000)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 4  # the figures were drawn

"""The Elasticutor and Enorm notebook runs end to end with small parameters; its Elasticutor claims
are recomputed from the hourly table it wrote and asserted."""
import json

import pandas as pd


def test_notebook_runs_with_small_parameters(run_notebook, tmp_path):
    out = tmp_path / "nb04"
    out.mkdir()
    nb = run_notebook("04_elasticutor_and_enorm.ipynb", N_JOBS=3, SIZES=[12, 20], DAYS=1, KEY_GROUPS=8,
                      NODES=4, OUT=str(out))
    outputs = "\n".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "24 hours from 2013-07-01" in outputs
    # The statistics came from the pipeline: an albic stats dataset of one operator, K = 8.
    manifest = json.loads((out / "stats" / "manifest.json").read_text())
    assert manifest["key_groups"] == {"dest": 8}
    hourly = pd.read_csv(out / "hourly.csv")
    per = hourly.pivot(index="hour", columns="scheduler")
    assert len(per) == 24
    truth = {
        "same_cores_every_hour": bool((per["cores allocated"]["Elasticutor"] == per["cores allocated"]["naive-EC"]).all()),
        "elasticutor_moves_less_state": bool(per["state moved MB"]["Elasticutor"].sum() < per["state moved MB"]["naive-EC"].sum()),
        "elasticutor_less_remote_data": bool(per["remote data MB/s"]["Elasticutor"].mean() <= per["remote data MB/s"]["naive-EC"].mean()),
    }
    printed = next(json.loads(line) for line in outputs.splitlines() if line.startswith('{"same_cores'))
    assert printed == truth
    assert truth["same_cores_every_hour"] and truth["elasticutor_moves_less_state"]
    assert "COMM has the least inter-component traffic at every size: True" in outputs

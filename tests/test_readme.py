"""The README's Python examples run as written (a newcomer copies them first)."""
import re
import sys
import types
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_every_python_example_of_the_readme_runs(capsys, monkeypatch):
    blocks = python_blocks()
    assert len(blocks) >= 3
    # One importable module, as a reader's own file would be (planners must pickle for Spark).
    module = types.ModuleType("albic_readme_examples")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for block in blocks:  # in order, in one namespace, as a reader would paste them
        exec(compile(block, str(README), "exec"), module.__dict__)
    out = capsys.readouterr().out
    assert "flux: FEASIBLE, 1 moves" in out and "count/0: n1 -> n3 (9216 bytes)" in out

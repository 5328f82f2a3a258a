"""Execute the project's notebooks headlessly (nbclient).

A notebook marks its parameter cell with the cell tag ``parameters`` (as papermill does); the
fixture inserts a cell right after it that overrides those names, then runs every cell on this
interpreter's kernel. A failing cell fails the test with the cell's error.

A notebook's claims are the JSON its cell tagged ``values`` prints. Its committed outputs must be
what the current code produces: ``committed_values(name)`` reads that JSON from the committed
notebook, for a test to compare with a fresh execution at the notebook's own parameters.
``python tests/notebooks/conftest.py NAME.ipynb ...`` executes notebooks in place (in a scratch
working directory) to commit their outputs.
"""

from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def execute_notebook(name: str, folder, timeout: int = 600, **parameters):
    """Run notebook ``name`` with ``parameters`` (a cell inserted after the one tagged
    ``parameters``) in working directory ``folder``; return the executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if parameters:
        assert tagged, f"{name} has no cell tagged 'parameters' to override"
        source = "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
        nb.cells.insert(tagged[0] + 1, nbformat.v4.new_code_cell(source))
    NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    return nb


@pytest.fixture
def run_notebook(tmp_path):
    def run(name: str, timeout: int = 600, **parameters):
        return execute_notebook(name, tmp_path, timeout, **parameters)

    return run


@pytest.fixture(scope="session")
def run_notebook_in(tmp_path_factory):
    """``run_notebook_in(name, timeout=600, **parameters)`` for module-scoped fixtures: each call
    gets a fresh working directory."""

    def run(name: str, timeout: int = 600, **parameters):
        return execute_notebook(name, tmp_path_factory.mktemp(name[:4]), timeout, **parameters)

    return run


def _values(nb, tag: str = "values") -> dict:
    """The JSON printed by ``nb``'s one cell tagged ``tag``."""
    import json

    cells = [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"expected one cell tagged {tag!r}, found {len(cells)}"
    text = "".join(o.get("text", "") for o in cells[0].get("outputs", []) if o.get("name") == "stdout")
    return json.loads(text)


@pytest.fixture(scope="session")
def notebook_values():
    """``notebook_values(nb, tag="values")``: the JSON a notebook prints in its cell tagged
    ``tag`` -- its claims as values, for the test to assert on (never printed labels). A fixture,
    not an import: several conftest modules exist, and ``import conftest`` picks one at random."""
    return _values


@pytest.fixture(scope="session")
def committed_values():
    """``committed_values(name, tag="values")``: the claims the committed notebook ``name``
    printed (its outputs as they are in the repository)."""

    def read(name: str, tag: str = "values") -> dict:
        import nbformat

        return _values(nbformat.read(NOTEBOOKS / name, as_version=4), tag)

    return read


def execute_in_place(name: str, timeout: int = 1800) -> None:
    """Execute notebook ``name`` at its own parameters in a scratch working directory and write
    it back with its outputs: what is committed."""
    import tempfile

    import nbformat

    with tempfile.TemporaryDirectory(prefix="albic-notebook-") as scratch:
        nb = execute_notebook(name, scratch, timeout)
    nbformat.write(nb, NOTEBOOKS / name)


if __name__ == "__main__":
    import sys

    for notebook in sys.argv[1:]:
        execute_in_place(Path(notebook).name)
        print(f"executed {notebook} in place")

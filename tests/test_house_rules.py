"""House rules that import-linter cannot see, checked on the source (design section 2).

- No function-level import of our own modules (albic, planners, solvers): an import inside a
  function is for a heavy third-party library, never to dodge a circle. Annotations across a
  would-be circle are imported under ``if TYPE_CHECKING:``.
- No module uses another module's underscore name (``from x import _name``): what is shared gets
  a public name in the right room.
- Nothing of ours listens on a socket (design section 7): a Spark job's data travels through Spark,
  which its security settings cover; a client connection (a probe that a master is reachable) is
  fine.

Each checker is shown failing on a bad sample, so that neither passes by looking at nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = ("albic", "planners", "solvers")


def sources() -> list[Path]:
    return sorted(p for package in OURS for p in (ROOT / package).rglob("*.py"))


def _is_ours(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in OURS


def _type_checking_blocks(tree: ast.Module) -> set[int]:
    return {
        id(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for node in ast.walk(node)
    }


def local_imports_of_ours(source: str, where: str) -> list[str]:
    """Every import of our own modules that is not at module level (``where:line: module``)."""
    tree = ast.parse(source)
    top = {id(node) for node in tree.body}
    guarded = _type_checking_blocks(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in top or id(node) in guarded or not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
        found += [
            f"{where}:{node.lineno}: {name}"
            for name in names
            if _is_ours(name) and not (isinstance(node, ast.ImportFrom) and node.level)
        ]
    return found


def private_names_imported(source: str, where: str) -> list[str]:
    """Every ``from <our module> import _name`` (``where:line: module._name``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and _is_ours(node.module):
            found += [
                f"{where}:{node.lineno}: {node.module}.{alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
    return found


# A server of our own: the module, a bind or listen call, or a raw socket to make one with.
SERVER = re.compile(r"socketserver|\.bind\(|\.listen\(|socket\.socket\(|create_server\(")


def servers(source: str, where: str) -> list[str]:
    """Every line that would make a server (``where:line: text``)."""
    return [
        f"{where}:{number}: {line.strip()}"
        for number, line in enumerate(source.splitlines(), 1)
        if SERVER.search(line)
    ]


def test_the_checkers_see_a_bad_sample():
    bad = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from albic.core.plan import Plan\n"
        "def f():\n    import numpy\n    from albic.core import metrics\n    return metrics\n"
        "from planners.ssm import _private\n"
    )
    assert local_imports_of_ours(bad, "bad.py") == ["bad.py:6: albic.core"]
    assert private_names_imported(bad, "bad.py") == ["bad.py:8: planners.ssm._private"]
    listening = (
        "import socket\nprobe = socket.create_connection(('h', 1))\nserver = socket.create_server(('', 0))\n"
    )
    assert servers(listening, "bad.py") == ["bad.py:3: server = socket.create_server(('', 0))"]


def test_no_function_level_import_of_our_own_modules():
    files = sources()
    assert len(files) > 80  # the walk found the packages
    found = [
        hit for path in files for hit in local_imports_of_ours(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == [], "imports our own modules inside a function (move it to the top):\n" + "\n".join(found)


def test_no_module_imports_another_modules_private_name():
    found = [
        hit
        for path in sources()
        for hit in private_names_imported(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == [], "imports another module's private name (give it a public one):\n" + "\n".join(found)


def test_nothing_of_ours_listens_on_a_socket():
    found = [hit for path in sources() for hit in servers(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == [], "makes a server of its own (use Spark's machinery instead):\n" + "\n".join(found)

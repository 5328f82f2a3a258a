"""One style for every author: ruff's formatter and linter (configured in pyproject.toml) find
nothing to change in the code as committed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).with_name("ruff")


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RUFF), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_code_is_formatted():
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, "run `ruff format .`:\n" + result.stdout + result.stderr
    assert "files already formatted" in result.stdout  # it looked at files


def test_the_linter_finds_nothing():
    result = ruff("check", ".")
    assert result.returncode == 0, result.stdout + result.stderr

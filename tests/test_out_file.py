"""``--out`` and atomic writes never lose or damage a file."""

from __future__ import annotations

import json
import os
import socket
import stat
from importlib.resources import as_file, files
from pathlib import Path

import pytest

import albic.core.planner
from albic.base import files as tempfiles
from albic.cli.main import main
from albic.io import atomic_write_text, read_plan


@pytest.fixture
def snapshot(tmp_path):
    with as_file(files("albic.data") / "example_snapshot.json") as path:
        copy = tmp_path / "snapshot.json"
        copy.write_bytes(Path(path).read_bytes())
    return copy


@pytest.fixture
def no_planning(monkeypatch):
    """Fail the test if a planner runs: the checks must come before the work."""

    def refuse(self, snapshot):
        raise AssertionError("planned although --out cannot be written")

    monkeypatch.setattr(albic.core.planner.Planner, "plan", refuse)


def plan_to(capsys, snapshot, out):
    code = main(["plan", str(snapshot), "--planner", "flux", "--out", str(out)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("how", ["same path", "other spelling", "symlink", "hard link"])
def test_out_never_replaces_the_input(capsys, snapshot, no_planning, how):
    before = snapshot.read_bytes()
    out = {
        "same path": lambda: snapshot,
        "other spelling": lambda: snapshot.parent / ".." / snapshot.parent.name / snapshot.name,
        "symlink": lambda: (
            (snapshot.parent / "link.json").symlink_to(snapshot) or snapshot.parent / "link.json"
        ),
        "hard link": lambda: (
            os.link(snapshot, snapshot.parent / "hard.json") or snapshot.parent / "hard.json"
        ),
    }[how]()
    code, err = plan_to(capsys, snapshot, out)
    assert code == 2
    assert err == (
        f"albic: error: --out {out} is the input {snapshot}: writing the plan there "
        "would destroy the input; give another file name\n"
    )
    assert snapshot.read_bytes() == before


def test_an_existing_file_keeps_its_permissions(capsys, snapshot, tmp_path):
    out = tmp_path / "plan.json"
    out.write_text("old")
    out.chmod(0o600)
    assert plan_to(capsys, snapshot, out) == (0, "")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert read_plan(out).planner == "flux"


def test_a_new_file_gets_the_umask_mode(capsys, snapshot, tmp_path):
    out = tmp_path / "plan.json"
    assert plan_to(capsys, snapshot, out)[0] == 0
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


def test_a_symlink_at_out_is_followed_and_kept(capsys, snapshot, tmp_path):
    target = tmp_path / "real" / "plan.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "plan.json"
    link.symlink_to(target)
    assert plan_to(capsys, snapshot, link)[0] == 0
    assert link.is_symlink() and link.resolve() == target
    assert read_plan(target).planner == "flux"


def test_an_unwritable_out_is_found_before_planning_and_named_as_given(capsys, snapshot, no_planning):
    code, err = plan_to(capsys, snapshot, "/proc/plan.json")  # no file can be made in /proc
    assert code == 2
    assert err.startswith("albic: error: cannot write the plan to /proc/plan.json: ")
    assert ".tmp" not in err and err.count("\n") == 1


def test_a_read_only_file_is_not_replaced(capsys, snapshot, tmp_path, no_planning):
    if os.geteuid() == 0:
        pytest.skip("root may write any file")
    out = tmp_path / "plan.json"
    out.write_text("keep me")
    out.chmod(0o444)
    code, err = plan_to(capsys, snapshot, out)
    assert code == 2 and "read-only" in err
    assert out.read_text() == "keep me"


def test_write_errors_name_the_given_path_not_the_temporary(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "plan.json"
    with pytest.raises(OSError) as info:
        atomic_write_text(out, "text")
    assert info.value.filename == str(out)
    assert os.listdir(tmp_path) == []  # nothing half-written, no temporary left


def _stale_name(target: Path, pid: int) -> Path:
    host = socket.gethostname().replace("-", "_")
    return target.parent / f".{target.name}.tmp-{host}-{pid}-deadbeef"


def _dead_pid() -> int:
    pid = 2**22 + 12345  # above the default pid_max of 2**22: never a running process
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    return pid


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    out = tmp_path / "plan.json"
    stale = _stale_name(out, _dead_pid())
    stale.write_text("half a plan")
    live = _stale_name(out, os.getpid())  # a writer that still runs: left alone
    live.write_text("being written")
    atomic_write_text(out, json.dumps({"ok": True}))
    assert not stale.exists() and live.exists()
    assert json.loads(out.read_text()) == {"ok": True}


def test_stale_scratch_folders_of_dead_processes_are_removed(tmp_path):
    host = socket.gethostname().replace("-", "_")
    dead = tmp_path / f"albic-events-{host}-{_dead_pid()}-abc"
    dead.mkdir()
    (dead / "part.parquet").write_text("x")
    mine = tmp_path / f"{tempfiles.scratch_prefix('events')}abc"
    mine.mkdir()
    other_host = tmp_path / f"albic-events-elsewhere-{_dead_pid()}-abc"
    other_host.mkdir()
    assert tempfiles.remove_stale_scratch("events", tmp_path) == [dead]
    assert mine.exists() and other_host.exists()


def test_a_killed_stats_runs_temporary_folder_is_removed_by_the_next_run(tmp_path):
    from albic.io.datasets import dataset_folder

    out = tmp_path / "stats"
    stale = _stale_name(out, _dead_pid())  # what `albic stats` killed by kill -9 leaves
    stale.mkdir()
    (stale / "manifest.json").write_text("{}")
    with dataset_folder(out) as folder:
        (folder / "manifest.json").write_text('{"ok": true}')
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stats"]

"""The one atomic-write helper: whole files or none, fsynced, private when asked."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from computeshare_desktop.files import atomic_write


def test_writes_bytes_or_a_writer_and_replaces_the_old_file(tmp_path):
    target = tmp_path / "deep" / "file.bin"
    atomic_write(target, b"first")
    atomic_write(target, lambda fh: fh.write(b"second"))
    assert target.read_bytes() == b"second"
    assert os.listdir(target.parent) == ["file.bin"]  # no temporary left behind


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "file.bin"
    atomic_write(target, b"old")

    def broken(fh):
        fh.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        atomic_write(target, broken)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["file.bin"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_mode_is_set_before_the_secret_is_written(tmp_path):
    target = tmp_path / "key"
    seen = []
    atomic_write(target, lambda fh: seen.append(stat.S_IMODE(os.fstat(fh.fileno()).st_mode)),
                 mode=0o600)
    assert seen == [0o600] and stat.S_IMODE(target.stat().st_mode) == 0o600


def test_every_module_writes_through_the_helper():
    """The four hand-written atomic writes became one: nobody else renames files."""
    import computeshare_desktop
    from pathlib import Path

    root = Path(computeshare_desktop.__file__).parent
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if p.name != "files.py" and ("os.replace(" in p.read_text(encoding="utf-8")
                                              or "mkstemp(" in p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_a_replace_blocked_for_a_moment_is_tried_again(tmp_path, monkeypatch):
    """Windows: a scanner holding the old file open makes os.replace fail for a moment."""
    from computeshare_desktop import files

    target = tmp_path / "metrics.jsonl"
    atomic_write(target, b"old")
    real, refusals = os.replace, [PermissionError(13, "in use")] * 2

    def busy_then_free(src, dst):
        if refusals:
            raise refusals.pop()
        real(src, dst)

    monkeypatch.setattr(files, "REPLACE_TRIES", 3)
    monkeypatch.setattr(files, "REPLACE_PAUSE_S", 0.0)
    monkeypatch.setattr(files.os, "replace", busy_then_free)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new" and os.listdir(tmp_path) == ["metrics.jsonl"]
    refusals.extend([PermissionError(13, "in use")] * 3)
    with pytest.raises(PermissionError):
        atomic_write(target, b"newer")
    assert target.read_bytes() == b"new" and os.listdir(tmp_path) == ["metrics.jsonl"]


def test_the_file_is_synced_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    """The order that makes a write survive a power cut: data on disk, then the rename,
    then the folder entry on disk."""
    steps: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        kind = "folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        steps.append(f"fsync {kind}")
        real_fsync(fd)

    def replace(source, target) -> None:
        steps.append("rename")
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write(tmp_path / "model.pth", b"weights")
    expected = ["fsync file", "rename"] + ([] if sys.platform == "win32" else ["fsync folder"])
    assert steps == expected
    assert (tmp_path / "model.pth").read_bytes() == b"weights"

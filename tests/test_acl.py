"""Key files are private on Windows too: the icacls call is built here on every system and
run for real on Windows."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from computeshare_desktop import acl
from computeshare_desktop.transport import identity_path, load_or_create


def test_a_file_grants_its_user_alone_and_inherits_nothing():
    command = acl.icacls_command(r"C:\Users\Ann Lee\key file.key", "PC\\ann", folder=False,
                                 system_root=r"C:\Windows")
    assert command == [r"C:\Windows\System32\icacls.exe", r"C:\Users\Ann Lee\key file.key",
                       "/inheritance:r", "/grant:r", "PC\\ann:F", "/q"]


def test_a_folder_passes_its_grant_on_to_what_is_created_in_it():
    command = acl.icacls_command("identity", "ann", folder=True)
    assert command[0] == "icacls.exe" and command[-2] == "ann:(OI)(CI)F"


def test_the_account_is_qualified_by_its_domain_when_known():
    assert acl.windows_account({"USERNAME": "ann", "USERDOMAIN": "PC"}) == "PC\\ann"
    assert acl.windows_account({"USERNAME": "ann"}) == "ann"


class FakeIcacls:
    """Stands in for subprocess.run: records each command (and whether the ``watch`` file
    existed then) and answers ``returncode``, or raises ``error``."""

    def __init__(self, returncode: int = 0, error: Exception | None = None) -> None:
        self.calls: list[tuple[list[str], bool]] = []
        self.returncode, self.error = returncode, error
        self.watch: Path | None = None

    def __call__(self, command, **kwargs):
        self.calls.append((command, self.watch is not None and self.watch.exists()))
        if self.error is not None:
            raise self.error
        return subprocess.CompletedProcess(command, self.returncode, "",
                                           "Access is denied." if self.returncode else "")


def test_elsewhere_nothing_runs(monkeypatch, tmp_path):
    fake = FakeIcacls()
    monkeypatch.setattr(acl, "USE_ACL", False)
    monkeypatch.setattr(acl.subprocess, "run", fake)
    assert acl.restrict_to_user(tmp_path) is True and fake.calls == []


def test_a_new_key_makes_its_folder_private_before_the_secret_is_written(monkeypatch,
                                                                          tmp_path):
    fake = FakeIcacls()
    monkeypatch.setattr(acl, "USE_ACL", True)
    monkeypatch.setattr(acl.subprocess, "run", fake)
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path))
    path = fake.watch = identity_path("worker", "laptop")
    first = load_or_create(path)
    (folder_call, key_existed), (file_call, _) = fake.calls
    assert folder_call[1] == str(path.parent) and folder_call[-2].endswith(":(OI)(CI)F")
    assert not key_existed  # the folder was private before the key file was made
    assert file_call[1] == str(path) and file_call[-2].endswith(":F")
    assert load_or_create(path) == first and len(fake.calls) == 2  # reading changes nothing


@pytest.mark.parametrize("fake", [FakeIcacls(returncode=5),
                                  FakeIcacls(error=FileNotFoundError(2, "icacls.exe"))])
def test_a_failed_icacls_is_a_warning_not_an_error(monkeypatch, tmp_path, caplog, fake):
    monkeypatch.setattr(acl, "USE_ACL", True)
    monkeypatch.setattr(acl.subprocess, "run", fake)
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="computeshare_desktop.acl"):
        load_or_create(identity_path("hub"))
    assert len(fake.calls) == 2
    assert "could not make" in caplog.text and "private to this user" in caplog.text


@pytest.mark.skipif(sys.platform != "win32", reason="Windows ACLs (icacls)")
def test_on_windows_the_key_and_its_folder_list_this_user_alone(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path))
    path = identity_path("worker")
    load_or_create(path)
    user = os.environ["USERNAME"].lower()
    for target in (path, path.parent):
        listing = subprocess.run(["icacls", str(target)], capture_output=True, text=True,
                                 timeout=30)
        assert listing.returncode == 0, listing.stderr
        # "C:\...\worker-default.key PC\ann:(F)", one line per entry ("NAME:(rights)")
        text = listing.stdout.replace(str(target), "", 1)
        entries = [line.strip().lower() for line in text.splitlines() if ":(" in line]
        assert len(entries) == 1, listing.stdout
        assert entries[0].split(":(")[0].endswith(user) and "(i)" not in entries[0]

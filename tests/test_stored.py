"""Stored files read back through one reader: a damaged file gives the default, says what
was wrong and is kept beside itself; a missing one gives the default quietly."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import sys

import msgspec
import pytest

from computeshare_desktop.files import atomic_write
from computeshare_desktop.stored import Damaged, load_stored, read_stored, stored_bytes


class Thing(msgspec.Struct):
    enabled: bool = True
    names: dict[str, list[str]] = {}


def damaged_copies(path):
    return sorted(path.parent.glob(path.name + ".damaged-*"))


def test_a_file_in_its_format_reads_and_a_missing_one_is_the_default(tmp_path, caplog):
    path = tmp_path / "thing.json"
    atomic_write(path, stored_bytes(Thing(False, {"a": ["x"]})))
    assert read_stored(path, Thing, Thing()) == Thing(False, {"a": ["x"]})
    assert b'\n "enabled": false' in path.read_bytes()  # indented JSON, as before
    with caplog.at_level(logging.WARNING):
        assert read_stored(tmp_path / "none.json", Thing, Thing()) == Thing()
    assert not caplog.records


@pytest.mark.parametrize("text, said", [
    ('{"enabled": "yes"}', "Expected `bool`, got `str` - at `$.enabled`"),
    ('{"names": {"a": [1]}}', "at `$.names[...][0]`"),
    ("[1, 2]", "Expected `object`, got `array`"),
    ("{not json", "JSON is malformed"),
    ("", "truncated"),
])
def test_a_damaged_file_says_what_is_wrong_and_is_kept(tmp_path, caplog, text, said):
    path = tmp_path / "thing.json"
    path.write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="computeshare_desktop.stored"):
        assert read_stored(path, Thing, Thing(names={"d": []})) == Thing(names={"d": []})
    [kept] = damaged_copies(path)
    assert kept.read_text(encoding="utf-8") == text
    [record] = caplog.records
    assert said in record.getMessage() and kept.name in record.getMessage()
    assert str(path) in record.getMessage()


def test_the_same_damage_warns_once_and_keeps_one_copy(tmp_path, caplog):
    path = tmp_path / "thing.json"
    path.write_text('{"enabled": 3}', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="computeshare_desktop.stored"):
        for _ in range(3):
            assert read_stored(path, Thing, Thing()) == Thing()
        assert len(caplog.records) == 1 and len(damaged_copies(path)) == 1
        path.write_text('{"enabled": 4}', encoding="utf-8")  # damaged anew: said again
        read_stored(path, Thing, Thing())
    assert len(caplog.records) == 2 and len(damaged_copies(path)) == 2


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_the_copy_keeps_the_files_permissions(tmp_path):
    path = tmp_path / "private.json"
    path.write_text("{oops", encoding="utf-8")
    os.chmod(path, 0o600)
    with pytest.raises(Damaged) as raised:
        load_stored(path, Thing)
    assert raised.value.kept is not None
    assert stat.S_IMODE(raised.value.kept.stat().st_mode) == 0o600
    assert "JSON is malformed" in raised.value.reason


class Named(msgspec.Struct):
    names: dict[str, list[str]]  # required: a file in the first format has none
    enabled: bool = True


def test_an_older_format_is_read_through_its_upgrade(tmp_path, caplog):
    path = tmp_path / "thing.json"
    path.write_text('{"a": ["x"]}', encoding="utf-8")  # the first format: names alone
    older = [(dict[str, list[str]], lambda names: Named(names))]
    with caplog.at_level(logging.WARNING):
        assert read_stored(path, Named, Named({}), older=older) == Named({"a": ["x"]})
    assert not caplog.records
    path.write_text('{"names": {}, "enabled": 1}', encoding="utf-8")  # neither format
    with caplog.at_level(logging.WARNING):
        assert read_stored(path, Named, Named({}), older=older) == Named({})
    assert "Expected `bool`, got `int` - at `$.enabled`" in caplog.text  # the newest's


def test_an_unreadable_file_is_the_default_and_said(tmp_path, caplog):
    path = tmp_path / "thing.json"
    path.mkdir()  # a folder where the file should be
    with caplog.at_level(logging.WARNING):
        assert read_stored(path, Thing, Thing()) == Thing()
    assert "cannot read" in caplog.text and not damaged_copies(path)


# ---------------------------------------------------------------- a session's folder
def test_a_session_json_in_its_format_reads_as_before(tmp_path):
    from computeshare_desktop.hub.outputs import SESSION_FILE, OutputDir

    saved = {"config": {"rounds": 5, "dataset": "synthetic"}, "session_id": "abc",
             "hub_key": "K", "fingerprint": "f" * 64, "protocol": 7, "computeshare": "0.1",
             "parameters": 1234, "compute": "builtin", "host": {"name": "Lab", "port": 7070}}
    (tmp_path / SESSION_FILE).write_text(json.dumps(saved, indent=2, sort_keys=True),
                                         encoding="utf-8")
    out = OutputDir(tmp_path)
    assert out.read_session() == saved
    summary = out.summary()
    assert summary is not None and summary["config"] == saved["config"]
    assert summary["host"] == {"name": "Lab", "port": 7070} and not summary["resumable"]
    (tmp_path / SESSION_FILE).write_text(json.dumps({"config": {"rounds": 5}}),  # an early one
                                         encoding="utf-8")
    assert out.summary()["host"] == {} and out.read_session()["session_id"] == ""
    assert not damaged_copies(tmp_path / SESSION_FILE)


@pytest.mark.parametrize("text, said", [
    ('{"session_id": "abc"}', "Object missing required field `config`"),
    ('{"config": [1]}', "Expected `object`, got `array` - at `$.config`"),
    ('{"config": {}, "host": "Lab"}', "Expected `object`, got `str` - at `$.host`"),
    ("{not json", "JSON is malformed")])
def test_a_damaged_session_json_lists_no_session_and_says_why(tmp_path, caplog, text, said):
    from computeshare_desktop.errors import ConfigError
    from computeshare_desktop.hub.outputs import SESSION_FILE, OutputDir

    path = tmp_path / SESSION_FILE
    path.write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert OutputDir(tmp_path).summary() is None
    assert said in caplog.text
    [kept] = damaged_copies(path)
    assert kept.read_text(encoding="utf-8") == text
    assert path.read_text(encoding="utf-8") == text  # the session's own stays
    with pytest.raises(ConfigError, match=re.escape(f"is damaged ({said}")):
        OutputDir(tmp_path).read_session()
    assert len(damaged_copies(path)) == 1


def test_a_damaged_allowlist_file_says_why_and_is_kept(tmp_path, caplog):
    from computeshare_desktop.hub.outputs import ALLOWED_FILE, OutputDir

    out, path = OutputDir(tmp_path), tmp_path / ALLOWED_FILE
    out.save_allowed({"k1": "alice"}, {"k1": "192.168.1.20"})
    assert out.read_allowed() == ({"k1": "alice"}, {"k1": "192.168.1.20"})
    path.write_text(json.dumps({"k1": "alice"}), encoding="utf-8")  # the first format: keys
    assert out.read_allowed() == ({"k1": "alice"}, {})
    path.write_text(json.dumps({"keys": {"k1": 5}}), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert out.read_allowed() == ({}, {})  # its workers pair with the PIN again
    assert "Expected `str`, got `int` - at `$.keys[...]`" in caplog.text
    assert [kept.read_text(encoding="utf-8") for kept in damaged_copies(path)] == [
        '{"keys": {"k1": 5}}']


# ---------------------------------------------------------------- the app's settings
def test_settings_written_before_read_as_before(tmp_path):
    from computeshare_desktop.gui.settings import Settings

    path = tmp_path / "settings.json"  # as the first version wrote it
    path.write_text(json.dumps({"version": 1, "host": {"rounds": 7, "out_parent": "/runs"},
                                "join": {"max_rate": 250.0}, "window": {"geometry": "AAAA"},
                                "recent": ["/runs/a", "/runs/b"], "confirm_stop": False},
                               indent=2), encoding="utf-8")
    settings = Settings(path)
    assert settings.host_options().rounds == 7 and settings.output_parent() == "/runs"
    assert settings.worker_choices(["max_rate", "threads"]) == {"max_rate": 250.0}
    assert settings.geometry() == "AAAA" and settings.recent_sessions() == ["/runs/a", "/runs/b"]
    assert settings.confirm_stop() is False
    path.write_text('{"version": 1}', encoding="utf-8")  # sections missing: their defaults
    assert Settings(path).confirm_stop() and Settings(path).geometry() is None
    assert Settings(path).output_parent() is None
    assert not damaged_copies(path)


@pytest.mark.parametrize("text, said", [
    ('{"version": 1, "recent": "/runs/a"}', "Expected `array`, got `str` - at `$.recent`"),
    ('{"version": 1, "window": {"geometry": 5}}', "at `$.window.geometry`"),
    ('{"version": 1, "confirm_stop": "no"}', "Expected `bool`, got `str`"),
    ('{"version": 1, "host": []}', "at `$.host`")])
def test_damaged_settings_give_the_defaults_say_why_and_are_kept(tmp_path, caplog, text, said):
    from computeshare_desktop.gui.settings import Settings

    path = tmp_path / "settings.json"
    path.write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        settings = Settings(path)
    assert settings.recent_sessions() == [] and settings.confirm_stop()
    assert said in caplog.text
    [kept] = damaged_copies(path)
    settings.set_confirm_stop(False)
    settings.save()  # the damaged file is replaced, its copy stays
    assert kept.read_text(encoding="utf-8") == text and not Settings(path).confirm_stop()

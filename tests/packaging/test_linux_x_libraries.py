"""The Linux recipe makes its bundle carry the X libraries Qt's xcb plugin needs
(libxcb-cursor first of all): its list agrees with the app's install hint and with
what this Qt's plugin links, and ``carry_x_libraries`` copies what PyInstaller did not
collect or fails the build naming it. The built tarball itself is checked in
test_linux_bundle.py (marked ``packaging``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging_recipes import recipe

from computeshare_desktop.gui.qt_platform import XCB_LIBRARIES, xcb_plugin

PACKAGING = Path(__file__).resolve().parents[2] / "packaging"
BASE = re.compile(r"lib(Qt6\w+|c|m|stdc\+\+|gcc_s|glib-2\.0|gthread-2\.0|pthread|dl)\.so")


linux = recipe("linux")
common = recipe("common")


def test_the_recipe_and_the_apps_hint_name_the_same_libraries():
    carried, system = set(linux.X_LIBRARIES), set(linux.SYSTEM_X_LIBRARIES)
    assert "libxcb-cursor.so.0" in carried and not carried & system
    assert carried | system == set(XCB_LIBRARIES)


@pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("readelf"),
                    reason="reads this Qt's ELF files with readelf")
def test_the_list_covers_what_this_qts_xcb_plugin_links():
    plugin = xcb_plugin()
    if plugin is None or not plugin.exists():
        pytest.skip("no PySide6 xcb plugin here")
    qpa = plugin.parents[2] / "lib" / "libQt6XcbQpa.so.6"
    needed: set[str] = set()
    for binary in (plugin, qpa):
        out = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True,
                             check=True, timeout=30).stdout
        needed |= set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out))
    assert "libxcb-cursor.so.0" in needed
    unknown = {n for n in needed if not BASE.match(n)} - set(XCB_LIBRARIES)
    assert not unknown, f"Qt's xcb plugin links libraries the recipe does not know: {unknown}"


def test_missing_libraries_are_copied_in(tmp_path):
    internal, system = tmp_path / "_internal", tmp_path / "system"
    internal.mkdir()
    system.mkdir()
    for name in linux.X_LIBRARIES:
        (system / name).write_bytes(name.encode())
        if name != "libxcb-cursor.so.0":  # PyInstaller collected all but this one
            (internal / name).write_bytes(b"collected")
    copied = linux.carry_x_libraries(internal, lambda name: system / name)
    assert copied == ["libxcb-cursor.so.0"]
    assert (internal / "libxcb-cursor.so.0").read_bytes() == b"libxcb-cursor.so.0"
    assert (internal / "libX11.so.6").read_bytes() == b"collected"
    assert linux.carry_x_libraries(internal, lambda name: None) == []  # all there now


def test_a_build_machine_without_one_fails_naming_it(tmp_path):
    (tmp_path / "x").write_bytes(b"elf")
    with pytest.raises(common.BuildError, match="lacks libxcb-cursor.so.0.*linux-gui-deps"):
        linux.carry_x_libraries(tmp_path, lambda name: None if "cursor" in name
                                else tmp_path / "x")


def test_system_library_finds_a_soname_in_the_library_folders(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "libxcb-cursor.so.0.0.0").write_bytes(b"elf")
    (tmp_path / "b" / "libxcb-cursor.so.0").symlink_to("libxcb-cursor.so.0.0.0")
    dirs = (str(tmp_path / "a"), str(tmp_path / "b"))
    assert linux.system_library("libxcb-cursor.so.0", dirs) == \
        (tmp_path / "b" / "libxcb-cursor.so.0.0.0").resolve()
    assert linux.system_library("libnothing.so.9", dirs) is None

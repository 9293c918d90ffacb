"""The macOS and Windows recipes' pure parts, checked here where neither can build: Info.plist,
the version resource, the Inno Setup script, the wrapper specs, and the refusal to run on
the wrong OS. The builds themselves run on their own CI runners (.github/workflows/release.yml).
"""

from __future__ import annotations

import os
import plistlib
import re
import sys
import types
from pathlib import Path

import pytest
from packaging_recipes import recipe

from computeshare_desktop.discovery.advert import SERVICE_TYPE

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"


common = recipe("common")
macos = recipe("macos")
windows = recipe("windows")
VERSION = common.project_version()


# --- macOS: Info.plist ---------------------------------------------------------------------

def test_info_plist_names_the_app_its_version_and_icon():
    keys = macos.info_plist("0.1.0")
    assert keys["CFBundleIdentifier"] == "org.computeshare.desktop"
    assert keys["CFBundleShortVersionString"] == keys["CFBundleVersion"] == "0.1.0"
    assert keys["CFBundleExecutable"] == common.GUI_NAME
    assert keys["CFBundleIconFile"] == "computeshare.icns"  # the name icons.py writes
    assert keys["CFBundlePackageType"] == "APPL"
    assert keys["LSMinimumSystemVersion"] == "11.0"
    assert keys["NSHighResolutionCapable"] is True
    assert keys["LSBackgroundOnly"] is False  # PyInstaller infers True from the console EXE


def test_info_plist_has_the_two_keys_macos_15_needs_for_the_lan():
    keys = macos.info_plist(VERSION)
    assert keys["NSBonjourServices"] == ["_computeshare._tcp"]
    # The very service type the app advertises and browses.
    assert SERVICE_TYPE == keys["NSBonjourServices"][0] + ".local."
    text = keys["NSLocalNetworkUsageDescription"]
    assert "local network" in text and text.endswith(".") and len(text) < 200


def test_info_plist_is_a_valid_property_list_with_the_project_version():
    data = macos.plist_bytes(VERSION)
    assert data.startswith(b"<?xml")
    assert plistlib.loads(data) == macos.info_plist(VERSION)
    assert plistlib.loads(data)["CFBundleShortVersionString"] == VERSION


@pytest.mark.parametrize("version, bundle", [("0.1.0", "0.1.0"), ("2.3", "2.3"),
                                             ("0.2.0rc1", "0.2.0"), ("1.2.3.4", "1.2.3")])
def test_bundle_versions_are_at_most_three_integers(version, bundle):
    assert macos.bundle_version(version) == bundle
    assert macos.info_plist(version)["CFBundleVersion"] == bundle


def test_the_disk_image_name():
    assert macos.dmg_name("0.1.0") == "ComputeShare-0.1.0-macos-arm64.dmg"


# --- Windows: version resource -------------------------------------------------------------

@pytest.mark.parametrize("version, numbers", [("0.1.0", (0, 1, 0, 0)), ("1", (1, 0, 0, 0)),
                                              ("0.2.0rc1", (0, 2, 0, 0)),
                                              ("1.2.3.4.5", (1, 2, 3, 4))])
def test_windows_version_numbers(version, numbers):
    assert windows.numeric_version(version) == numbers


@pytest.mark.parametrize("bad", ["dev", "", "1.70000"])
def test_windows_version_numbers_refuse_what_windows_cannot_hold(bad):
    with pytest.raises(common.BuildError):
        windows.numeric_version(bad)


class _Recorded:
    """Stands in for each PyInstaller version-info class: keeps its arguments."""

    def __init__(self, kind, *args, **kwargs):
        self.kind, self.args, self.kwargs = kind, args, kwargs


def _eval_version_file(text):
    names = ("VSVersionInfo", "FixedFileInfo", "StringFileInfo", "StringTable",
             "StringStruct", "VarFileInfo", "VarStruct")
    scope = {n: (lambda *a, _n=n, **k: _Recorded(_n, *a, **k)) for n in names}
    return eval(text, {"__builtins__": {}}, scope)  # what PyInstaller does with the file


@pytest.mark.parametrize("exe", ["computeshare-desktop", "computeshare"])
def test_version_file_text_is_the_expression_pyinstaller_reads(exe):
    info = _eval_version_file(windows.version_file_text("0.1.0", exe))
    assert info.kind == "VSVersionInfo"
    ffi = info.kwargs["ffi"]
    assert ffi.kwargs["filevers"] == ffi.kwargs["prodvers"] == (0, 1, 0, 0)
    string_info, var_info = info.kwargs["kids"]
    (table,) = string_info.args[0]
    assert table.args[0] == "040904B0"  # US English, Unicode: matches the Translation below
    strings = dict(s.args for s in table.args[1])
    assert strings["OriginalFilename"] == f"{exe}.exe"
    assert strings["FileVersion"] == strings["ProductVersion"] == "0.1.0"
    assert strings["ProductName"] == "ComputeShare"
    assert var_info.args[0][0].args == ("Translation", [1033, 1200])


# --- Windows: the Inno Setup script --------------------------------------------------------

APP_ID = "1C96C543-3CB4-5B3E-A740-A82DB883D5B1"  # must never change: upgrades find the app by it
SOURCE = Path(r"C:\build\windows\dist\ComputeShare")
ICON = Path(r"C:\build\windows\icons\computeshare.ico")
OUTPUT = Path(r"C:\src\dist")


def _expanded(text: str) -> str:
    """The script as Inno Setup's preprocessor leaves it: each {#Name} replaced."""
    defines = dict(re.findall(r'^#define (\w+) "(.*)"$', text, re.MULTILINE))
    return re.sub(r"\{#(\w+)\}", lambda m: defines[m.group(1)], text)


def _iss(version="0.1.0"):
    return windows.iss_text(version, SOURCE, ICON, OUTPUT)


def test_iss_carries_the_version_and_names_the_installer():
    text = _expanded(_iss("0.1.0"))
    assert "AppVersion=0.1.0" in text
    assert "VersionInfoVersion=0.1.0.0" in text
    base = re.search(r"^OutputBaseFilename=(.+)$", text, re.MULTILINE).group(1)
    assert base + ".exe" == windows.setup_name("0.1.0") == (
        "ComputeShare-0.1.0-windows-x64-setup.exe")
    assert f"OutputDir={OUTPUT}" in text


def test_iss_app_id_is_stable():
    assert windows.APP_ID == APP_ID
    assert "AppId={{" + APP_ID + "}" in _iss()  # "{{" is Inno's literal brace
    assert _iss("0.1.0").count(APP_ID) == _iss("9.9.9").count(APP_ID) == 1


def test_iss_installs_both_executables_with_start_menu_entries_and_the_icon():
    text = _expanded(_iss())
    assert f'Source: "{SOURCE}\\*"' in text
    assert f"SetupIconFile={ICON}" in text
    icons = text.split("[Icons]")[1].split("\n[")[0]
    assert 'Name: "{group}\\ComputeShare"; Filename: "{app}\\computeshare-desktop.exe"' in icons
    assert "ComputeShare command line" in icons and "computeshare.exe --help" in icons
    assert "{uninstallexe}" in icons
    assert "UninstallDisplayIcon={app}\\computeshare-desktop.exe" in text


def test_iss_installs_per_user_by_default_on_64_bit_windows():
    text = _iss()
    assert "PrivilegesRequired=lowest" in text
    assert "DefaultDirName={autopf}\\ComputeShare" in text  # %LOCALAPPDATA%\Programs per user
    assert "ArchitecturesInstallIn64BitMode=x64compatible" in text


def test_every_preprocessor_name_the_template_uses_is_defined():
    template = windows.ISS_TEMPLATE.read_text(encoding="utf-8")
    used = set(re.findall(r"\{#(\w+)\}", template))
    assert used <= set(windows.iss_defines("0.1.0", SOURCE, ICON, OUTPUT))
    assert "{#" not in _expanded(_iss())
    code = "\n".join(line for line in template.splitlines()
                     if not line.lstrip().startswith((";", "#")))  # comments, #error examples
    assert not re.search(r"\b\d+\.\d+\.\d+\b", code), "the template hard-codes a version"


def test_iss_refuses_a_path_it_cannot_quote():
    with pytest.raises(common.BuildError, match="double quote"):
        windows.iss_text("0.1.0", Path('C:\\a"b'), ICON, OUTPUT)


# --- the wrapper specs, run against stand-ins for PyInstaller -------------------------------

class _Built:
    """A PyInstaller build target stand-in: keeps its arguments."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        self.name = kwargs.get("name")
        self.binaries, self.datas, self.pure = [], [], []
        self.scripts = [("pyi_rth", "", "PYSOURCE"), ("entry_gui", "", "PYSOURCE"),
                        ("entry_cli", "", "PYSOURCE")]


def _run_spec(spec: Path, monkeypatch) -> dict:
    hooks = types.ModuleType("PyInstaller.utils.hooks")
    hooks.collect_data_files = lambda package: []
    hooks.collect_submodules = lambda package: []
    for name in ("PyInstaller", "PyInstaller.utils"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "PyInstaller.utils.hooks", hooks)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the shared spec adds packaging/
    made: dict[str, list[_Built]] = {}

    def target(kind):
        def make(*args, **kwargs):
            made.setdefault(kind, []).append(_Built(*args, **kwargs))
            return made[kind][-1]
        return make

    scope = {"SPECPATH": str(spec.parent), "os": os,
             **{k: target(k) for k in ("Analysis", "PYZ", "EXE", "COLLECT", "BUNDLE")}}
    exec(compile(spec.read_bytes(), str(spec), "exec"), scope)
    return made


def test_macos_spec_bundles_the_shared_collect_with_our_info_plist(tmp_path, monkeypatch):
    plist = tmp_path / "Info.plist"
    plist.write_bytes(macos.plist_bytes("0.1.0"))
    monkeypatch.setenv("COMPUTESHARE_INFO_PLIST", str(plist))
    monkeypatch.setenv("COMPUTESHARE_ICON", str(tmp_path / "computeshare.icns"))
    made = _run_spec(macos.SPEC, monkeypatch)
    (analysis,) = made["Analysis"]
    assert [Path(s).name for s in analysis.args[0]] == ["entry_gui.py", "entry_cli.py"]
    assert [e.name for e in made["EXE"]] == [common.GUI_NAME, common.CLI_NAME]
    (bundle,) = made["BUNDLE"]
    assert bundle.args == (made["COLLECT"][0],)
    assert bundle.kwargs["name"] == "ComputeShare.app"
    assert bundle.kwargs["bundle_identifier"] == "org.computeshare.desktop"
    assert bundle.kwargs["version"] == "0.1.0"
    assert bundle.kwargs["icon"].endswith("computeshare.icns")
    assert bundle.kwargs["info_plist"] == macos.info_plist("0.1.0")


def test_windows_spec_gives_each_executable_its_version_file(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_VERSION_DIR", str(tmp_path))
    monkeypatch.setenv("COMPUTESHARE_ICON", str(tmp_path / "computeshare.ico"))
    made = _run_spec(windows.SPEC, monkeypatch)
    versions = {e.name: e.kwargs["version"] for e in made["EXE"]}
    assert versions == {n: str(tmp_path / f"{n}.txt") for n in (common.GUI_NAME, common.CLI_NAME)}
    assert {e.kwargs["icon"] for e in made["EXE"]} == {str(tmp_path / "computeshare.ico")}
    assert "BUNDLE" not in made


def test_version_files_are_written_per_executable(tmp_path):
    folder = windows.write_version_files("0.1.0", tmp_path / "v")
    assert sorted(p.name for p in folder.iterdir()) == ["computeshare-desktop.txt",
                                                       "computeshare.txt"]


# --- each builder refuses the wrong OS, before it touches anything -------------------------

@pytest.mark.parametrize("recipe, own, system, machine, says", [
    (macos, ("darwin", "arm64"), "linux", "x86_64", "built on macOS"),
    (macos, ("darwin", "arm64"), "win32", "AMD64", "built on macOS"),
    (macos, ("darwin", "arm64"), "darwin", "x86_64", "Apple silicon"),
    (windows, ("win32", "AMD64"), "linux", "x86_64", "built on Windows"),
    (windows, ("win32", "AMD64"), "darwin", "arm64", "built on Windows"),
    (windows, ("win32", "AMD64"), "win32", "ARM64", "x64")])
def test_each_builder_refuses_other_hosts(recipe, own, system, machine, says):
    with pytest.raises(common.BuildError, match=says):
        recipe.require_host(system, machine)
    recipe.require_host(*own)


@pytest.mark.parametrize("recipe, host", [(macos, "darwin"), (windows, "win32")])
def test_build_on_this_machine_refuses_with_a_clear_error(recipe, host, tmp_path):
    if sys.platform == host:
        pytest.skip("this is the recipe's own OS: the release workflow builds it")
    with pytest.raises(common.BuildError, match=f"this is {sys.platform}"):
        recipe.build(VERSION, tmp_path / "dist", tmp_path / "work")
    assert list(tmp_path.iterdir()) == []  # refused before making anything

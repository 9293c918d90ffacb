"""macOS recipe (Apple silicon): ComputeShare.app, signed ad hoc, in a compressed disk image.

    dist/ComputeShare-VERSION-macos-arm64.dmg
      ComputeShare.app/Contents/
        Info.plist                    info_plist(version): id, versions, Local Network keys
        MacOS/computeshare-desktop    the app (CFBundleExecutable)
        MacOS/computeshare            the command line
        Frameworks/, Resources/       Python, Qt, torch (CPU and MPS), the app; the .icns
      Applications -> /Applications   to drag the app onto

PyTorch has no Intel-macOS wheels after 2.2.2, so the app is arm64 only; PyPI's macOS
torch is the CPU + MPS build. ``codesign --sign -`` seals the bundle (Apple silicon refuses
to run unsigned code); set ``COMPUTESHARE_CODESIGN_IDENTITY`` to a "Developer ID
Application" identity to sign for notarization instead (docs/INSTALLERS.md).
"""

from __future__ import annotations

import functools
import os
import plistlib
import re
import shutil
import time
from pathlib import Path

import common
from common import BuildError, log

PLATFORM_TAG = "macos-arm64"
BUNDLE_ID = "org.computeshare.desktop"
MIN_MACOS = "11.0"  # the first macOS on Apple silicon
# macOS 15 blocks LAN traffic and mDNS for a bundle without these two keys.
LOCAL_NETWORK_USAGE = ("ComputeShare finds training sessions on your local network and "
                       "exchanges model updates with the computers taking part in them.")
BONJOUR_SERVICES = ["_computeshare._tcp"]
ICNS = "computeshare.icns"
SPEC = common.PACKAGING / "macos" / "ComputeShare.spec"
ENTITLEMENTS = common.PACKAGING / "macos" / "entitlements.plist"
VENV_STEPS = [
    ["torch==2.14.1", "torchvision==0.29.1"],  # PyPI's macOS arm64 wheels: CPU and MPS
    [*common.project_dependencies(), "pillow", "pyinstaller>=6.10,<7"],
]


def info_plist(version: str) -> dict[str, object]:
    """The Info.plist keys of ComputeShare.app for ``version`` (merged over PyInstaller's)."""
    return {
        "CFBundleName": common.APP_NAME,
        "CFBundleDisplayName": common.APP_NAME,
        "CFBundleIdentifier": BUNDLE_ID,
        "CFBundleExecutable": common.GUI_NAME,
        "CFBundlePackageType": "APPL",
        "CFBundleShortVersionString": bundle_version(version),
        "CFBundleVersion": bundle_version(version),
        "CFBundleIconFile": ICNS,
        "LSMinimumSystemVersion": MIN_MACOS,
        "LSApplicationCategoryType": "public.app-category.developer-tools",
        "LSBackgroundOnly": False,  # a window and a Dock icon, not a background agent
        "NSHighResolutionCapable": True,
        "NSLocalNetworkUsageDescription": LOCAL_NETWORK_USAGE,
        "NSBonjourServices": list(BONJOUR_SERVICES),
        "NSHumanReadableCopyright": "MIT License",
    }


def bundle_version(version: str) -> str:
    """``version``'s release numbers, as Apple wants them (1 to 3 integers: 0.2.0rc1 -> 0.2.0).

    Raises:
        BuildError: the version does not start with a number.
    """
    found = re.match(r"\d+(\.\d+){0,2}", version)
    if found is None:
        raise BuildError(f"version {version!r} does not start with a release number")
    return found.group(0)


def plist_bytes(version: str) -> bytes:
    """``info_plist(version)`` as an XML property list."""
    return plistlib.dumps(info_plist(version), sort_keys=True)


def dmg_name(version: str) -> str:
    """The disk image's file name."""
    return f"{common.APP_NAME}-{version}-{PLATFORM_TAG}.dmg"


require_host = functools.partial(common.require_host, "macos")


def build(version: str, dist: Path, work: Path) -> list[Path]:
    """Build ``dist/ComputeShare-VERSION-macos-arm64.dmg``; scratch files in ``work``."""
    require_host()
    started = time.monotonic()
    python = common.ensure_build_venv(work / "venv-macos", VENV_STEPS)
    scratch = work / "macos"
    common.install_project(python, scratch)
    common.make_icons(python, scratch / "icons", icns=True)
    plist_file = scratch / "Info.plist"
    plist_file.write_bytes(plist_bytes(version))
    app = freeze(python, scratch, {"COMPUTESHARE_ICON": str(scratch / "icons" / ICNS),
                                   "COMPUTESHARE_INFO_PLIST": str(plist_file)})
    check_bundle(app, version)
    sign(app)
    common.check_size("app bundle", common.tree_bytes(app), common.MAX_UNPACKED_BYTES)
    dist.mkdir(parents=True, exist_ok=True)
    dmg = make_dmg(app, dist / dmg_name(version), scratch / "dmg")
    common.check_size("disk image", dmg.stat().st_size, common.MAX_COMPRESSED_BYTES)
    log(f"macos build took {time.monotonic() - started:.0f} s")
    return [dmg]


def freeze(python: Path, scratch: Path, settings: dict[str, str]) -> Path:
    """Run PyInstaller on macos/ComputeShare.spec; returns ComputeShare.app (beside the
    one-folder build that PyInstaller leaves in the same place)."""
    folder = common.run_pyinstaller(python, scratch / "dist", scratch, settings, spec=SPEC)
    return folder.parent / f"{common.APP_NAME}.app"

def check_bundle(app: Path, version: str) -> None:
    """Fail unless the bundle holds both executables and our Info.plist keys."""
    macos = app / "Contents" / "MacOS"
    for name in (common.GUI_NAME, common.CLI_NAME):
        if not os.access(macos / name, os.X_OK):
            raise BuildError(f"{app.name} has no executable Contents/MacOS/{name}")
    with open(app / "Contents" / "Info.plist", "rb") as fh:
        written = plistlib.load(fh)
    wrong = {k: written.get(k) for k, v in info_plist(version).items() if written.get(k) != v}
    if wrong:
        raise BuildError(f"{app.name}/Contents/Info.plist differs from info_plist(): {wrong}")
    if not (app / "Contents" / "Resources" / ICNS).exists():
        raise BuildError(f"{app.name} has no Contents/Resources/{ICNS}")


def sign(app: Path) -> None:
    """Sign the bundle (ad hoc unless COMPUTESHARE_CODESIGN_IDENTITY names an identity),
    then verify the seal."""
    identity = os.environ.get("COMPUTESHARE_CODESIGN_IDENTITY", "-")
    cmd: list[str | Path] = ["codesign", "--force", "--deep", "--sign", identity]
    if identity != "-":
        # Notarization wants the hardened runtime and a secure timestamp.
        cmd += ["--options", "runtime", "--timestamp", "--entitlements", ENTITLEMENTS]
    common.run([*cmd, app])
    common.run(["codesign", "--verify", "--deep", "--strict", "--verbose=2", app])


def make_dmg(app: Path, dmg: Path, staging: Path) -> Path:
    """A compressed (UDZO) image of the app beside a link to /Applications."""
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    # ditto keeps the signature's extended attributes and the bundle's symlinks.
    common.run(["ditto", app, staging / app.name])
    (staging / "Applications").symlink_to("/Applications")
    cmd: list[str | Path] = ["hdiutil", "create", "-volname", common.APP_NAME,
                             "-srcfolder", staging, "-ov", "-format", "UDZO", dmg]
    for attempt in range(3):
        # hdiutil fails now and then with "Resource busy" on CI runners; a retry passes.
        try:
            common.run(cmd)
            break
        except BuildError:
            if attempt == 2:
                raise
            time.sleep(5)
    common.run(["hdiutil", "verify", dmg])
    return dmg


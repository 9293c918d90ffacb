"""Before Qt starts on Linux: can its X11 (xcb) platform plugin load? No Qt here.

Qt's xcb plugin links a dozen X libraries that a desktop usually has and a minimal install
(a server image, WSL, a fresh container, pip on a bare system) often lacks; without one of
them QApplication prints Qt's own message ("Could not load the Qt platform plugin "xcb"")
and aborts the process. So the app first loads the plugin itself (``dlopen``, as Qt would)
and, when that fails, names the packages to install with apt and dnf. In a Wayland session
it goes on with Qt's Wayland plugin instead (with the same hint as a warning).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

# The libraries Qt 6's xcb plugin (libqxcb.so -> libQt6XcbQpa.so.6) needs beyond glibc, GL and
# Qt itself, with the Debian/Ubuntu (apt) and Fedora/RHEL (dnf) packages that hold them.
XCB_LIBRARIES: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
}
Loader = Callable[[str], None]  # loads a shared library by path or name; raises OSError


def dlopen(name: str) -> None:
    """Load a shared library into this process, as Qt's plugin loader would."""
    ctypes.CDLL(name)


def xcb_plugin() -> Path | None:
    """Where PySide6's xcb plugin is (a frozen bundle's too), without importing Qt."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "Qt" / "plugins" / "platforms" \
        / "libqxcb.so"


def wants_xcb(env: Mapping[str, str]) -> bool:
    """True when Qt will try the xcb plugin first: QT_QPA_PLATFORM unset, or naming xcb
    first (``xcb``, ``xcb:display=...``, ``xcb;wayland``)."""
    first = env.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    return first in ("", "xcb")


def missing_libraries(load: Loader = dlopen) -> list[str]:
    """The xcb plugin's libraries that do not load here."""
    missing = []
    for name in XCB_LIBRARIES:
        try:
            load(name)
        except OSError:
            missing.append(name)
    return missing


def install_hint(missing: list[str]) -> str:
    """The apt and dnf commands that install ``missing`` (every library of the list when
    none is named: then the failure was elsewhere, and these are what to check first)."""
    names = missing or list(XCB_LIBRARIES)
    apt = list(dict.fromkeys(XCB_LIBRARIES[n][0] for n in names if n in XCB_LIBRARIES))
    dnf = list(dict.fromkeys(XCB_LIBRARIES[n][1] for n in names if n in XCB_LIBRARIES))
    return (f"  Debian, Ubuntu:  sudo apt install {' '.join(apt)}\n"
            f"  Fedora, RHEL:    sudo dnf install {' '.join(dnf)}")


@dataclass(frozen=True, slots=True)
class PlatformCheck:
    """What the check found: ``message`` for stderr (None: all is well) and whether the app
    can go on (with Qt's Wayland plugin, ``use_wayland``)."""

    message: str | None = None
    fatal: bool = False
    use_wayland: bool = False


def check_xcb(env: Mapping[str, str] | None = None, *, system: str = sys.platform,
              plugin: Path | None = None, load: Loader = dlopen) -> PlatformCheck:
    """Load Qt's xcb plugin as Qt would, before Qt does; say what to install if it fails."""
    env = os.environ if env is None else env
    if not system.startswith("linux") or not wants_xcb(env):
        return PlatformCheck()
    plugin = plugin or xcb_plugin()
    if plugin is None or not plugin.exists():
        return PlatformCheck()  # no such plugin to check: Qt says what it says
    try:
        load(str(plugin))
        return PlatformCheck()
    except OSError as exc:
        reason = str(exc).strip() or type(exc).__name__
    missing = missing_libraries(load)
    head = (f"this system lacks {', '.join(missing)}" if missing else reason)
    text = (f"Qt's X11 platform plugin (xcb) cannot load: {head}.\n"
            f"Install these packages, then start ComputeShare again:\n{install_hint(missing)}")
    if missing:
        text += f"\n(Qt's loader said: {reason})"
    if env.get("WAYLAND_DISPLAY") and not env.get("QT_QPA_PLATFORM"):
        return PlatformCheck(text + "\nThis is a Wayland session: going on with Qt's Wayland "
                                    "plugin.", use_wayland=True)
    return PlatformCheck(text, fatal=True)

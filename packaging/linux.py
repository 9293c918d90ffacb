"""Linux x86_64 recipe: a PyInstaller folder with both executables, packed as a tarball.

    dist/ComputeShare-VERSION-linux-x86_64.tar.gz
      ComputeShare-VERSION-linux-x86_64/
        computeshare-desktop, computeshare    the two executables
        _internal/                            Python, Qt, a CPU-only torch, the app
        computeshare.desktop                  desktop entry (Exec and Icon by name)
        computeshare.png, computeshare.svg    the icon, 256 px and scalable
        install-desktop-entry.sh              adds the entry, with this folder's paths,
                                              to ~/.local/share/applications

The build environment (``build/venv-linux``) holds the CPU build of torch 2.13 from local
disk and PyPI's torchvision 0.28 without its compiled ops (they link CUDA libraries):
hooks/rth_torchvision_cpu.py makes torchvision import without them.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Callable, Sequence

import common
from common import BuildError, log

PLATFORM_TAG = "linux-x86_64"
TEMPLATES = common.PACKAGING / "linux"
TORCH = "torch==2.13.0+cpu"  # the CPU wheel on local disk; PyPI's builds pull CUDA (3 GB)
TORCHVISION = "torchvision==0.28.0"  # pairs with torch 2.13; installed without its deps
VENV_STEPS = [
    [TORCH],
    ["--no-deps", TORCHVISION],
    # pip leaves torch alone here: nothing below requires it.
    [*common.project_dependencies(), "pillow", "pyinstaller>=6.10,<7"],
]
# Modules the app never imports: torchvision's compiled ops and image codecs (they link
# libcudart / libnvjpeg), Qt's test bindings (pyqtgraph's import survives without them).
EXCLUDE_MODULES = ["torchvision._C", "torchvision.image", "PySide6.QtTest"]
# Files hooks collect that a CPU app does not need (fnmatch on paths inside _internal/).
EXCLUDE_BINARIES = [
    "torchvision/_C*.so", "torchvision/image*.so", "torchvision.libs/*",
    # torch's C++ test programs and test libraries, protoc (133 MB); torch/bin keeps
    # torch_shm_manager, which `import torch` looks for
    "torch/test/*", "torch/bin/test_*", "torch/bin/*Test", "torch/bin/protoc*",
    "torch/bin/script_module_*", "torch/lib/lib*_test.so", "torch/lib/libaoti_custom_ops.so",
    "torch/lib/libbackend_with_compiler.so",
    # zstandard's second (cffi) backend; the C one loads first
    "zstandard/_cffi*.so",
    # Qt's GTK theme: it needs the system's GTK, and half of GTK's libraries bundled beside a
    # user's own GTK would clash with it; Fusion (the app's style) does without.
    "PySide6/Qt/plugins/platformthemes/libqgtk3.so", "libgtk-3*", "libgdk-3*",
    "libgdk_pixbuf*", "libatk-*", "libpango*", "libcairo*", "libpixman*", "libfribidi*",
    "libthai*", "libdatrie*",
    # Qt's own translations: the app's text is English
    "PySide6/Qt/translations/*",
]
# The X libraries Qt's xcb plugin needs that a minimal Linux lacks (libxcb-cursor0 first of
# all): the bundle carries each (PyInstaller collects those the build machine has; the rest
# are copied from the system, and a build machine without one fails). libxcb.so.1, libGL and
# libEGL stay the system's, as PyInstaller leaves them: the X server and GPU driver's own.
# Their packages: computeshare_desktop/gui/qt_platform.py (XCB_LIBRARIES).
X_LIBRARIES = (
    "libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-image.so.0",
    "libxcb-render-util.so.0", "libxcb-util.so.1", "libxcb-xkb.so.1", "libxkbcommon-x11.so.0",
    "libxkbcommon.so.0", "libxcb-randr.so.0", "libxcb-render.so.0", "libxcb-shape.so.0",
    "libxcb-shm.so.0", "libxcb-sync.so.1", "libxcb-xfixes.so.0", "libX11-xcb.so.1",
    "libX11.so.6", "libfontconfig.so.1",
)
SYSTEM_X_LIBRARIES = ("libxcb.so.1", "libGL.so.1", "libEGL.so.1")
LIBRARY_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64",
                "/usr/lib", "/lib")
# A file of a CUDA runtime in the bundle means a CUDA torch slipped in.
CUDA_MARKERS = ("libcuda", "libcudart", "libcublas", "libcudnn", "libnvjpeg", "libnccl",
                "libnvrtc", "libtriton")


require_host = functools.partial(common.require_host, "linux")


def build(version: str, dist: Path, work: Path) -> list[Path]:
    """Build ``dist/ComputeShare-VERSION-linux-x86_64.tar.gz``; scratch files in ``work``."""
    require_host()
    started = time.monotonic()
    name = f"{common.APP_NAME}-{version}-{PLATFORM_TAG}"
    python = common.ensure_build_venv(work / "venv-linux", VENV_STEPS)
    require_cpu_torch(python)
    scratch = work / "linux"
    common.install_project(python, scratch)
    common.make_icons(python, scratch / "icons", pngs=(256,))
    frozen = common.run_pyinstaller(python, scratch / "dist", scratch, {
        "COMPUTESHARE_RUNTIME_HOOKS": "rth_torchvision_cpu.py",
        "COMPUTESHARE_EXCLUDE_MODULES": ",".join(EXCLUDE_MODULES),
        "COMPUTESHARE_EXCLUDE_BINARIES": ",".join(EXCLUDE_BINARIES),
    })
    top = scratch / name
    shutil.rmtree(top, ignore_errors=True)
    frozen.rename(top)
    add_desktop_files(top, scratch / "icons")
    carry_x_libraries(top / "_internal")
    refuse_cuda(top)
    common.check_size("unpacked bundle", common.tree_bytes(top), common.MAX_UNPACKED_BYTES)
    dist.mkdir(parents=True, exist_ok=True)
    tarball = pack(top, dist / f"{name}.tar.gz")
    common.check_size("tarball", tarball.stat().st_size, common.MAX_COMPRESSED_BYTES)
    log(f"linux build took {time.monotonic() - started:.0f} s")
    return [tarball]


def require_cpu_torch(python: Path) -> None:
    """Fail unless the build environment's torch is a CPU build (no CUDA, no nvidia-*)."""
    code = ("import importlib.metadata as m, sys, torch\n"
            "nv = [d.name for d in m.distributions() if (d.name or '').startswith('nvidia')]\n"
            "print(torch.__version__, torch.version.cuda, nv)\n"
            "sys.exit(1 if torch.version.cuda or nv else 0)\n")
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    log(f"build torch: {done.stdout.strip()}")
    if done.returncode != 0:
        raise BuildError(f"the build environment's torch is not CPU-only: {done.stdout}"
                         f"{done.stderr[-2000:]} (delete {python.parent.parent} to rebuild it)")


def add_desktop_files(top: Path, icons: Path) -> None:
    """The desktop entry, its installer script and the icon, beside the executables."""
    shutil.copyfile(TEMPLATES / "computeshare.desktop", top / "computeshare.desktop")
    shutil.copyfile(icons / "computeshare-256.png", top / "computeshare.png")
    shutil.copyfile(common.ICON_SVG, top / "computeshare.svg")
    script = top / "install-desktop-entry.sh"
    shutil.copyfile(TEMPLATES / "install-desktop-entry.sh", script)
    script.chmod(0o755)


def system_library(name: str, dirs: Sequence[str] = LIBRARY_DIRS) -> Path | None:
    """The build machine's copy of the shared library ``name`` (a soname), if it has one."""
    for folder in dirs:
        path = Path(folder) / name
        if path.is_file():
            return path.resolve()
    return None


def carry_x_libraries(internal: Path,
                      find: Callable[[str], Path | None] = system_library) -> list[str]:
    """Make the bundle carry every library of X_LIBRARIES: copy in those PyInstaller did not
    collect from the build machine; fail, naming them, when the machine has none. Returns
    the names copied."""
    copied: list[str] = []
    absent: list[str] = []
    for name in X_LIBRARIES:
        if (internal / name).exists():
            continue
        source = find(name)
        if source is None:
            absent.append(name)
            continue
        shutil.copy2(source, internal / name)
        copied.append(name)
    if absent:
        raise BuildError(f"the build machine lacks {', '.join(absent)}, which the bundle must "
                         "carry for Qt's xcb plugin: run .ci/linux-gui-deps (apt) first")
    if copied:
        log(f"copied X libraries into the bundle: {', '.join(copied)}")
    return copied


def refuse_cuda(top: Path) -> None:
    """Fail when a CUDA library made it into the bundle."""
    found = [str(p.relative_to(top)) for p in top.rglob("*")
             if p.name.startswith(CUDA_MARKERS)]
    if found:
        raise BuildError(f"CUDA libraries in a CPU bundle: {found[:10]}")


def pack(top: Path, tarball: Path) -> Path:
    """``top`` as a gzip tarball with one top folder, owned by root, mode bits kept."""
    def normalized(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    started = time.monotonic()
    partial = tarball.with_name(tarball.name + ".part")
    with tarfile.open(partial, "w:gz", compresslevel=6) as tar:
        tar.add(top, arcname=top.name, filter=normalized)
    os.replace(partial, tarball)
    log(f"packed {tarball.name} in {time.monotonic() - started:.0f} s")
    return tarball

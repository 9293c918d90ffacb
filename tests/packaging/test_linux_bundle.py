"""The Linux bundle as a user gets it: build the tarball (or take the one named by
COMPUTESHARE_LINUX_TARBALL), check its layout and sizes, unpack it, and run both executables
from there in a clean environment (no virtual environment on PATH, a throwaway home):
the self-test, the command line's fast paths, a short demo, and the app's window on a private
X server (Xvfb), screenshotted.

    python -m pytest -m packaging          # builds with packaging/build.py linux first
    COMPUTESHARE_LINUX_TARBALL=dist/ComputeShare-0.1.0-linux-x86_64.tar.gz \\
        python -m pytest -m packaging      # checks a tarball built before
"""

from __future__ import annotations

import configparser
import json
import os
import platform
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from packaging_recipes import recipe

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
BUILD_TIMEOUT_S = 1800  # a first build makes its venv (torch) too: about 4 min here

pytestmark = [
    pytest.mark.packaging,
    pytest.mark.timeout(BUILD_TIMEOUT_S + 600),
    pytest.mark.skipif(sys.platform != "linux" or platform.machine() != "x86_64",
                       reason="the Linux bundle is built and run on Linux x86_64"),
]


common = recipe("common")
linux = recipe("linux")
VERSION = common.project_version()
TOP = f"ComputeShare-{VERSION}-linux-x86_64"


@pytest.fixture(scope="module")
def tarball() -> Path:
    """The tarball under test: the given one, or a fresh build."""
    given = os.environ.get("COMPUTESHARE_LINUX_TARBALL")
    if given:
        assert Path(given).is_file(), f"COMPUTESHARE_LINUX_TARBALL={given} is not a file"
        return Path(given).resolve()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(PACKAGING / "build.py"), "linux"], cwd=ROOT,
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    print(f"\nbuild.py linux: {time.monotonic() - started:.0f} s")
    print("\n".join(line for line in proc.stderr.splitlines() if "MB (ceiling" in line))
    return ROOT / "dist" / f"{TOP}.tar.gz"


@pytest.fixture(scope="module")
def bundle(tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tarball unpacked: its top folder."""
    where = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(tarball) as tar:
        tar.extractall(where, filter="tar")
    return where / TOP


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """What a user's fresh login has: system PATH only, and a home of the test's own."""
    (home / "computeshare").mkdir(parents=True, exist_ok=True)
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
            "COMPUTESHARE_HOME": str(home / "computeshare"), **extra}


def run_exe(bundle: Path, name: str, args: list[str], env: dict[str, str], cwd: Path,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bundle / name), *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


# --- the tarball ---------------------------------------------------------------------------

def test_tarball_has_one_top_folder_with_both_executables_and_the_desktop_entry(tarball):
    with tarfile.open(tarball) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert {name.split("/")[0] for name in members} == {TOP}
    for exe in ("computeshare-desktop", "computeshare", "install-desktop-entry.sh"):
        member = members[f"{TOP}/{exe}"]
        assert member.isfile() and member.mode & 0o111 == 0o111, exe
    for name in ("computeshare.desktop", "computeshare.png", "computeshare.svg"):
        assert members[f"{TOP}/{name}"].isfile(), name
    assert f"{TOP}/_internal/computeshare_desktop/data/mnist_sample.npz" in members
    # A CPU bundle: no CUDA runtime, no torchvision ops built against it.
    cuda = [n for n in members if re.search(r"/lib(cudart|cublas|cudnn|nvjpeg|nccl)", n)]
    assert not cuda and f"{TOP}/_internal/torchvision/_C.so" not in members


def test_sizes_are_under_the_ceilings(tarball, bundle):
    packed, unpacked = tarball.stat().st_size, common.tree_bytes(bundle)
    print(f"\ntarball {packed / 1e6:.1f} MB, unpacked {unpacked / 1e6:.1f} MB")
    assert packed <= common.MAX_COMPRESSED_BYTES
    assert unpacked <= common.MAX_UNPACKED_BYTES


def test_the_bundle_carries_the_x_libraries_qts_xcb_plugin_needs(bundle):
    """libxcb-cursor and the rest travel inside, so a system without them still opens the
    window: the bundle's xcb plugin resolves each from _internal (the bootloader puts it on
    LD_LIBRARY_PATH), not from the system."""
    internal = bundle / "_internal"
    missing = [name for name in linux.X_LIBRARIES if not (internal / name).is_file()]
    assert not missing, f"the bundle lacks {missing}"
    if shutil.which("ldd") is None:
        return
    plugin = internal / "PySide6" / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    out = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(internal)}).stdout
    found = dict(re.findall(r"^\s*(\S+) => (\S+)", out, re.MULTILINE))
    outside = {name: found.get(name) for name in linux.X_LIBRARIES
               if not Path(found.get(name, "/")).resolve().is_relative_to(internal.resolve())}
    assert not outside, f"resolved outside the bundle: {outside}\n{out}"


def test_desktop_entry_and_icon(bundle, tmp_path):
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    entry.read(bundle / "computeshare.desktop")
    desktop = entry["Desktop Entry"]
    assert (desktop["Type"], desktop["Exec"], desktop["Icon"]) == (
        "Application", "computeshare-desktop", "computeshare")
    png = (bundle / "computeshare.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (256, 256)
    env = clean_env(tmp_path)
    proc = subprocess.run([str(bundle / "install-desktop-entry.sh")], env=env,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    installed = (tmp_path / ".local/share/applications/computeshare.desktop").read_text()
    assert f'Exec="{bundle}/computeshare-desktop"' in installed
    assert f"Icon={bundle}/computeshare.svg" in installed
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate",
                                str(tmp_path / ".local/share/applications/computeshare.desktop")],
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stdout + check.stderr
    subprocess.run([str(bundle / "install-desktop-entry.sh"), "--remove"], env=env,
                   capture_output=True, timeout=30, check=True)
    assert not (tmp_path / ".local/share/applications/computeshare.desktop").exists()


# --- the command line ----------------------------------------------------------------------

def test_cli_help(bundle, tmp_path):
    proc = run_exe(bundle, "computeshare", ["--help"], clean_env(tmp_path), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "usage: computeshare" in proc.stdout and "join" in proc.stdout


def test_join_to_a_closed_port_exits_3_at_once(bundle, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    proc = run_exe(bundle, "computeshare", ["join", f"127.0.0.1:{port}"], clean_env(tmp_path),
                   tmp_path, timeout=30)
    elapsed = time.monotonic() - started
    assert proc.returncode == 3, proc.stderr
    assert elapsed < 3.0, f"took {elapsed:.1f} s"


def test_demo_trains_with_a_worker_process(bundle, tmp_path):
    # The demo starts its worker as `sys.executable -m computeshare_desktop.cli join ...`:
    # in the bundle that is the `computeshare` executable itself (entry_cli.py).
    proc = run_exe(bundle, "computeshare",
                   ["demo", "--workers", "1", "--rounds", "20", "--eval-every", "10", "--quiet",
                    "--out", str(tmp_path / "demo")], clean_env(tmp_path), tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "final test accuracy" in proc.stdout
    assert (tmp_path / "demo" / "trained_model.pth").is_file()


USER_NET = """
from torch import nn


class Net(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(in_channels, 8, 3, stride=2), nn.BatchNorm2d(8),
                                  nn.GELU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                                  nn.Dropout(0.1), nn.Linear(128, num_classes))

    def forward(self, x):
        return self.body(x)
"""


def test_a_users_model_travels_as_a_checked_graph(bundle, tmp_path):
    """The bundle has what the graph path needs on both sides (torch.export, sympy, the
    strict loader), and writes the .pt2."""
    (tmp_path / "user_net.py").write_text(USER_NET, encoding="utf-8")
    proc = run_exe(bundle, "computeshare",
                   ["demo", "--workers", "1", "--rounds", "10", "--eval-every", "0", "--quiet",
                    "--model", str(tmp_path / "user_net.py") + ":Net",
                    "--out", str(tmp_path / "demo")], clean_env(tmp_path), tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Model user_net.py:Net:" in proc.stdout + proc.stderr
    assert "graph checked" in proc.stdout + proc.stderr
    assert (tmp_path / "demo" / "trained_model.pt2").is_file()


# --- the self-test -------------------------------------------------------------------------

@pytest.mark.skipif(not (ROOT / "computeshare_desktop" / "selftest.py").exists(),
                    reason="computeshare_desktop/selftest.py (--self-test) is not there yet")
@pytest.mark.parametrize("exe, args", [("computeshare-desktop", ["--self-test"]),
                                       ("computeshare", ["self-test"])])
def test_self_test_passes(bundle, tmp_path, exe, args):
    proc = run_exe(bundle, exe, args, clean_env(tmp_path), tmp_path)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "FAIL" not in proc.stdout


# --- the window ----------------------------------------------------------------------------

SHOT = r"""
import json, sys
from PySide6.QtGui import QGuiApplication
app = QGuiApplication(sys.argv[:1])
image = app.primaryScreen().grabWindow(int(sys.argv[1], 0)).toImage()
image.save(sys.argv[2])
step = 4
colours = {image.pixel(x, y) for x in range(0, image.width(), step)
           for y in range(0, image.height(), step)}
print(json.dumps({"width": image.width(), "height": image.height(), "colours": len(colours)}))
"""


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    """A private X server; returns it and its display name."""
    for number in range(200 + os.getpid() % 300, 900):
        if os.path.exists(f"/tmp/.X11-unix/X{number}") or os.path.exists(f"/tmp/.X{number}-lock"):
            continue
        proc = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1600x1000x24",
                                 "-nolisten", "tcp"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if os.path.exists(f"/tmp/.X11-unix/X{number}"):
                return proc, f":{number}"
            time.sleep(0.05)
        stop(proc)
    pytest.fail("no free X display for Xvfb")


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 10) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def app_window(display: str) -> tuple[str, int, int] | None:
    """(id, width, height) of the largest top-level window titled ComputeShare, if any."""
    tree = subprocess.run(["xwininfo", "-root", "-tree", "-display", display],
                          capture_output=True, text=True, timeout=10).stdout
    found = [(m[1], int(m[2]), int(m[3])) for m in
             re.finditer(r'^\s*(0x[0-9a-f]+) "[^"]*ComputeShare[^"]*":.*?(\d+)x(\d+)\+', tree,
                         re.MULTILINE)]
    found = [w for w in found if w[1] >= 300 and w[2] >= 200]
    return max(found, key=lambda w: w[1] * w[2]) if found else None


@pytest.mark.skipif(shutil.which("Xvfb") is None or shutil.which("xwininfo") is None,
                    reason="needs Xvfb and xwininfo (Debian: xvfb, x11-utils; .ci/packaging "
                           "installs them)")
def test_app_window_opens_on_x_and_screenshots(bundle, tmp_path):
    pytest.importorskip("PySide6.QtGui")
    xvfb, display = start_xvfb()
    log = tmp_path / "app.log"
    with open(log, "wb") as out:
        app = subprocess.Popen([str(bundle / "computeshare-desktop")], cwd=tmp_path,
                               env=clean_env(tmp_path, DISPLAY=display, QT_QPA_PLATFORM="xcb"),
                               stdout=out, stderr=subprocess.STDOUT)
    shot = tmp_path / "linux-bundle-main-window.png"
    try:
        stats, deadline = None, time.monotonic() + 120
        while time.monotonic() < deadline and app.poll() is None:
            window = app_window(display)
            if window is not None:
                proc = subprocess.run([sys.executable, "-c", SHOT, window[0], str(shot)],
                                      env={**os.environ, "DISPLAY": display,
                                           "QT_QPA_PLATFORM": "xcb"},
                                      capture_output=True, text=True, timeout=60)
                assert proc.returncode == 0, proc.stderr
                stats = json.loads(proc.stdout.strip().splitlines()[-1])
                if stats["colours"] >= 20:  # painted: text, frames, buttons
                    break
            time.sleep(0.5)
        assert app.poll() is None, "the app exited before its window showed"
        assert stats is not None, "no ComputeShare window appeared on the X display"
        print(f"\nscreenshot {shot}: {stats}")
        assert stats["width"] >= 300 and stats["height"] >= 200
        assert stats["colours"] >= 20, f"the window looks blank: {stats}"
        if os.environ.get("COMPUTESHARE_SCREENSHOTS"):
            shutil.copy(shot, Path(os.environ["COMPUTESHARE_SCREENSHOTS"]) / shot.name)
        assert stop(app, signal.SIGTERM, timeout=20) == 0  # SIGTERM closes the window
    finally:
        stop(app, signal.SIGKILL)
        stop(xvfb)
    output = log.read_text(errors="replace")
    assert "Traceback" not in output, output[-3000:]

"""Helpers every platform's recipe shares: version, build venv, PyInstaller, sizes, icons.

Each platform module (``linux.py``, ``macos.py``, ``windows.py``) exposes one function,
``build(version: str, dist: Path, work: Path) -> list[Path]``, that writes its installers
into ``dist`` (scratch files under ``work``) and returns them; ``build.py`` picks the module.
These helpers are plain functions so a recipe reads top to bottom.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Mapping, Sequence

PACKAGING = Path(__file__).resolve().parent
ROOT = PACKAGING.parent
SPEC = PACKAGING / "computeshare.spec"
ICON_SVG = ROOT / "resources" / "icons" / "computeshare.svg"
APP_NAME = "ComputeShare"
GUI_NAME = "computeshare-desktop"
CLI_NAME = "computeshare"

# Ceilings the issue sets for a bundle; a build above them fails (bytes, 10^6 per MB).
MAX_UNPACKED_BYTES = 1_000_000_000
MAX_COMPRESSED_BYTES = 400_000_000

# Packages the frozen app must not carry whatever the environment holds (a CPU app).
NEVER_BUNDLE = ("triton", "pytest", "hypothesis", "mypy", "ruff", "IPython", "tkinter",
                "matplotlib", "pandas", "sklearn", "scipy", "mlxtend", "setuptools")


class BuildError(RuntimeError):
    """A build step failed; the message says which and why."""


def log(message: str) -> None:
    """One progress line on stderr, prefixed so it stands out of PyInstaller's output."""
    print(f"[package] {message}", file=sys.stderr, flush=True)


def pyproject() -> dict:
    """The parsed ``pyproject.toml``."""
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def project_version() -> str:
    """The version the installers carry: ``[project].version`` of pyproject.toml."""
    return str(pyproject()["project"]["version"])


def project_dependencies(leave_out: Sequence[str] = ("torch", "torchvision")) -> list[str]:
    """pyproject's runtime requirements, without those a recipe pins itself."""
    deps = []
    for spec in pyproject()["project"]["dependencies"]:
        name = spec.split(";")[0].strip()
        for sep in "<>=!~[ ":
            name = name.split(sep)[0]
        if name.lower() not in leave_out:
            deps.append(spec)
    return deps


def run(cmd: Sequence[str | os.PathLike[str]], *, env: Mapping[str, str] | None = None,
        cwd: Path = ROOT) -> None:
    """Run one build command, echoing it; a failure becomes a BuildError."""
    args = [str(c) for c in cmd]
    log("$ " + " ".join(args))
    done = subprocess.run(args, cwd=cwd, env=None if env is None else dict(env))
    if done.returncode != 0:
        raise BuildError(f"{args[0]} exited {done.returncode}: {' '.join(args)}")


def venv_python(venv: Path) -> Path:
    """The interpreter inside a virtual environment."""
    if os.name == "nt":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def ensure_build_venv(venv: Path, steps: Sequence[Sequence[str]]) -> Path:
    """A virtual environment made by ``steps`` (each a ``pip install`` argument list, run in
    order), created when missing or when the steps changed; returns its interpreter.

    The steps are recorded in the venv, so an unchanged one is reused (torch alone takes
    a minute to install).
    """
    stamp = venv / "computeshare-build.json"
    wanted = json.dumps([list(s) for s in steps], indent=1)
    python = venv_python(venv)
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        log(f"reusing the build environment {venv}")
        return python
    if venv.exists():
        shutil.rmtree(venv)
    log(f"creating the build environment {venv}")
    run([sys.executable, "-m", "venv", venv])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_USER")}
    for step in steps:
        run([python, "-m", "pip", "install", "--disable-pip-version-check", *step], env=env)
    stamp.write_text(wanted)
    return python


def install_project(python: Path, work: Path) -> None:
    """(Re)install this checkout, without dependencies, into the build environment: the
    bundle freezes exactly the sources of this commit."""
    wheels = work / "wheel"
    shutil.rmtree(wheels, ignore_errors=True)
    # setuptools builds in build/lib and never empties it: a module deleted from the
    # sources would live on in the wheel.
    for stale in (ROOT / "build" / "lib", *ROOT.glob("build/*bdist.*")):
        shutil.rmtree(stale, ignore_errors=True)
    run([python, "-m", "pip", "wheel", "--no-deps", "-w", wheels, ROOT])
    wheel = next(wheels.glob("*.whl"))
    run([python, "-m", "pip", "install", "--no-deps", "--force-reinstall", wheel])


# What each recipe runs on (PyInstaller does not cross-build): sys.platform, the machines
# platform.machine() may name, and how to say it.
HOSTS = {"linux": ("linux", ("x86_64", "amd64"), "Linux (x86_64)"),
         "macos": ("darwin", ("arm64",), "macOS (Apple silicon)"),
         "windows": ("win32", ("amd64", "x86_64"), "Windows (x64)")}


def require_host(recipe: str, system: str | None = None, machine: str | None = None) -> None:
    """Fail unless this machine (or ``system``/``machine``, as sys.platform and
    platform.machine() say) is the one ``recipe`` builds on.

    Raises:
        BuildError: another OS or architecture.
    """
    want_system, machines, label = HOSTS[recipe]
    system = sys.platform if system is None else system
    machine = platform.machine() if machine is None else machine
    if system != want_system:
        raise BuildError(f"the {recipe} installer is built on {label}; this is {system}: "
                         f"run `python packaging/build.py {recipe}` there")
    if machine.lower() not in machines:
        note = ": PyTorch ships no Intel-macOS wheels" if recipe == "macos" else ""
        raise BuildError(f"the {recipe} installer is built on {label}, not {machine}{note}")


def run_pyinstaller(python: Path, dist: Path, work: Path, settings: Mapping[str, str],
                    spec: Path = SPEC) -> Path:
    """Freeze the two executables with ``spec`` (the shared ``computeshare.spec``, or a
    platform's wrapper of it) into ``dist/ComputeShare``.

    ``settings`` reach the spec as ``COMPUTESHARE_*`` environment variables (icon,
    excluded binaries ...; the spec's docstring lists them). Returns the app folder.
    """
    env = {**os.environ, **settings, "COMPUTESHARE_ROOT": str(ROOT),
           "QT_QPA_PLATFORM": "offscreen"}
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    run([python, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
         "--distpath", dist, "--workpath", work / "pyinstaller", spec], env=env)
    log(f"PyInstaller took {time.monotonic() - started:.0f} s")
    folder = dist / APP_NAME
    for name in (GUI_NAME, CLI_NAME):
        if not (folder / exe_name(name)).exists():
            raise BuildError(f"PyInstaller made no {name} in {folder}")
    return folder


def exe_name(name: str) -> str:
    """An executable's file name on this platform."""
    return name + ".exe" if os.name == "nt" else name


def tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (each hard-linked file once; links not followed)."""
    seen, total = set(), 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def megabytes(n: int) -> str:
    """``n`` bytes as decimal megabytes."""
    return f"{n / 1e6:.1f} MB"


def check_size(what: str, measured: int, ceiling: int) -> None:
    """Print a measured size; fail the build when it is above its ceiling."""
    log(f"{what}: {megabytes(measured)} (ceiling {megabytes(ceiling)})")
    if measured > ceiling:
        raise BuildError(f"{what} is {megabytes(measured)}, above the ceiling "
                         f"{megabytes(ceiling)}")


def make_icons(python: Path, out: Path, *, pngs: Sequence[int] = (), ico: bool = False,
               icns: bool = False) -> None:
    """Render the app icon from the SVG master into ``out`` with ``icons.py``, run by
    ``python`` (an interpreter with PySide6: the build environment)."""
    args: list[str | Path] = [python, PACKAGING / "icons.py", "--svg", ICON_SVG, "--out", out]
    args += [a for size in pngs for a in ("--png", str(size))]
    args += ["--ico"] * ico + ["--icns"] * icns
    run(args, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})

"""The GitHub workflows: actionlint passes (and can fail), every step that runs something is
one call of a script in the repo, and those scripts are executable bash that parses."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
CI_DIR = REPO / ".ci"
SCRIPTS = sorted(p for p in CI_DIR.iterdir() if p.is_file())


def _actionlint() -> str:
    """The actionlint of the test extra (in this Python's scripts), else the one on PATH."""
    name = "actionlint.exe" if os.name == "nt" else "actionlint"
    here = Path(sysconfig.get_path("scripts")) / name
    found = str(here) if here.exists() else shutil.which("actionlint")
    if found is None:
        pytest.fail("actionlint is not installed: pip install -e '.[test]'")
    return found


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_actionlint(), "-no-color", str(path)], cwd=REPO, text=True,
                          capture_output=True, timeout=120)


def _load(name: str) -> dict:
    with open(WORKFLOWS / name, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _steps():
    for workflow in ("ci.yml", "release.yml"):
        for job_name, job in _load(workflow)["jobs"].items():
            for step in job["steps"]:
                yield f"{workflow}:{job_name}:{step.get('name') or step.get('uses')}", step


@pytest.mark.parametrize("name", ["ci.yml", "release.yml"])
def test_actionlint_passes(name):
    done = _lint(WORKFLOWS / name)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("old, new, complaint", [
    ("${{ matrix.python }}", "${{ matrix.pyhton }}", 'property "pyhton" is not defined'),
    ("runs-on: ${{ matrix.os }}", "runs_on: ${{ matrix.os }}", 'unexpected key "runs_on"'),
])
def test_actionlint_fails_on_a_broken_copy(tmp_path, old, new, complaint):
    text = (WORKFLOWS / "ci.yml").read_text(encoding="utf-8")
    assert old in text
    broken = tmp_path / ".github" / "workflows" / "ci.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(text.replace(old, new), encoding="utf-8")
    done = _lint(broken)
    assert done.returncode != 0 and complaint in done.stdout, done.stdout + done.stderr


def test_ci_runs_on_three_oses_and_two_pythons_on_every_push():
    ci = _load("ci.yml")
    assert set(ci[True]) == {"push", "pull_request"}  # YAML 1.1 reads the key `on` as True
    matrix = ci["jobs"]["test"]["strategy"]["matrix"]
    assert matrix["os"] == ["ubuntu-latest", "macos-14", "windows-latest"]
    assert matrix["python"] == ["3.11", "3.12"]


def test_release_builds_three_platforms_then_publishes_on_a_version_tag():
    release = _load("release.yml")
    assert release[True] == {"push": {"tags": ["v*"]}}
    build = release["jobs"]["build"]
    platforms = {row["platform"]: row["runner"] for row in build["strategy"]["matrix"]["include"]}
    assert set(platforms) == {"linux", "macos", "windows"}
    assert platforms["macos"] == "macos-14"  # Apple silicon: torch has no Intel-macOS wheels
    publish = release["jobs"]["publish"]
    assert publish["needs"] == "build" and publish["permissions"] == {"contents": "write"}
    uploads = [s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-")]
    assert uploads and uploads[0]["with"]["if-no-files-found"] == "error"


def test_every_run_step_is_one_call_of_a_script_in_the_repo():
    runs = [(where, step["run"]) for where, step in _steps() if "run" in step]
    assert runs
    for where, command in runs:
        assert "\n" not in command.strip(), f"{where}: logic belongs in a script: {command!r}"
        # An expression (${{ matrix.platform }}) is one word once GitHub has filled it in.
        words = shlex.split(re.sub(r"\$\{\{ [\w.]+ \}\}", "EXPRESSION", command))
        if words[0] == "bash":
            words = words[1:]
        script = REPO / words[0]
        assert script.parent == CI_DIR and script.is_file(), f"{where}: {command!r}"
        for arg in words[1:]:
            assert re.fullmatch(r"[\w.-]+", arg), f"{where}: {arg!r} is more than an argument"


def test_actions_are_pinned_to_a_major_version():
    uses = [step["uses"] for _where, step in _steps() if "uses" in step]
    assert uses
    for action in uses:
        assert re.fullmatch(r"actions/[\w-]+@v\d+", action), action


# On Windows, "bash" may be WSL's launcher rather than Git Bash; the other jobs check them.
@pytest.mark.skipif(os.name == "nt", reason="bash -n runs on the Linux and macOS jobs")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_ci_scripts_are_bash_scripts_that_parse(script):
    first = script.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("#!") and "bash" in first, f"{script.name} starts with {first!r}"
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(os.name == "nt", reason="no executable bit on Windows")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_ci_scripts_are_executable(script):
    assert os.access(script, os.X_OK), f"chmod +x {script.relative_to(REPO)}"


def test_scripts_call_only_scripts_that_exist():
    for script in SCRIPTS:
        for called in re.findall(r"(?<![\w/])\.ci/[\w-]+", script.read_text(encoding="utf-8")):
            assert (REPO / called).is_file(), f"{script.name} calls {called}"


@pytest.mark.skipif(os.name == "nt" or shutil.which("shellcheck") is None,
                    reason="shellcheck is not installed")
def test_ci_scripts_pass_shellcheck():
    done = subprocess.run(["shellcheck", "--severity=warning", *map(str, SCRIPTS)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout

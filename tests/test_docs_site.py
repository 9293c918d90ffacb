"""The manual as a site, and README.md as its front door.

``mkdocs build --strict`` passes (mkdocs.yml makes a broken link, a missing anchor and a page
left out of the nav warnings, and strict turns them into a failed build); the README stays
under 300 lines, its links reach files that exist and every page of the manual, and its
test command is the one CI runs (.ci/run). The command line page lists every flag of every
command, as the parser built from the schema has them, and no flag it does not have.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from computeshare_desktop.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
CLI_PAGE = DOCS / "cli.md"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
# Reached from the performance page, which the README links: each benchmark's own report.
REPORTS = re.compile(r"BENCHMARKS(-[A-Z-]+)?\.md")
# Flags every command has, described once under the command table.
COMMON = {"--quiet", "--verbose"}
# A row that says "the same training options as `host`" takes those from host's row.
SAME_AS = {"demo": "host"}


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def test_the_site_builds_strictly(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, encoding="utf-8", timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "cli" / "index.html").is_file()


def test_the_readme_is_a_front_door():
    assert len(_readme().splitlines()) < 300


def test_the_readme_links_reach_files_that_exist():
    for target in LINK.findall(_readme()):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        assert (REPO / path).exists(), target
        if anchor:
            page = (REPO / path if path else README).read_text(encoding="utf-8")
            assert anchor in _anchors(page), target


def test_the_readme_links_every_page_of_the_manual():
    linked = {Path(t.partition("#")[0]).name for t in LINK.findall(_readme())
              if t.startswith("docs/")}
    pages = {p.name for p in DOCS.glob("*.md") if not REPORTS.fullmatch(p.name)}
    assert pages - linked == set()


def test_the_readme_test_command_is_what_ci_runs():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    suite = ci[ci.index("# The README's test command (keep the two in sync):") + 1]
    assert suite in _command_lines(_readme())
    testing = (DOCS / "testing.md").read_text(encoding="utf-8")
    assert suite in _command_lines(testing)
    for command in ("python -m scripts.model_zoo --out build/model-zoo", "bash .ci/packaging"):
        assert command in ci
        for page in (_readme(), testing):
            assert command.removeprefix("bash ") in page


def test_the_command_table_lists_every_flag_of_the_parser():
    rows = _command_rows(CLI_PAGE.read_text(encoding="utf-8"))
    for name, parser in _subcommands().items():
        flags = _flags(parser)
        assert name in rows, f"no row for computeshare {name}"
        documented = _row_flags(rows[name]) | _row_flags(rows.get(SAME_AS.get(name, ""), ""))
        assert flags - COMMON - documented == set(), name
        usage = rows[name].split("`", 1)[0]  # the command's own cell: `computeshare NAME ...`
        assert _row_flags(usage) - flags == set(), f"{name}: flags it does not have"
    page = CLI_PAGE.read_text(encoding="utf-8")
    assert all(f"`{flag}`" in page for flag in COMMON)


def test_the_check_of_the_command_table_catches_a_missing_flag():
    rows = _command_rows(CLI_PAGE.read_text(encoding="utf-8"))
    parser = _subcommands()["join"]
    assert "--cache-size" in _flags(parser) & _row_flags(rows["join"])
    row = rows["join"].replace("[--cache-size SIZE]", "").replace("`--cache-size SIZE`", "")
    assert "--cache-size" in _flags(parser) - _row_flags(row)


# ----------------------------------------------------------------- helpers
def _anchors(markdown: str) -> set[str]:
    """The anchors of a page's headings, as MkDocs (and GitHub) make them."""
    heads = re.findall(r"^#{1,6} (.+?)\s*$", re.sub(r"```.*?```", "", markdown, flags=re.S),
                       re.M)
    return {re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", h).strip().lower()) for h in heads}


def _command_lines(markdown: str) -> set[str]:
    """Each line of the page's shell blocks, and each command of an ``&&`` chain after
    the first."""
    lines: set[str] = set()
    for block in re.findall(r"```sh\n(.*?)```", markdown, re.S):
        for line in block.splitlines():
            parts = line.split(" && ")
            lines.update(" && ".join(parts[i:]) for i in range(len(parts)))
    return lines


def _command_rows(markdown: str) -> dict[str, str]:
    """The command table's rows by command name."""
    rows = re.findall(r"^\| `computeshare ([\w-]+)(.*)$", markdown, re.M)
    return {name: rest for name, rest in rows}


def _row_flags(row: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z0-9-]*", row))


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices)


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """A command's long flags, as its --help shows them."""
    return {flag for action in parser._actions if action.help != argparse.SUPPRESS
            for flag in action.option_strings if flag.startswith("--")} - {"--help"}

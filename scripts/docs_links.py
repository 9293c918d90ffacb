"""An MkDocs hook (mkdocs.yml's ``hooks:``): what GitHub reads one way and MkDocs another.

Links to repository files. A page in docs/ may link to a file of the repository outside
docs/, as ``[packaging/README.md](../packaging/README.md)``: on GitHub and in a checkout
that link works, but the site holds only docs/, so MkDocs reports it as not found. For a
target that exists, this hook writes the link as the file's path in code instead
(``packaging/README.md``, after the link's text when that is something else), which is all
a reader of the site can use. A target that does not exist is left alone, so
``mkdocs build --strict`` still fails on it: a broken link stays an error.

Pipes in a table's code. GitHub needs ``\\|`` for a ``|`` inside code in a table cell
(``--optimizer sgd\\|adamw``) and shows it as ``|``; Python-Markdown keeps the backslash, and
needs no escape there (a pipe inside backticks splits no cell). Table rows lose it here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s]+)\)")
URL = re.compile(r"^[a-z][a-z0-9+.-]*:|^/|^#", re.I)
CODE = re.compile(r"`[^`\n]*`")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The page's Markdown with its tables' code unescaped and its links to repository
    files outside docs/ as code."""
    docs = Path(config["docs_dir"]).resolve()
    repo = Path(config["config_file_path"]).resolve().parent
    here = Path(page.file.abs_src_path).resolve().parent
    markdown = "\n".join(_unescape_pipes(line) for line in markdown.split("\n"))
    return LINK.sub(lambda found: _outside(found, here, docs, repo), markdown)


def _unescape_pipes(line: str) -> str:
    """A table row with ``\\|`` inside its code spans written as ``|``; other lines as they are."""
    if not line.lstrip().startswith("|"):
        return line
    return CODE.sub(lambda code: code.group(0).replace("\\|", "|"), line)


def _outside(found: re.Match[str], here: Path, docs: Path, repo: Path) -> str:
    """The link as code when it names an existing repository file outside docs/."""
    text, target = found.group(1), found.group(2)
    if URL.match(target):
        return found.group(0)
    path = (here / target.split("#", 1)[0]).resolve()
    if path.is_relative_to(docs) or not path.is_relative_to(repo) or not path.exists():
        return found.group(0)
    shown = f"`{path.relative_to(repo).as_posix()}`"
    return shown if text.strip("`") == path.relative_to(repo).as_posix() else f"{text} ({shown})"

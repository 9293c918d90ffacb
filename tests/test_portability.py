"""A portability lint: the package and the tests import and run on Linux, macOS and Windows.

CI runs the suite on all three; this file catches, on any of them, what would break on
another before CI does. It reads the source with ``ast`` and flags what exists on one
family of systems only when nothing guards it: a POSIX-only module (``resource``,
``fcntl``, ``pty``...) or a Windows-only one (``msvcrt``, ``winreg``), a POSIX-only
``os``/``signal`` name (``os.geteuid``, ``signal.SIGKILL``...) or a Windows-only one
(``signal.CTRL_BREAK_EVENT``...), ``preexec_fn`` (Windows raises), and text file I/O that
does not name its encoding (Windows reads and writes cp1252 by default, which cannot
decode our UTF-8 sources). See docs/PORTABILITY.md.

A guard is: an ``if``/``while``/conditional expression, or an earlier operand of
``and``/``or``, that tests the platform (``sys.platform``, ``os.name``,
``platform.system()``, ``hasattr(...)``, ``netns_available()``); an earlier ``if <that>:
return`` (or raise, or skip) in the same function; a ``try`` that catches ImportError or
AttributeError; a ``skipif`` on the test, its class or its module (``pytestmark``).
"""

from __future__ import annotations

import ast
import re
import string
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("computeshare_desktop", "tests", "testbed")

POSIX_MODULES = {"resource", "fcntl", "termios", "tty", "pty", "pwd", "grp", "posix",
                 "crypt", "spwd", "syslog", "nis", "ossaudiodev", "curses", "readline"}
WINDOWS_MODULES = {"msvcrt", "winreg", "_winapi", "winsound", "nt", "_overlapped"}
POSIX_NAMES = {
    "os": {"geteuid", "getuid", "getgid", "getegid", "getgroups", "getpgid", "getpgrp",
           "getsid", "setsid", "setpgrp", "setpgid", "killpg", "fork", "forkpty", "fchmod",
           "fchown", "chown", "lchown", "sched_getaffinity", "sched_setaffinity",
           "getloadavg", "mkfifo", "mknod", "nice", "uname", "statvfs", "sync", "wait3",
           "wait4", "WNOHANG", "O_NOFOLLOW", "O_NONBLOCK"},
    "signal": {"SIGKILL", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGQUIT", "SIGCHLD",
               "SIGPIPE", "SIGSTOP", "SIGCONT", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGWINCH",
               "SIGXCPU", "SIGVTALRM", "SIGPROF", "alarm", "setitimer", "getitimer", "pause",
               "pthread_kill", "pthread_sigmask", "siginterrupt", "sigwait", "sigpending"},
    "select": {"poll", "epoll", "kqueue"},
    "socket": {"AF_PACKET", "AF_NETLINK", "SO_REUSEPORT"},
}
WINDOWS_NAMES = {
    "os": {"startfile", "add_dll_directory", "O_BINARY"},
    "signal": {"SIGBREAK", "CTRL_C_EVENT", "CTRL_BREAK_EVENT"},
    "subprocess": {"CREATE_NEW_PROCESS_GROUP", "CREATE_NO_WINDOW", "DETACHED_PROCESS",
                   "STARTUPINFO", "STARTF_USESHOWWINDOW", "SW_HIDE"},
}
GUARD = re.compile(r"sys\.platform|os\.name|platform\.system|hasattr\(|netns_available")
# Modules whose every entry point runs only where a guard already passed.
GUARDED_MODULES = {
    "testbed/netlab.py": "network namespaces: callers check netns_available() (Linux, root)",
}
# Files other people own that break a rule, reported to them (see docs/PORTABILITY.md).
REPORTED: dict[tuple[str, str], str] = {}
# Files other people are writing now: their own tests judge them; the import and name
# rules still apply (those break at import or at run time on the other systems).
OTHERS = ("tests/packaging/", "tests/test_selftest.py", "tests/test_workflows.py")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.what}"


def _source(node: ast.AST) -> str:
    return ast.unparse(node) if isinstance(node, ast.expr) else ""


def _is_guard(test: ast.AST) -> bool:
    return bool(GUARD.search(_source(test)))


def _decorated_with_guard(node: ast.AST) -> bool:
    decorators = getattr(node, "decorator_list", [])
    return any(_is_guard(d) for d in decorators)


def _exits(body: list[ast.stmt]) -> bool:
    last = body[-1] if body else None
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue)):
        return True
    return isinstance(last, ast.Expr) and "skip" in _source(last.value)


def _catches(handler: ast.ExceptHandler, names: set[str]) -> bool:
    caught = _source(handler.type) if handler.type is not None else "BaseException"
    return any(name in caught for name in names)


class Guards:
    """Answers "is this node guarded?" for one parsed module."""

    def __init__(self, tree: ast.Module) -> None:
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.module_guarded = any(
            isinstance(n, ast.Assign) and any(_source(t) == "pytestmark" for t in n.targets)
            and _is_guard(n.value) for n in tree.body)

    def guarded(self, node: ast.AST, catch: set[str]) -> bool:
        if self.module_guarded:
            return True
        child, parent = node, self.parent.get(node)
        while parent is not None:
            if self._guards(parent, child, catch):
                return True
            child, parent = parent, self.parent.get(parent)
        return False

    def _guards(self, parent: ast.AST, child: ast.AST, catch: set[str]) -> bool:
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test:
            return _is_guard(parent.test)
        if isinstance(parent, ast.BoolOp):
            earlier = parent.values[:parent.values.index(child)] if child in parent.values \
                else []
            return any(_is_guard(v) for v in earlier)
        if isinstance(parent, ast.Try) and child in parent.body:
            return any(_catches(h, catch) for h in parent.handlers)
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if _decorated_with_guard(parent):
                return True
            if child in parent.body:
                before = parent.body[:parent.body.index(child)]
                return any(isinstance(s, ast.If) and _is_guard(s.test) and _exits(s.body)
                           for s in before)
        return False


def _text_mode(call: ast.Call) -> str | None:
    """The mode of a text-mode open/read_text/write_text call without ``encoding``."""
    if any(k.arg == "encoding" for k in call.keywords):
        return None
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name in ("read_text", "write_text") and isinstance(func, ast.Attribute):
        return name
    if name != "open" or (isinstance(func, ast.Attribute) and not call.args):
        return None  # .open() without arguments: a dialog, a socket..., not a file
    position = 1 if isinstance(func, ast.Name) else 0
    mode = call.args[position] if len(call.args) > position else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    text = mode.value if isinstance(mode, ast.Constant) else "r" if mode is None else "?"
    if not isinstance(text, str) or "b" in text or text == "?":
        return None
    return f"open(mode={text!r})"


def lint(rel: str, source: str) -> list[Finding]:
    """The portability findings of one module (``rel`` is its path from the repository)."""
    tree = ast.parse(source, rel)
    guards = Guards(tree)
    if rel in GUARDED_MODULES:
        return []
    found: list[Finding] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if node.level == 0 else []
            for name in names:
                top = name.split(".")[0]
                if top in POSIX_MODULES | WINDOWS_MODULES and \
                        not guards.guarded(node, {"ImportError", "ModuleNotFoundError"}):
                    side = "POSIX" if top in POSIX_MODULES else "Windows"
                    found.append(Finding(rel, node.lineno, "import", f"{top} ({side} only)"))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            for table, side in ((POSIX_NAMES, "POSIX"), (WINDOWS_NAMES, "Windows")):
                if node.attr in table.get(node.value.id, ()) and \
                        not guards.guarded(node, {"AttributeError"}):
                    found.append(Finding(rel, node.lineno, "name",
                                         f"{node.value.id}.{node.attr} ({side} only)"))
        elif isinstance(node, ast.Call):
            if any(k.arg == "preexec_fn" for k in node.keywords) and \
                    not guards.guarded(node, set()):
                found.append(Finding(rel, node.lineno, "preexec_fn", "Windows raises"))
            mode = _text_mode(node)
            if mode and not rel.startswith(OTHERS):
                found.append(Finding(rel, node.lineno, "encoding",
                                     f"{mode} without encoding= (cp1252 on Windows)"))
    return [f for f in found if (f.path, f.rule) not in REPORTED]


def _modules() -> list[tuple[str, str]]:
    return [(p.relative_to(REPO).as_posix(), p.read_text(encoding="utf-8"))
            for folder in SCANNED for p in sorted((REPO / folder).rglob("*.py"))]


def test_the_package_and_the_tests_are_portable():
    findings = [str(f) for rel, source in _modules() for f in lint(rel, source)]
    assert findings == [], "\n".join(findings)


@pytest.mark.parametrize("snippet, rule", [
    ("import resource", "import"),
    ("def f():\n    import fcntl", "import"),
    ("import os\nos.geteuid()", "name"),
    ("import signal\nsignal.SIGKILL", "name"),
    ("import signal\nx = signal.CTRL_BREAK_EVENT", "name"),
    ("import subprocess\nsubprocess.Popen(['x'], preexec_fn=f)", "preexec_fn"),
    ("open('f')", "encoding"),
    ("open('f', 'w')", "encoding"),
    ("from pathlib import Path\nPath('f').read_text()", "encoding"),
])
def test_the_lint_catches_what_breaks_elsewhere(snippet, rule):
    assert [f.rule for f in lint("computeshare_desktop/x.py", snippet)] == [rule]


@pytest.mark.parametrize("snippet", [
    "import sys\nif sys.platform != 'win32':\n    import resource",
    "try:\n    import resource\nexcept ImportError:\n    resource = None",
    "import os, sys\nok = sys.platform.startswith('linux') and os.geteuid() == 0",
    "import os\nok = os.geteuid() == 0 if hasattr(os, 'geteuid') else False",
    "import signal, sys\ndef f():\n    if sys.platform == 'win32':\n        return\n"
    "    return signal.SIGKILL",
    "import pytest, sys\n@pytest.mark.skipif(sys.platform == 'win32', reason='pty')\n"
    "def test_x():\n    import pty",
    "import pytest, sys\npytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='')\n"
    "import fcntl",
    "import signal\nx = getattr(signal, 'SIGKILL', signal.SIGTERM)",
    "open('f', 'rb')\nopen('f', encoding='utf-8')\ndialog.open()",
])
def test_the_lint_accepts_guarded_code(snippet):
    assert lint("computeshare_desktop/x.py", snippet) == []


@pytest.mark.parametrize("platform", ["win32", "darwin"])
def test_the_package_type_checks_for_windows_and_macos(platform):
    """typeshed marks what each OS lacks (os.geteuid on Windows, msvcrt elsewhere...):
    mypy for the other platforms finds what the lint above cannot."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--platform", platform,
                           "--cache-dir", str(REPO / ".mypy_cache" / platform),
                           "computeshare_desktop"], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


WINDOWS_BAD = set('<>:"/\\|?*') | {chr(c) for c in range(32)}
WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL", *(f"{d}{i}" for d in ("COM", "LPT")
                                                 for i in range(1, 10))}


def windows_safe(name: str) -> bool:
    """A file name Windows accepts: no reserved character, no device name, no trailing
    dot or space."""
    stem = name.split(".")[0].upper()
    return bool(name) and not WINDOWS_BAD & set(name) and stem not in WINDOWS_DEVICES \
        and not name.endswith((".", " "))


@pytest.mark.parametrize("name", ["default", "my laptop/1", "pc · RTX 4090", "CON", "a:b",
                                  "..", "trailing.", "名前", "x" * 200, ""])
def test_key_file_names_are_valid_on_windows(name, tmp_path, monkeypatch):
    from computeshare_desktop.transport import KnownHubs, identity_path

    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path))
    path = identity_path("worker", name)
    assert path.parent == tmp_path / "identity"
    assert windows_safe(path.name) and windows_safe(KnownHubs(path).path.name), path.name
    assert len(path.name) < 100


def test_run_folders_and_snapshots_have_windows_safe_names(tmp_path):
    from computeshare_desktop.hub.outputs import OutputDir
    from computeshare_desktop.service.options import default_output_folder

    run = Path(default_output_folder(str(tmp_path)))
    assert run.parent == tmp_path and re.fullmatch(r"run-\d{8}-\d{6}", run.name)
    snapshot = OutputDir(run).save_snapshot(7, {}, 0.0)
    assert windows_safe(snapshot.name) and snapshot.parent.parent == run
    assert set(run.name) <= set(string.ascii_letters + string.digits + "-")

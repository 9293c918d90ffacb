"""Shared helpers for the discovery tests: example adverts, polling, and a hub in a process.

Not a test module: the discovery tests import it by name (pytest puts their folder on
sys.path). Everything here uses mDNS on 127.0.0.1 only.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from computeshare_desktop.discovery import SessionAdvert, SessionBrowser, new_session_id
from helpers.net import wait_for  # noqa: F401  (re-exported for the discovery tests)
from helpers.portable import readline_within

LOOPBACK = ["127.0.0.1"]
# Fast timings for tests: a dead hub's records expire within TTL + check + probe.
FAST = {"check_interval_s": 0.25, "probe_timeout_s": 0.5, "resolve_timeout_s": 2.0}


def make_advert(**overrides: Any) -> SessionAdvert:
    """A realistic advert with a fresh session id; keyword arguments replace fields."""
    fields: dict[str, Any] = dict(
        session_id=new_session_id(), name="Alice's desktop — mnist-sample", host="alice-pc",
        model="simplenet", dataset="mnist-sample", joined=1, expected=2, state="waiting",
        protocol=2, key_fingerprint="0123456789abcdef", port=5555, pub_port=5556,
        pair_port=5557)
    fields.update(overrides)
    return SessionAdvert(**fields)


def browser(**options: Any) -> SessionBrowser:
    """A started SessionBrowser on loopback with the fast test timings."""
    return SessionBrowser(interfaces=LOOPBACK, **{**FAST, **options}).start()


def session_with_id(b: SessionBrowser, session_id: str) -> Any:
    """The session ``b`` sees with this id, or None (other hubs on loopback are ignored)."""
    return next((s for s in b.sessions() if s.advert.session_id == session_id), None)


HUB_SCRIPT = """
import sys, time
from computeshare_desktop.discovery import Advertiser, SessionAdvert
advert = SessionAdvert(sys.argv[1], "doomed hub", "h", "m", "d", 0, 2, "waiting", 2,
                       "0123456789abcdef", 5555, 5556, 5557)
Advertiser(advert, interfaces=["127.0.0.1"], ttl_s=int(sys.argv[2])).start()
print("ready", flush=True)
time.sleep(120)
"""


def start_hub_process(session_id: str, ttl_s: int) -> subprocess.Popen[str]:
    """Advertise a session from a separate process; returns once it is registered."""
    proc = subprocess.Popen([sys.executable, "-c", HUB_SCRIPT, session_id, str(ttl_s)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = readline_within(proc.stdout, 20.0) or "(no answer in 20 s)"
    if line.strip() != "ready":
        proc.kill()
        proc.wait(timeout=10)
        raise AssertionError(f"hub process failed to start: {line!r}")
    return proc

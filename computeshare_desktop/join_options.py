"""The schema of joining a session as a worker: each option declared once (see ``schema``).

``computeshare join``'s flags, the Join dialog's fields and the defaults of ``JoinPlan``
and ``WorkerOptions`` are derived from ``JoinOptions``. Light to import: the command line
reads join's flags before torch loads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .defaults import DEFAULT_PORT, DEVICE_CHOICES
from .schema import option

JOIN = ("join",)


SIZE_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
              "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20,
              "gib": 2**30, "tib": 2**40}


def parse_size(text: str) -> int:
    """Bytes of a size such as "500MB", "2GB", "1.5 GiB" or "0" (decimal units unless the
    unit says ``iB``); ValueError when it is none."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-zA-Z]*)\s*", text)
    unit = found.group(2).lower() if found else ""
    if found is None or unit not in SIZE_UNITS:
        raise ValueError(f"not a size: {text!r} (e.g. 500MB, 2GB, 0)")
    return int(float(found.group(1)) * SIZE_UNITS[unit])


def size_valid(text: str) -> bool:
    """``--cache-size``: a size parse_size reads."""
    try:
        parse_size(text)
    except ValueError:
        return False
    return True


def sha256_valid(text: str) -> bool:
    """``--trust-code``: empty, or a sha256 as 64 hex digits (either case)."""
    return text == "" or re.fullmatch(r"[0-9a-fA-F]{64}", text) is not None


@dataclass(frozen=True, slots=True)
class JoinOptions:
    """How a worker finds its hub and behaves (the command line, the Join dialog)."""

    address: str = option(
        "", "hub address: HOST, HOST:PORT or tcp://HOST:PORT (default: find the session on "
        "the LAN)", flag="address", positional=True, commands=JOIN, label="Hub address",
        placeholder=f"192.168.1.20:{DEFAULT_PORT}")
    session: str = option(
        "", "with no address: the session name or id to join when there are several",
        flag="--session", commands=JOIN)
    scan: float = option(
        3.0, "seconds to look for sessions (default {default})", flag="--scan",
        commands=("join", "sessions"), help_for={"sessions": "seconds to look (default "
                                                             "{default})"})
    pin: str = option(
        "", "the PIN the hub shows; without it: COMPUTESHARE_PIN, else a prompt (other users "
        "can see command lines, not prompts)", flag="--pin", commands=JOIN, label="PIN",
        placeholder="000 000")  # "": COMPUTESHARE_PIN, a prompt, or a hub that knows us
    device: str = option(
        "auto", "default {default}: CUDA, then MPS, then CPU", flag="--device", commands=JOIN,
        choices=DEVICE_CHOICES, error="unknown device")
    name: str = option(
        "", "worker name shown on the hub (default: this machine's name and device, e.g. "
        "\"vm · CPU\")", flag="--name", commands=JOIN)
    threads: int = option(0, "CPU threads for torch (default: torch's choice)",
                          flag="--threads", commands=JOIN,  # 0 or less: torch's choice
                          label="CPU threads", minimum=0, maximum=256, special="Automatic",
                          tip="How many CPU threads torch computes with on this machine")
    max_rate: float = option(
        0.0, "compute at most this many samples per second, to share this machine politely "
        "(default: no limit)", flag="--max-rate", commands=JOIN, metavar="SAMPLES_PER_S",
        ge=0, error="--max-rate must be positive (or 0: no limit)",
        label="Speed limit (samples/s)", maximum=1_000_000, step=50, special="No limit",
        tip="Compute at most this many samples per second, to keep this machine usable")
    wait_s: float = option(
        0.0, "keep trying a hub that does not listen yet for this long (scripts that start "
        "the hub and its workers together; default: say why at once)", flag="--wait",
        commands=JOIN, metavar="SECONDS")  # negative: 0
    come_back_s: float = option(
        600.0, "after the host stops the session, wait up to this long for it to be "
        "resumed and join it again without the PIN; not resumed by then, or Ctrl-C: exit "
        "code 7 (default 600: 10 minutes; 0: exit at once)",
        flag="--come-back", commands=JOIN, metavar="SECONDS", ge=0,
        error="--come-back takes seconds (0: do not wait)")
    give_up_s: float = option(
        120.0, "seconds without an answer before giving up (default {default})",
        flag="--give-up", commands=JOIN)
    trust_code: str = option(
        "", "run the Python code a hub offers for its model (a hub's --offer-code) if its "
        "sha256 is SHA256, and remember that approval for this hub: the code then runs with "
        "your rights, unsandboxed (default: never run a hub's code; the refusal prints the "
        "hash)", flag="--trust-code", commands=JOIN, metavar="SHA256", valid=sha256_valid,
        error="--trust-code takes the file's sha256: 64 hex digits")
    cache_size: str = option(
        "2GB", "keep the samples the hub sends on this disk, up to this size (e.g. 500MB, "
        "2GB; 0: keep none), so that a rejoin or the next session on the same data sends "
        "only what is missing (default {default}; `computeshare cache` says where)",
        flag="--cache-size", commands=JOIN, metavar="SIZE", valid=size_valid,
        error="--cache-size takes a size: a number and a unit (B, KB, MB, GB, TB, KiB, MiB, "
        "GiB, TiB; none: bytes), such as 500MB, 2GB, 1.5GiB or 0", label="Disk cache",
        tip="Keep the samples the hub sends on this disk, up to this size (500MB, 2GB; 0: "
            "keep none), so a rejoin or the next session on the same data sends only what "
            "is missing")
    pause_on_battery: bool = option(
        True, "do not pause while this machine runs on battery power (by default a laptop "
        "pauses on battery: the hub gives its shard to the others, and it joins again, "
        "without the PIN, once back on AC)", flag="--no-pause-on-battery", commands=JOIN,
        label="Pause while on battery power (resumes on AC)",
        tip="The others train on meanwhile; a machine without a battery never pauses")
    first_contact_s: float = option(
        15.0, "give up this soon if the hub never answered at all",
        fronts={"app": 10.0})  # the app's Join dialog shows the failure sooner

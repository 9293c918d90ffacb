"""Text for people: sizes, durations and PINs. Pure functions, no Qt."""

from __future__ import annotations


def group_pin(pin: str) -> str:
    """Digits in groups of three for reading aloud: ``428913`` -> ``428 913``."""
    digits = pin.strip()
    if not digits.isdigit() or len(digits) <= 4:
        return digits
    groups: list[str] = []
    while digits:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    return " ".join(groups)


def human_bytes(count: float) -> str:
    """``1536`` -> ``1.5 KB`` (decimal units, as network tools show them)."""
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if abs(value) < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"  # pragma: no cover


def human_pair(first: float, second: float) -> str:
    """Two byte counts for one card: ``16.8 / 14.9 MB`` when they share a unit, else
    ``16.8 MB / 900.0 KB`` (a worker window's eight cards fit a 1,120 px window)."""
    a, b = human_bytes(first), human_bytes(second)
    unit_a, unit_b = a.rsplit(" ", 1)[1], b.rsplit(" ", 1)[1]
    return f"{a.rsplit(' ', 1)[0]} / {b}" if unit_a == unit_b else f"{a} / {b}"


def human_rate(bytes_per_s: float) -> str:
    """``2500000`` -> ``2.5 MB/s``."""
    return human_bytes(bytes_per_s) + "/s"


def human_duration(seconds: float | None) -> str:
    """``75`` -> ``1 min 15 s``; None -> an em dash."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "—"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def ago(seconds: float | None) -> str:
    """How long ago something happened: ``now``, ``4 s ago``, ``2 min ago``."""
    if seconds is None:
        return "—"
    if seconds < 2:
        return "now"
    if seconds < 60:
        return f"{int(seconds)} s ago"
    return f"{int(seconds // 60)} min ago"


def percent(fraction: float) -> str:
    """``0.9681`` -> ``96.81%`` (the precision the CLI prints)."""
    return f"{100 * fraction:.2f}%"

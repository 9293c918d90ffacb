"""Text for people, shared by the views and the service that speaks for them. Pure, no Qt."""

from __future__ import annotations


def sentence(text: str) -> str:
    """``text`` as a sentence: its first letter upper-case, the rest as written, and a full
    stop. Not ``str.capitalize()``, which lower-cases the rest ("Wi-fi or 100 mbit/s")."""
    text = text.strip()
    if not text:
        return text
    return text[0].upper() + text[1:] + ("" if text.endswith((".", "!", "?", "…")) else ".")

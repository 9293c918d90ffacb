"""What a refusal means for the person who tried: one or two sentences per reject code."""

from __future__ import annotations

from ..protocol import MEANINGS, RejectCode

# What the user can do about each refusal that ends a join.
_ADVICE = {
    "BAD_PIN": "Wrong PIN: check the PIN shown on the hub and try again.",
    "LOCKED_OUT": "Too many wrong PINs: the hub has paused pairing. Wait, then try again.",
    "NOT_PAIRED": "This machine is no longer allowed by the hub: join again with the PIN.",
    "SESSION_FULL": "The session already has all the workers it expects.",
    "SESSION_DONE": "This session has already finished.",
    "ARCH_MISMATCH": "This machine builds a different model: update ComputeShare.",
    "VERSION_MISMATCH": "The hub runs another version of ComputeShare: update both.",
    "BANNED": "The host removed this machine from this session: it can join the host's "
              "next session with the PIN, or this one if the host allows it again.",
    "BLOCKED": "The host blocked this machine: it cannot join the host's sessions until "
               "the host allows it again.",
    "HUB_STOPPED": "The host stopped the session.",
}


def refusal_message(code: str, detail: str = "") -> str:
    """One or two sentences for a reject code, ending with the code itself, e.g. (BAD_PIN)."""
    advice = _ADVICE.get(code)
    if advice is None:
        try:
            meaning = MEANINGS[RejectCode(code)]
        except ValueError:
            meaning = detail or "the hub refused this machine"
        advice = f"The hub refused: {meaning}."
        if detail and detail != meaning:
            advice += f" ({detail})"
    return f"{advice} ({code})"

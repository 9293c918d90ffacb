"""Asking before a worker is removed from a session (Kick): the default keeps it.

Removing a worker keeps it out of this session until the host chooses "Allow again"; its
next session (or this one resumed) lets it pair with the PIN. "Block this machine" keeps it
out of every later session of this hub too. It is asked every time (there is no "Don't ask
again", unlike stopping: see ``confirm.StopQuestion``).
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from .confirm import ModalQuestion

BLOCK = "Block this machine: refuse it in later sessions too, until I allow it again"


def kick_text(name: str, others: int = 1) -> str:
    """The question, naming the machine as its row does; ``others``: the workers that
    stay (none: training waits for another machine)."""
    goes_on = ("The other machines train on without it." if others else
               "It is the only worker: training waits until another machine joins.")
    return (f"Remove {name} from this session? It cannot take part in it again unless you "
            f"choose Allow again; it can join your next session with the PIN. {goes_on}")


class KickQuestion(ModalQuestion):
    """``ask(parent, name, others)`` is (remove, block): whether the host confirms the
    removal, and whether it blocks the machine from later sessions too."""

    def ask(self, parent: QWidget | None, name: str, others: int = 1) -> tuple[bool, bool]:
        """Show the question modally; Escape, Enter and closing keep the worker."""
        return self.ask_box(parent, "Remove worker?", kick_text(name, others), "Remove",
                            "Keep worker", BLOCK)

"""A session's State cell says what the session does now: a training hub that every
worker left (or whose only worker the host removed) reads "Waiting for workers", not
"Training" for ever."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.gui.session_table import state_text  # noqa: E402
from helpers.sessions import session  # noqa: E402


def test_a_training_session_with_no_worker_reads_waiting():
    base = session("lab", 7341)
    at = lambda **kw: state_text(dataclasses.replace(  # noqa: E731
        base, advert=dataclasses.replace(base.advert, **kw)))
    assert at(state="training", joined=1, round=21) == ("Training · round 21/600",
                                                        "training")
    assert at(state="training", joined=0, round=21) == ("Waiting for workers · round 21/600",
                                                        "open")
    assert at(state="waiting", joined=0)[0] == "Open: waiting for workers"
    assert at(state="done", joined=0)[0] == "Finished"

"""Evaluations slower than the rounds never pile up: a waiting one that is out of date is
dropped (the soak benchmark found the queue growing by a model copy per round)."""

from __future__ import annotations

import threading

from computeshare_desktop.events import RoundClosed
from computeshare_desktop.hub import HubConfig, HubSession
from computeshare_desktop.hub import session as session_module


def round_event(version: int) -> RoundClosed:
    return RoundClosed(round=version, version=version, steps=1, loss=1.0, contributors=1,
                       rejected=0, bytes_in=0, bytes_out=0, payload_bytes=0, samples=8,
                       seconds=0.01, complete=True, compute_s=0.01, busy=1.0)


def test_a_slow_evaluation_keeps_one_running_and_one_waiting(tmp_path, monkeypatch):
    release = threading.Event()
    evaluated: list[int] = []

    def slow_evaluate(model, test_set):
        release.wait(30)
        evaluated.append(len(evaluated))
        return 0.5, 1.0

    monkeypatch.setattr(session_module, "evaluate", slow_evaluate)
    session = HubSession(HubConfig(workers=1, rounds=1000, eval_every=1, checkpoint_every=0),
                         pin="1234", hub_key="k" * 40, out_dir=tmp_path)
    try:
        for version in range(1, 201):
            session._on_round(round_event(version))
            assert len(session._evals) <= 2
        assert [v for v, _ in session._evals] == [1, 200]  # the running one, the newest
        release.set()
        session._collect_evals(block=True)
        assert session.last_eval is not None and session.last_eval[0] == 200
        assert len(evaluated) == 2
    finally:
        release.set()
        session.close()

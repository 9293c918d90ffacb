"""Pause and resume over real ZeroMQ on loopback: two real workers, one pauses (the hub
trains on with the other and shows it paused), then resumes: it joins again without the PIN
on its shard, and the session ends with every round done."""

from __future__ import annotations

import pytest
from helpers.net import RunningHub, WorkerThread, wait_for

from computeshare_desktop.events import (Joined, Paused, Pushed, Resumed, RoundClosed,
                                         WorkerDone, WorkerJoined, WorkerLeft)


@pytest.mark.slow  # ~12 s: the hub's set-up (~4 s) and 24 rounds at 0.1 s each
def test_a_real_worker_pauses_and_returns_without_the_pin(tmp_path) -> None:
    hub = RunningHub(tmp_path, workers=2, rounds=24, batch_size=8, eval_every=0)
    w1 = w2 = None
    try:
        w1 = WorkerThread(hub.port, "w1", max_rate=80.0)  # 0.1 s a round
        w2 = WorkerThread(hub.port, "w2", max_rate=80.0)
        wait_for(lambda: hub.session.server.version >= 3, 60, "training")
        w2.session.pause()
        wait_for(lambda: any(isinstance(e, Paused) for e in w2.events), 30, "the pause")
        paused_at = hub.session.server.version
        wait_for(lambda: hub.session.server.version >= paused_at + 3, 60, "rounds without w2")
        assert [e.reason for e in hub.events if isinstance(e, WorkerLeft)] == ["paused"]
        assert w2.session.core.token is None  # no membership, no heartbeat meanwhile
        w2.session.resume()
        wait_for(lambda: any(isinstance(e, Pushed) and e.version > paused_at + 3
                             for e in w2.events), 60, "w2 training again")
        w1.join(120)
        w2.join(120)
        assert w1.error is None and w2.error is None
        assert [type(e) for e in w2.events if isinstance(e, (Paused, Resumed))] == \
            [Paused, Resumed]
        joined = [e for e in w2.events if isinstance(e, Joined)]
        assert len(joined) == 2 and joined[0].shard == joined[1].shard
        # the same machine back: its id and its counts (the host's table and the worker's
        # "N gradients pushed" count the same gradients)
        assert joined[0].worker_id == joined[1].worker_id
        assert [e.returning for e in hub.events if isinstance(e, WorkerJoined)
                and e.worker.id == joined[0].worker_id] == ["", "paused"]
        (done,) = [e for e in w2.events if isinstance(e, WorkerDone)]
        last = [w for e in hub.events if isinstance(e, RoundClosed)
                for w in e.workers if w.id == joined[0].worker_id][-1]
        assert last.pushed == done.pushed > 0
        assert hub.session.server.version == 24
    finally:
        for worker in (w1, w2):
            if worker is not None:
                worker.close()
        hub.close()

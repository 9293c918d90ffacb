"""The hub's Sent / received counts every byte on the workers' socket, whenever it moved:
the shards a worker downloads before training starts (which no round holds) included."""

from __future__ import annotations

from helpers.hub import T0, Worker, admit, grads, make_hub, send_frames

from computeshare_desktop.events import RoundClosed
from computeshare_desktop.hub import HubCore
from computeshare_desktop.protocol import encode
from computeshare_desktop.protocol.messages import Shard


def fetch(hub: HubCore, w: Worker, offset: int, count: int = 500) -> tuple[int, int]:
    """One SHARD request: its size and the size of the replies it released."""
    request = encode(Shard(w.token, offset, count), [])
    replies = hub.handle(w.peer, request, T0, w.key)
    return sum(len(f) for f in request), sum(len(f) for r in replies for f in r.frames)


def test_a_worker_fetching_its_shard_raises_the_hubs_sent_count() -> None:
    hub = make_hub(workers=2, deadline_floor_s=100.0)
    w = admit(hub, b"w1", T0)  # training has not started: one of two workers is here
    sent, received = hub.traffic.totals()
    assert sent > 0 and received > 0  # its JOIN and the Welcome
    asked, shard = fetch(hub, w, 0)
    assert shard > 500 * 28 * 28  # 500 images of 28x28 and their labels
    assert hub.traffic.totals() == (sent + shard, received + asked)


def test_sent_over_the_session_holds_what_no_round_did() -> None:
    """The first round's bytes_out leaves out the shards downloaded before training; the
    hub's total does not: it holds every round's bytes and every shard's."""
    hub = make_hub(workers=2, deadline_floor_s=100.0)
    workers = [admit(hub, b"w%d" % i, T0) for i in (1, 2)]
    shards = sum(fetch(hub, w, offset)[1] for w in workers
                 for offset in range(0, w.welcome.shard_size, 500))
    assert hub.traffic.sent > shards > len(hub.train_set) * 28 * 28  # every image, once
    for w in workers:
        w.pull(hub, T0)  # both ready: training starts
    for w, g in zip(workers, grads(hub, 2), strict=True):
        w.push(hub, T0 + 0.1, g)
    (first,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert first.data_bytes == shards
    assert hub.traffic.sent >= first.bytes_out + shards
    assert hub.traffic.received > first.bytes_in  # the JOINs and SHARD requests too
    received = hub.traffic.received
    assert send_frames(hub, b"stranger", [b"garbage"], T0 + 0.2)  # refused: it came still
    assert hub.traffic.received == received + len(b"garbage")

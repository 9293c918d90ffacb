"""Each round counts the payloads it needed apart from the bytes that crossed: a request
sent twice (a timeout too short) shows as the difference."""

from __future__ import annotations

from helpers.hub import T0, grads, make_hub, start_training

from computeshare_desktop.codec import get_codec
from computeshare_desktop.events import RoundClosed


def extra(event: RoundClosed) -> int:
    return event.bytes_in + event.bytes_out - event.payload_bytes


def test_a_push_or_pull_sent_twice_adds_bytes_but_no_payload() -> None:
    hub = make_hub(workers=2, deadline_floor_s=100.0)
    a, b = start_training(hub)
    g = grads(hub, 2)
    push = len(get_codec("raw").encode(g[0]))
    a.push(hub, T0 + 0.1, g[0])
    b.push(hub, T0 + 0.3, g[1])
    a.pull(hub, T0 + 1.0, after=0)
    b.pull(hub, T0 + 1.2, after=0)
    (clean,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert 0 < extra(clean) < 0.02 * clean.payload_bytes  # headers only
    a.push(hub, T0 + 1.3, g[0])
    a.push(hub, T0 + 1.35, g[0])  # the same push again: DUPLICATE
    b.push(hub, T0 + 1.4, g[1])
    a.pull(hub, T0 + 2.0, after=1)
    a.pull(hub, T0 + 2.1, after=1)  # the model twice in one round
    b.pull(hub, T0 + 2.2, after=1)
    a.push(hub, T0 + 2.3, g[0])
    b.push(hub, T0 + 2.4, g[1])
    doubled, later = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert extra(doubled) > 0.9 * push
    model = (later.payload_bytes - 2 * push) / 2  # one per worker
    assert model > 0 and extra(later) > 0.9 * model

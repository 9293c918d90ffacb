"""Who may talk on the encrypted socket: paired keys only, tokens bound to their key, and kick."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.hub import (T0, TORCH, admit, decode_replies, fake_key, grads, make_hub, only,
                         reject_code, send, start_training)

from computeshare_desktop.codec import get_codec
from computeshare_desktop.events import RoundClosed, WorkerLeft
from computeshare_desktop.hub.allowlist import Allowlist, KeysChanged
from computeshare_desktop.hub.keeping import keep
from computeshare_desktop.hub.outputs import ALLOWED_FILE, OutputDir
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.messages import (Ack, Bye, Join, Ping, Pong, Pull, Push,
                                                    Shard, Welcome)

STRANGER = fake_key(b"stranger")


def test_nothing_gets_past_a_key_that_never_paired() -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    grad = get_codec("raw").encode(grads(hub, 1)[0])
    hub.drain_events()
    push = encode(Push(w1.token, 0, "raw", hub.server.numel, 1.0, 8, 0, 1.0, 0.0), [grad, b""])
    requests: list[list[Any]] = [
        encode(Join("x", "cpu", TORCH)), encode(Pull(w1.token, -1, 10, hub.fingerprint)), push,
        encode(Ping(w1.token)), encode(Shard(w1.token, 0, 10)), encode(Bye(w1.token)),
        [b"garbage"], []]
    for key in (STRANGER, None):
        for frames in requests:
            reply = only(decode_replies(hub.handle(b"x", frames, T0 + 0.1, key)))
            assert reject_code(reply) is RejectCode.NOT_PAIRED and reply.retry_after == 0.0
    assert len(hub.members) == 2 and hub.round.contributions == {} and hub.server.version == 0
    kinds = {e.kind for e in hub.drain_events()}
    assert kinds == {"rejected"}
    assert isinstance(only(w1.ping(hub, T0 + 0.2)), Pong)  # the real workers never noticed


def test_a_token_only_works_with_the_key_it_joined_with() -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    grad = grads(hub, 1)[0]
    for msg in (Ping(w1.token), Pull(w1.token, -1, 10, hub.fingerprint), Bye(w1.token),
                Shard(w1.token, 0, 10)):
        reply = only(send(hub, w2.peer, msg, T0, key=w2.key))  # an allowed key, not w1's
        assert reject_code(reply) is RejectCode.UNKNOWN_WORKER, msg
    stolen = Push(w1.token, 0, "raw", grad.numel(), 1.0, 8, 0, 1.0, 0.0)
    reply = only(send(hub, w2.peer, stolen, T0, [get_codec("raw").encode(grad), b""],
                      key=w2.key))
    assert reject_code(reply) is RejectCode.UNKNOWN_WORKER
    assert len(hub.members) == 2 and hub.round.contributions == {}
    # the key, not the connection: the same key from another peer id is still w1
    assert isinstance(only(send(hub, b"reconnected", Ping(w1.token), T0, key=w1.key)), Pong)


def test_kick_revokes_the_key_frees_the_shard_and_spares_the_others() -> None:
    hub = make_hub(deadline_floor_s=100.0, long_poll_ms=60_000)
    w1, w2 = start_training(hub)
    assert isinstance(only(w2.push(hub, T0 + 0.1, grads(hub, 1)[0])), Ack)  # waits for w1
    assert w1.pull(hub, T0 + 0.1, after=0, wait_ms=60_000) == []  # w1 parks a long-poll
    hub.drain_events()
    assert hub.kick(w1.welcome.worker_id) is True
    assert w1.key not in hub.allowlist and w2.key in hub.allowlist
    assert [m.worker_id for m in hub.members.members()] == [w2.welcome.worker_id]
    assert hub.members.free_shard() == w1.welcome.shard
    left = [e for e in hub.drain_events() if isinstance(e, WorkerLeft)]
    assert [(e.worker.id, e.reason) for e in left] == [(w1.welcome.worker_id, "kicked")]
    for msg in (Ping(w1.token), Join("w1", "cpu", TORCH), Pull(w1.token, -1, 10, hub.fingerprint)):
        assert reject_code(only(send(hub, w1.peer, msg, T0 + 0.2))) is RejectCode.BANNED
    # the round no longer waits for w1: the next tick closes it on w2's gradient alone, and
    # w1's parked PULL is told to rejoin rather than sent the new model
    out = hub.tick(T0 + 0.3)
    assert hub.server.version == 1
    (event,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert (event.contributors, event.complete) == (1, True)
    told = decode_replies(out)
    assert [o.peer for o in told] == [w1.peer]
    assert reject_code(told[0].msg) is RejectCode.UNKNOWN_WORKER
    assert isinstance(only(w2.ping(hub, T0 + 0.4)), Pong)
    assert hub.kick(w1.welcome.worker_id) is False and hub.kick(999) is False
    w3 = admit(hub, b"w3", T0 + 0.5)  # the freed shard goes to the next worker
    assert (w3.welcome.shard, w3.welcome.worker_id) == (w1.welcome.shard, 3)


def test_kick_removes_every_worker_on_that_key() -> None:
    hub = make_hub(workers=3)
    w1 = admit(hub, b"w1", T0)
    twin = only(send(hub, b"w1-second-process", Join("w1b", "cpu", TORCH), T0, key=w1.key))
    assert isinstance(twin, Welcome) and twin.shard == 1
    w3 = admit(hub, b"w3", T0)
    hub.drain_events()
    assert hub.kick(twin.worker_id) is True
    left = sorted((e.worker.id, e.reason) for e in hub.drain_events()
                  if isinstance(e, WorkerLeft))
    assert left == [(w1.welcome.worker_id, "kicked"), (twin.worker_id, "kicked")]
    assert [m.worker_id for m in hub.members.members()] == [w3.welcome.worker_id]
    assert len(hub.allowlist) == 1 and w3.key in hub.allowlist
    assert isinstance(only(w3.ping(hub, T0)), Pong)
    assert reject_code(only(w1.ping(hub, T0))) is RejectCode.BANNED  # told it was removed


def test_the_session_keeps_every_change_and_a_resume_reads_it_back(tmp_path: Path) -> None:
    """The allowlist writes nothing; what it queues (take_changes) is what the session
    writes to allowed_workers.json, and what a resumed session reads (not its removals)."""
    out = OutputDir(tmp_path / "sub")
    allow = Allowlist()
    a, b = fake_key(b"a"), fake_key(b"b")
    allow.add(a, "alice")
    allow.add(b, "bob", "192.168.1.20")
    changes = allow.take_changes()
    assert [type(c) for c in changes] == [KeysChanged]  # the latest set only
    keep(changes, out, None, None, lambda what, write, *values: write(*values))
    assert out.read_allowed() == ({a: "alice", b: "bob"}, {b: "192.168.1.20"})
    assert allow.take_changes() == []
    assert allow.remove(a) is True and allow.remove(a) is False
    allow.ban(b)
    keep(allow.take_changes(), out, None, None, lambda what, write, *values: write(*values))
    assert allow.banned(b) and allow.address_banned("192.168.1.20")
    again = Allowlist(*out.read_allowed())  # a resumed session: its keys, not its removals
    assert a not in again and b not in again and not again.banned(b)
    assert not again.address_banned("192.168.1.20")  # (tests/hub/test_hub_removal.py)
    path = out.path / ALLOWED_FILE
    path.write_text(json.dumps({a: "alice"}), encoding="utf-8")  # the first format still loads
    assert a in Allowlist(*out.read_allowed())
    old = {"keys": {a: "alice"}, "banned": [b], "banned_addresses": ["192.168.1.20"]}
    path.write_text(json.dumps(old), encoding="utf-8")  # a file of the earlier story
    assert a in Allowlist(*out.read_allowed()) and not Allowlist(*out.read_allowed()).banned(b)
    for damaged in ("[1, 2]", "not json", json.dumps({"keys": [a]}),
                    json.dumps({"keys": {a: 5}})):
        path.write_text(damaged, encoding="utf-8")
        assert out.read_allowed()[0] == {}  # pair with the PIN again, nothing raised
    memory = Allowlist()
    memory.add(a, "alice")
    assert a in memory and memory.name(b) is None and 5 not in memory

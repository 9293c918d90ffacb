"""The doctor's network check on the hub side (hub/probe.py through HubCore): a stranger's
throwaway key gets a short, capped look at the encrypted port, for PROBE only."""

from __future__ import annotations

from helpers.hub import (HUB_KEY, SESSION_ID, T0, decode_replies, fake_key, make_hub, only,
                         reject_code, send, start_training)

from computeshare_desktop.hub.probe import (MAX_GRANTS, PROBE_MAX_REQUESTS, PROBE_TTL_S,
                                            SOURCE_INTERVAL_S)
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.messages import (PROBE_MAX_BYTES, Join, Probe, ProbeReply,
                                                    Reject)

PROBER = fake_key(b"doctor")


def ask(hub, key: str, now: float, source: str = "10.0.0.9") -> object:
    frames = encode(Probe(key=key, size=0), [b""])
    return only(decode_replies(hub.handle_pairing(b"doc", frames, now, source)))


def test_a_granted_key_probes_the_encrypted_port_and_nothing_else() -> None:
    hub = make_hub()
    grant = ask(hub, PROBER, T0)
    assert isinstance(grant, ProbeReply)
    assert (grant.hub_key, grant.session_id, grant.numel) == (HUB_KEY, SESSION_ID,
                                                               hub.server.numel)
    assert hub.probes.allows(PROBER, T0) and not hub.probes.allows(fake_key(b"x"), T0)
    outs = send(hub, b"doc", Probe(key="", size=1000), T0 + 0.1, [b"u" * 5000], key=PROBER)
    assert isinstance(outs[0].msg, ProbeReply) and outs[0].msg.size == 1000
    assert bytes(outs[0].body[0]) == bytes(1000)
    # a probing key is no paired machine: it cannot join
    assert reject_code(only(send(hub, b"doc", Join("x", "cpu", "2"), T0 + 0.2,
                                 key=PROBER))) is RejectCode.MALFORMED
    assert len(hub.members) == 0


def test_probes_are_capped_in_size_count_and_time() -> None:
    hub = make_hub()
    ask(hub, PROBER, T0)
    big = send(hub, b"doc", Probe(key="", size=PROBE_MAX_BYTES + 1), T0, [b""], key=PROBER)
    assert reject_code(only(big)) is RejectCode.TOO_LARGE
    for _ in range(PROBE_MAX_REQUESTS - 1):
        send(hub, b"doc", Probe(key="", size=0), T0, [b""], key=PROBER)
    assert not hub.probes.allows(PROBER, T0)
    assert reject_code(only(send(hub, b"doc", Probe(key="", size=0), T0, [b""],
                                 key=PROBER))) is RejectCode.NOT_PAIRED
    other = fake_key(b"doctor 2")
    ask(hub, other, T0 + 5)
    assert not hub.probes.allows(other, T0 + 5 + PROBE_TTL_S)


def test_grants_are_rate_limited_per_source_and_few_at_once() -> None:
    hub = make_hub()
    assert isinstance(ask(hub, PROBER, T0), ProbeReply)
    again = ask(hub, fake_key(b"again"), T0 + 0.1)
    assert isinstance(again, Reject) and again.code == RejectCode.BUSY.value
    for i in range(MAX_GRANTS - 1):
        assert isinstance(ask(hub, fake_key(b"k%d" % i), T0 + 1, f"10.0.1.{i}"), ProbeReply)
    full = ask(hub, fake_key(b"one more"), T0 + 1, "10.0.2.1")
    assert isinstance(full, Reject) and full.code == RejectCode.BUSY.value
    assert isinstance(ask(hub, fake_key(b"later"), T0 + PROBE_TTL_S + SOURCE_INTERVAL_S,
                          "10.0.2.1"), ProbeReply)
    bad = ask(hub, "short", T0 + 100, "10.0.3.1")
    assert isinstance(bad, Reject) and bad.code == RejectCode.MALFORMED.value


def test_a_probe_during_training_leaves_the_round_alone() -> None:
    hub = make_hub()
    start_training(hub)
    before = (hub.round.bytes_in, hub.round.bytes_out, dict(hub.traffic.counts))
    ask(hub, PROBER, T0)
    send(hub, b"doc", Probe(key="", size=100_000), T0, [b"x" * 100_000], key=PROBER)
    assert (hub.round.bytes_in, hub.round.bytes_out, dict(hub.traffic.counts)) == before

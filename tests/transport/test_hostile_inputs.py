"""Hostile and broken input sent to a running hub: each gets its code, training goes on."""

from __future__ import annotations

import torch
import zstandard

from computeshare_desktop.codec import get_codec
import pytest

from computeshare_desktop.events import Rejected
from computeshare_desktop.protocol import RejectCode, decode, encode
from computeshare_desktop.protocol.messages import Bye, Join, Model, Pull, Push, Reject, Welcome
from computeshare_desktop.transport import Identity
from helpers.hub import TORCH
from helpers.net import PIN, Raw, RunningHub, WorkerThread, pair, wait_for
from helpers.portable import peak_rss_bytes


def push(raw: Raw, token: str, version: int | None, payload: bytes, *, numel: int,
         codec: str = "raw", loss: float = 1.0, hub: RunningHub | None = None) -> object:
    """Push ``payload``; version None means the hub's current version."""
    if version is None:
        assert hub is not None
        version = hub.session.server.version
    msg = Push(token, version, codec, numel, loss, 8, 0, 1.0, 0.0)
    return decode(raw.send(encode(msg, [payload, b""])))[0]


def code_of(reply: object) -> RejectCode | None:
    return RejectCode(reply.code) if isinstance(reply, Reject) else None


def test_hostile_inputs_get_codes_and_training_goes_on(tmp_path):
    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(512 * 1024 * 1024))
    assert len(bomb) < 1024 * 1024
    hub = RunningHub(tmp_path, workers=2, rounds=40, batch_size=16, eval_every=0,
                     deadline_floor_s=0.3, codec="raw")
    numel = hub.session.server.numel
    attacker = Identity.generate()
    intruder = Raw(f"tcp://127.0.0.1:{hub.ports.pairing}")  # the pairing port, unencrypted
    unpaired = Raw(hub.address, identity=Identity.generate(), hub_key=hub.identity.public)
    raw = None
    worker = None
    try:
        reply, key = pair(hub.port, "000000", "guesser", attacker)
        assert code_of(reply) is RejectCode.BAD_PIN and key is None
        assert code_of(decode(intruder.send([b"\x00garbage", b"more"]))[0]) is RejectCode.MALFORMED
        assert code_of(decode(intruder.send([b"CS\x08{}"]))[0]) is RejectCode.VERSION_MISMATCH
        # A peer that never paired cannot even complete the CURVE handshake (and is told so
        # by the handshake, not by a timeout).
        with pytest.raises(PermissionError):
            unpaired.send(encode(Join("sneaky", "cpu", TORCH)), timeout_s=5.0)
        _, hub_key = pair(hub.port, PIN, "attacker", attacker)
        assert hub_key == hub.identity.public
        raw = Raw(hub.address, identity=attacker, hub_key=hub_key)
        welcome, _ = decode(raw.send(encode(Join("attacker", "cpu", TORCH))))
        assert isinstance(welcome, Welcome)
        token = welcome.token
        worker = WorkerThread(hub.port, "honest")
        model, _ = decode(raw.send(encode(Pull(token, -1, 30000, welcome.fingerprint)),
                                   timeout_s=60))
        assert isinstance(model, Model) and model.version == 0

        nan = torch.full((numel,), float("nan"))
        assert code_of(push(raw, token, None, get_codec("raw").encode(nan), numel=numel, hub=hub)) \
            is RejectCode.NOT_FINITE
        zeros = get_codec("raw").encode(torch.zeros(numel))
        assert code_of(push(raw, token, None, zeros, numel=numel, loss=float("inf"), hub=hub)) \
            is RejectCode.NOT_FINITE
        short = push(raw, token, None, zeros[:-4], numel=numel - 1, hub=hub)
        assert code_of(short) is RejectCode.BAD_SHAPE
        peak = peak_rss_bytes()  # None where unknown: the reject code is still checked
        assert code_of(push(raw, token, None, bomb, numel=numel, codec="zstd", hub=hub)) \
            is RejectCode.TOO_LARGE
        after = peak_rss_bytes()
        if peak is not None and after is not None:
            grown_mb = (after - peak) / 2**20
            assert grown_mb < 100, f"peak memory grew by {grown_mb:.0f} MB on a bomb"
        junk = push(raw, token, None, b"\x28\xb5\x2f\xfdjunk", numel=numel, codec="zstd", hub=hub)
        assert code_of(junk) in (RejectCode.BAD_CODEC, RejectCode.TOO_LARGE)
        # A valid push counts once; a second one for the same version does not.
        current = hub.session.server.version
        first = push(raw, token, current, zeros, numel=numel)
        again = push(raw, token, current, zeros, numel=numel)
        assert code_of(first) in (None, RejectCode.STALE)
        assert code_of(again) in (RejectCode.DUPLICATE, RejectCode.STALE)
        wait_for(lambda: hub.session.server.version >= current + 2, 30, "rounds to advance")
        stale = push(raw, token, current, zeros, numel=numel)
        assert code_of(stale) is RejectCode.STALE
        assert stale.version == hub.session.server.version or stale.version > current
        decode(raw.send(encode(Bye(token))))  # leave: the honest worker finishes alone

        result = hub.join(120)
        worker.join()
        assert worker.error is None, worker.error
    finally:
        if worker is not None:
            worker.close()
        for sock in (raw, intruder, unpaired):
            if sock is not None:
                sock.close()
        hub.close()
    assert result is not None and result.version == 40
    assert torch.isfinite(hub.session.server.flat()).all()
    assert [r.version for r in hub.rounds()] == list(range(1, 41))
    codes = {e.code for e in hub.of_kind(Rejected)}
    assert {"BAD_PIN", "MALFORMED", "VERSION_MISMATCH", "NOT_FINITE", "BAD_SHAPE", "TOO_LARGE",
            "STALE"} <= codes
    assert worker.result.pushed >= 30

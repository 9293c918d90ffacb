"""SPAKE2 pairing, both sides in memory: agreement, what each proof covers, bad input, and the
transcript that is no PIN oracle."""

from __future__ import annotations

import pytest

from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.pake import (MSG_HEX_CHARS, HubPairing, WorkerPairing,
                                                key_fingerprint)

PIN, WRONG = "123456", "654321"
PAIR_ID = "ab" * 16
WORKER_KEY = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
HUB_KEY = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
OTHER_KEY = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"


def run_pair(worker_pin: str = PIN, hub_pin: str = PIN, *, name: str = "laptop"
             ) -> tuple[WorkerPairing, HubPairing, str]:
    """One pairing run up to the worker's proof: (worker side, hub side, worker proof)."""
    worker = WorkerPairing(worker_pin)
    hub = HubPairing(hub_pin, worker.msg_a, PAIR_ID)
    return worker, hub, worker.finish(PAIR_ID, hub.msg_b, WORKER_KEY, name)


def bad_pin(call: object, *args: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        call(*args)  # type: ignore[operator]
    assert info.value.code is RejectCode.BAD_PIN


def test_same_pin_both_proofs_verify() -> None:
    worker, hub, proof = run_pair()
    assert len(worker.msg_a) == len(hub.msg_b) == MSG_HEX_CHARS
    assert len(bytes.fromhex(proof)) == 32
    assert hub.verify_worker(WORKER_KEY, "laptop", proof)
    worker.verify_hub(HUB_KEY, "s1", hub.hub_proof(HUB_KEY, "s1"))  # does not raise


def test_wrong_pin_fails_both_ways() -> None:
    worker, hub, proof = run_pair(WRONG, PIN)
    assert not hub.verify_worker(WORKER_KEY, "laptop", proof)
    # a hub (or a man in the middle posing as one) without the PIN cannot answer either
    bad_pin(worker.verify_hub, HUB_KEY, "s1", hub.hub_proof(HUB_KEY, "s1"))


def test_the_worker_proof_covers_key_name_and_run() -> None:
    worker, hub, proof = run_pair()
    assert not hub.verify_worker(OTHER_KEY, "laptop", proof)  # swapped key
    assert not hub.verify_worker(WORKER_KEY, "mallory", proof)  # swapped name
    assert not hub.verify_worker(WORKER_KEY[:-1], "laptop" + WORKER_KEY[-1], proof)  # no splicing
    flipped = proof[:-1] + ("1" if proof[-1] == "0" else "0")  # always a different proof
    assert not hub.verify_worker(WORKER_KEY, "laptop", flipped)
    assert not hub.verify_worker(WORKER_KEY, "laptop", "")
    # the same PIN and messages under another pair_id: another transcript
    other = WorkerPairing(PIN)
    hub2 = HubPairing(PIN, other.msg_a, PAIR_ID)
    assert not hub2.verify_worker(WORKER_KEY, "laptop",
                                  other.finish("cd" * 16, hub2.msg_b, WORKER_KEY, "laptop"))


def test_the_hub_proof_covers_hub_key_and_session() -> None:
    worker, hub, proof = run_pair()
    hub_proof = hub.hub_proof(HUB_KEY, "s1")
    bad_pin(worker.verify_hub, OTHER_KEY, "s1", hub_proof)  # a substituted hub key
    bad_pin(worker.verify_hub, HUB_KEY, "s2", hub_proof)
    bad_pin(worker.verify_hub, HUB_KEY, "s1", "é")
    # roles are separated: the worker's own proof reflected back never passes as the hub's
    bad_pin(worker.verify_hub, WORKER_KEY, "laptop", proof)
    assert hub_proof != proof


def test_every_run_is_fresh() -> None:
    runs = [WorkerPairing(PIN) for _ in range(3)]
    assert len({r.msg_a for r in runs}) == 3  # randomised: msg_a is no function of the PIN
    hubs = [HubPairing(PIN, runs[0].msg_a, PAIR_ID) for _ in range(2)]
    assert hubs[0].msg_b != hubs[1].msg_b
    assert hubs[0].hub_proof(HUB_KEY, "s1") != hubs[1].hub_proof(HUB_KEY, "s1")


def test_a_recorded_transcript_is_no_pin_oracle() -> None:
    """An eavesdropper's recording does not let them check PIN guesses offline, as far as a
    cheap test can show.

    The recording holds everything on the wire: msg_a, msg_b, pair_id, worker_key, name and
    both proofs. The obvious offline attack replays one side's computation for a candidate
    PIN and compares proofs. With SPAKE2 that computation also needs the side's random secret
    scalar, which never crossed the wire; so a replay with the *right* PIN fails exactly as a
    wrong PIN does, and the comparison answers "no" for every candidate. (With the old HMAC
    design the same recording was such an oracle: proof = HMAC(KDF(PIN, salt), transcript).)
    This shows the naive oracle is gone; that no cleverer one exists is SPAKE2's security
    claim (under the CDH assumption), which no unit test can show.
    """
    worker, hub, proof = run_pair(name="laptop")
    hub_proof = hub.hub_proof(HUB_KEY, "s1")
    msg_a, msg_b = worker.msg_a, hub.msg_b
    assert hub.verify_worker(WORKER_KEY, "laptop", proof)  # a recording of a real pairing
    for candidate in (PIN, WRONG, "000000"):
        as_worker = WorkerPairing(candidate).finish(PAIR_ID, msg_b, WORKER_KEY, "laptop")
        assert as_worker != proof, candidate
        as_hub = HubPairing(candidate, msg_a, PAIR_ID)
        assert not as_hub.verify_worker(WORKER_KEY, "laptop", proof), candidate
        assert as_hub.hub_proof(HUB_KEY, "s1") != hub_proof, candidate


@pytest.mark.parametrize("msg_a", [
    "", "41", "41" + "00" * 33,  # wrong sizes
    "zz" * 33, "é" * 66,  # not hex
    "42" + "00" * 32,  # side B's tag on a non-point
    "00" * 33,  # no side at all
])
def test_hub_side_refuses_malformed_msg_a(msg_a: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        HubPairing(PIN, msg_a, PAIR_ID)
    assert info.value.code is RejectCode.MALFORMED


def test_a_message_reflected_back_is_refused() -> None:
    worker = WorkerPairing(PIN)
    msg_b = HubPairing(PIN, worker.msg_a, PAIR_ID).msg_b
    with pytest.raises(RemoteProtocolError) as info:
        HubPairing(PIN, msg_b, PAIR_ID)  # the hub's own kind of message, sent to a hub
    assert info.value.code is RejectCode.MALFORMED
    for msg_b in (worker.msg_a, "zz" * 33, ""):
        with pytest.raises(RemoteProtocolError) as info:
            WorkerPairing(PIN).finish(PAIR_ID, msg_b, WORKER_KEY, "w")
        assert info.value.code is RejectCode.MALFORMED


def test_verify_hub_before_finish_is_malformed() -> None:
    with pytest.raises(RemoteProtocolError) as info:
        WorkerPairing(PIN).verify_hub(HUB_KEY, "s1", "00" * 32)
    assert info.value.code is RejectCode.MALFORMED


def test_key_fingerprint_is_short_stable_and_distinct() -> None:
    fp = key_fingerprint(HUB_KEY)
    assert fp == key_fingerprint(HUB_KEY) and len(bytes.fromhex(fp)) == 8
    assert fp != key_fingerprint(OTHER_KEY)
    assert len(key_fingerprint("\udc80")) == 16  # whatever a peer sends, no crash

"""The worker's side of one pairing run, for the core: SPAKE2 with the PIN, and the check of
the hub's answer. Pure (see protocol/pake.py for the exchange)."""

from __future__ import annotations

from ..errors import RejectedError, RemoteProtocolError
from ..protocol import RejectCode
from ..protocol.messages import Paired, PairFinish, PairReply, PairStart
from ..protocol.pake import WorkerPairing, key_fingerprint

MIN_PAUSE_S, MAX_PAUSE_S = 0.5, 60.0  # how long a lock-out or busy answer is waited out


def pause_for(retry_after: float) -> float:
    """The wait before a fresh run after LOCKED_OUT or BUSY: the hub's, within bounds."""
    return min(max(retry_after, MIN_PAUSE_S), MAX_PAUSE_S)


class PairingRun:
    """One run: PAIR_START, then PAIR_FINISH proving ``worker_key`` and ``name``, then the
    hub's PAIRED, checked."""

    def __init__(self, pin: str, name: str, worker_key: str) -> None:
        self._spake = WorkerPairing(pin)
        self.name = name
        self.worker_key = worker_key

    def start(self) -> PairStart:
        return PairStart(msg_a=self._spake.msg_a, name=self.name)

    def finish(self, reply: PairReply) -> PairFinish:
        """RemoteProtocolError when the hub's SPAKE2 message is not one."""
        proof = self._spake.finish(reply.pair_id, reply.msg_b, self.worker_key, self.name)
        return PairFinish(pair_id=reply.pair_id, worker_key=self.worker_key, proof=proof)

    def verify(self, paired: Paired, expected_key: str | None) -> str:
        """The hub key's fingerprint once the hub proved it knows the PIN (else BAD_PIN) and
        its key is the one an advert announced, if any (else MALFORMED)."""
        try:
            self._spake.verify_hub(paired.hub_key, paired.session_id, paired.proof)
        except RemoteProtocolError as exc:
            raise RejectedError(RejectCode.BAD_PIN, exc.detail) from None
        fingerprint = key_fingerprint(paired.hub_key)
        if expected_key and fingerprint != expected_key:
            raise RejectedError(RejectCode.MALFORMED,
                                "the hub's key does not match the advertised session")
        return fingerprint

"""Helpers for driving ``HubCore`` directly: frames in, decoded replies out, a fake clock.

A fake worker is a peer id plus a fixed fake CURVE public key derived from it. It pairs the
way a worker's core does (``worker/pairing.py``), over ``hub.handle_pairing`` with a real
``WorkerPairing``, then sends JOIN and everything after it through ``hub.handle`` with that
key, as the transport would after the CURVE handshake.

Not a test module: tests import it from the helpers package (pyproject puts tests/ on pythonpath).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch

from computeshare_desktop.codec import get_codec
from computeshare_desktop.data import load_dataset
from computeshare_desktop.graph import torch_release
from computeshare_desktop.hub import HubConfig, HubCore, Reply
from computeshare_desktop.hub.allowlist import Allowlist, PairedView
from computeshare_desktop.hub.blocked import BlockedMachines
from computeshare_desktop.hub.keeping import keep
from computeshare_desktop.hub.outputs import OutputDir
from computeshare_desktop.hub.paired_machines import PairedMachines
from computeshare_desktop.hub.trainer import ParameterServer
from computeshare_desktop.models import build_model, fingerprint
from computeshare_desktop.protocol import RejectCode, decode, encode
from computeshare_desktop.protocol.messages import (Join, Paired, PairFinish, PairReply,
                                                    PairStart, Ping, Pull, Push, Reject,
                                                    Welcome)
from computeshare_desktop.protocol.pake import WorkerPairing
from helpers.clock import T0

PIN = "123456"
WRONG = "654321"
SESSION_ID = "s1"
TORCH = torch_release()  # what a worker's JOIN says it runs

Z85_CHARS = ("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
             ".-:+=^!/*?&<>()[]{}@%$#")


def z85(data: bytes) -> str:
    """Z85-encode ``data`` (a multiple of 4 bytes), as zmq.utils.z85 does, without zmq."""
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i:i + 4], "big")
        out += [Z85_CHARS[value // 85**k % 85] for k in range(4, -1, -1)]
    return "".join(out)


def fake_key(peer: bytes) -> str:
    """The fixed fake CURVE public key of fake peer ``peer`` (40 Z85 characters)."""
    return z85(hashlib.sha256(b"fake-curve-key:" + peer).digest())


HUB_KEY = fake_key(b"the hub")


def train_set() -> Any:
    return load_dataset("mnist-sample", "train")


def make_hub(*, data: Any = None, held: dict[str, int] | None = None,
             allowlist: Allowlist | None = None, **overrides: Any) -> HubCore:
    """A hub built the way ``hub/session.py`` builds it (2 workers, 5 rounds by default);
    ``held``: the shard each worker held, as a checkpoint gives it back; ``allowlist``: the
    session's (a fresh one in memory by default)."""
    settings: dict[str, Any] = {"workers": 2, "rounds": 5, "batch_size": 8}
    settings.update(overrides)
    config = HubConfig(**settings)
    data = train_set() if data is None else data
    model = build_model(config.model, data.info, seed=config.seed)
    server = ParameterServer.for_session(model, config)
    return HubCore(config, pin=PIN, session_id=SESSION_ID, hub_key=HUB_KEY, train_set=data,
                   server=server, fingerprint=fingerprint(model),
                   allowlist=Allowlist() if allowlist is None else allowlist,
                   held=held)


@dataclass(frozen=True)
class Out:
    """One decoded reply."""

    peer: bytes
    msg: Any
    body: list[Any] = field(default_factory=list)


def decode_replies(replies: Sequence[Reply]) -> list[Out]:
    """Decode what the hub sends; every reply must be a valid message."""
    out = []
    for reply in replies:
        msg, body = decode(reply.frames)
        out.append(Out(reply.peer, msg, body))
    return out


def send_frames(hub: HubCore, peer: bytes, frames: Sequence[Any], now: float,
                key: str | None = None) -> list[Out]:
    """Raw frames into the encrypted socket, from ``key`` (default: ``peer``'s own key)."""
    return decode_replies(hub.handle(peer, frames, now, fake_key(peer) if key is None else key))


def send(hub: HubCore, peer: bytes, msg: Any, now: float, frames: Sequence[bytes] = (), *,
         key: str | None = None) -> list[Out]:
    """Encode ``msg`` (plus binary frames) and hand it to the hub; the decoded replies."""
    return send_frames(hub, peer, encode(msg, frames), now, key)


def only(outs: list[Out], peer: bytes | None = None) -> Any:
    """The single reply (to ``peer`` when given); fails when there are more or none."""
    if peer is not None:
        outs = [o for o in outs if o.peer == peer]
    assert len(outs) == 1, outs
    return outs[0].msg


def reject_code(msg: Any) -> RejectCode:
    assert isinstance(msg, Reject), msg
    return RejectCode(msg.code)


# ----------------------------------------------------------------- pairing
def pairing_send(hub: HubCore, peer: bytes, msg: Any, now: float,
                 source: str | None = None) -> Any:
    """One message into the pairing socket; the single reply, which goes to ``peer``.

    ``source`` is the sender's address (default: one address per peer name)."""
    source = source or f"lan/{peer.decode(errors='replace')}"
    return only(decode_replies(hub.handle_pairing(peer, encode(msg), now, source)), peer)


def pair_start(hub: HubCore, peer: bytes, now: float, *, pin: str = PIN,
               name: str | None = None, source: str | None = None
               ) -> tuple[WorkerPairing, Any]:
    """PAIR_START with a fresh run for ``pin`` (from ``source``, see pairing_send); the run
    and the hub's answer."""
    run = WorkerPairing(pin)
    return run, pairing_send(hub, peer, PairStart(run.msg_a, name or peer.decode()), now,
                             source)


def finish_message(run: WorkerPairing, reply: PairReply, key: str, name: str) -> PairFinish:
    """The PAIR_FINISH a worker sends after ``reply``, proving ``key`` and ``name``."""
    proof = run.finish(reply.pair_id, reply.msg_b, key, name)
    return PairFinish(pair_id=reply.pair_id, worker_key=key, proof=proof)


def pair(hub: HubCore, peer: bytes, now: float, *, pin: str = PIN, name: str | None = None,
         key: str | None = None, source: str | None = None) -> Any:
    """The whole pairing of ``peer`` (from ``source``, see pairing_send): the hub's last
    answer (Paired, checked, or a Reject)."""
    name = name or peer.decode()
    run, reply = pair_start(hub, peer, now, pin=pin, name=name, source=source)
    if not isinstance(reply, PairReply):
        return reply
    msg = finish_message(run, reply, fake_key(peer) if key is None else key, name)
    paired = pairing_send(hub, peer, msg, now, source)
    if isinstance(paired, Paired):
        run.verify_hub(paired.hub_key, paired.session_id, paired.proof)  # raises if forged
    return paired


def join(hub: HubCore, peer: bytes, now: float, *, pin: str = PIN, name: str | None = None,
         device: str = "cpu") -> Any:
    """Pair ``peer`` unless its key is allowed already, then JOIN; the hub's last answer."""
    if fake_key(peer) not in hub.allowlist:
        paired = pair(hub, peer, now, pin=pin, name=name)
        if not isinstance(paired, Paired):
            return paired
    return only(send(hub, peer, Join(name or peer.decode(), device, TORCH), now))


# ----------------------------------------------------------------- workers
@dataclass
class Worker:
    """A fake worker: its peer id and its Welcome (its key follows from the peer id)."""

    peer: bytes
    welcome: Welcome
    last_push_bytes: int = 0  # the size of the frames of the latest push

    @property
    def token(self) -> str:
        return self.welcome.token

    @property
    def key(self) -> str:
        return fake_key(self.peer)

    def pull(self, hub: HubCore, now: float, after: int = -1, wait_ms: int = 2000) -> list[Out]:
        return send(hub, self.peer, Pull(self.token, after, wait_ms, hub.fingerprint), now)

    def ping(self, hub: HubCore, now: float) -> list[Out]:
        return send(hub, self.peer, Ping(self.token), now)

    def push(self, hub: HubCore, now: float, grad: torch.Tensor, *, version: int | None = None,
             loss: float = 1.0, samples: int = 8, codec: str = "raw",
             numel: int | None = None, payload: bytes | None = None,
             compute_ms: float = 5.0, steps: int | None = None,
             bandwidth: float = 0.0, stats: bytes = b"") -> list[Out]:
        data = get_codec(codec).encode(grad) if payload is None else payload
        msg = Push(token=self.token, version=hub.server.version if version is None else version,
                   codec=codec, numel=grad.numel() if numel is None else numel, loss=loss,
                   samples=samples,
                   steps=hub.config.local_steps if steps is None else steps,
                   compute_ms=compute_ms, bandwidth=bandwidth)
        frames = encode(msg, [data, stats])
        self.last_push_bytes = sum(len(f) for f in frames)
        return send_frames(hub, self.peer, frames, now)


def admit(hub: HubCore, peer: bytes, now: float) -> Worker:
    welcome = join(hub, peer, now)
    assert isinstance(welcome, Welcome), welcome
    return Worker(peer, welcome)


def start_training(hub: HubCore, now: float = T0) -> list[Worker]:
    """Admit ``config.workers`` workers and have each PULL; training has started after."""
    workers = [admit(hub, b"w%d" % i, now) for i in range(1, hub.config.workers + 1)]
    for w in workers:
        w.pull(hub, now)
    assert hub.state.value == "training"
    return workers


def grads(hub: HubCore, count: int, seed: int = 0) -> list[torch.Tensor]:
    """``count`` reproducible random gradients of the hub's model size."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(hub.server.numel, generator=gen) * 0.1 for _ in range(count)]


def full_round(hub: HubCore, workers: list[Worker], now: float, seed: int = 0) -> list[Out]:
    """Every worker pushes a valid gradient for the current version; all replies."""
    out: list[Out] = []
    for w, g in zip(workers, grads(hub, len(workers), seed), strict=True):
        out += w.push(hub, now, g)
    return out


def weights(hub: HubCore) -> torch.Tensor:
    return hub.server.flat()


def optimizer_copy(hub: HubCore) -> tuple[torch.nn.Module, torch.optim.SGD, list[Any]]:
    """A copy of the hub's model with its own SGD, to replay steps by hand."""
    model = copy.deepcopy(hub.server.model)
    params = [p for p in model.parameters() if p.requires_grad]
    return model, torch.optim.SGD(params, lr=hub.config.lr, momentum=hub.config.momentum), params


def kept_hub(folder: Path, *, paired: PairedMachines | None = None,
             blocked: BlockedMachines | None = None, resume: bool = False,
             **overrides: Any) -> HubCore:
    """A hub core whose allowlist is built as HubSession builds it, from the session's
    folder (a resumed one's keys) and the hub's per-user lists, and kept as it keeps it:
    after each request, pairing, kick and Allow again (a write error raises here)."""
    out = OutputDir(folder)
    keys, addresses = out.read_allowed() if resume else ({}, {})
    allowlist = Allowlist(keys, addresses, blocked=blocked.machines() if blocked else (),
                          paired=PairedView(tuple(paired.machines()), paired.removed())
                          if paired is not None else None)
    if not resume:
        allowlist.clear()
    hub = make_hub(allowlist=allowlist, **overrides)

    def kept(inner: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = inner(*args, **kwargs)
            keep(hub.allowlist.take_changes(), out, paired, blocked,
                 lambda what, write, *values: write(*values))
            return result
        return call
    for name in ("handle", "handle_pairing", "kick", "allow_again"):
        setattr(hub, name, kept(getattr(hub, name)))
    keep(allowlist.take_changes(), out, paired, blocked,
         lambda what, write, *values: write(*values))
    return hub

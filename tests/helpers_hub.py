"""Helpers for driving ``HubCore`` directly: frames in, decoded replies out, a fake clock.

Not a test module: tests import it by name (pyproject puts tests/ on pythonpath).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from computeshare_desktop.codec import get_codec
from computeshare_desktop.data import load_dataset
from computeshare_desktop.hub import HubConfig, HubCore, Reply
from computeshare_desktop.hub.trainer import ParameterServer
from computeshare_desktop.models import build_model, fingerprint
from computeshare_desktop.protocol import RejectCode, auth, decode, encode
from computeshare_desktop.protocol.messages import (Auth, Challenge, Hello, Ping, Pull, Push,
                                                    Reject, Welcome)

PIN = "123456"
SESSION_ID = "s1"
SALT = auth.new_salt()  # one per test run: the scrypt key below is derived once
T0 = 1000.0  # the fake clock starts here, so "0" never hides a missing `now`


@functools.lru_cache(maxsize=None)
def session_key(pin: str, salt: str = SALT) -> bytes:
    return auth.derive_key(pin, salt)


def train_set() -> Any:
    return load_dataset("mnist-sample", "train")


def make_hub(*, data: Any = None, **overrides: Any) -> HubCore:
    """A hub built the way ``hub/session.py`` builds it (2 workers, 5 rounds by default)."""
    settings: dict[str, Any] = {"workers": 2, "rounds": 5, "batch_size": 8}
    settings.update(overrides)
    config = HubConfig(**settings)
    data = train_set() if data is None else data
    model = build_model(config.model, data.info, seed=config.seed)
    server = ParameterServer(model, base_lr=config.lr, momentum=config.momentum,
                             codec=config.codec)
    return HubCore(config, pin=PIN, session_id=SESSION_ID, salt=SALT, train_set=data,
                   server=server, fingerprint=fingerprint(model))


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


def send(hub: HubCore, peer: bytes, msg: Any, now: float, frames: Sequence[bytes] = ()
         ) -> list[Out]:
    """Encode ``msg`` (plus binary frames) and hand it to the hub; the decoded replies."""
    return decode_replies(hub.handle(peer, encode(msg, frames), now))


def only(outs: list[Out], peer: bytes | None = None) -> Any:
    """The single reply (to ``peer`` when given); fails when there are more or none."""
    if peer is not None:
        outs = [o for o in outs if o.peer == peer]
    assert len(outs) == 1, outs
    return outs[0].msg


def reject_code(msg: Any) -> RejectCode:
    assert isinstance(msg, Reject), msg
    return RejectCode(msg.code)


def challenge(hub: HubCore, peer: bytes, now: float, client_nonce: str | None = None
              ) -> tuple[Challenge, str]:
    nonce = client_nonce or auth.new_nonce()
    msg = only(send(hub, peer, Hello(client_nonce=nonce), now))
    assert isinstance(msg, Challenge)
    return msg, nonce


def auth_message(ch: Challenge, client_nonce: str, *, pin: str = PIN, name: str = "w",
                 device: str = "cpu") -> Auth:
    proof = auth.worker_proof(session_key(pin, ch.salt), ch.session_id, ch.hub_nonce,
                              client_nonce, name)
    return Auth(hub_nonce=ch.hub_nonce, client_nonce=client_nonce, proof=proof, name=name,
                device=device)


def join(hub: HubCore, peer: bytes, now: float, *, pin: str = PIN, name: str | None = None
         ) -> Any:
    """HELLO then AUTH; the hub's answer to AUTH (a Welcome or a Reject)."""
    ch, nonce = challenge(hub, peer, now)
    return only(send(hub, peer, auth_message(ch, nonce, pin=pin, name=name or peer.decode()),
                     now))


@dataclass
class Worker:
    """A fake worker: its peer id and its Welcome."""

    peer: bytes
    welcome: Welcome
    last_push_bytes: int = 0  # the size of the frames of the latest push

    @property
    def token(self) -> str:
        return self.welcome.token

    def pull(self, hub: HubCore, now: float, after: int = -1, wait_ms: int = 2000) -> list[Out]:
        return send(hub, self.peer, Pull(self.token, after, wait_ms, hub.fingerprint), now)

    def ping(self, hub: HubCore, now: float) -> list[Out]:
        return send(hub, self.peer, Ping(self.token), now)

    def push(self, hub: HubCore, now: float, grad: torch.Tensor, *, version: int | None = None,
             loss: float = 1.0, samples: int = 8, codec: str = "raw",
             numel: int | None = None, payload: bytes | None = None,
             compute_ms: float = 5.0) -> list[Out]:
        data = get_codec(codec).encode(grad) if payload is None else payload
        msg = Push(token=self.token, version=hub.server.version if version is None else version,
                   codec=codec, numel=grad.numel() if numel is None else numel, loss=loss,
                   samples=samples, compute_ms=compute_ms)
        frames = encode(msg, [data])
        self.last_push_bytes = sum(len(f) for f in frames)
        return decode_replies(hub.handle(self.peer, frames, now))


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

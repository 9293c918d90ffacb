"""The protocol's exact sizes and an in-process replay of a session: header frames encoded by
``protocol.encode`` with typical values, and the payloads and timings of every round computed
by the hub's and the workers' own classes."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from computeshare_desktop.codec import get_codec
from computeshare_desktop.codec.delta import make_delta
from computeshare_desktop.data import dataset_info, load_dataset
from computeshare_desktop.evaluation import batch_loss
from computeshare_desktop.hub.presets import Mode
from computeshare_desktop.hub.rounds import Contribution, Round
from computeshare_desktop.hub.trainer import ParameterServer
from computeshare_desktop.models import build_model, flat_gradients
from computeshare_desktop.protocol import encode
from computeshare_desktop.protocol.messages import Ack, Model, Ping, Pong, Pull, Push
from computeshare_desktop.sampling import shard_indices, stream_positions
from computeshare_desktop.worker.compute import GradientComputer

from .plan import BATCH, CODECS, DATASET, MODEL, NUMEL, WORKERS

TOKEN, FINGERPRINT = "0" * 32, "0" * 16  # same lengths as auth.new_token() and fingerprint()
CHECK = "0" * 8  # same length as codec.delta.weights_check()
BANDWIDTH = 123456789.01234567  # a measured rate in PUSH: a float repr of typical length
LR = 0.01 * WORKERS  # the step's lr: base lr x samples / batch size


def model_header(v: int, codec: str) -> Model:
    """The MODEL header of version ``v``: a delta from v - 1 (the whole model for v = 0)."""
    return Model(v, codec, NUMEL, v - 1, CHECK, v * BATCH, BATCH, 0, LR, 0.0, codec, 0.01)


def push_header(v: int, codec: str, loss: float, compute_ms: float) -> Push:
    return Push(TOKEN, v, codec, NUMEL, loss, BATCH, 0, compute_ms, BANDWIDTH)


def header_len(message: Any) -> int:
    """Size of the header frame ``message`` encodes to."""
    return len(encode(message, [b""] * type(message).FRAMES)[0])


def header_sizes(codec: str) -> dict[str, int]:
    """Header frame sizes of one round's messages with typical values (3-digit version,
    17-digit float reprs); other rounds differ by a few bytes."""
    loss, compute_ms = 0.12345678901234567, 8.123456789012345
    sizes: dict[str, Any] = {
        "pull": Pull(TOKEN, 149, 2000, FINGERPRINT),
        "model": model_header(150, codec),
        "push": push_header(150, codec, loss, compute_ms),
        "ack": Ack(151),
        "ping": Ping(TOKEN),
        "pong": Pong(150, "training"),
    }
    return {k: header_len(m) for k, m in sizes.items()}


@dataclass
class Replay:
    """The session replayed in-process with the hub's and the workers' own classes.

    Training is seeded and synchronous and both codecs are lossless, so this computes the same
    model versions as every real session: the losses are checked against the metrics, and then
    the payload sizes are those that were on the wire.
    """

    loss: list[float]  # per version v: the mean loss the hub records for round v + 1
    worker_loss: list[list[float]]  # per version: each worker's loss (in its PUSH header)
    push: dict[str, list[list[int]]]  # codec -> per version: each worker's gradient payload
    model: dict[str, list[int]]  # codec -> per version: the weights payload
    parts: dict[str, dict[str, list[float]]]  # codec -> hub/worker step -> seconds per version
    compute: list[float]  # GradientComputer.compute seconds, uncontended


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t


def replay(rounds: int) -> Replay:
    """Run ``rounds`` versions of simplenet/mnist-sample with 2 workers, no sockets."""
    info, train = dataset_info(DATASET), load_dataset(DATASET, "train")
    server = ParameterServer(build_model(MODEL, info, seed=0), base_lr=0.01, momentum=0.9,
                             mode=Mode("zstd", 0.01, 0), batch_size=BATCH)
    workers = []
    for shard in range(WORKERS):
        idx = shard_indices(len(train), WORKERS, shard, 0)
        workers.append(GradientComputer(build_model(MODEL, info), info, torch.device("cpu"),
                                        train.images[idx].contiguous(),
                                        train.labels[idx].contiguous(),
                                        shard=shard, seed=0))
    out = Replay([], [], {c: [] for c in CODECS}, {c: [] for c in CODECS},
                 {c: {} for c in CODECS}, [])
    previous = None
    for version in range(rounds):
        previous = _replay_round(server, workers, version, previous, out)
    return out


def _replay_round(server: ParameterServer, workers: list[GradientComputer], version: int,
                  previous: torch.Tensor | None, out: Replay) -> torch.Tensor:
    """One round; returns the weights it started from (the next round's delta base)."""
    flat = server.flat()

    def note(codec: str, part: str, seconds: float) -> None:
        out.parts[codec].setdefault(part, []).append(seconds)

    for c in CODECS:  # version 0 goes out whole, every later one as a delta
        codec = get_codec(c)
        encode = (functools.partial(codec.encode, flat) if previous is None else
                  functools.partial(make_delta, codec, previous, flat))
        weights, t = _timed(encode)
        out.model[c].append(len(weights))
        note(c, "hub: encode weights", t)
        decode = functools.partial(codec.decode, weights, NUMEL)
        note(c, "worker: decode weights", _timed(decode)[1])
    rnd, losses = Round(version, 0.0), []
    sizes: dict[str, list[int]] = {c: [] for c in CODECS}
    for worker_id, computer in enumerate(workers, start=1):
        update = computer.gradient(flat, version * BATCH, BATCH)
        grad, loss, samples = update.flat, update.loss, update.samples
        losses.append(loss)
        out.compute.append(update.seconds)
        for c in CODECS:
            codec = get_codec(c)
            payload, t = _timed(functools.partial(codec.encode, grad))
            sizes[c].append(len(payload))
            note(c, "worker: encode gradient", t)
            decode = functools.partial(codec.decode, payload, NUMEL)
            note(c, "hub: decode gradient", _timed(decode)[1])
        rnd.add(Contribution(worker_id, worker_id - 1, grad, samples, loss, 0.0), 0.0)
    (grad, loss), t_avg = _timed(rnd.average)
    _, t_step = _timed(functools.partial(server.step, grad, BATCH * len(rnd.contributions)))
    for c in CODECS:
        out.push[c].append(sizes[c])
        note(c, "hub: average", t_avg)
        note(c, "hub: optimizer step", t_step)
    out.loss.append(loss)
    out.worker_loss.append(losses)
    return flat


def real_gradients(model: torch.nn.Module, count: int, versions: range) -> list[torch.Tensor]:
    """Gradients of ``model`` on the batches the two workers train on at ``versions``."""
    info = dataset_info(DATASET)
    train = load_dataset(DATASET, "train")
    grads = []
    for version in versions:
        for shard in range(WORKERS):
            idx = shard_indices(len(train), WORKERS, shard, 0)
            pos = stream_positions(len(idx), 0, shard, version * BATCH, BATCH)
            model.zero_grad(set_to_none=True)
            batch_loss(model, train.images[idx[pos]], train.labels[idx[pos]], info).backward()
            grads.append(flat_gradients(model))
            if len(grads) >= count:
                return grads
    return grads


def simplenet(state_path: Path | None = None) -> torch.nn.Module:
    model = build_model(MODEL, dataset_info(DATASET), seed=0)
    if state_path is not None:
        model.load_state_dict(torch.load(state_path, map_location="cpu", weights_only=True))
    return model


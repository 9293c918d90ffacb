"""The one model contract: what a worker accepts of a hub's graph, as parts off the wire.

A worker runs ``accept_parts`` on the three parts it fetched (``manifest``, ``program``,
``state``); the hub runs the very same function on the bytes it is about to serve, before
any port opens (``hub/user_model.ship_model``). So a model the hub accepts is one every
worker of the same torch release accepts, and a refusal is the hub's, said before the
session opens, never a surprise on each worker.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.graph.base import GraphRefused
from computeshare_desktop.graph.loader import GraphModel, load_training_graph
from computeshare_desktop.protocol.graphs import (Manifest, decode_manifest, program_sha256,
                                                  state_tensors)

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class AcceptedGraph:
    """A graph that passed every check and was rebuilt, with its running statistics."""

    manifest: Manifest
    model: GraphModel
    stats: list[torch.Tensor]  # the manifest's ``stats`` buffers of the rebuilt module


def read_manifest(data: bytes | bytearray | memoryview, fingerprint: str) -> Manifest:
    """The manifest part, decoded strictly, for the session whose fingerprint it must carry.

    Raises:
        GraphRefused: it does not decode, hold together or match ``fingerprint``.
    """
    try:
        manifest = decode_manifest(data)
    except RemoteProtocolError as exc:
        raise GraphRefused(f"the graph's manifest: {exc.detail}") from None
    if manifest.fingerprint != fingerprint:
        raise GraphRefused("the graph's manifest does not match the hub's fingerprint")
    return manifest


def accept_parts(parts: Mapping[str, bytes | bytearray | memoryview], *, hub_torch: str,
                 fingerprint: str, device: str | torch.device = "cpu") -> AcceptedGraph:
    """Check the three parts of a shipped graph and rebuild the module that trains.

    Args:
        parts: ``manifest``, ``program`` and ``state``, as served (``state`` may be absent
            or empty when the manifest declares no state).
        hub_torch: the torch release the hub announced.
        fingerprint: the session's, as the Welcome says.
        device: where the rebuilt module runs.

    Raises:
        GraphRefused: the first thing refused, as one line; nothing of the graph ran. Any
            other failure on the way (nesting too deep for Python, memory torch could not
            get, an overflow in torch) is a refusal too, naming it: the hub must hear
            GRAPH_REFUSED with a reason, never a worker that just leaves.
    """
    try:
        return _accept_parts(parts, hub_torch=hub_torch, fingerprint=fingerprint,
                             device=device)
    except GraphRefused:
        raise
    except Exception as err:  # RecursionError, MemoryError, torch's RuntimeErrors ...
        log.debug("checking the hub's graph failed", exc_info=True)
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise GraphRefused(f"the graph could not be checked: {type(err).__name__}: "
                           f"{first}") from None


def _accept_parts(parts: Mapping[str, bytes | bytearray | memoryview], *, hub_torch: str,
                  fingerprint: str, device: str | torch.device) -> AcceptedGraph:
    manifest = read_manifest(parts["manifest"], fingerprint)
    program = bytes(parts["program"])
    if program_sha256(program) != manifest.program_sha256:
        raise GraphRefused("the program's sha256 is not the manifest's")
    try:
        state = state_tensors(parts.get("state", b""), manifest)
    except RemoteProtocolError as exc:
        raise GraphRefused(f"the graph's state: {exc.detail}") from None
    return accept_graph(manifest, program, state, hub_torch=hub_torch,
                        fingerprint=fingerprint, device=device)


def accept_graph(manifest: Manifest, program: bytes, state: Mapping[str, torch.Tensor], *,
                 hub_torch: str, fingerprint: str,
                 device: str | torch.device = "cpu") -> AcceptedGraph:
    """``accept_parts`` once the parts are decoded: the graph checked and rebuilt, matched
    against the manifest (fingerprint, op count, running statistics)."""
    model = load_training_graph(program, manifest.trainable, state, hub_torch=hub_torch,
                                aliases=manifest.aliases, device=device,
                                trainable_numel=manifest.trainable_numel)
    if model.fingerprint != fingerprint or model.op_count != manifest.op_count:
        raise GraphRefused("the graph rebuilt here is not the one the hub announced "
                           "(its fingerprint or op count differs)")
    buffers = dict(model.module.named_buffers())
    stats = []
    for name in manifest.stats:
        buffer = buffers.get(name)
        if buffer is None or buffer.dtype != torch.float32:
            raise GraphRefused(f"the running statistic {name!r} is no float32 buffer "
                               f"of the graph")
        stats.append(buffer)
    return AcceptedGraph(manifest, model, stats)

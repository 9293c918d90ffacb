"""A model the hub offers as Python code: run only once its person approved it. No Qt.

The default path never runs a hub's code: a worker gets a checked graph. For a model that
cannot be exported, a hub may offer its source instead (``--offer-code``; the manifest's
``code``). ``CodeFactory`` then looks the pair (hub key, the source's sha256) up in the
person's approvals (``approvals.py``) before anything of the source is written or
imported: an unapproved offer is refused (``CodeNotApproved``, a GraphRefused, so the hub
is told) naming the hash and how to approve it. ``--trust-code SHA256`` approves that
hash for the hub being joined, and is remembered.

Approved code runs with this user's rights, unsandboxed: it is imported from a private
temporary folder (``models.userfile``), ``NAME`` is called with the hub's keyword
arguments, and the module it builds must be the hub's (every tensor's name, shape and
dtype, which of them train: the fingerprint) before the frozen tensors and buffers the hub
sent are loaded into it.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from ..errors import ComputeShareError, ConfigError
from ..graph import GraphRefused, frozen_norms
from ..models import fingerprint
from ..models.userfile import build_from_file
from ..protocol.graphs import CodeSpec, Manifest, code_fingerprint, program_sha256
from ..protocol.messages import Welcome
from .approvals import CodeApprovals
from .compute import Compute, ComputeFactory, GradientComputer, welcome_info
from .graphs import ReceivedGraph
from .recipe import Recipe

log = logging.getLogger(__name__)


class CodeNotApproved(GraphRefused):
    """The hub offers code this machine's person has not approved (for that hub key).
    ``reason`` goes to the hub; the message says how to approve it."""

    def __init__(self, model: str, sha256: str, hub_key: str, trusted: str = "") -> None:
        self.model, self.sha256, self.hub_key, self.trusted = model, sha256, hub_key, trusted
        self.where = None  # the code as a whole, no node of a graph
        if trusted:
            self.reason = (f"the hub offers its model as Python code ({model}) with sha256 "
                           f"{sha256}, not the {trusted} this worker was told to trust")
        else:
            self.reason = (f"the hub offers its model as Python code ({model}, sha256 "
                           f"{sha256}), which this worker's person has not approved for "
                           f"this hub")
        ComputeShareError.__init__(
            self, f"{self.reason}. Nothing of it ran. To run it (it then runs with your "
                  f"rights, unsandboxed), approve it in the app, or join with --trust-code "
                  f"{sha256}")


def code_how(manifest: Manifest) -> str:
    """What ``ModelReceived.how`` says of a model received as code."""
    return f"code approved ({manifest.program_sha256[:12]})"


class CodeFactory:
    """Models the hub offers as code, run only when approved for that hub (or trusted now
    with ``trust``, a sha256, which is then remembered), on one device."""

    def __init__(self, device: torch.device, approvals: CodeApprovals,
                 hub_key: Callable[[], str | None], *, trust: str = "") -> None:
        """``hub_key``: the key of the hub this worker talks to (asked at each check)."""
        self.device = device
        self.approvals = approvals
        self._hub_key = hub_key
        self.trust = trust.lower()
        self._checked: tuple[Welcome, nn.Module, list[nn.Parameter], list[torch.Tensor]] \
            | None = None

    def check(self, welcome: Welcome, graph: ReceivedGraph | None = None) -> None:
        if graph is None or graph.manifest.code is None:
            raise GraphRefused("the hub sent no code for its model")
        m, code = graph.manifest, graph.manifest.code
        welcome_info(welcome)  # data the hub describes wrongly: refused before any code
        sha = program_sha256(graph.program)
        if sha != m.program_sha256:
            raise GraphRefused("the code's sha256 is not the manifest's")
        self._approved(m, sha)
        model = _build(graph.program, code)
        params, stats = _match(model, graph, sha)
        if m.fingerprint != welcome.fingerprint:
            raise GraphRefused("the code's manifest does not match the hub's fingerprint")
        self._checked = (welcome, model, params, stats)

    def build(self, welcome: Welcome, images: torch.Tensor,
              labels: torch.Tensor) -> GradientComputer:
        if self._checked is None or self._checked[0] is not welcome:
            raise GraphRefused("the code was not checked for this session")
        _, model, params, stats = self._checked
        self._checked = None
        computer = GradientComputer(model, welcome_info(welcome), self.device, images, labels,
                                    shard=welcome.shard, seed=welcome.seed,
                                    recipe=Recipe.of(welcome), params=params, stats=stats)
        for name in frozen_norms(model):  # as a graph would: frozen BatchNorm in eval mode
            model.get_submodule(name).eval()
        return computer

    def _approved(self, m: Manifest, sha: str) -> None:
        """Return when ``sha`` may run for this hub; raise CodeNotApproved if not."""
        hub_key = self._hub_key()
        if not hub_key:
            raise GraphRefused("code is offered before the hub's key is known")
        if self.approvals.approved(hub_key, sha):
            return
        if self.trust != sha:
            raise CodeNotApproved(m.model, sha, hub_key, self.trust)
        try:
            self.approvals.approve(hub_key, sha, m.model)
        except OSError as exc:  # it runs all the same: this person said so just now
            log.warning("the approval of %s is not remembered: %s", sha, exc)


class WithCode:
    """A factory that also takes models offered as code: those (the manifest's ``code``)
    go to ``code``, everything else to ``inner`` (by default ``ModelFactory``)."""

    def __init__(self, inner: ComputeFactory, code: CodeFactory) -> None:
        self.inner = inner
        self.code = code
        self._chosen: tuple[Welcome, ComputeFactory] | None = None  # by check()

    def check(self, welcome: Welcome, graph: ReceivedGraph | None = None) -> None:
        offered = graph is not None and graph.manifest.code is not None
        factory: ComputeFactory = self.code if offered else self.inner
        factory.check(welcome, graph)
        self._chosen = (welcome, factory)

    def build(self, welcome: Welcome, images: torch.Tensor, labels: torch.Tensor) -> Compute:
        chosen = self._chosen
        factory = chosen[1] if chosen is not None and chosen[0] is welcome else self.inner
        return factory.build(welcome, images, labels)


def _build(source: bytes, code: CodeSpec) -> nn.Module:
    """Import the approved source from a private folder and build its model."""
    folder = Path(tempfile.mkdtemp(prefix="computeshare-code-"))
    try:
        path = folder / code.file
        path.write_bytes(source)
        offered: dict[str, object] = {k: tuple(v) if isinstance(v, list) else v
                                      for k, v in code.kwargs.items()}
        return build_from_file(path, code.name, offered)
    except ConfigError as exc:
        raise GraphRefused(f"the approved code did not build: {str(exc)[:200]}") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _match(model: nn.Module, graph: ReceivedGraph, sha: str
           ) -> tuple[list[nn.Parameter], list[torch.Tensor]]:
    """Make ``model`` the hub's: which parameters train, the frozen tensors' and buffers'
    values, the fingerprint. Returns the trainable parameters (the flat vector's order)
    and the running statistics.

    Raises:
        GraphRefused: the model built here is not the hub's.
    """
    m = graph.manifest
    params = dict(model.named_parameters())
    tensors: dict[str, torch.Tensor] = {**params, **dict(model.named_buffers())}
    if set(tensors) != set(m.trainable) | {e.name for e in m.state} \
            or not set(m.trainable) <= params.keys():
        raise GraphRefused("the model the code builds here has other tensors than the hub's")
    with torch.no_grad():
        for name, value in graph.state.items():
            if tensors[name].shape != value.shape or tensors[name].dtype != value.dtype:
                raise GraphRefused(f"tensor {name!r} is {tuple(tensors[name].shape)} here, "
                                   f"{tuple(value.shape)} on the hub")
            tensors[name].copy_(value)
    for name, p in params.items():
        p.requires_grad_(name in m.trainable)
    if code_fingerprint(sha, fingerprint(model), m.trainable) != m.fingerprint:
        raise GraphRefused("the model the code builds here is not the hub's (its "
                           "fingerprint differs)")
    stats = [tensors[name] for name in m.stats]
    if any(s.dtype != torch.float32 for s in stats):
        raise GraphRefused("a running statistic is no float32 buffer of the model")
    return [params[name] for name in m.trainable], stats

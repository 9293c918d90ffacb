"""The session's model on the hub, and how workers get it.

``build_hub_model`` builds what ``--model`` names (a built-in, ``torchvision:ARCH``, the
user's ``PATH.py:NAME`` or a ``PATH.pt2`` program: ``models.build_model_from_spec``), loads
``--weights`` and freezes all but ``--train-only``. ``ship_model`` then decides how workers
get it: a pristine built-in (no ``--train-only``) as today, by name, each worker building
it itself; anything else as a checked graph exported here (``graph.export_training_graph``
on two normalized training samples), served in parts after the Welcome (``ShippedGraph``).
Both run before the session opens, so every failure (a missing file, weights that do not
fit, a model that does not export) is a ConfigError the person sees at once, never a
worker's problem later. The user's code runs here only.

Running statistics (BatchNorm's ``running_mean``/``running_var``): the float32 buffers the
graph updates in training travel with each model and each push (``ShippedGraph.stats``);
the hub combines them (``trainer.ParameterServer``). ``num_batches_tracked`` does not
travel: the hub counts the model's global steps in it.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from .. import __version__
from ..data import ArrayDataset, DatasetInfo, DownloadProgress, normalize
from ..errors import ConfigError
from ..evaluation import eval_ready
from ..graph import GraphRefused, TrainingGraph, export_training_graph, torch_release
from ..graph.contract import accept_parts
from ..graph.export import explain, refusal_text
from ..models import (ModelSpec, SpecKind, build_model_from_spec, fingerprint, freeze_except,
                      load_starting_weights, parameter_count, parse_model_spec,
                      parse_prefixes)
from ..pacing import Throttle
from ..protocol.graphs import (Manifest, encode_manifest, entry, program_sha256,
                               state_blob)
from ..protocol.messages import ComputeKind, GraphPart
from .code_offer import HINT, code_parts, refusal
from .config import HubConfig

log = logging.getLogger(__name__)

EXAMPLE_BATCH = 2  # training samples the graph is exported with (its batch stays dynamic)
COUNTER = "num_batches_tracked"  # BatchNorm's step counter: the hub's, never averaged
PROGRESS_EVERY_S = 2.0  # a weights download logs its progress at most this often


@dataclass(frozen=True, eq=False)
class ShippedGraph:
    """A model as workers fetch it: the manifest, the program and the state, as bytes."""

    manifest: Manifest
    parts: dict[str, bytes]  # GraphPart -> its bytes

    @classmethod
    def of(cls, graph: TrainingGraph, label: str, stats: list[str]) -> ShippedGraph:
        state = [entry(name, tensor) for name, tensor in graph.state.items()]
        blob = state_blob(state, graph.state)
        manifest = Manifest(
            model=label[:200], trainable=list(graph.trainable), aliases=dict(graph.aliases),
            state=state, stats=stats, program_bytes=len(graph.program),
            program_sha256=program_sha256(graph.program), state_bytes=len(blob),
            op_count=graph.op_count, fingerprint=graph.fingerprint,
            trainable_numel=graph.trainable_numel)
        return cls(manifest, {"manifest": encode_manifest(manifest),
                              "program": graph.program, "state": blob})

    def part(self, name: GraphPart) -> bytes:
        return self.parts[name]

    @property
    def stats(self) -> list[str]:
        return list(self.manifest.stats)


@dataclass(frozen=True, eq=False)
class SessionModel:
    """The hub's model and how it travels."""

    spec: ModelSpec
    module: nn.Module  # the user's module (a program's, for a .pt2): what the hub trains
    fingerprint: str  # what workers must match: the registry's, or the graph's
    graph: ShippedGraph | None  # None: a built-in that workers build by name
    # each node of the graph to its layer ("rnn: nn.LSTM"), for the host's words: never shipped
    layers: dict[str, str] = field(default_factory=dict)

    @property
    def compute(self) -> ComputeKind:
        return "builtin" if self.graph is None else "graph"  # code: a graph part by part

    @property
    def offers_code(self) -> bool:
        """The model goes to workers as its source (``--offer-code``), not as a graph."""
        return self.graph is not None and self.graph.manifest.code is not None

    @property
    def label(self) -> str:
        return self.spec.label

    def refusal(self, reason: str, where: str = "") -> str:
        """A worker's refusal of this model in the host's words: the layer it concerns
        (``where``, a node of the graph, when it names one), why, and the way out."""
        return f"{explain(GraphRefused(reason, where or None), self.layers)}; {self.way_out()}"

    def way_out(self) -> str:
        """What the host can do about a worker that refuses this model."""
        if self.offers_code:
            assert self.graph is not None
            sha = self.graph.manifest.program_sha256
            return (f"that machine runs the file once its person approves its sha256 (the app "
                    f"asks; or join --trust-code {sha})")
        fix = (f"this hub's own check accepts the graph, so that machine differs: run "
               f"ComputeShare {__version__} there, as here, or join it with --device cpu")
        file_model = self.spec.path is not None and self.spec.path.suffix == ".py"
        return f"{fix}; {HINT}" if file_model else fix

    def stat_buffers(self) -> list[torch.Tensor]:
        """The module's buffers that travel as running statistics, in the manifest's order
        (none for a built-in)."""
        if self.graph is None:
            return []
        return [self.module.get_buffer(name) for name in self.graph.stats]

    def counters(self) -> list[torch.Tensor]:
        """The step counters (``num_batches_tracked``) the hub advances by each version's
        steps, so they count the global steps as a single process would (graphs only)."""
        if self.graph is None:
            return []
        return [b for n, b in self.module.named_buffers() if n.rsplit(".", 1)[-1] == COUNTER]


IMAGE_DEFAULT, TABLE_DEFAULT = "simplenet", "mlp"  # the default model; what a table trains


def fit_model_to_data(config: HubConfig, info: DatasetInfo) -> HubConfig:
    """``config`` with the built-in ``mlp`` when the data is a table and the model is the
    default ``simplenet``, which takes images only (said in the log); else unchanged."""
    if info.kind != "table" or config.model != IMAGE_DEFAULT:
        return config
    log.info("%s is a table: the session trains the built-in %s (%s takes images)",
             info.name, TABLE_DEFAULT, IMAGE_DEFAULT)
    return dataclasses.replace(config, model=TABLE_DEFAULT)


def build_hub_model(config: HubConfig, info: DatasetInfo, *, weights: bool = True
                    ) -> nn.Module:
    """The model ``config`` names, built from its seed on the CPU, its starting weights
    loaded (unless ``weights`` is False: a resumed session's checkpoint has them) and all
    but ``--train-only`` frozen.

    Raises:
        ConfigError: as the spec, the weights and the prefixes say.
    """
    spec = parse_model_spec(config.model)
    began = time.perf_counter()
    model = build_model_from_spec(spec, info, seed=config.seed)
    if spec.kind is SpecKind.PROGRAM:  # its tensors are views into the archive's one blob,
        model = copy.deepcopy(model)  # which export cannot detach: a copy owns its own
    prepare_model(model, config, spec, weights=weights)
    log.info("model %s built in %.1f s", spec.label, time.perf_counter() - began)
    return model


def prepare_model(model: nn.Module, config: HubConfig, spec: ModelSpec, *,
                  weights: bool = True) -> None:
    """``--weights`` loaded into ``model`` (unless ``weights`` is False) and all but
    ``--train-only`` frozen: on a module built here or handed to the session (``api``).

    Raises:
        ConfigError: as the weights and the prefixes say.
    """
    if config.weights and weights:
        load_starting_weights(model, config.weights, spec, progress=_Progress())
    if config.train_only:
        frozen = freeze_except(model, parse_prefixes(config.train_only))
        log.info("--train-only %s: %d parameter tensors frozen, %s values train",
                 config.train_only, len(frozen), f"{parameter_count(model):,}")


def ship_model(model: nn.Module, config: HubConfig, train_set: ArrayDataset) -> SessionModel:
    """How workers get ``model`` (call it with the weights the session starts from): by
    name for a pristine built-in, else as a graph exported now.

    With ``--offer-code``, a ``PATH.py:NAME`` model that does not export goes as its
    source instead (``offer_code``).

    Raises:
        ConfigError: the model does not export to a graph workers accept (the export's
            first lines and a hint; for a file model, the hint names ``--offer-code``), or
            it is a program that cannot be switched to eval mode (``check_evaluable``).
    """
    spec = parse_model_spec(config.model)
    if spec.kind is SpecKind.BUILTIN and not config.train_only:
        return SessionModel(spec, model, fingerprint(model), None)
    check_evaluable(model)
    if len(train_set) < EXAMPLE_BATCH:
        raise ConfigError(f"the training set has {len(train_set)} sample(s); a graph is "
                          f"exported with {EXAMPLE_BATCH}")
    began = time.perf_counter()
    example = normalize(train_set.images[:EXAMPLE_BATCH], train_set.info)
    try:
        graph = export_training_graph(model, example)
    except ConfigError as error:
        if not (config.offer_code and spec.kind is SpecKind.FILE):
            raise refusal(error, spec) from None
        return offer_code(model, spec, train_set, error)
    stats = running_stats(graph, model)
    shipped = ShippedGraph.of(graph, spec.label, stats)
    accept_own(shipped, graph, spec)
    log.info("model %s exported as a graph for workers in %.1f s (torch %s): %s; %d running "
             "statistics travel with each round", spec.label, time.perf_counter() - began,
             torch_release(), graph.summary(), len(stats))
    return SessionModel(spec, model, graph.fingerprint, shipped, graph.layers)


def check_evaluable(model: nn.Module) -> None:
    """What the hub evaluates, and saves as trained_model.pt2, must reach eval mode: for a
    program's module (a ``.pt2``, whose mode is fixed) its graph switched to inference on a
    copy now, so a program that cannot be is refused before the session opens rather than
    at its first evaluation, after the training.

    Raises:
        ConfigError: the graph draws random numbers other than dropout's.
    """
    if isinstance(model, torch.fx.GraphModule):
        eval_ready(copy.deepcopy(model))


def accept_own(shipped: ShippedGraph, graph: TrainingGraph, spec: ModelSpec) -> None:
    """The workers' own contract (``graph.accept_parts``), run here on the very bytes
    they will fetch, before any port opens: what a worker would refuse is refused now.

    Raises:
        ConfigError: the refusal, naming the layer where it can.
    """
    try:
        accept_parts(shipped.parts, hub_torch=torch.__version__,
                     fingerprint=graph.fingerprint)
    except GraphRefused as refused:
        raise refusal(ConfigError(refusal_text(graph.explain(refused))), spec) from None


def offer_code(model: nn.Module, spec: ModelSpec, train_set: ArrayDataset,
               error: ConfigError) -> SessionModel:
    """``--offer-code``: the model that did not export goes to workers as its source file,
    which each runs only once its person approved that exact sha256 for this hub."""
    manifest, parts = code_parts(model, spec, train_set.info)
    first = str(error).splitlines()[0] if str(error) else "it did not export"
    log.warning("model %s does not export as a graph (%s): offering workers its source "
                "instead (--offer-code), sha256 %s; each worker runs it only once its "
                "person approves that hash for this hub", spec.label, first,
                manifest.program_sha256)
    return SessionModel(spec, model, manifest.fingerprint, ShippedGraph(manifest, parts))


def running_stats(graph: TrainingGraph, model: nn.Module) -> list[str]:
    """The float32 buffers the graph updates in training (BatchNorm's running mean and
    variance), in the graph's order; other buffers it updates stay the hub's (a counter
    is advanced by the hub: ``SessionModel.counters``)."""
    buffers = dict(model.named_buffers())
    stats, kept = [], []
    for name in graph.mutated:
        tensor = graph.state.get(name)
        if tensor is not None and tensor.dtype == torch.float32 and name in buffers:
            stats.append(name)
        elif name.rsplit(".", 1)[-1] != COUNTER:
            kept.append(name)
    if kept:
        log.warning("the graph updates buffers that do not travel (not float32 running "
                    "statistics): %s; workers' changes to them are not kept", kept[:5])
    return stats


class _Progress:
    """A weights download's progress as log lines, at most one every few seconds."""

    def __init__(self) -> None:
        self._throttle = Throttle(PROGRESS_EVERY_S)

    def __call__(self, progress: DownloadProgress) -> None:
        if self._throttle.due(force=progress.total_bytes is not None
                              and progress.done_bytes >= progress.total_bytes):
            log.info("%s", progress.text)

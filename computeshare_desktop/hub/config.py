"""The configuration of one hub session, and the schema of every training option.

Each option is declared once, here (see ``schema``): the command line's flags, the Host
dialog's fields, the settings file and the checks are derived from these declarations.
``SessionOptions`` holds what a user chooses; ``HubConfig`` adds the hub's own tuning and
is what session.json keeps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from ..codec import CODECS, DEFAULT_FRACTION
from ..data import DATASETS
from ..data.folders import is_folder_spec
from ..data.mapped import dataset_valid
from ..data.tables import is_table_spec
from ..errors import ConfigError
from ..models import MODELS, parse_model_spec, parse_prefixes
from ..protocol.messages import AUGMENTS, Optimizer, Precision
from ..schema import ADVANCED, LINK, RECIPE, TRAINING, WORKERS, Rule, check, option
from .augment import AUTO as AUGMENT_AUTO
from .augment import augment_valid
from .lr_schedule import SCHEDULES as LR_SCHEDULES
from .presets import AUTO, PRESET_CHOICES, PRESETS, Mode, resolve


OUTER_OPTIMIZERS = ("auto", "sgd", "nesterov")
UPDATE_MODES = ("sync", "async")
AGGREGATIONS = ("mean", "trimmed-mean", "median")
SESSION = ("host", "demo")  # the commands that start a session
MODE_OPTIONS = ("codec", "topk", "local_steps")  # what a preset sets; explicit values win
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)  # the words the protocol carries
PRECISIONS: tuple[str, ...] = get_args(Precision)
AUGMENT_CHOICES = (AUGMENT_AUTO, "none", "crop,flip", "crop,flip,color")  # suggestions


def async_rounds(values: Mapping[str, Any], rounds: int) -> int:
    """The rounds that train as much data as ``rounds`` synchronous ones: an async round is
    one worker's batch, so that is ``rounds`` times the workers."""
    return rounds * values["workers"] if values["updates"] == "async" else rounds


def model_spec_valid(text: str) -> bool:
    """A ``--model`` any of whose four forms reads (a ConfigError says why not); files are
    opened when the session builds the model."""
    parse_model_spec(text)
    return True


def weights_valid(text: str) -> bool:
    """``--weights``: anything but blank space (the session reads it)."""
    return text == text.strip()


def prefixes_valid(text: str) -> bool:
    """``--train-only``: empty, or module names separated by commas (ConfigError if not)."""
    if text:
        parse_prefixes(text)
    return True


def absolute_model(text: str) -> str:
    """The spec with a file's path made absolute, so that a resumed session (started from
    elsewhere) finds the same file; other specs as they are."""
    spec = parse_model_spec(text)
    if spec.path is None:
        return text
    path = spec.path.expanduser().absolute()
    return str(path) if spec.name == "" else f"{path}:{spec.name}"


def test_data_valid(text: str) -> bool:
    """``--test``: anything but blank space around it (the session reads it)."""
    return text == text.strip()


def _dataset_valid(text: str) -> bool:
    """``--dataset``: a known spec; a path that is not there says so (ConfigError)."""
    if dataset_valid(text):
        return True
    if "/" in text or "\\" in text or text.startswith(("~", ".")):
        raise ConfigError(f"no such folder or file: {text}")
    return False


def absolute_dataset(text: str) -> str:
    """A folder's path made absolute (a resumed session finds it from anywhere); a
    dataset's name as it is."""
    if is_folder_spec(text) or is_table_spec(text):
        return str(Path(text).expanduser().absolute())
    return text


def _preset_help() -> str:
    links = "; ".join(f"{p.name}: {p.summary}" for p in PRESETS.values())
    return f"the link: {links}; auto (default): measure the first rounds, then pick one"


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """What a user chooses for a training session (the command line, the Host dialog)."""

    dataset: str = option(
        "mnist-sample", "a built-in dataset ({choices}; default {default}, bundled, offline) "
        "or a folder of images: PATH/CLASS/* (a test split held out), or PATH/train/CLASS/* "
        "and PATH/test/CLASS/*, or a table: PATH.csv or PATH.parquet (--label), or a "
        "Hugging Face dataset: a folder written by save_to_disk (--input, --label)".format(
            choices=", ".join(DATASETS), default="{default}"),
        flag="--dataset", commands=SESSION, metavar="NAME|PATH", choices=DATASETS,
        editable=True, error=f"dataset must be one of {', '.join(DATASETS)}, a folder or "
        "a table", valid=_dataset_valid, saved=True, label="Dataset",
        group=TRAINING)  # or python:NAME,
    # data given from Python (api.host): the session is handed it, nothing is loaded
    image_size: int = option(
        0, "a folder of images: the side they are brought to, the aspect kept and the middle "
        "cropped (default: their own size when they all share one, else 224)",
        flag="--image-size", commands=SESSION, metavar="N", ge=0,
        error="the image size must be 0 (automatic) or more", label="Image size",
        group=TRAINING, maximum=1024, step=16, special="automatic", plain=True)
    test_fraction: float = option(
        0.1, "a folder of images without train/ and test/, a table, or a Hugging Face "
        "dataset without a test split of its own: the share of each class held out for "
        "testing, chosen by a fixed seed (default {default})", flag="--test-fraction",
        commands=SESSION, metavar="F", gt=0, lt=1, error="the test fraction must be in (0, 1)",
        label="Test fraction", group=TRAINING, minimum=0.01, maximum=0.9, step=0.05,
        decimals=2)
    label_column: str = option(
        "", "a table (PATH.csv, PATH.parquet) or a Hugging Face dataset: the label column, "
        "whose distinct values are the classes (default: a table's last column; a saved "
        "dataset's ClassLabel column, else one named label or labels)", flag="--label",
        commands=SESSION,
        metavar="COLUMN", label="Label column", group=TRAINING,
        placeholder="the last column")
    input: str = option(
        "", "a Hugging Face dataset (a folder written by save_to_disk): its image column "
        "(default: the first column of Image type), or without one its feature columns "
        "A,B,... read as a table (default: every column but the label)", flag="--input",
        commands=SESSION,
        metavar="COLUMN", valid=lambda text: text == text.strip(),
        error="the input column's name cannot start or end with a space")
    test_data: str = option(
        "", "a second source for the test split, instead of the one --dataset gives or holds "
        "out (all of it then trains): a folder of CLASS/* images, a table (PATH.csv or "
        "PATH.parquet, its columns matched by name) or a Hugging Face dataset saved with "
        "save_to_disk; its classes are matched to the training classes by name, its images "
        "brought to the training size (default: none)", flag="--test",
        commands=SESSION, metavar="PATH", valid=test_data_valid,
        error="the test data's path cannot start or end with a space")
    model: str = option(
        "simplenet", "the model: a built-in name ({choices}; default {default}), "
        "torchvision:ARCH (any torchvision classifier), PATH.py:NAME (a class or function "
        "in your file, run on this machine only) or PATH.pt2 (a torch.export program); "
        "workers get anything but a built-in as a checked graph".format(
            choices=", ".join(MODELS), default="{default}"),
        flag="--model", commands=SESSION, metavar="SPEC", choices=MODELS, editable=True,
        valid=model_spec_valid, saved=True, label="Model", group=TRAINING,
        tip="A built-in, or type torchvision:resnet18, /path/net.py:Net or /path/prog.pt2")
    weights: str = option(
        "", "starting weights: a state_dict file (.pth, .pt, .safetensors), or for "
        "torchvision:ARCH a weights name (DEFAULT, IMAGENET1K_V1) from the torch hub cache "
        "(downloaded when missing, where there is internet); default: none",
        flag="--weights", commands=SESSION, metavar="PATH|NAME", valid=weights_valid,
        label="Starting weights", group=TRAINING,
        placeholder="none (a .pth/.safetensors file, or DEFAULT for torchvision)")
    train_only: str = option(
        "", "train only these modules, freezing the rest (frozen weights never travel), "
        "e.g. fc or layer4,fc; default: train everything", flag="--train-only",
        commands=SESSION, metavar="PREFIX[,PREFIX]", valid=prefixes_valid,
        label="Train only", group=TRAINING, placeholder="everything (or e.g. fc)")
    offer_code: bool = option(
        False, "last resort for a PATH.py:NAME model that cannot be exported as a graph: "
        "offer workers its source file instead, which each runs only once its person "
        "approves that file's sha256 for this hub (join --trust-code SHA256); default: off, "
        "such a model is refused", flag="--offer-code", commands=SESSION,
        label="Offer the model's code if it cannot be exported", group=TRAINING,
        tip="Workers never run a hub's code unless their person approves this exact file "
            "(its SHA-256) for this hub. Use it only with machines whose people trust you.")
    workers: int = option(
        2, "number of shards = workers expected (default {default})", flag="--workers",
        commands=SESSION, help_for={"demo": "local worker processes (default {default})"},
        ge=1, error="workers must be at least 1", saved=True, label="Expected workers",
        group=WORKERS, maximum=256)  # the number of shards = workers expected to start
    rounds: int = option(
        600, "global batches to train (default {default}; async: a round is one worker's "
        "batch, and the default is {default} times the workers)", flag="--rounds",
        commands=SESSION, auto=async_rounds, ge=1, error="rounds must be at least 1",
        saved=True, label="Rounds", group=TRAINING, step=100, maximum=1_000_000)
    batch_size: int = option(
        32, "samples per worker and round (default {default})", flag="--batch-size",
        commands=SESSION, ge=1, error="batch size must be at least 1", saved=True,
        label="Batch size per worker", group=TRAINING, step=8, maximum=4096)
    lr: float = option(
        0.01, "base learning rate, scaled by the number of workers (default {default})",
        flag="--lr", commands=SESSION, gt=0, error="learning rate must be positive",
        saved=True, label="Learning rate", group=TRAINING, step=0.005, decimals=4,
        minimum=0.0001, maximum=10.0)  # for batch_size samples; a round steps with
    # lr * its samples / batch_size
    seed: int = option(0, "initial weights and data order (default {default})",
                       flag="--seed", commands=SESSION)  # and the shard split and batch order
    codec: str = option(
        "zstd", "how updates and model deltas travel (overrides the preset); lossy codecs use "
        "error feedback", flag="--codec", commands=SESSION, fronts={"host": None, "demo": None},
        choices=CODECS, error=f"codec must be one of {', '.join(CODECS)}", saved=True,
        label="Codec", group=ADVANCED,
        tip="How gradients (or weight changes) and model updates travel. raw and zstd are "
            "lossless; fp16, bf16, int8 and topk are lossy with error feedback.")
    topk: float = option(
        DEFAULT_FRACTION, f"the fraction of values the topk codec sends (default "
        f"{DEFAULT_FRACTION})", flag="--topk", commands=SESSION, metavar="FRACTION",
        fronts={"host": None, "demo": None}, gt=0, le=1,
        error="the top-k fraction must be in (0, 1]", saved=True, label="Top-k fraction",
        group=ADVANCED, step=0.005, decimals=3, minimum=0.001)
    topk_warmup: int = option(
        -1, "rounds over which top-k falls from 25% to its fraction (default: a tenth of the "
        "session, one epoch at most; 0: none)", flag="--topk-warmup", commands=SESSION,
        metavar="ROUNDS", ge=-1, error="the top-k warm-up must be -1 (automatic), 0 or more")
    local_steps: int = option(
        0, "0: a gradient per round (synchronous SGD); H: H local SGD steps per round, then "
        "push the change (overrides the preset)", flag="--local-steps", commands=SESSION,
        metavar="H", fronts={"host": None, "demo": None}, ge=0,
        error="local steps must be >= 0", saved=True, label="Local steps", group=ADVANCED,
        maximum=1024, special="off (a gradient per round)")
    outer: str = option(
        "auto", "outer optimizer of local steps: sgd (momentum), nesterov (DiLoCo); auto: "
        "nesterov when H > 1 or with adamw", flag="--outer", commands=SESSION,
        choices=OUTER_OPTIMIZERS,
        error=f"the outer optimizer must be one of {', '.join(OUTER_OPTIMIZERS)}")
    outer_lr: float = option(
        0.7, "learning rate of the Nesterov outer step (default {default})",
        flag="--outer-lr", commands=SESSION, gt=0,
        error="the outer learning rate must be positive")  # DiLoCo's
    balance: bool = option(
        True, "equal batches for every worker, whatever its speed", flag="--no-balance",
        commands=SESSION)  # size each worker's batch to its speed so all finish together
    preset: str = option(
        "custom", _preset_help(), flag="--preset", commands=SESSION,
        fronts={"host": AUTO, "demo": AUTO, "app": AUTO}, choices=PRESET_CHOICES,
        valid=lambda name: name in (*PRESET_CHOICES, "custom"),
        error=f"preset must be one of {', '.join(PRESET_CHOICES)}", saved=True,
        label="Network between machines", group=LINK,
        labels={AUTO: "Automatic (measure the link)",
                **{name: p.label for name, p in PRESETS.items()}})
    # lan/wifi/slow: where these settings came from; auto: tune them; custom: as given
    eval_every: int = option(
        100, "rounds between test evaluations (default {default})", flag="--eval-every",
        commands=SESSION, ge=0, error="intervals must be >= 0", saved=True,
        label="Evaluate every", group=TRAINING, step=50, maximum=1_000_000,
        special="only at the end")  # 0: only at the end
    snapshot_every: int = option(
        0, "keep a copy of the weights every R rounds in OUT/snapshots (default: none)",
        flag="--snapshot-every", commands=SESSION, metavar="R", ge=0,
        error="intervals must be >= 0")
    updates: str = option(
        "sync", "sync (default): rounds that average every worker's update; async: apply "
        "each update as it arrives, so no worker waits for a slower one", flag="--mode",
        commands=SESSION, choices=UPDATE_MODES,
        error=f"updates must be one of {', '.join(UPDATE_MODES)}", saved=True,
        label="Updates", group=TRAINING,
        labels={"sync": "Synchronous rounds (every worker, every round)",
                "async": "Asynchronous (apply each update as it arrives)"},
        tip="Synchronous rounds average every worker's gradient, so a slow machine sets the "
            "pace. Asynchronous updates never wait: a round is then one worker's batch, and "
            "older updates count less.")
    max_staleness: int = option(
        8, "async: refuse updates computed more than S versions back (default {default}); "
        "older ones also get a smaller learning rate", flag="--max-staleness",
        commands=SESSION, metavar="S", ge=0, error="the staleness bound must be >= 0",
        saved=True, label="Staleness bound", group=TRAINING, maximum=1024,
        tip="Asynchronous: an update computed on a model more than this many versions old "
            "is refused.")
    aggregation: str = option(
        "mean", "mean (default); trimmed-mean or median: clip update norms and outvote a "
        "faulty or hostile worker (needs 3 or more workers to outvote one)",
        flag="--aggregate", commands=SESSION, choices=AGGREGATIONS,
        error=f"aggregation must be one of {', '.join(AGGREGATIONS)}", saved=True,
        label="Aggregation", group=TRAINING,
        labels={"mean": "Mean (trusted workers)",
                "trimmed-mean": "Robust: clipped, trimmed mean",
                "median": "Robust: clipped, coordinate median"},
        tip="Robust rules clip oversized updates and outvote one faulty or hostile worker "
            "per round (with 3 workers or more).")  # async clips norms only
    weight_decay: float = option(
        0.0, "weight decay: an L2 term in SGD's step, AdamW's decoupled decay (default "
        "{default}: none)",
        flag="--weight-decay", commands=SESSION, metavar="WD", ge=0,
        error="weight decay must be >= 0", saved=True, label="Weight decay", group=RECIPE,
        step=0.0001, decimals=5, maximum=1.0,
        tip="Pulls the weights toward zero a little at every step (L2 regularisation).")
    optimizer: Optimizer = option(
        "sgd", "sgd (default): SGD with momentum, its rate scaled linearly with a step's "
        "samples; adamw: AdamW, its rate scaled by their square root (with local steps: the "
        "workers' inner optimizer, the outer step staying SGD/Nesterov)", flag="--optimizer",
        commands=SESSION, choices=OPTIMIZERS,
        error=f"the optimizer must be one of {', '.join(OPTIMIZERS)}", saved=True,
        label="Optimizer", group=RECIPE,
        labels={"sgd": "SGD with momentum", "adamw": "AdamW (decoupled weight decay)"},
        tip="SGD with momentum, or AdamW (a rate around 0.001 suits it). With local steps "
            "it is each worker's own optimizer between rounds.")
    schedule: str = option(
        "constant", "the learning rate over the session: constant (default), or cosine: "
        "down to 0 at the last round; both after --warmup", flag="--schedule",
        commands=SESSION, choices=LR_SCHEDULES, saved=True, label="Learning-rate schedule",
        error=f"the schedule must be one of {', '.join(LR_SCHEDULES)}", group=RECIPE,
        tip="Cosine lowers the rate along half a cosine, to zero at the last round; the "
            "warm-up raises it linearly first.")
    warmup: int = option(
        0, "steps (model versions) over which the rate rises linearly to --lr (default "
        "{default}: none)", flag="--warmup", commands=SESSION, metavar="STEPS", ge=0,
        error="the warm-up must be >= 0 steps", saved=True, label="Warm-up steps",
        group=RECIPE, step=50, maximum=1_000_000, special="none")
    clip_grad: float = option(
        0.0, "clip each step's gradient to this global norm: the averaged one on the hub, "
        "or each local step's on the workers (default {default}: off)", flag="--clip-grad",
        commands=SESSION, metavar="NORM", ge=0, error="the clipping norm must be >= 0",
        saved=True, label="Clip gradient norm", group=RECIPE, step=0.5, decimals=2,
        maximum=1000.0, special="off")
    label_smoothing: float = option(
        0.0, "label smoothing of the training loss (default {default}: none; the test "
        "loss stays plain cross-entropy)", flag="--label-smoothing", commands=SESSION,
        metavar="EPS", ge=0, lt=1, error="label smoothing must be in [0, 1)", saved=True,
        label="Label smoothing", group=RECIPE, step=0.05, decimals=2, maximum=0.99,
        special="none")
    augment: str = option(
        AUGMENT_AUTO, "how workers change each training batch, per sample, on their own "
        "device (the hub sends each sample once): auto (default: crop,flip for your own "
        "images of 32 px and up, else none), none, or some of " + ", ".join(AUGMENTS) + ", "
        "separated by commas; crop shifts by up to 1/8 of the side, rotate turns up to 10 "
        "degrees, color jitters brightness, contrast and saturation, erase blanks a box",
        flag="--augment", commands=SESSION, metavar="LIST", choices=AUGMENT_CHOICES,
        editable=True, valid=augment_valid, saved=True, label="Augmentation", group=RECIPE,
        labels={AUGMENT_AUTO: "auto (crop,flip for your own images)"},
        tip="Random changes to each training image on the workers, so a model sees more "
            "than one version of each. Tables are never augmented; the test split never.")
    precision: Precision = option(
        "fp32", "how workers compute: fp32 (default); auto: bf16 autocast on GPUs that have "
        "it, else fp32; bf16 (CPUs too); fp16 (GPUs, with a loss scaler). Weights and "
        "updates stay float32", flag="--precision", commands=SESSION, choices=PRECISIONS,
        error=f"precision must be one of {', '.join(PRECISIONS)}", saved=True,
        label="Precision", group=RECIPE,
        labels={"fp32": "fp32 (full precision)",
                "auto": "Automatic (bf16 on GPUs that have it)",
                "bf16": "bf16 mixed precision", "fp16": "fp16 mixed precision (GPUs)"},
        tip="Mixed precision speeds up large models on GPUs. Each worker decides for its "
            "own device; a CPU stays fp32 unless bf16 is chosen.")

    @property
    def asynchronous(self) -> bool:
        """Updates are applied as they arrive, not in rounds."""
        return self.updates == "async"


RULES = (
    Rule(lambda c: not c.asynchronous or c.local_steps == 0,
         "async mode applies gradients: local steps need sync rounds"),
    Rule(lambda c: not c.asynchronous or c.preset not in ("auto", "slow"),
         "async mode applies gradients as they arrive: choose the lan or wifi preset, or "
         "a codec"),
    Rule(lambda c: c.warmup < c.rounds, "the warm-up must be shorter than the session's "
                                        "rounds"),
)


@dataclass(frozen=True, slots=True)
class HubConfig(SessionOptions):
    """Everything that defines a training session; saved as session.json."""

    momentum: float = option(0.9, "the hub's SGD momentum", ge=0, lt=1,
                             error="momentum must be in [0, 1)")
    checkpoint_every: int = option(50, "rounds between resumable checkpoints (0: never)",
                                   ge=0, error="intervals must be >= 0")
    heartbeat_timeout_s: float = option(6.0, "silence after which a worker is declared dead",
                                        gt=0, error="timeouts must be > 0")
    deadline_floor_s: float = option(
        2.0, "a round never closes early for a missing worker before this", gt=0,
        error="timeouts must be > 0")
    deadline_factor: float = option(4.0, "... nor before this many times the median full "
                                    "round")
    deadline_cap_s: float = option(
        60.0, "... but a round waits at most this (plus bytes on the wire)", gt=0,
        error="the deadline cap must be positive")
    max_missed: int = option(3, "a worker that misses this many deadlines in a row loses its "
                             "shard", ge=1, error="max missed deadlines must be at least 1")
    long_poll_ms: int = option(2000, "the longest a PULL is held before WAITING")

    def __post_init__(self) -> None:
        check(self, RULES)

    @property
    def mode(self) -> Mode:
        """The mode the session starts in (``preset="auto"`` may change it)."""
        return Mode(self.codec, self.topk, self.local_steps)

    def outer_for(self, local_steps: int) -> str:
        """``sgd`` or ``nesterov``: what ``outer="auto"`` means for these local steps (SGD at
        lr 1 makes one local step the synchronous step only with plain SGD inside)."""
        if self.outer != "auto":
            return self.outer
        return "nesterov" if local_steps > 1 or self.optimizer == "adamw" else "sgd"

    def to_json(self) -> dict[str, object]:
        """A plain dict for session.json."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> "HubConfig":
        """Inverse of ``to_json``; unknown keys are a ConfigError (a missing one takes its
        default: session.json written before the option existed)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ConfigError(f"unknown session settings: {', '.join(sorted(unknown))}")
        return cls(**data)  # type: ignore[arg-type]


def session_config(options: SessionOptions, explicit: Iterable[str] = ()) -> HubConfig:
    """The HubConfig a front end asks for (ConfigError on a bad value).

    ``options.preset`` gives the codec, top-k fraction and local steps, except those named
    in ``explicit``, which are taken as chosen. Async updates have no rounds for ``auto``
    to measure: it means ``lan`` there.
    """
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(SessionOptions)}
    preset, mode = resolve(options.preset, **{name: values[name] for name in explicit})
    if options.asynchronous and preset == AUTO:
        preset = PRESETS["lan"].name
    values.update(preset=preset, codec=mode.codec, topk=mode.topk, local_steps=mode.local_steps)
    return HubConfig(**values)

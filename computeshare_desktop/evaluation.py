"""Test-set evaluation and the loss, shared by the hub, the workers and ``evaluate``; the
saved models people score (``trained_model.pth``, ``trained_model.pt2``), read back for
``evaluate`` and ``predict``.

Both loaders read files the user chose or the hub wrote: ``torch.load(weights_only=True)``
for a state_dict and ``torch.export.load`` for a program (which unpickles what the archive
asks for: never a file from a peer; FACTS: torch.export).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .data import ArrayDataset, DatasetInfo, dataset_info, load_dataset, normalize
from .data.folders import is_folder_spec
from .data.info import raw_inputs
from .data.tables import is_table_spec
from .data.prepared import load_data
from .errors import ConfigError
from .graph.inference import FixedMode, Normalized, eval_module
from .models import build_model_from_spec, parse_model_spec
from .models.checks import first_lines, sample_shape

PROGRAM_SUFFIX = ".pt2"  # a torch.export program; any other file is read as a state_dict


def batch_loss(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor,
               info: DatasetInfo, *, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy of ``model`` on uint8 ``images`` (normalised here): the training
    loss, with ``label_smoothing`` when the session asks for it (the test loss never has it).

    The loss is taken in float32 even when the forward ran under autocast."""
    logits = model(normalize(images, info))
    return F.cross_entropy(logits.float(), labels, label_smoothing=label_smoothing)


@torch.no_grad()
def evaluate(model: torch.nn.Module, dataset: ArrayDataset, *,
             device: str | torch.device | None = None,
             batch_size: int = 500, raw: bool = False) -> tuple[float, float]:
    """Return ``(accuracy, mean loss)`` of ``model`` on ``dataset``, in float32, on
    ``device`` (None: where the model is; a model held elsewhere is evaluated as a copy, so
    the caller's stays put). ``raw``: the model takes images in [0, 1] or a table's raw
    values (it normalizes them itself, as ``trained_model.pt2`` does)."""
    tensors = list(itertools.chain(model.parameters(), model.buffers()))
    if device is None:
        device = tensors[0].device if tensors else torch.device("cpu")
    device = torch.device(device)
    if any(t.device.type != device.type for t in tensors):
        model = copy.deepcopy(model).to(device)
    was_training = model.training
    model.eval()
    correct, loss_sum = 0, 0.0
    try:
        for start in range(0, len(dataset), batch_size):
            images = dataset.images[start:start + batch_size].to(device)
            labels = dataset.labels[start:start + batch_size].to(device)
            logits = model(raw_inputs(images, dataset.info) if raw
                           else normalize(images, dataset.info))
            loss_sum += float(F.cross_entropy(logits, labels, reduction="sum"))
            correct += int((logits.argmax(dim=1) == labels).sum())
    finally:
        model.train(was_training)
    n = max(1, len(dataset))
    return correct / n, loss_sum / n


@dataclass(frozen=True, slots=True)
class Score:
    """A saved model's result on a test split."""

    accuracy: float
    loss: float
    samples: int


def evaluate_file(path: Path, model_name: str, dataset: str, *, image_size: int = 0,
                  test_fraction: float = 0.1, label: str = "", input: str = "",
                  test_spec: str = "", classes: Sequence[str] = ()) -> Score:
    """Score a saved model on ``dataset``'s test split: a ``.pt2`` program fed images in
    [0, 1], or a state_dict of ``model_name`` (a model spec) for ``dataset``. A folder of
    images or a saved dataset is prepared as its session did (``image_size``,
    ``test_fraction``, its columns); ``test_spec``: its second test source (``--test``).
    ``classes``: a .pt2's class names (classes.json): a test split whose classes are
    others or in another order is matched to them by name.

    Raises:
        ConfigError: the file cannot be read, is not that model for that dataset, or the
            program takes other inputs than the dataset's images.
    """
    program = program_alone(path)
    if program is not None and not image_size and len(program.sample_shape) == 3 \
            and program.sample_shape[1] == program.sample_shape[2]:
        image_size = program.sample_shape[1]  # the program's own size: its test data's
    test: ArrayDataset | None = None
    if is_folder_spec(dataset) or is_table_spec(dataset) or test_spec:
        test = load_data(dataset, image_size=image_size, test_fraction=test_fraction,
                         label=label, input=input, test_spec=test_spec)[1]
        info = test.info
    else:
        info = dataset_info(dataset)
    if path.suffix.lower() == PROGRAM_SUFFIX:
        saved = program or load_program_model(path, info)
        if saved.sample_shape != sample_shape(info):
            raise ConfigError(f"{path} takes inputs of {_shape(saved.sample_shape)}; "
                              f"{dataset}'s are {_shape(sample_shape(info))} (--dataset)")
        model, raw = saved.module, True
    else:
        model, raw = eval_ready(load_state_model(path, model_name, info)), False
    if test is None:
        test = load_dataset(dataset, "test")
    if raw and classes:
        test = by_class_names(test, classes)
    accuracy, loss = evaluate(model, test, raw=raw)
    return Score(accuracy, loss, len(test))


def by_class_names(test: ArrayDataset, classes: Sequence[str]) -> ArrayDataset:
    """``test`` with its labels in the order of a model's ``classes`` (by name; a test
    split without names is taken as it is), its samples of other classes left out.

    Raises:
        ConfigError: none of its samples is of one of ``classes``.
    """
    names = test.info.classes
    if not names or tuple(names) == tuple(classes):
        return test
    order = {name: i for i, name in enumerate(classes)}
    labels = torch.tensor([order.get(n, -1) for n in names], dtype=torch.int64)[test.labels]
    kept = labels >= 0
    if not bool(kept.any()):
        raise ConfigError(f"{test.info.name} has no test sample of the model's classes "
                          f"({', '.join(classes[:5])}{', ...' if len(classes) > 5 else ''})")
    info = dataclasses.replace(test.info, num_classes=len(classes), classes=tuple(classes))
    return ArrayDataset(test.images[kept].contiguous(), labels[kept], info)


def program_alone(path: Path) -> SavedModel | None:
    """The program in ``path`` when it needs no data to run (its input sizes all fixed);
    None for a state_dict, or for a program that leaves a size free or does not read
    (``load_program_model`` with the data's info then says why)."""
    if path.suffix.lower() != PROGRAM_SUFFIX:
        return None
    try:
        return load_program_model(path)
    except ConfigError:
        return None


def data_info(dataset: str, *, image_size: int = 0, test_fraction: float = 0.1,
              label: str = "", input: str = "", test_spec: str = "") -> DatasetInfo:
    """What a session's data is: a built-in dataset's info by name; a folder's or a
    table's as its session prepared it (found in the cache, else prepared again)."""
    if is_folder_spec(dataset) or is_table_spec(dataset):
        return load_data(dataset, image_size=image_size, test_fraction=test_fraction,
                         label=label, input=input, test_spec=test_spec)[1].info
    return dataset_info(dataset)


@dataclass(frozen=True, slots=True, eq=False)
class SavedModel:
    """A saved model that takes raw inputs (images in [0, 1], a table's values) and returns
    logits, in eval mode; ``sample_shape`` is one input's shape."""

    module: nn.Module
    sample_shape: tuple[int, ...]


def load_saved_model(path: Path, model_name: str, info: DatasetInfo) -> SavedModel:
    """``trained_model.pt2`` as it is, or a state_dict of ``model_name`` for ``info`` with
    ``info``'s normalization put in front (``load_state_model``)."""
    if path.suffix.lower() == PROGRAM_SUFFIX:
        return load_program_model(path, info)
    shape = sample_shape(info)
    model = eval_ready(load_state_model(path, model_name, info))
    if info.mean or info.std:
        model = Normalized(model, info.mean, info.std, len(shape) + 1)
    return SavedModel(model.eval(), shape)


def load_state_model(path: Path, model_name: str, info: DatasetInfo) -> nn.Module:
    """Build ``model_name`` (a model spec) for ``info`` and load the state_dict in ``path``
    (``torch.load(weights_only=True)``).

    Raises:
        ConfigError: the file cannot be read, or is not that model for that data.
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
    model = build_model_from_spec(parse_model_spec(model_name), info)
    try:
        model.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path} is not a {model_name} for {info.name}: "
                          f"{str(exc).splitlines()[0]}") from None
    return model


def load_program_model(path: Path, info: DatasetInfo | None = None) -> SavedModel:
    """A program saved with ``torch.export.save`` (``trained_model.pt2``, or the user's
    own) taking one float32 batch. The input shape is the program's; a size it leaves
    free (a dynamic height, say) is ``info``'s.

    Raises:
        ConfigError: no such file; not a program; not one float input; a free size and
            no ``info`` of that rank.
    """
    program = read_program(path)
    inputs = [n for n in program.graph.nodes if n.op == "placeholder"
              and n.name in set(program.graph_signature.user_inputs)]
    value = inputs[0].meta.get("val") if len(inputs) == 1 else None
    if not isinstance(value, torch.Tensor) or value.dtype != torch.float32 or value.dim() < 2:
        raise ConfigError(f"{path} does not take one float32 batch (N×...), as "
                          f"trained_model.pt2 does")
    shape = tuple(d if isinstance(d, int) else None for d in value.shape[1:])
    if None in shape:  # a size the program leaves free: the data's
        wanted = sample_shape(info) if info is not None else ()
        if len(wanted) != len(shape):
            raise ConfigError(f"{path} takes inputs of any size: name the data (--dataset)")
        shape = tuple(w if d is None else d for d, w in zip(shape, wanted, strict=True))
    return SavedModel(FixedMode(program.module()), tuple(int(d or 0) for d in shape))


def read_program(path: Path) -> torch.export.ExportedProgram:
    """``torch.export.load`` of a file the user chose (it unpickles what the archive asks
    for: never a file from a peer).

    Raises:
        ConfigError: no such file, or not a torch.export archive.
    """
    if not path.is_file():
        raise ConfigError(f"{path} does not exist")
    try:  # a text file or another zip is told apart before torch logs its traceback
        with zipfile.ZipFile(path) as archive:
            known = any(n.endswith("/archive_format") for n in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        known = False
    if not known:
        raise ConfigError(f"{path} is not a torch.export program (.pt2)")
    try:
        return torch.export.load(path)
    except Exception as exc:  # torch raises many kinds for a damaged archive
        raise ConfigError(f"{path} is not a program torch.export.load can read: "
                          f"{first_lines(exc, 1)}") from exc


def eval_ready(model: nn.Module) -> nn.Module:
    """A module that eval mode reaches: ``model`` itself, or for a graph module (a
    program's, whose ops carry the mode they were exported in: its own train() and eval()
    raise, a copy's do nothing) its graph rewritten in place to run as for inference; pass
    a copy to keep the original.

    Raises:
        ConfigError: the graph draws random numbers other than dropout's.
    """
    if not isinstance(model, torch.fx.GraphModule):
        return model
    with contextlib.suppress(NotImplementedError):  # submodules a graph may still call
        model.eval()
    return eval_module(model)


def _shape(shape: tuple[int, ...]) -> str:
    return "(N, " + ", ".join(str(d) for d in shape) + ")"

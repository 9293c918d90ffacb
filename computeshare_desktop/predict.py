"""``computeshare predict``: a saved model's top classes for image files or CSV rows.

The model is ``trained_model.pt2`` (its input shape says what it takes: it needs neither
the session's data nor its statistics, which are inside) or ``trained_model.pth`` with the
session's model spec and data (``evaluation``). An image is
converted to the model's channels, scaled to cover the model's size with its aspect kept
and cropped in the middle, then fed as float32 in [0, 1]; a CSV file gives one prediction
per row of a table model's values (a first line that is not numbers is a header). Class
names come from the ``classes.json`` beside the model, else their indices.

Each input file is read on its own: one that cannot be (missing, not an image, a row of
the wrong width) becomes an ``Unread`` with a clear reason, and the others are predicted.
Qt-free; the command line only parses and prints.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from .data import DatasetInfo
from .data.folders import cover
from .errors import ConfigError
from .evaluation import PROGRAM_SUFFIX, SavedModel, load_program_model, load_saved_model
from .hub.outputs import CLASSES_FILE, FEATURES_FILE
from .stored import Damaged, decode_stored

IMAGE_KINDS = "PNG, JPEG, BMP or WebP"
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}  # Pillow's mode for a model's channels


@dataclass(frozen=True, slots=True)
class Guess:
    """One class the model sees in an input, and how likely it says it is."""

    label: str
    index: int
    probability: float

    def to_json(self) -> dict[str, Any]:
        return {"class": self.label, "index": self.index, "probability": self.probability}


@dataclass(frozen=True, slots=True)
class Prediction:
    """The top classes of one input: an image file, or a CSV file's ``row`` (from 1)."""

    file: str
    top: tuple[Guess, ...]
    row: int | None = None

    def text(self) -> str:
        where = self.file if self.row is None else f"{self.file} row {self.row}"
        return f"{where}: " + ", ".join(f"{g.label} {100 * g.probability:.1f}%"
                                        for g in self.top)

    def to_json(self) -> dict[str, Any]:
        place = {"file": self.file} if self.row is None else {"file": self.file,
                                                               "row": self.row}
        return {**place, "top": [g.to_json() for g in self.top]}


@dataclass(frozen=True, slots=True)
class Unread:
    """An input file that could not be predicted, and why."""

    file: str
    error: str

    def text(self) -> str:
        return f"{self.file}: {self.error}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "error": self.error}


@dataclass(frozen=True, slots=True, eq=False)
class Predictor:
    """A saved model, the shape of one input, and the names of its outputs."""

    model: SavedModel
    classes: tuple[str, ...] | None = None
    features: tuple[str, ...] = ()  # a table's feature names: CSV columns are read by name

    @property
    def takes_images(self) -> bool:
        return len(self.model.sample_shape) == 3

    def predict(self, files: Sequence[Path], top: int) -> list[Prediction | Unread]:
        """Each file's predictions (a CSV file's: one per row), or why it has none."""
        results: list[Prediction | Unread] = []
        for path in files:
            try:
                results.extend(self.predict_file(path, top))
            except ConfigError as exc:
                results.append(Unread(str(path), str(exc)))
        return results

    def predict_file(self, path: Path, top: int) -> list[Prediction]:
        """The predictions for one file.

        Raises:
            ConfigError: the file cannot be read as the model's input.
        """
        if self.takes_images:
            inputs = read_image(path, self.model.sample_shape)[None]
            return [Prediction(str(path), self.top(inputs, top)[0])]
        rows = read_rows(path, self.model.sample_shape[0], self.features)
        return [Prediction(str(path), guesses, row)
                for row, guesses in enumerate(self.top(rows, top), start=1)]

    @torch.no_grad()
    def top(self, inputs: torch.Tensor, k: int) -> list[tuple[Guess, ...]]:
        """The ``k`` likeliest classes of each input of a batch."""
        try:
            logits = self.model.module(inputs)
        except Exception as exc:  # torch raises many kinds for inputs a program refuses
            raise ConfigError(f"the model refused the input: {str(exc).strip()[:200]}") \
                from exc
        names = self.classes or tuple(str(i) for i in range(logits.shape[1]))
        if len(names) != logits.shape[1]:
            raise ConfigError(f"{CLASSES_FILE} names {len(names)} classes; the model gives "
                              f"{logits.shape[1]} outputs")
        probabilities = torch.softmax(logits.float(), dim=1)
        values, indices = probabilities.topk(min(k, logits.shape[1]), dim=1)
        return [tuple(Guess(names[i], i, float(p)) for p, i in zip(vs.tolist(), ix.tolist(),
                                                                    strict=True))
                for vs, ix in zip(values, indices, strict=True)]


def load_predictor(path: Path, model_name: str, info: DatasetInfo | None,
                   features: Sequence[str] = ()) -> Predictor:
    """The model in ``path`` (``info`` and ``model_name`` rebuild a .pth; they fill the
    sizes a .pt2 leaves free: a .pt2 of fixed sizes needs no ``info``) with the class
    names beside it; ``features``: a table's column names when ``info`` has none.

    Raises:
        ConfigError: the model cannot be read, takes neither images nor table rows, or
            its classes.json is not a list of names.
    """
    if info is None and path.suffix.lower() != PROGRAM_SUFFIX:
        raise ConfigError(f"{path} is a state_dict: its session's data is needed")
    model = (load_program_model(path) if info is None
             else load_saved_model(path, model_name, info))
    if len(model.sample_shape) not in (1, 3):
        raise ConfigError(f"{path} takes inputs of {len(model.sample_shape)} dimensions; "
                          "predict reads images (C×H×W) and table rows")
    names = info.features if info is not None and info.features else tuple(features)
    if not names and len(model.sample_shape) == 1:  # the session's own list, if written
        names = _read_names(path.parent / FEATURES_FILE, "feature names") or ()
    return Predictor(model, read_classes(path.parent / CLASSES_FILE), names)


def read_classes(path: Path) -> tuple[str, ...] | None:
    """The names in a classes.json (a JSON list of strings); None when there is none."""
    return _read_names(path, "class names")


def _read_names(path: Path, what: str) -> tuple[str, ...] | None:
    """The names in a JSON list of strings (classes.json, features.json); None when there
    is no such file."""
    if not path.is_file():
        return None
    try:
        names: tuple[str, ...] = decode_stored(path, tuple[str, ...])
    except Damaged as exc:  # predict stops: the names would be a guess
        raise ConfigError(f"{path} is not a JSON list of {what} ({exc.reason})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return names


def read_image(path: Path, shape: tuple[int, ...]) -> torch.Tensor:
    """An image file as a float32 C×H×W tensor in [0, 1] of ``shape``: converted to its
    channels, scaled to cover H×W with its aspect kept, the middle cropped.

    Raises:
        ConfigError: no such file, not an image, or channels an image cannot have.
    """
    from PIL import Image, ImageOps, UnidentifiedImageError  # only predict reads images

    channels, height, width = shape
    if channels not in _MODES:
        raise ConfigError(f"the model takes {channels} channels: images have 1, 3 or 4")
    _check_file(path)
    try:
        with Image.open(path) as opened:
            image = ImageOps.exif_transpose(opened).convert(_MODES[channels])
    except (UnidentifiedImageError, Image.DecompressionBombError):
        raise ConfigError(f"not an image ({IMAGE_KINDS})") from None
    except OSError as exc:  # a truncated or damaged file
        raise ConfigError(f"cannot read the image: {exc}") from None
    pixels = np.asarray(cover(image, width, height), dtype=np.uint8)
    tensor = torch.from_numpy(pixels.reshape(height, width, channels).copy())
    return tensor.permute(2, 0, 1).to(torch.float32).div_(255.0)


def read_rows(path: Path, features: int, names: Sequence[str] = ()) -> torch.Tensor:
    """A CSV file's rows as float32 N×``features``; a first line that is not numbers is
    a header; blank lines are skipped. With the session's feature ``names`` and a header
    that names their columns, the row's values are taken by name (other columns, the
    label's say, are left out) and a text column is one-hot encoded as in training.

    Raises:
        ConfigError: no such file, not text, a row of another width or a value that is
            not a number (a text value the training never saw), or no rows at all.
    """
    _check_file(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            lines = [(n, r) for n, r in enumerate(csv.reader(fh), start=1)
                     if any(cell.strip() for cell in r)]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"not a CSV file of numbers ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read it: {exc}") from None
    header: list[str] = []
    if lines and not _numbers(lines[0][1]):
        header, lines = [c.strip() for c in lines[0][1]], lines[1:]
    if not lines:
        raise ConfigError("no rows of numbers")
    picks = _by_name(header, names) if len(names) == features else None
    if picks is not None:
        return torch.stack([_picked(cells, picks, line) for line, cells in lines])
    values = []
    for row, (line, cells) in enumerate(lines, start=1):
        if len(cells) != features:
            raise ConfigError(f"row {row} (line {line}) has {len(cells)} values; the model "
                              f"takes {features}")
        if not _numbers(cells):
            raise ConfigError(f"row {row} (line {line}) holds a value that is not a number")
        values.append([float(cell) for cell in cells])
    return torch.tensor(values, dtype=torch.float32)


_Pick = tuple[int, str | None]  # a column's place, and the value of a one-hot feature


def _by_name(header: list[str], names: Sequence[str]) -> list[_Pick] | None:
    """Where each feature is in the header (None unless all are): COLUMN, or COLUMN=VALUE
    for a one-hot text column."""
    picks: list[_Pick] = []
    for name in names:
        column, _, value = name.partition("=")
        if name in header:
            picks.append((header.index(name), None))
        elif value and column in header:
            picks.append((header.index(column), value))
        else:
            return None
    return picks


def _picked(cells: list[str], picks: list[_Pick], line: int) -> torch.Tensor:
    """One row's features by name (its line for the error)."""
    values = []
    for column, value in picks:
        cell = cells[column].strip() if column < len(cells) else ""
        if value is not None:
            if not any(c == column and v == cell for c, v in picks):
                raise ConfigError(f"line {line}: {cell!r} is a value the training never saw")
            values.append(1.0 if cell == value else 0.0)
        elif not _numbers([cell]):
            raise ConfigError(f"line {line}: {cell!r} is not a number")
        else:
            values.append(float(cell))
    return torch.tensor(values, dtype=torch.float32)


def _numbers(cells: Sequence[str]) -> bool:
    try:
        return all(math.isfinite(float(cell)) for cell in cells)
    except ValueError:
        return False


def _check_file(path: Path) -> None:
    if not path.exists():
        raise ConfigError("no such file")
    if not path.is_file():
        raise ConfigError("not a file")

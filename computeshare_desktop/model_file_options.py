"""The schema of the commands that use a saved model: ``evaluate`` and ``predict``.

Each option is declared once (see ``schema``); ``computeshare evaluate`` and ``computeshare
predict`` derive their arguments from ``ModelFileOptions``. Light to import: the command
line reads the flags before torch loads. The data and the model spec default to the
``session.json`` beside the file (``--dataset`` and ``--model`` are the session's options).
"""

from __future__ import annotations

from dataclasses import dataclass

from .hub.config import SessionOptions
from .schema import default, option

BOTH = ("evaluate", "predict")
PREDICT = ("predict",)
_SESSION_DATA = default(SessionOptions, "dataset")  # the session's defaults, said in the help
_SESSION_MODEL = default(SessionOptions, "model")


@dataclass(frozen=True, slots=True)
class ModelFileOptions:
    """Which saved model, on which inputs, and how the answer is printed."""

    model_file: str = option(
        "", "trained_model.pth (with the session.json beside it) or trained_model.pt2",
        flag="model_file", positional=True, required=True, commands=BOTH,
        metavar="MODEL_FILE")
    files: tuple[str, ...] = option(
        (), "image files (PNG, JPEG, BMP, WebP), or CSV files of a table model's rows "
        "(one prediction per row)", flag="files", positional=True, repeat=True,
        commands=PREDICT, metavar="FILE")
    dataset: str | None = option(
        None, "the session's data (a .pt2 is evaluated on its test split); default: from "
        f"session.json beside the file, else {_SESSION_DATA}", flag="--dataset",
        commands=BOTH)  # None: as the session.json beside the file says
    model: str | None = option(
        None, "the session's model spec, to rebuild a .pth; default: from session.json "
        f"beside the file, else {_SESSION_MODEL}", flag="--model", commands=BOTH)
    top: int = option(3, "how many classes to show per input (default {default})",
                      flag="--top", commands=PREDICT, metavar="K", ge=1,
                      error="--top must be 1 or more")
    json: bool = option(False, "print JSON instead of sentences", flag="--json",
                        commands=BOTH, help_for={
                            "evaluate": "print a JSON object instead of a sentence",
                            "predict": "print one JSON object per line: per file, or per "
                                       "row of a CSV file"})

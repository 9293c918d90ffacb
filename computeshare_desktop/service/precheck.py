"""What is checked before a session opens, for a view that wants to say it before any port
opens or any PIN is shown: the output folder, the data, and the model's build, export and
the workers' own contract on the bytes they would fetch (``hub.user_model.ship_model``).
No Qt; it blocks (seconds for a model that exports), so a window runs it on a thread.

A failure comes back as ``NotReady``: the option it is about, what went wrong in plain words,
the technical lines apart (the export's own message and torch's traceback), and whether the
way out is to offer the model's code. The hub's thread runs the same checks again when it
builds the session, so what passed here cannot open a session that differs.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from ..data.prepared import load_data
from ..errors import ComputeShareError, ConfigError
from ..graph.export import quoted_error
from ..hub.code_offer import HINT as OFFER_CODE_HINT
from ..hub.config import HubConfig
from ..hub.user_model import build_hub_model, fit_model_to_data, ship_model
from ..models import SpecKind, parse_model_spec
from ..text import sentence
from .options import HostPlan, check_output_folder

HINT_MARK = "  hint: "  # how the export's advice starts its line (graph.export)


@dataclass(frozen=True, slots=True)
class NotReady:
    """Why a session cannot open: ``field`` is the option to fix ("out_dir", "dataset",
    "model", "weights"), ``text`` says it in plain words, ``details`` the technical lines
    (empty: none), ``code_would_help`` whether offering the model's code would let it open."""

    field: str
    text: str
    details: str = ""
    code_would_help: bool = False


def needs_checking(config: HubConfig) -> bool:
    """Whether the model is one the hub exports or loads weights into (a file, a program,
    torchvision's, a built-in with weights or ``train_only``): what a pristine built-in
    goes by, its name, cannot fail once the data is here."""
    spec = parse_model_spec(config.model)
    return spec.kind is not SpecKind.BUILTIN or bool(config.weights or config.train_only)


def check_before_opening(plan: HostPlan) -> NotReady | None:
    """Everything a new session checks before it opens, in its order; None when it can
    open. A resume or a model handed from Python is the session's own to check."""
    try:
        check_output_folder(plan.out_dir, plan.resume)
    except ConfigError as exc:
        return NotReady("out_dir", sentence(str(exc)))
    if plan.resume or plan.given is not None:
        return None
    config = plan.config
    try:
        train_set, _ = load_data(config.dataset, image_size=config.image_size,
                                 label=config.label_column, test_fraction=config.test_fraction,
                                 input=config.input, test_spec=config.test_data)
    except ComputeShareError as exc:
        return NotReady("dataset", sentence(str(exc)))
    try:
        config = fit_model_to_data(config, train_set.info)
        ship_model(build_hub_model(config, train_set.info), config, train_set)
    except Exception as exc:  # the person's own code runs here: anything it raises is said
        field = "weights" if config.weights and config.weights in str(exc) else "model"
        return model_not_ready(exc, field)
    return None


def model_not_ready(exc: BaseException, field: str = "model") -> NotReady:
    """A model's failure split for people: the plain words (the technical error that the
    export quoted taken out), the whole text and the tracebacks as details."""
    text = str(exc)
    offer = OFFER_CODE_HINT in text
    foreign = _foreign_cause(exc)
    plain = text.replace(OFFER_CODE_HINT, "").strip()
    if foreign is not None:
        plain = plain.replace(quoted_error(foreign), "")
        plain = plain.replace(":  \n", "\n").replace(": \n", "\n")
    elif not isinstance(exc, ComputeShareError):
        plain = f"building the model failed ({type(exc).__name__}: {first_line(text)})"
    details = text if foreign is None else f"{text}\n\n{_traceback(foreign)}"
    if not isinstance(exc, ComputeShareError):
        details = _traceback(exc)
    return NotReady(field, _sentences(plain).strip(), details.strip(), offer)


def _foreign_cause(exc: BaseException) -> BaseException | None:
    """The first error in ``exc``'s chain that is not one of ours (torch's, the model's),
    when one of ours wraps it; None when there is none."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if not isinstance(current, ComputeShareError) and current is not exc:
            return current
        current = current.__cause__ or current.__context__
    return None


def _traceback(err: BaseException) -> str:
    return "".join(traceback.format_exception(type(err), err, err.__traceback__))


def _sentences(text: str) -> str:
    """Lines as sentences: the export's "hint:" line becomes one of its own."""
    parts = [line.strip().removeprefix(HINT_MARK.strip()).strip()
             for line in text.replace(HINT_MARK, "\n").splitlines()]
    return " ".join(sentence(part.rstrip(":")) for part in parts if part.strip(" :"))


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""

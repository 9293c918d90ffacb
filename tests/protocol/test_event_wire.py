"""The hub's events on the event socket: ``to_wire``/``from_wire`` round trip every kind; a
known kind with missing or mistyped fields is a ValueError, an unknown kind is None, and
nothing else escapes (the subscriber drops what does not parse)."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computeshare_desktop.events import (BY_KIND, HUB_EVENTS, Event, Failed, Joined,
                                          LeaveReason, RoundClosed, WorkerInfo, WorkerJoined,
                                          WorkerLeft, from_wire)

WORKER = WorkerInfo(id=2, name="laptop", device="cpu", shard=1, pushed=7, ready=True,
                    compute_s=0.25, key="ab" * 8)
SAMPLE_VALUES: dict[Any, Any] = {
    int: 3, float: 0.5, str: "x", bool: True, WorkerInfo: WORKER,
    tuple[WorkerInfo, ...]: (WORKER, msgspec.structs.replace(WORKER, id=3, ready=False)),
    int | None: 2, float | None: 0.25, str | None: "out/model.pt",
    dict[str, Any] | None: {"counts": {"0": 3}, "bound": 4}, LeaveReason: LeaveReason.KICKED,
}


def sample(cls: type[Event]) -> Event:
    """An event of ``cls`` with a value in every field (defaults too)."""
    return cls(**{f.name: SAMPLE_VALUES[f.type] for f in msgspec.structs.fields(cls)})


def through_json(event: Event) -> Any:
    """What a subscriber receives: the event as JSON text, read back."""
    return json.loads(json.dumps(event.to_wire()))


@pytest.mark.parametrize("cls", HUB_EVENTS, ids=lambda c: c.kind)
def test_every_hub_event_round_trips(cls: type[Event]) -> None:
    event = sample(cls)
    data = through_json(event)
    assert list(data)[0] == "kind" and data["kind"] == cls.kind and BY_KIND[cls.kind] is cls
    assert set(data) == {"kind", *(f.name for f in msgspec.structs.fields(cls))}
    assert from_wire(data) == event and type(from_wire(data)) is cls


def test_a_leave_reason_travels_as_its_word_and_an_unknown_one_is_refused() -> None:
    data = through_json(WorkerLeft(WORKER, LeaveReason.MODEL_REFUSED))
    assert data["reason"] == "model_refused"
    assert from_wire(data) == WorkerLeft(WORKER, LeaveReason.MODEL_REFUSED)
    with pytest.raises(ValueError, match="reason"):
        from_wire({**data, "reason": "bored"})


def test_optional_fields_take_their_defaults() -> None:
    data = through_json(sample(RoundClosed))
    for name in ("workers", "staleness", "lr_scale", "staleness_histogram"):
        del data[name]
    event = from_wire(data)
    assert isinstance(event, RoundClosed)
    assert (event.workers, event.staleness, event.lr_scale) == ((), None, None)


def test_ints_stand_for_floats_and_unknown_fields_are_ignored() -> None:
    """A newer hub may add fields, to an event or to a worker's description."""
    data = through_json(sample(RoundClosed))
    data.update(loss=2, seconds=0, added_later={"x": [1]})
    data["workers"][0].update(compute_s=1, added_later=True)
    event = from_wire(data)
    assert isinstance(event, RoundClosed)
    assert type(event.loss) is float and event.loss == 2.0 and event.seconds == 0.0
    assert type(event.workers[0].compute_s) is float and event.workers[0].compute_s == 1.0


def test_non_finite_floats_travel() -> None:
    event = msgspec.structs.replace(sample(RoundClosed), loss=float("nan"),
                                    lr_scale=float("inf"))
    back = from_wire(through_json(event))
    assert isinstance(back, RoundClosed) and math.isnan(back.loss) and back.lr_scale == math.inf


def test_an_unknown_kind_is_none_and_a_shapeless_event_is_a_value_error() -> None:
    assert from_wire({"kind": "from_a_newer_hub", "x": 1}) is None
    for data in ([], "round", None, {}, {"kind": 5}, {"kind": None, "round": 1}):
        with pytest.raises(ValueError):
            from_wire(data)


@pytest.mark.parametrize("cls", HUB_EVENTS, ids=lambda c: c.kind)
def test_a_missing_required_field_is_a_value_error(cls: type[Event]) -> None:
    data = through_json(sample(cls))
    for f in msgspec.structs.fields(cls):
        if f.required:
            partial = {k: v for k, v in data.items() if k != f.name}
            with pytest.raises(ValueError, match=f.name):
                from_wire(partial)


@pytest.mark.parametrize("name,value", [
    ("round", True), ("round", 1.0), ("round", "1"), ("loss", "0.5"), ("loss", True),
    ("complete", 1), ("complete", "yes"), ("staleness", 1.5), ("workers", 5),
    ("workers", [5]), ("workers", [{"name": "no id"}]), ("staleness_histogram", [1]),
    ("round", "\ud800"),  # msgspec reads such a str as UTF-8 first: still a ValueError
])
def test_a_mistyped_field_is_a_value_error(name: str, value: Any) -> None:
    data = {**through_json(sample(RoundClosed)), name: value}
    with pytest.raises(ValueError, match="round event"):
        from_wire(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    | st.sampled_from(["\ud800", 2**64, -(2**70)]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=4),
    max_leaves=10)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(HUB_EVENTS), st.data())
def test_garbage_in_a_field_is_an_event_or_a_value_error(cls: type[Event],
                                                        data: st.DataObject) -> None:
    obj = through_json(sample(cls))
    obj[data.draw(st.sampled_from(sorted(obj)))] = data.draw(json_values)
    try:
        event = from_wire(obj)
    except ValueError:
        return
    assert event is None or isinstance(event, Event)


def test_events_are_frozen_hashable_and_built_as_before() -> None:
    joined = Joined(3, 0, 2, "mnist-sample", "simplenet", 50, "cpu")
    assert (joined.batch_size, joined.state, joined.kind) == (0, "waiting", "joined")
    assert Failed("boom").code == "ERROR" and WorkerJoined(WORKER).worker is WORKER
    with pytest.raises(AttributeError):
        joined.shard = 1  # type: ignore[misc]
    assert len({joined, Joined(3, 0, 2, "mnist-sample", "simplenet", 50, "cpu")}) == 1

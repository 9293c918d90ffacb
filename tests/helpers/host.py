"""Hosting and joining in tests through the one builder each front end uses
(service.options.host_plan, service.join.join_plan): a test's own configuration, the
options a front end would hold; a worker on loopback that keeps what it reports, and a join
that never starts, for the app's dialogs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from computeshare_desktop.hub import HubConfig
from computeshare_desktop.join_options import JoinOptions
from computeshare_desktop.service import (AppConfig, HostOptions, HostPlan, JoinPlan, JoinService,
                                          JoinTarget, Tagged, host_plan, join_plan)
from computeshare_desktop.worker import pick_device


def hosting(config: HubConfig, out_dir: Path | str, *, bind: str = "0.0.0.0",
            linger_s: float = 5.0, **options: Any) -> HostPlan:
    """The plan of ``config`` in ``out_dir``; ``options``: HostOptions' (port, pin,
    advertise, train_here, name, resume...)."""
    return host_plan(HostOptions(out_dir=str(out_dir), **options), AppConfig(bind=bind),
                     config=config, linger_s=linger_s)


PLAN_FIELDS = ("name", "role", "device", "follow_hub", "hub_key", "remember_code")


def joining(target: JoinTarget, **given: Any) -> JoinPlan:
    """A JoinPlan through the one builder (service.join.join_plan): ``given`` names the
    plan's own fields (name, device, follow_hub...) and JoinOptions' (pin, wait_s...)."""
    plan = {k: given.pop(k) for k in PLAN_FIELDS if k in given}
    return join_plan(target, JoinOptions(**given), **plan)


class HeldJoin(JoinService):
    """A JoinService that never starts its thread: a test reads its plan, and the dialog or
    window that drains it gets the events the test put in ``script``."""

    def __init__(self, plan: JoinPlan, script: Sequence[Tagged] = ()) -> None:
        super().__init__(plan)
        self.script = list(script)

    def start(self) -> "HeldJoin":
        return self

    def drain(self) -> list[Tagged]:
        events, self.script = self.script, []
        return events


def worker(port: int, pin: str, name: str) -> JoinService:
    """A worker's JoinService for the hub on 127.0.0.1:``port`` (not started), the events it
    reports kept in its ``seen``."""
    target = JoinTarget(host="127.0.0.1", port=port, label="hub")
    seen: list[object] = []
    service = JoinService(joining(target, pin=pin, name=name, device=pick_device("cpu"),
                                   follow_hub=False, give_up_s=10.0, first_contact_s=10.0,
                                   wait_s=20.0), on_event=lambda t: seen.append(t.event))
    service.seen = seen  # type: ignore[attr-defined]
    return service


def saw(service: JoinService, kind: type) -> bool:
    """``service`` (made by ``worker``) reported an event of ``kind``."""
    return any(isinstance(event, kind) for event in list(service.seen))  # type: ignore[attr-defined]

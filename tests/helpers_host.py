"""Hosting and joining in tests through the one builder each front end uses
(service.options.host_plan, service.join.join_plan): a test's own configuration, the
options a front end would hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from computeshare_desktop.hub import HubConfig
from computeshare_desktop.join_options import JoinOptions
from computeshare_desktop.service import (AppConfig, HostOptions, HostPlan, JoinPlan, JoinTarget,
                                          host_plan, join_plan)


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

"""Hosting in tests through the one builder every front end uses (service.options
.host_plan): a test's own configuration, the options a front end would hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from computeshare_desktop.hub import HubConfig
from computeshare_desktop.service import AppConfig, HostOptions, HostPlan, host_plan


def hosting(config: HubConfig, out_dir: Path | str, *, bind: str = "0.0.0.0",
            linger_s: float = 5.0, **options: Any) -> HostPlan:
    """The plan of ``config`` in ``out_dir``; ``options``: HostOptions' (port, pin,
    advertise, train_here, name, resume...)."""
    return host_plan(HostOptions(out_dir=str(out_dir), **options), AppConfig(bind=bind),
                     config=config, linger_s=linger_s)

"""``--trust-code`` on ``join`` and the service's side of a code refusal: the flag's
check, the plan it fills, the events a refusal posts (the app's dialog reads them), the
approval it stores in the user's folder, and the host's own worker, which runs its
person's own file without asking."""

from __future__ import annotations

import pytest
from helpers.host import hosting
from helpers.net import free_ports

from computeshare_desktop.cli import commands
from computeshare_desktop.cli.main import build_parser
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.events import CodeRefused, Ended, Failed, Finished, ModelReceived
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.service import (HostService, JoinService, JoinTarget,
                                          approve_code, code_approvals)
from computeshare_desktop.worker import CodeNotApproved

SHA = "ab12" * 16


def test_trust_code_takes_a_sha256_and_reaches_the_plan() -> None:
    args = build_parser().parse_args(["join", "127.0.0.1:1", "--trust-code", SHA.upper()])
    options = commands.join_options(args)
    plan = commands.cli_join_plan(options, JoinTarget.from_address("127.0.0.1:1"), "", None)  # type: ignore[arg-type]
    assert plan.options.trust_code == SHA and plan.remember_code
    with pytest.raises(ConfigError, match="64 hex digits"):
        commands.join_options(build_parser().parse_args(["join", "--trust-code", "abc"]))
    assert commands.join_options(build_parser().parse_args(["join"])).trust_code == ""


def test_a_refusal_posts_what_the_app_asks_about_and_approving_remembers_it(monkeypatch):
    target = JoinTarget.from_address("127.0.0.1:7000")
    service = JoinService(commands.cli_join_plan(
        commands.join_options(build_parser().parse_args(["join"])), target, "", None))  # type: ignore[arg-type]

    def refused() -> None:
        raise CodeNotApproved("net.py:Net", SHA, "the hub's key")

    monkeypatch.setattr(service, "_work", refused)
    service.start()
    assert service.join(5.0)
    events = [t.event for t in service.drain()]
    offer = next(e for e in events if isinstance(e, CodeRefused))
    assert offer == CodeRefused("net.py:Net", SHA, "the hub's key", target.label)
    failed = next(e for e in events if isinstance(e, Failed))
    assert failed.code == "CODE_NOT_APPROVED" and f"--trust-code {SHA}" in failed.message
    assert isinstance(events[-1], Ended)
    assert not code_approvals().approved("the hub's key", SHA)
    approve_code(offer)
    assert code_approvals().approved("the hub's key", SHA)
    assert not code_approvals().approved("another key", SHA)


BRANCHY = '''
from torch import nn


class Net(nn.Module):
    def __init__(self, num_classes, in_channels, image_size):
        super().__init__()
        self.fc = nn.Linear(in_channels * image_size * image_size, num_classes)

    def forward(self, x):
        x = x.flatten(1)
        if x.sum() > 0:  # data-dependent control flow: no graph
            x = -x
        return self.fc(x)
'''


def test_the_hosts_own_worker_runs_its_own_offered_code_and_stores_nothing(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    path = tmp_path / "branchy.py"
    path.write_text(BRANCHY, encoding="utf-8")
    config = HubConfig(model=f"{path}:Net", offer_code=True, rounds=5, workers=1,
                       batch_size=8, eval_every=0)
    plan = hosting(config, tmp_path / "run", port=free_ports(), bind="127.0.0.1",
                    advertise=False, train_here=True, pin="975310", linger_s=0.5)
    service = HostService(plan).start()
    assert service.wait(120), "the session did not finish"
    events = service.drain()
    received = [t.event for t in events if isinstance(t.event, ModelReceived)]
    assert [e.how.startswith("code approved (") for e in received] == [True]
    assert any(isinstance(t.event, Finished) for t in events)
    assert not (tmp_path / "home" / "approved-code.json").exists()

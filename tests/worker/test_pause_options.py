"""join's pause options: --no-pause-on-battery reaches the plan, and a JoinService only
watches the battery when asked (a fake reading: on battery from the start)."""

from __future__ import annotations

import threading

from helpers.host import joining
from computeshare_desktop.cli import commands
from computeshare_desktop.events import Finished
from computeshare_desktop.cli.main import build_parser
from computeshare_desktop.service import JoinPlan, JoinService, JoinTarget
from computeshare_desktop.worker import pick_device
from computeshare_desktop.worker.battery import Power
from computeshare_desktop.worker.pause import PauseReason

TARGET = JoinTarget.from_address("127.0.0.1:9")  # nothing listens there


def plan_of(*argv: str) -> JoinPlan:
    options = commands.join_options(build_parser().parse_args(["join", *argv]))
    return commands.cli_join_plan(options, TARGET, "1234", pick_device("cpu"))


def test_pause_on_battery_is_on_by_default_and_the_flag_turns_it_off() -> None:
    assert plan_of().options.pause_on_battery
    assert not plan_of("--no-pause-on-battery").options.pause_on_battery


def test_a_join_service_on_battery_pauses_unless_told_not_to() -> None:
    for watch in (True, False):
        read = threading.Event()

        def battery(read: threading.Event = read) -> Power:
            read.set()
            return Power(40.0, False)

        service = JoinService(joining(TARGET, name="w", pause_on_battery=watch, wait_s=0.0,
                                       first_contact_s=0.5), battery=battery)
        service.start()
        assert service.join(20.0)  # nothing listens: it ends, having read the battery or not
        assert read.is_set() is watch
        assert service.pauses.reason is (PauseReason.BATTERY if watch else None)


class Session:
    """What JoinService asks of its WorkerSession when the hub's feed says it finished."""

    def __init__(self) -> None:
        self.stop = threading.Event()


def test_a_worker_paused_when_the_hub_finishes_ends_instead_of_waiting() -> None:
    done = Finished(accuracy=0.9, loss=0.3, version=24, model_path="m.pth", seconds=9.0)
    for paused in (True, False):
        service = JoinService(joining(TARGET, name="w"))
        session = service._session = Session()  # type: ignore[assignment]
        if paused:
            service.pause()
        service._on_hub_event(done)
        assert session.stop.is_set() is paused  # a training worker hears DONE from the hub

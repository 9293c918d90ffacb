""""Check network…" in the main window: the doctor runs off the GUI thread and its report,
causes and fixes included, shows in a dialog; against a selected session it measures that
hub."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("PySide6")

from helpers.ui import click  # noqa: E402

from computeshare_desktop.gui.doctor_dialog import DoctorDialog  # noqa: E402
from computeshare_desktop.service.doctor import DoctorOptions  # noqa: E402
from computeshare_desktop.service.doctor_report import Item, Report, Status  # noqa: E402

FAILED = Report((Item("interfaces", "Network interfaces", Status.OK, "eth0 192.168.1.20/24"),
                 Item("mdns_sessions", "Sessions on the LAN", Status.FAIL, "none seen",
                      "multicast is blocked", "allow mDNS (UDP port 5353)")))


class SlowCheck:
    """A doctor that takes a while, on whatever thread runs it."""

    def __init__(self, report: Report = FAILED, seconds: float = 0.4) -> None:
        self.report, self.seconds = report, seconds
        self.threads: list[str] = []
        self.options: list[DoctorOptions] = []

    def __call__(self, options: DoctorOptions) -> Report:
        self.threads.append(threading.current_thread().name)
        self.options.append(options)
        time.sleep(self.seconds)
        return self.report


def test_check_network_button_shows_the_report_off_the_gui_thread(qtbot, main_window,
                                                                   monkeypatch) -> None:
    import computeshare_desktop.gui.doctor_dialog as module

    check = SlowCheck()
    monkeypatch.setattr(module, "diagnose", check)
    click(qtbot, main_window.doctor_button)
    dialog = main_window.doctor_dialog
    assert isinstance(dialog, DoctorDialog) and dialog.isVisible()
    assert "Checking" in dialog.headline.text()  # the window answers while the check runs
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=5000)
    assert check.threads == ["doctor"] and check.options[0].hub is None
    assert check.options[0].interfaces == main_window.config.interfaces
    assert "1 check failed" in dialog.headline.text()
    text = dialog.text.toPlainText()
    assert "multicast is blocked" in text and "UDP port 5353" in text
    click(qtbot, dialog.again_button)
    assert not dialog.again_button.isEnabled()
    dialog.wait(5)
    assert len(check.threads) == 2 and dialog.again_button.isEnabled()
    dialog.close()


def test_a_selected_sessions_hub_is_measured_and_errors_show(qtbot) -> None:
    check = SlowCheck(Report((Item("link", "Encrypted link to the hub", Status.OK,
                                   "round trip 0.4 ms"),)), 0.0)
    dialog = DoctorDialog(None, hub="10.0.0.5:7341", run=check)
    qtbot.addWidget(dialog)
    dialog.start()
    dialog.wait(5)
    assert check.options[0].hub == "10.0.0.5:7341"
    assert dialog.headline.text() == "All checks passed."
    warned = DoctorDialog(None, run=SlowCheck(Report((Item(
        "mdns_sessions", "Sessions on the LAN", Status.WARN, "none seen"),)), 0.0))
    qtbot.addWidget(warned)
    warned.start()
    warned.wait(5)
    assert warned.headline.text() == ("All checks passed, 1 warning: the cause and the fix "
                                      "are under each WARN line.")

    def broken(options: DoctorOptions) -> Report:
        raise ValueError("“x:y” is not a hub address")

    bad = DoctorDialog(None, hub="x:y", run=broken)
    qtbot.addWidget(bad)
    bad.start()
    bad.wait(5)
    assert bad.headline.text() == "The check could not run"
    assert "not a hub address" in bad.text.toPlainText()


def test_with_a_session_selected_the_check_measures_its_hub(qtbot, main_window,
                                                            monkeypatch) -> None:
    import computeshare_desktop.gui.doctor_dialog as module
    from computeshare_desktop.discovery import DiscoveredSession, SessionAdvert

    check = SlowCheck(seconds=0.0)
    monkeypatch.setattr(module, "diagnose", check)
    advert = SessionAdvert(session_id="s1", name="lab", host="box", model="simplenet",
                           dataset="mnist-sample", joined=0, expected=2, state="waiting",
                           protocol=7, key_fingerprint="ab" * 8, port=7400, pub_port=7401,
                           pair_port=7402, round=0, rounds=100)
    session = DiscoveredSession(advert, ("10.0.0.5",), "lab._computeshare._tcp.local.")
    monkeypatch.setattr(main_window, "selected_session", lambda: session)
    dialog = main_window.open_doctor_dialog()
    dialog.wait(5)
    assert check.options[0].hub == "10.0.0.5:7400"
    assert "10.0.0.5:7400" in dialog.headline.text() or dialog.report is not None
    dialog.close()


def test_the_reports_fixes_name_the_apps_controls_not_its_flags(qtbot):
    """Check network once said "would need --port": the app has a Port field (named),
    and no setting for the interface (said plainly)."""
    from computeshare_desktop.service import doctor, doctor_checks as checks

    lan = checks.Address("eth0", "192.168.1.20", 24, "lan")
    wifi = checks.Address("wlan0", "10.0.0.7", 24, "lan")
    vpn = checks.Address("tun0", "10.8.0.2", 24, "vpn")
    link = Item("hub", "Hub", Status.OK, "answers")
    report = Report((checks.ports_item(checks.PortCheck(7341, in_use=True), lan.ip),
                     checks.ports_item(checks.PortCheck(7341, bind_error="denied"), lan.ip),
                     checks.interfaces_item([lan, wifi], lan),
                     checks.interfaces_item([vpn], vpn),
                     doctor.wrong_interface(link, [lan, wifi], lan, wifi.ip)))
    assert report.text().count("--port") == 2 and report.text().count("--interface") == 3
    dialog = DoctorDialog(None, run=lambda options: report)
    qtbot.addWidget(dialog)
    dialog.start()
    dialog.wait(5)
    shown = dialog.text.toPlainText()
    assert "--port" not in shown and shown.count("the Port field of Host a session…") == 2
    fixes = [line for line in shown.splitlines() if "--interface" in line]
    assert len(fixes) == 3 and all("the app has no setting for this" in f for f in fixes)
    assert "Settings of the app" not in shown  # it has no such settings

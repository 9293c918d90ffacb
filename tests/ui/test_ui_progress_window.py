"""The progress windows' numbers, texts and sizes: the hub's Sent counts the shards, the
accuracy axis shows 100, the loss chart names its lines, a rejoined worker keeps its curve
and counts, a long failure text stays whole, no flag in a refusal, two windows of one
session name differ, the header stays put when its badge changes, and a finished window
fits a 1280×720 screen (a worker's needs at most 1,024 px)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from helpers.host import HeldJoin, hosting, joining  # noqa: E402
from helpers.hub import T0, admit, make_hub  # noqa: E402
from helpers.screens import AREA, fits  # noqa: E402
from helpers.ui import Scripted  # noqa: E402

from computeshare_desktop.gui.formatting import human_bytes  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.protocol import encode  # noqa: E402
from computeshare_desktop.protocol.messages import Shard  # noqa: E402
from computeshare_desktop.service import HostService  # noqa: E402
from PySide6.QtCore import QPoint, QRect  # noqa: E402
from computeshare_desktop.events import Ended, Finished, Listening  # noqa: E402
from computeshare_desktop.gui import placement, progress_window  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.service import Tagged  # noqa: E402


def test_the_hubs_sent_counts_the_shards_its_workers_downloaded(qtbot, tmp_path):
    """Before any round closed, a worker downloads its shard: the hub window's Sent holds
    it (it showed the rounds' bytes only, 18.7 KB for 384.7 KB of shards)."""
    hub = make_hub(workers=2)
    runner = HostService(hosting(hub.config, tmp_path / "out"))
    runner.session = SimpleNamespace(core=hub)  # as HostService sets it once built
    window = ProgressWindow.for_hub(runner, refresh_ms=10_000)
    qtbot.addWidget(window)
    w = admit(hub, b"w1", T0)
    shard = 0
    for offset in range(0, w.welcome.shard_size, 500):
        replies = hub.handle(w.peer, encode(Shard(w.token, offset, 500), []), T0, w.key)
        shard += sum(len(f) for r in replies for f in r.frames)
    window.refresh()
    assert window.state.bytes_sent >= shard > 300_000
    assert window.cards["traffic"].value.text().startswith(human_bytes(hub.traffic.sent))
    window.confirmed = True
    window.close()


def drawn_labels(axis) -> list[str]:
    """The tick labels ``axis`` draws now (pyqtgraph's own draw specs)."""
    from PySide6.QtGui import QImage, QPainter
    image = QImage(200, 200, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _, _, text in texts]


def test_the_accuracy_axis_runs_0_to_100_and_labels_100(qtbot, styled_app):
    from computeshare_desktop.gui.charts import ChartsPanel
    panel = ChartsPanel(second="accuracy")
    qtbot.addWidget(panel)
    panel.resize(900, 150)  # about what a hub window gives it on a 1280x720 screen
    panel.show()
    qtbot.waitExposed(panel)
    loss = [(v, 1.0 / v) for v in range(1, 21)]
    panel.show_series(loss, loss, [(10, 0.97), (20, 1.0)], total_rounds=20)
    qtbot.wait(20)
    item = panel.second_plot.getPlotItem()
    low, high = item.getViewBox().viewRange()[1]
    assert low <= 0.0 and high > 100.0  # the whole axis, whatever the accuracy
    assert "100" in drawn_labels(item.getAxis("left")) and "0" in drawn_labels(
        item.getAxis("left"))
    _, ys = panel.second_curve.getData()
    assert max(ys) == 100.0
    room = (high - max(ys)) / (high - low) * item.getViewBox().height()
    assert room >= panel.second_curve.opts["symbolSize"] / 2  # its dot inside, not on the edge


def test_the_loss_chart_names_its_two_lines(qtbot, styled_app):
    from computeshare_desktop.gui.charts import ChartsPanel
    panel = ChartsPanel(second="accuracy")
    qtbot.addWidget(panel)
    panel.resize(900, 220)
    panel.show()
    qtbot.waitExposed(panel)
    loss = [(v, 2.0 / v) for v in range(1, 41)]
    panel.show_series(loss, loss, [], total_rounds=40)
    legend = panel.loss_plot.getPlotItem().legend
    assert legend is not None and legend.isVisible()
    named = {sample.item: label.text for sample, label in legend.items}
    assert named == {panel.raw_curve: "Each round", panel.loss_curve: "Smoothed"}
    view = panel.loss_plot.getPlotItem().getViewBox()
    box = legend.mapRectToItem(view, legend.boundingRect())
    assert view.boundingRect().contains(box)  # whole, inside the plot
    assert box.height() < view.height() / 3  # one row: the curves stay visible


def held(target) -> HeldJoin:
    """A JoinService for ``target`` that never starts: its window drains what a test
    scripts."""
    return HeldJoin(joining(target, pin="", name="w"))


def pushes(versions, pushed_from: int = 0) -> list:
    from computeshare_desktop.events import Pushed
    from computeshare_desktop.service import Tagged
    return [Tagged("worker", Pushed(version=v, steps=0, loss=2.0 / (v + 1), compute_s=0.02,
                                    samples=8, accepted=True, pushed=pushed_from + i + 1,
                                    rejected=0))
            for i, v in enumerate(versions)]


def joined(state: str = "waiting") -> list:
    from computeshare_desktop.events import Joined
    from computeshare_desktop.service import Tagged
    return [Tagged("worker", Joined(1, 0, 1, "mnist-sample", "simplenet", 60, "cpu",
                                    batch_size=8, state=state))]


def stopped_window(qtbot, comebacks, target, rounds: int) -> ProgressWindow:
    """A worker's window that pushed for ``rounds`` rounds, then its host stopped."""
    from computeshare_desktop.events import HubStopped
    from computeshare_desktop.service import Tagged
    window = ProgressWindow.for_worker(held(target), [], refresh_ms=10_000)
    qtbot.addWidget(window)
    comebacks.watch(window)
    window.runner.script = joined() + pushes(range(rounds)) + [
        Tagged("worker", HubStopped(rounds))]
    window.refresh()
    return window


def test_a_worker_back_in_its_resumed_session_keeps_its_curve_and_count(qtbot):
    """Its host stopped the session at round 5 and resumed it: the window that comes back
    (gui/comeback.py's) draws the 5 earlier points and counts on from 5 pushes."""
    from computeshare_desktop.gui.comeback import Comebacks
    from computeshare_desktop.service import JoinTarget
    target = JoinTarget("10.0.0.7", 7341, "lab", expected_key="fp-resumed-session")
    comebacks = Comebacks(lambda t, pin: held(t),
                          lambda r, events: ProgressWindow.for_worker(r, events))
    old = stopped_window(qtbot, comebacks, target, rounds=5)
    before = list(old.state.loss)
    assert len(before) == 5 and old.state.pushed == 5
    back = comebacks.come_back(old, target)
    qtbot.addWidget(back)
    back.runner.script = joined("training") + pushes([5, 6], pushed_from=0)
    back.refresh()
    assert back.state.loss[:5] == before and [v for v, _ in back.state.loss[5:]] == [6, 7]
    assert len(back.state.loss_smooth) == len(back.state.compute_ms) == 7
    assert back.state.pushed == 7 and back.cards["pushed"].value.text() == "7"
    back.charts.show_series(back.state.loss, back.state.loss_smooth, [], 60)
    assert len(back.charts.raw_curve.getData()[0]) == 7  # drawn, not only kept
    back.confirmed = True
    back.close()


def test_a_new_session_on_the_same_hub_starts_its_curve_again(qtbot):
    """The host started a new session (round 0) instead of resuming: nothing carries."""
    from computeshare_desktop.gui.comeback import Comebacks
    from computeshare_desktop.service import JoinTarget
    target = JoinTarget("10.0.0.8", 7341, "lab", expected_key="fp-new-session")
    comebacks = Comebacks(lambda t, pin: held(t),
                          lambda r, events: ProgressWindow.for_worker(r, events))
    old = stopped_window(qtbot, comebacks, target, rounds=4)
    back = comebacks.come_back(old, target)
    qtbot.addWidget(back)
    back.runner.script = joined() + pushes([0, 1])
    back.refresh()
    assert [v for v, _ in back.state.loss] == [1, 2] and back.state.pushed == 2
    back.confirmed = True
    back.close()


@pytest.mark.parametrize("level", ["error", "warning"])
def test_a_60_line_banner_is_whole_and_scrolls_and_the_window_fits(qtbot, styled_app,
                                                                    level):
    """The banner wraps, stops growing at a few lines and scrolls: every line of the text
    is reachable, and the window at its smallest still fits 720 px less a task bar and a
    title bar, Stop and Close in it (it was cut at both ends, and not scrollable)."""
    from PySide6.QtCore import QPoint

    from computeshare_desktop.events import Failed
    from computeshare_desktop.gui.progress_state import ProgressState
    from computeshare_desktop.service import Tagged
    text = "The hub failed: Traceback (most recent call last):\n" + "\n".join(
        f'  File "model.py", line {i}, in forward: x = self.layer{i}(x) and more words '
        "to wrap" for i in range(59))
    state = ProgressState("hub", total_rounds=300, expected_workers=2, name="t")
    if level == "error":  # the session failed: its idle parts give the banner room
        state.apply([Tagged("hub", Failed(text))])
    else:  # a running window's banner (the PIN card stays beside it)
        state._alert(text, "warning")
    window = ProgressWindow(Scripted(), state, title="Hosting t", subtitle="s",
                            pin="428913")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.refresh()
    qtbot.wait(50)
    window.resize(window.minimumSizeHint())
    qtbot.wait(50)
    assert fits(window.size()), window.size()  # 1280x720 less a task bar and a title bar
    area, label = window.banner_area, window.banner
    assert area.isVisible() and label.text() == text  # whole, not cut
    assert area.height() <= area.most_height() < 6 * label.fontMetrics().lineSpacing() + 40
    bar, side = area.verticalScrollBar(), area.horizontalScrollBar()
    assert bar.isVisible() and bar.maximum() > 0
    bar.setValue(bar.maximum())  # scrolled to its end: the last line is in view
    side.setValue(side.maximum())
    needed = label.heightForWidth(label.width())
    assert label.height() >= needed  # every line laid out, none cut
    assert bar.maximum() + area.viewport().height() >= label.height()
    assert side.maximum() + area.viewport().width() >= label.width()  # a long word too
    corner = label.mapTo(area.viewport(), QPoint(label.width(), label.height()))
    assert area.viewport().rect().adjusted(0, 0, 1, 1).contains(corner)
    for button in (window.stop_button, window.close_button):
        if button.isVisible():
            corner = button.mapTo(window, QPoint(button.width(), button.height()))
            assert window.rect().contains(corner - QPoint(1, 1)), button.text()
    assert window.progress_bar.isHidden() == (level == "error")


def way_out(offers_code: bool) -> str:
    """hub/user_model.py's own way out for a refused PATH.py:NAME model (its real words)."""
    from pathlib import Path

    from computeshare_desktop.hub.user_model import SessionModel
    graph = SimpleNamespace(manifest=SimpleNamespace(program_sha256="ab12" * 16))
    model = SimpleNamespace(offers_code=offers_code, graph=graph,
                            spec=SimpleNamespace(path=Path("net.py")))
    return SessionModel.way_out(model)  # type: ignore[arg-type]


@pytest.mark.parametrize("offers_code", [False, True])
def test_a_refusal_banner_names_the_apps_check_box_and_no_flag(qtbot, offers_code):
    from computeshare_desktop.events import AllRefused, ModelRefused
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.schema import spec
    from computeshare_desktop.service import Tagged
    from computeshare_desktop.gui.progress_state import ProgressState
    reason = "layer stem.0: nn.Conv2d: calls an op off this machine's list; " + \
        way_out(offers_code)
    assert "--" in reason  # the hub's words are the command line's
    state = ProgressState("hub", total_rounds=10, expected_workers=1, name="t")
    runner = Scripted("refusal-test")
    window = ProgressWindow(runner, state, title="Hosting t", subtitle="s", pin="428913",
                            refresh_ms=10_000)
    qtbot.addWidget(window)
    label = spec(HubConfig, "offer_code").label
    for event in (ModelRefused("w1", reason), AllRefused(1, "w1", reason, 60.0)):
        runner.script = [Tagged("hub", event)]
        window.refresh()
        text = window.banner.text()
        assert "--" not in text and "w1" in text and "stem.0" in text, text
        assert (label in text) != offers_code  # the check box, unless it is ticked already
    lines = window.log_pane.toPlainText()
    assert "--" not in lines and "cannot train this model" in lines
    window.confirmed = True
    window.close()


def test_two_sessions_of_one_name_get_two_window_titles(qtbot, tmp_path):
    from computeshare_desktop.hub.config import HubConfig
    windows = []
    for i in (1, 2, 3):
        plan = hosting(HubConfig(), tmp_path / f"run{i}", name="lab")
        window = ProgressWindow.for_hub(HostService(plan), refresh_ms=10_000)
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
    titles = [w.windowTitle() for w in windows]
    assert titles == ["Hosting lab — ComputeShare", "Hosting lab (2) — ComputeShare",
                      "Hosting lab (3) — ComputeShare"]
    for window in windows:
        window.confirmed = True
        window.close()


def test_a_second_window_opens_offset_from_the_first(qtbot):
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QWidget

    from computeshare_desktop.gui.placement import CASCADE, place
    area = QRect(0, 0, 1920, 1080)
    anchor = QWidget()
    qtbot.addWidget(anchor)
    anchor.setGeometry(100, 100, 400, 300)
    anchor.show()
    windows, kept = [], []  # kept: qtbot holds its widgets weakly
    for _ in range(3):
        window = QWidget()
        qtbot.addWidget(window)
        kept.append(window)
        window.resize(600, 400)
        place(window, anchor, area)  # as the main window opens each worker window
        window.show()
        qtbot.waitExposed(window)
        windows.append(window.frameGeometry().topLeft())
    steps = [b - a for a, b in zip(windows, windows[1:], strict=False)]
    assert all(min(step.x(), step.y()) >= CASCADE.x() // 2 for step in steps), windows


@pytest.mark.parametrize("role", ["hub", "worker"])
def test_the_header_stays_put_when_the_status_chip_changes(qtbot, styled_app, role):
    """Starting → Waiting for workers → Training → Paused / Stopping…: the title, and the
    head's height (the round line under it), do not move."""
    from computeshare_desktop.events import (Joined, Listening, Paused, StateChanged,
                                             WorkerJoined, WorkerReady)
    from computeshare_desktop.gui.progress_state import ProgressState
    from computeshare_desktop.service import Tagged
    from helpers.windows import LAPTOP, a_round
    runner = Scripted("header-test")
    state = ProgressState(role, total_rounds=100, expected_workers=1, name="t")
    window = ProgressWindow(runner, state, title="Hosting a session with a long name",
                            subtitle="simplenet on mnist-sample · 2 worker(s) · 300 rounds of "
                                     "32 per worker · Synchronous rounds",
                            pin="428913" if role == "hub" else None, refresh_ms=10_000)
    qtbot.addWidget(window)
    window.resize(1000, 700)
    window.show()
    qtbot.waitExposed(window)

    def looks() -> tuple:
        window.refresh()
        qtbot.wait(20)
        return (window.title.geometry(), window.subtitle.geometry(),
                window.progress_label.mapTo(window, window.progress_label.rect().topLeft()))

    shown = {window.chip.text(): looks()}
    if role == "hub":
        steps = [[Listening("0.0.0.0", 7341, 7342, 7343, "ab" * 8, ("10.0.0.2",), "/o")],
                 [WorkerJoined(LAPTOP), WorkerReady(LAPTOP), StateChanged("training"),
                  a_round(1, 2.0).event]]
    else:
        steps = [[Joined(1, 0, 1, "mnist-sample", "simplenet", 100, "cpu")],
                 [a_round(1, 2.0, source="feed").event], [Paused(reason="you")]]
    for events in steps:
        runner.script = [Tagged("feed" if role == "worker" and
                                type(e).__name__ == "RoundClosed" else role, e)
                         for e in events]
        shown[window.chip.text()] = looks()
    runner.stopping = True  # Stop (or Leave) pressed
    shown[window.chip.text()] = looks()
    assert len(shown) >= 4, list(shown)  # the chip went through that many texts
    assert len(set(shown.values())) == 1, "\n".join(f"{k}: {v}" for k, v in shown.items())
    window.confirmed = True
    window.close()


@pytest.mark.parametrize("role", ["hub", "worker"])
def test_a_finished_window_still_fits_a_1280_by_720_screen(qtbot, styled_app, monkeypatch,
                                                             tmp_path, role):
    monkeypatch.setattr(progress_window, "available_geometry", lambda anchor=None: AREA)
    state = ProgressState(role, total_rounds=30, expected_workers=1)
    idle = SimpleNamespace(running=True, stopping=False, scope="fix-visual-test",  # a runner
                           drain=list, stop=lambda: None, join=lambda timeout_s: True)
    window = ProgressWindow(idle, state, title="Hosting TB one", refresh_ms=10_000,
                            subtitle="simplenet on mnist-sample · 1 worker(s) · 30 rounds",
                            pin="152649" if role == "hub" else None)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.resize(window.minimumSizeHint())  # as small as it goes, in the screen's corner
    placement.fit(window, AREA, near=QPoint(AREA.right(), AREA.bottom()))  # its corner
    qtbot.wait(10)
    state.apply([Tagged("hub", e) for e in (
        Listening("127.0.0.1", 7341, 7342, 7343, "ab" * 8, ("127.0.0.1",), str(tmp_path)),
        Finished(0.447, 2.06, 30, str(tmp_path / "trained_model.pth"), 1.1),
        Ended(result=True))])
    window.refresh()
    qtbot.waitUntil(window.finish_card.isVisible, timeout=1000)
    qtbot.wait(50)  # the layout settles, the window refits
    extra = placement.frame_extra(window)
    outer = QRect(window.frameGeometry().topLeft(), window.size() + extra)  # with a frame
    assert AREA.contains(outer), (outer, window.minimumSizeHint())
    close = window.close_button
    at = QRect(close.mapToGlobal(QPoint(0, 0)), close.size())
    assert close.isVisible() and AREA.contains(at), at
    card = window.finish_card
    assert AREA.contains(QRect(card.mapToGlobal(QPoint(0, 0)), card.size()))


def test_a_workers_window_needs_at_most_1024_px(qtbot, styled_app):
    idle = SimpleNamespace(running=True, stopping=False, scope="fix-visual-test",  # a runner
                           drain=list, stop=lambda: None, join=lambda timeout_s: True)
    window = ProgressWindow(idle, ProgressState("worker", name="vm"), refresh_ms=10_000,
                            title="Training for Elide", subtitle="Worker vm · hub 10.0.0.2:7341")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert len(window.cards) == 8  # a worker's: its compute time and its gradients too
    assert window.minimumSizeHint().width() <= 1024

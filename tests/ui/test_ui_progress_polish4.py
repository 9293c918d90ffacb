"""The progress windows' numbers and texts (issue: polish 4): the hub's Sent counts the
shards, the accuracy axis shows 100, the loss chart names its lines, a rejoined worker keeps
its curve and counts, a long failure text stays whole, no flag in a refusal, two windows of
one session name differ, and the header stays put when its badge changes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from helpers_hub import T0, admit, make_hub  # noqa: E402

from computeshare_desktop.gui.formatting import human_bytes  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.protocol import encode  # noqa: E402
from computeshare_desktop.protocol.messages import Shard  # noqa: E402
from computeshare_desktop.service import HostPlan, HostService  # noqa: E402


def test_the_hubs_sent_counts_the_shards_its_workers_downloaded(qtbot, tmp_path):
    """Before any round closed, a worker downloads its shard: the hub window's Sent holds
    it (it showed the rounds' bytes only, 18.7 KB for 384.7 KB of shards)."""
    hub = make_hub(workers=2)
    runner = HostService(HostPlan(hub.config, out_dir=tmp_path / "out"))
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

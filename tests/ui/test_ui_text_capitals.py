"""Text the app shows keeps its capitals: "Wi-Fi or 100 Mbit/s", never "Wi-fi or 100 mbit/s"
(``text.sentence``, not ``str.capitalize``). No Qt."""

from __future__ import annotations

import re

from computeshare_desktop.text import sentence
from computeshare_desktop.hub.presets import PRESETS

PROPER = re.compile(r"\b(Wi-Fi|LAN|[KMG]bit/s)\b")


def test_a_sentence_keeps_every_capital_it_was_given():
    assert sentence("Wi-Fi or 100 Mbit/s: int8 gradients") == \
        "Wi-Fi or 100 Mbit/s: int8 gradients."
    assert sentence("wired, 1 Gbit/s or more") == "Wired, 1 Gbit/s or more."
    assert sentence("  done.  ") == "Done." and sentence("") == ""


def test_every_presets_label_and_summary_keep_their_capitals():
    for preset in PRESETS.values():
        shown = sentence(preset.summary)
        assert shown[1:-1] == preset.summary[1:], preset.name
        assert preset.label[0].isupper(), preset.label
        for word in ("wi-fi", "wifi", "mbit/s", "gbit/s", "Wi-fi", "Wifi"):
            assert not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])",
                                 preset.label + " " + shown), (preset.name, word)
    assert "Wi-Fi or 100 Mbit/s" in sentence(PRESETS["wifi"].summary)
    assert PROPER.search(PRESETS["wifi"].summary) and PROPER.search(PRESETS["lan"].summary)

"""The hub's side of ``--offer-code``: a file model that does not export is refused before
the session opens (the refusal names the fallback), and with the option it is offered as
its source, hash and fingerprint covering what runs; a model that exports still goes as a
graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.graph import PLAIN, graph_hub, model_file

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.protocol.graphs import decode_manifest, program_sha256
from computeshare_desktop.schema import default
from computeshare_desktop.hub import HubConfig

BRANCHY = '''
from torch import nn


class Net(nn.Module):
    def __init__(self, num_classes, in_channels, image_size):
        super().__init__()
        self.fc = nn.Linear(in_channels * image_size * image_size, num_classes)
        self.fc.bias.requires_grad_(False)

    def forward(self, x):
        x = x.flatten(1)
        if x.sum() > 0:  # data-dependent control flow: no graph
            x = -x
        return self.fc(x)
'''


def write(folder: Path, source: str = BRANCHY, name: str = "my net.py") -> str:
    path = folder / name
    path.write_text(source, encoding="utf-8")
    return f"{path}:Net"


def test_offer_code_is_off_by_default() -> None:
    assert default(HubConfig, "offer_code") is False


def test_a_model_that_does_not_export_is_refused_naming_the_fallback(tmp_path) -> None:
    with pytest.raises(ConfigError) as refused:
        graph_hub(write(tmp_path), workers=1)
    text = str(refused.value)
    assert "cannot be exported" in text and "--offer-code" in text


def test_with_offer_code_the_source_is_offered(tmp_path) -> None:
    spec = write(tmp_path)
    hub, shipped = graph_hub(spec, workers=1, offer_code=True)
    assert shipped.offers_code and shipped.compute == "graph"
    source = (tmp_path / "my net.py").read_bytes()
    parts = shipped.graph.parts
    assert parts["program"] == source
    m = decode_manifest(parts["manifest"])
    assert m.program_sha256 == program_sha256(source) and m.op_count == 0
    assert m.code is not None and (m.code.file, m.code.name) == ("my_net.py", "Net")
    assert m.code.kwargs == {"num_classes": 10, "in_channels": 1, "image_size": 28}
    assert m.trainable == ["fc.weight"] and [e.name for e in m.state] == ["fc.bias"]
    assert hub.fingerprint == m.fingerprint == shipped.fingerprint


def test_the_fingerprint_covers_the_source(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = graph_hub(write(tmp_path / "a"), workers=1, offer_code=True)[1]
    b = graph_hub(write(tmp_path / "b", BRANCHY + "# one more line\n"), workers=1,
                  offer_code=True)[1]
    assert a.graph.manifest.program_sha256 != b.graph.manifest.program_sha256
    assert a.fingerprint != b.fingerprint


def test_a_model_that_exports_still_goes_as_a_graph(tmp_path) -> None:
    _, shipped = graph_hub(model_file(tmp_path, PLAIN), workers=1, offer_code=True)
    assert not shipped.offers_code and shipped.graph.manifest.op_count > 0

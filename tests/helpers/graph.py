"""Models written as a user would (files nobody on the project imports), and hub cores that
ship them as graphs.

Not a test module: tests import it from the helpers package (pyproject puts tests/ on pythonpath).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.hub import HUB_KEY, PIN, SESSION_ID, train_set

from computeshare_desktop.data import dataset_info
from computeshare_desktop.hub import HubConfig, HubCore
from computeshare_desktop.hub.allowlist import Allowlist
from computeshare_desktop.hub.trainer import ParameterServer
from computeshare_desktop.hub.user_model import SessionModel, build_hub_model, ship_model

CANARY = "CS_TEST_CANARY_DIR"  # a model file writes <dir>/<pid> there when it is imported

# A stranger's network: residual blocks, BatchNorm, GELU, Dropout; its file marks every
# process that imports it.
STRANGER = '''
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

if os.environ.get("CS_TEST_CANARY_DIR"):
    Path(os.environ["CS_TEST_CANARY_DIR"], str(os.getpid())).write_text("imported")


def conv_bn(channels):
    return [nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels)]


class Residual(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.branch = nn.Sequential(*conv_bn(channels), nn.GELU(), *conv_bn(channels))

    def forward(self, x):
        return F.gelu(x + self.branch(x))


class Net(nn.Module):
    def __init__(self, num_classes, in_channels, width={width}):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 3, stride=2, padding=1,
                                            bias=False),
                                  nn.BatchNorm2d(width), nn.GELU())
        self.blocks = nn.Sequential(Residual(width), Residual(width))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout({dropout})
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        x = self.pool(self.blocks(self.stem(x))).flatten(1)
        return self.head(self.dropout(x))
'''

# Without BatchNorm or Dropout: training is deterministic given the batches.
PLAIN = '''
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self, num_classes, in_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 6, 5, stride=2)
        self.fc1 = nn.Linear(6 * 12 * 12, 32)
        self.fc2 = nn.Linear(32, num_classes)

    def forward(self, x):
        x = F.gelu(self.conv(x)).flatten(1)
        return self.fc2(F.gelu(self.fc1(x)))
'''


def model_file(folder: Path, source: str = STRANGER, *, name: str = "stranger.py",
               dropout: float = 0.1, width: int = 8) -> str:
    """Write a model file; its ``--model`` spec."""
    path = folder / name
    path.write_text(source.format(width=width, dropout=dropout), encoding="utf-8")
    return f"{path}:Net"


def canary_pids(folder: Path) -> set[int]:
    """The processes that imported a model file written with the canary."""
    return {int(p.name) for p in folder.iterdir()} if folder.exists() else set()


def graph_hub(spec: str, **overrides: Any) -> tuple[HubCore, SessionModel]:
    """A HubCore that ships ``spec`` as a graph, built as ``hub/session.py`` builds it (2
    workers, 5 rounds, batch 8 by default)."""
    settings: dict[str, Any] = {"workers": 2, "rounds": 5, "batch_size": 8, "model": spec}
    settings.update(overrides)
    config = HubConfig(**settings)
    data = train_set()
    model = build_hub_model(config, dataset_info(config.dataset))
    server = ParameterServer.for_session(model, config)
    shipped = ship_model(model, config, data)
    server.track(shipped.stat_buffers(), shipped.counters())
    hub = HubCore(config, pin=PIN, session_id=SESSION_ID, hub_key=HUB_KEY, train_set=data,
                  server=server, fingerprint=shipped.fingerprint, allowlist=Allowlist(),
                  graph=shipped.graph, describe=shipped.refusal)
    return hub, shipped


FLAT_NET = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(28 * 28, 10)

    def forward(self, x):
        x = x.flatten(1)
{body}
        return self.fc(x)
'''
BRANCHES = "        if x.sum() > 0:  # on a tensor's value: torch.export cannot\n" \
           "            x = x * 2"


def flat_net_file(tmp_path: Path, body: str) -> str:
    """A model file of FLAT_NET with ``body`` in its forward; its ``--model`` spec."""
    path = tmp_path / "net.py"
    path.write_text(FLAT_NET.format(body=body), encoding="utf-8")
    return f"{path}:Net"

"""Sessions the app lists with no hub behind them: one found on the LAN, and a stopped
session's output folder that Recent sessions offers to resume."""

from __future__ import annotations

from pathlib import Path

from computeshare_desktop.discovery import DiscoveredSession
from computeshare_desktop.discovery.advert import SessionAdvert
from computeshare_desktop.hub.outputs import CHECKPOINT_FILE, OutputDir
from computeshare_desktop.protocol.ports import HubPorts
from computeshare_desktop.service.options import HostOptions


def session(name: str, port: int) -> DiscoveredSession:
    """A session named ``name`` as discovery reports one on 127.0.0.1:``port``."""
    advert = SessionAdvert(session_id="ab" * 8, name=name, host="box", model="simplenet",
                           dataset="mnist-sample", joined=0, expected=2, state="waiting",
                           protocol=3, key_fingerprint="cd" * 8, port=port,
                           pub_port=HubPorts.at(port).events,
                           pair_port=HubPorts.at(port).pairing, rounds=600)
    return DiscoveredSession(advert, ("127.0.0.1",), f"{name}._computeshare._tcp.local.")


def stopped(folder: Path, model: str = "simplenet") -> str:
    """``folder`` as a stopped session of ``model`` leaves it (72 rounds in); its path."""
    config = HostOptions(workers=1, rounds=300, model=model).config().to_json()
    OutputDir(folder).write_session({"config": config, "host": {"name": folder.name}})
    (folder / CHECKPOINT_FILE).write_bytes(b"")
    OutputDir(folder).append_metric({"type": "round", "version": 72, "loss": 1.0})
    return str(folder)

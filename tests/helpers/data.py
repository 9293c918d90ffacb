"""Data for the data-layer tests: no connection beyond loopback, idx files as torchvision
reads them, a table dataset's description."""

from __future__ import annotations

import dataclasses
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from computeshare_desktop.data import DatasetInfo


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail any connection to a non-loopback address, so a test can never go online."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"test tried to reach {host}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    real_getaddrinfo = socket.getaddrinfo

    def loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("127.0.0.1", "::1", "localhost", None):
            raise socket.gaierror(f"test tried to resolve {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", loopback_only)
    yield


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write a uint8 idx-ubyte file (big-endian header) as torchvision reads it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = struct.pack(">I", 0x0800 + array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


@dataclasses.dataclass(frozen=True, slots=True)
class TableInfo(DatasetInfo):
    """A table dataset as the data layer will describe one (``in_features`` columns)."""

    in_features: int = 0

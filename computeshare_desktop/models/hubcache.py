"""torchvision's pretrained weights files, in the local torch hub cache.

A weights name (``DEFAULT``, ``IMAGENET1K_V1``) is a file torchvision would fetch into
``torch.hub.get_dir()/checkpoints`` (``$TORCH_HOME/hub/checkpoints``). We read that file
when it is there, download it when asked and online (with progress, the name's hash
checked), and otherwise say exactly which file to put where.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import re
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import BinaryIO
from pathlib import Path

import torch

from computeshare_desktop.data import DownloadProgress
from computeshare_desktop.data.factory import PROGRESS_INTERVAL_S
from computeshare_desktop.pacing import Throttle
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.files import atomic_write
from computeshare_desktop.models import vision

logger = logging.getLogger(__name__)

Progress = Callable[[DownloadProgress], None]
CHUNK_BYTES = 1 << 20
TIMEOUT_S = 30.0  # per blocking read: a stalled server is an error, not a hang
# torchvision's files are named NAME-<first hex digits of their sha256>.pth (torch.hub's rule)
_HASH = re.compile(r"-([a-f0-9]+)\.")


@dataclasses.dataclass(frozen=True, slots=True)
class WeightsFile:
    """Where a torchvision weights name is fetched from and kept."""

    arch: str
    name: str  # the enum member's name, e.g. IMAGENET1K_V1 (DEFAULT resolved)
    url: str
    path: Path

    @property
    def label(self) -> str:
        """``resnet18 IMAGENET1K_V1 weights``."""
        return f"{self.arch} {self.name} weights"


def weights_file(arch: str, name: str) -> WeightsFile:
    """The file that holds ``arch``'s weights ``name``, in the torch hub cache.

    Raises:
        ConfigError: ``arch`` has no such weights.
    """
    entry = vision.weights_entry(arch, name)
    file_name = os.path.basename(urllib.parse.urlparse(entry.url).path)
    path = Path(torch.hub.get_dir()) / "checkpoints" / file_name
    return WeightsFile(arch, entry.name, entry.url, path)


def ensure_weights(weights: WeightsFile, *, progress: Progress | None = None,
                   download: bool = True) -> Path:
    """The cached file's path, downloaded first if missing and ``download`` allows.

    Raises:
        ConfigError: not cached and not downloaded (offline, refused, or a wrong hash);
            the message names the URL and the exact path to put the file at.
    """
    if weights.path.is_file():
        return weights.path
    if not download:
        raise ConfigError(_missing(weights, "downloads are off"))
    logger.info("downloading the %s from %s to %s", weights.label, weights.url, weights.path)
    try:
        fetch_url(weights.url, weights.path, weights.label, progress)
    except (OSError, ValueError) as exc:  # URLError, timeouts and disk errors are OSErrors
        raise ConfigError(_missing(weights, f"download failed: {exc}")) from exc
    return weights.path


def _missing(weights: WeightsFile, why: str) -> str:
    return (f"{weights.label} are not in the torch hub cache ({why}): download "
            f"{weights.url} on a machine with internet and put it at {weights.path}")


def fetch_url(url: str, dest: Path, label: str, progress: Progress | None = None) -> None:
    """Download ``url`` to ``dest`` (through a temporary file beside it, so a cut download
    leaves nothing), reporting to ``progress``; the sha256 must start with the hex digits
    in the file's name, when it has them. Tests replace this function.

    Raises:
        OSError: the download failed (offline, HTTP error, timeout, disk).
        ValueError: the bytes do not match the name's hash.
    """
    expected = _HASH.search(dest.name)
    report = _Reporter(label, progress or (lambda _: None))

    def write(out: BinaryIO) -> None:
        digest = hashlib.sha256()
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            total = response.headers.get("Content-Length")
            report.start(int(total) if total and total.isdigit() else None)
            while chunk := response.read(CHUNK_BYTES):
                out.write(chunk)
                digest.update(chunk)
                report.add(len(chunk))
        if expected and not digest.hexdigest().startswith(expected.group(1)):
            raise ValueError(f"{url} has sha256 {digest.hexdigest()[:16]}…, its name says "
                             f"{expected.group(1)}")

    atomic_write(dest, write)  # a cut or mismatched download leaves nothing behind
    report.finish()


class _Reporter:
    """One weights file's bytes as DownloadProgress reports (throttled, first and last
    always sent), the shape the CLI and the GUI already show for dataset downloads."""

    def __init__(self, label: str, progress: Progress) -> None:
        self._label, self._progress = label, progress
        self._done = 0
        self._total: int | None = None
        self._throttle = Throttle(PROGRESS_INTERVAL_S)

    def start(self, total: int | None) -> None:
        self._total = total
        self._send(force=True)

    def add(self, count: int) -> None:
        self._done += count
        self._send(force=False)

    def finish(self) -> None:
        self._total = self._done
        self._send(force=True)

    def _send(self, *, force: bool) -> None:
        if self._throttle.due(force):
            report = DownloadProgress(self._done, self._total, "weights", 1, "")
            text = f"Downloading the {self._label}: {report.amount()}"
            self._progress(dataclasses.replace(report, text=text))

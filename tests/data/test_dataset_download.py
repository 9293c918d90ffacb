"""download() against a real HTTP server on 127.0.0.1 serving generated MNIST files: byte
progress as it arrives, both splits on disk afterwards, torchvision's tqdm put back."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import math
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torchvision.datasets
from torchvision.datasets import utils as tv_utils

from computeshare_desktop.data import DownloadProgress, clear_cache, download, load_dataset
from computeshare_desktop.data import factory
from computeshare_desktop.errors import DatasetUnavailableError
from helpers.data import no_network, write_idx  # noqa: F401 (autouse: loopback only)

SAMPLES = {"train": 300, "t10k": 60}  # 300 random images: ~235 KB, several 32 KB chunks
CHUNK = 32 * 1024  # what torchvision's _urlretrieve reads at a time


def _idx_gz(array: np.ndarray) -> bytes:
    header = struct.pack(">I", 0x0800 + array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return gzip.compress(header + array.astype(np.uint8).tobytes(), mtime=0)


def _mnist_files(rng: np.random.Generator) -> dict[str, tuple[bytes, np.ndarray]]:
    """File name -> (the .gz bytes served, the array inside), in torchvision's order."""
    files = {}
    for prefix, n in SAMPLES.items():
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        files[f"{prefix}-images-idx3-ubyte.gz"] = (_idx_gz(images), images)
        files[f"{prefix}-labels-idx1-ubyte.gz"] = (_idx_gz(labels), labels)
    return files


class _FileServer(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = self.files.get(self.path.lstrip("/"))
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except ConnectionError:  # torchvision's redirect check hangs up after the headers
            pass

    def log_message(self, *args: object) -> None:
        pass


def _use_mirror(monkeypatch: pytest.MonkeyPatch, url: str,
                files: dict[str, tuple[bytes, np.ndarray]]) -> None:
    resources = [(name, hashlib.md5(body).hexdigest()) for name, (body, _) in files.items()]
    monkeypatch.setattr(torchvision.datasets.MNIST, "mirrors", [url])
    monkeypatch.setattr(torchvision.datasets.MNIST, "resources", resources)


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, tuple[bytes, np.ndarray]]]:
    """MNIST's mirror is an HTTP server on 127.0.0.1 serving small generated files."""
    files = _mnist_files(np.random.default_rng(0))
    handler = type("Handler", (_FileServer,), {"files": {n: b for n, (b, _) in files.items()}})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="mnist-mirror")
    thread.start()
    _use_mirror(monkeypatch, f"http://127.0.0.1:{server.server_address[1]}/", files)
    clear_cache()
    try:
        yield files
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
        clear_cache()


def _served_bytes(files: dict[str, tuple[bytes, np.ndarray]]) -> int:
    return sum(len(body) for body, _ in files.values())


def _assert_grows_to(reports: list[DownloadProgress], total: int) -> None:
    done = [r.done_bytes for r in reports]
    totals = [r.total_bytes for r in reports if r.total_bytes is not None]
    assert done == sorted(done) and totals == sorted(totals)
    assert all(r.total_bytes is None or r.done_bytes <= r.total_bytes for r in reports)
    assert reports[-1].done_bytes == reports[-1].total_bytes == total
    assert [r.file for r in reports] == sorted(r.file for r in reports)


def test_download_reports_bytes_then_both_splits_load_offline(served, tmp_path):
    original = tv_utils.tqdm
    reports: list[DownloadProgress] = []
    download("mnist", reports.append, root=tmp_path)
    assert tv_utils.tqdm is original
    total = _served_bytes(served)
    _assert_grows_to(reports, total)
    assert reports[0] == DownloadProgress(0, None, "train", 0,
                                          "Downloading the train split of mnist…")
    mb = f"{total / 1e6:.1f}"
    assert reports[-2].text == f"Downloading the train split of mnist (file 4): {mb} of {mb} MB"
    assert reports[-1].split == "test" and reports[-1].file == len(served)
    assert reports[-1].amount() == f"{mb} of {mb} MB"
    clear_cache()  # what follows must come from the files on disk
    for split, prefix in (("train", "train"), ("test", "t10k")):
        ds = load_dataset("mnist", split, root=tmp_path, download=False)
        images = served[f"{prefix}-images-idx3-ubyte.gz"][1]
        labels = served[f"{prefix}-labels-idx1-ubyte.gz"][1]
        assert len(ds) == SAMPLES[prefix] and np.array_equal(ds.images[:, 0].numpy(), images)
        assert ds.labels.tolist() == labels.tolist()


@pytest.mark.parametrize("interval", [0.0, 3600.0])
def test_reports_are_throttled_but_each_file_ends_exactly(served, tmp_path, monkeypatch,
                                                          interval):
    """Unthrottled, every chunk shows; throttled, a file's first and last bytes still do."""
    monkeypatch.setattr(factory, "PROGRESS_INTERVAL_S", interval)
    reports: list[DownloadProgress] = []
    download("mnist", reports.append, root=tmp_path)
    _assert_grows_to(reports, _served_bytes(served))
    chunks = sum(math.ceil(len(body) / CHUNK) for body, _ in served.values())
    boundaries = len(SAMPLES) + 2 * len(served)  # each split starts; each file begins, ends
    assert len(reports) == (boundaries + chunks if interval == 0 else boundaries)
    ends = {r.done_bytes for r in reports}
    sizes = [len(body) for body, _ in served.values()]
    assert {sum(sizes[:i + 1]) for i in range(len(sizes))} <= ends


def test_two_downloads_at_once_each_count_their_own_bytes(served, tmp_path):
    reports: dict[str, list[DownloadProgress]] = {"a": [], "b": []}
    errors: list[BaseException] = []

    def fetch(key: str) -> None:
        try:
            download("mnist", reports[key].append, root=tmp_path / key)
        except BaseException as exc:  # re-raised below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=fetch, args=(key,)) for key in reports]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    for key in reports:
        _assert_grows_to(reports[key], _served_bytes(served))


def test_an_unreachable_server_raises_and_puts_tqdm_back(tmp_path, monkeypatch):
    with socket.socket() as probe:  # a port nobody listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    _use_mirror(monkeypatch, f"http://127.0.0.1:{port}/", _mnist_files(np.random.default_rng(1)))
    original = tv_utils.tqdm
    reports: list[DownloadProgress] = []
    with pytest.raises(DatasetUnavailableError, match="mnist-sample"):
        download("mnist", reports.append, root=tmp_path)
    assert tv_utils.tqdm is original
    assert [(r.done_bytes, r.total_bytes, r.file) for r in reports] == [(0, None, 0)]


def test_without_torchvisions_tqdm_each_split_is_still_reported(tmp_path, monkeypatch):
    """An older or newer torchvision without the global: per-split reports, no bytes."""
    rng = np.random.default_rng(2)
    for prefix in ("train", "t10k"):
        write_idx(tmp_path / "MNIST" / "raw" / f"{prefix}-images-idx3-ubyte",
                   rng.integers(0, 256, size=(5, 28, 28), dtype=np.uint8))
        write_idx(tmp_path / "MNIST" / "raw" / f"{prefix}-labels-idx1-ubyte",
                   rng.integers(0, 10, size=5, dtype=np.uint8))
    monkeypatch.delattr(tv_utils, "tqdm")
    reports: list[DownloadProgress] = []
    download("mnist", reports.append, root=Path(tmp_path))
    assert [(r.split, r.done_bytes, r.total_bytes) for r in reports] == [
        ("train", 0, None), ("test", 0, None)]
    assert not hasattr(tv_utils, "tqdm")
    clear_cache()

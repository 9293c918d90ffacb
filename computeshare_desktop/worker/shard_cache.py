"""The worker's shard cache: the samples a hub sent, kept on disk for the next time.

One entry per shard of one dataset, keyed by the dataset's content hash (the Welcome's
``data_hash``), the number of shards, the shard and the seed. An entry is a folder with the
shard's samples (``samples.bin``: uint8 images, or a table's float32 rows) and labels
(``labels.bin``: int64) at their places, both memory-mapped for training, and
``manifest.json``: the chunks held, each with its sha256 (the hub's chunk digest). Every
chunk is checked against its bytes before its digest is offered to the hub: a corrupt or
tampered chunk is dropped and fetched again. Entries past the size cap are evicted, the
least recently used first. File I/O only: the driver calls it, never the core.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np
import platformdirs
import torch

from ..data.digests import chunk_digest
from ..files import atomic_write
from ..stored import read_stored, stored_bytes
from ..protocol.messages import Welcome
from .download import sample_form
from .shard_reuse import CachedShard, Fresh, Held

log = logging.getLogger(__name__)

FORMAT = 1
SAMPLES, LABELS, MANIFEST = "samples.bin", "labels.bin", "manifest.json"
HOME_ENV = "COMPUTESHARE_HOME"  # as the keys' folder: tests and portable installs
NP_DTYPES = {"uint8": np.uint8, "float32": np.float32}


def shard_cache_dir() -> Path:
    """``shards`` in this user's cache folder (beside ``datasets``), or under
    $COMPUTESHARE_HOME when it is set."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser() / "cache" / "shards"
    return Path(platformdirs.user_cache_dir("computeshare", appauthor=False)) / "shards"


def entry_key(welcome: Welcome) -> str:
    """The folder name of ``welcome``'s shard: its data, its cut and its place."""
    text = f"{welcome.data_hash}:{welcome.num_shards}:{welcome.shard}:{welcome.seed}"
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:32]


class ShardManifest(msgspec.Struct):
    """An entry's manifest.json: the form of its samples, its last use, its size, and the
    chunks it holds that were checked, as ``[offset, count, sha256]``."""

    format: int = 0
    count: int = 0
    dtype: str = ""
    sample: list[int] = []
    used: float = 0.0  # seconds since the epoch
    bytes: int = 0
    chunks: list[tuple[int, int, str]] = []


@dataclass(frozen=True, slots=True)
class Usage:
    """What the cache holds: where, how many entries, how many bytes."""

    folder: Path
    entries: int
    bytes: int


class ShardEntry:
    """One shard's entry, open for a membership: its checked chunks, the chunks the hub
    sends next, and the memory-mapped samples once whole."""

    def __init__(self, folder: Path, welcome: Welcome) -> None:
        self.folder = folder
        self.count = welcome.shard_size
        dtype, sample = sample_form(welcome)
        self.dtype, self.sample = dtype, [int(d) for d in sample]
        self.item = np.dtype(NP_DTYPES[dtype]).itemsize
        self.per_sample = math.prod(self.sample) * self.item
        self.chunks: dict[int, Held] = {}

    @property
    def size(self) -> int:
        """Bytes on disk when whole."""
        return self.count * (self.per_sample + 8)

    def open(self) -> CachedShard:
        """Check every chunk the manifest lists against its bytes (dropping the bad), make
        the files whole-sized, and mark the entry used now; what it holds."""
        self.folder.mkdir(parents=True, exist_ok=True)
        listed = self._listed()
        for path, size in ((self.folder / SAMPLES, self.count * self.per_sample),
                           (self.folder / LABELS, self.count * 8)):
            with open(path, "ab") as fh:
                if fh.tell() != size:
                    fh.truncate(size)
        for held in listed:
            if self._digest(held.offset, held.count) == held.digest:
                self.chunks[held.offset] = held
            else:
                log.warning("shard cache: samples %d-%d failed their check (changed on "
                            "disk): fetching them again", held.offset, held.offset + held.count)
        self._save()
        return CachedShard(tuple(sorted(self.chunks.values(), key=lambda h: h.offset)))

    def write(self, fresh: Fresh) -> None:
        """Keep a chunk the hub sent (its samples, labels and digest)."""
        n = len(fresh.labels)
        if fresh.offset < 0 or fresh.offset + n > self.count:
            raise ValueError(f"chunk {fresh.offset}+{n} outside the shard of {self.count}")
        images = fresh.images.detach().cpu().contiguous().numpy()
        labels = fresh.labels.detach().cpu().to(torch.int64).contiguous().numpy()
        for name, data, at in ((SAMPLES, images, fresh.offset * self.per_sample),
                               (LABELS, labels, fresh.offset * 8)):
            with open(self.folder / name, "r+b") as fh:
                fh.seek(at)
                fh.write(data.tobytes())
        for offset in [o for o, h in self.chunks.items()
                       if o < fresh.offset + n and fresh.offset < o + h.count]:
            del self.chunks[offset]  # overlapped: the new chunk replaces it
        self.chunks[fresh.offset] = Held(fresh.offset, n, chunk_digest(fresh.images,
                                                                         fresh.labels))
        self._save()

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole shard, memory-mapped (copy on write: training never changes the file):
        samples (N, *sample), labels (N,) int64."""
        samples = np.memmap(self.folder / SAMPLES, dtype=NP_DTYPES[self.dtype], mode="c",
                            shape=(self.count, *self.sample))
        labels = np.memmap(self.folder / LABELS, dtype=np.int64, mode="c", shape=(self.count,))
        return torch.from_numpy(samples), torch.from_numpy(labels)

    def _digest(self, offset: int, count: int) -> str:
        samples, labels = self._read(offset, count)
        return chunk_digest(samples, labels)

    def _read(self, offset: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        with open(self.folder / SAMPLES, "rb") as fh:
            fh.seek(offset * self.per_sample)
            raw = fh.read(count * self.per_sample)
        with open(self.folder / LABELS, "rb") as fh:
            fh.seek(offset * 8)
            lab = fh.read(count * 8)
        samples = np.frombuffer(raw, dtype=NP_DTYPES[self.dtype]).reshape(count, *self.sample)
        return torch.from_numpy(samples.copy()), torch.from_numpy(
            np.frombuffer(lab, dtype=np.int64).copy())

    def _listed(self) -> list[Held]:
        """The manifest's chunks that fit this shard, in order and apart; none when the
        manifest is missing, unreadable or for another form of sample."""
        meta = read_manifest(self.folder)
        if meta is None or (meta.format, meta.count, meta.dtype, meta.sample) != (
                FORMAT, self.count, self.dtype, self.sample):
            return []
        out: list[Held] = []
        end = 0
        for offset, count, digest in meta.chunks:
            if end <= offset and count > 0 and offset + count <= self.count:
                out.append(Held(offset, count, digest))
                end = offset + count
        return out

    def _save(self) -> None:
        chunks = [(h.offset, h.count, h.digest)
                  for h in sorted(self.chunks.values(), key=lambda h: h.offset)]
        meta = ShardManifest(FORMAT, self.count, self.dtype, self.sample, time.time(),
                             self.size, chunks)
        atomic_write(self.folder / MANIFEST, stored_bytes(meta))


def read_manifest(folder: Path) -> ShardManifest | None:
    """An entry's manifest, or None when it is missing, unreadable or damaged."""
    return read_stored(folder / MANIFEST, ShardManifest, None)


class ShardCache:
    """The entries under ``root``, at most ``cap`` bytes together."""

    def __init__(self, root: Path, cap: int) -> None:
        self.root = root
        self.cap = cap

    def entry(self, welcome: Welcome) -> ShardEntry | None:
        """The entry of ``welcome``'s shard, checked and made room for; None when the
        session says nothing to key it by (no ``data_hash``) or the shard alone is over
        the cap (it then trains from memory, as with no cache)."""
        if not welcome.data_hash or self.cap <= 0:
            return None
        entry = ShardEntry(self.root / entry_key(welcome), welcome)
        if entry.size > self.cap:
            log.info("shard cache: this shard (%d MB) is over the cache's %d MB: not kept",
                     entry.size // 10**6, self.cap // 10**6)
            return None
        self.evict(self.cap - entry.size, keep=entry.folder)
        return entry

    def entries(self) -> list[tuple[float, int, Path]]:
        """(last use, bytes, folder) of every entry, least recently used first."""
        if not self.root.is_dir():
            return []
        found = []
        for folder in self.root.iterdir():
            if not folder.is_dir():
                continue
            meta = read_manifest(folder)
            found.append((meta.used if meta else 0.0, _bytes(folder), folder))
        return sorted(found, key=lambda e: e[0])

    def evict(self, room: int, keep: Path | None = None) -> None:
        """Remove the least recently used entries (never ``keep``) until the others hold
        at most ``room`` bytes."""
        entries = [e for e in self.entries() if e[2] != keep]
        held = sum(size for _, size, _ in entries)
        for _, size, folder in entries:
            if held <= room:
                break
            log.info("shard cache: evicting %s (%d MB, least recently used)", folder.name,
                     size // 10**6)
            shutil.rmtree(folder, ignore_errors=True)
            held -= size

    def usage(self) -> Usage:
        """Where the cache is and what it holds."""
        entries = self.entries()
        return Usage(self.root, len(entries), sum(size for _, size, _ in entries))

    def clear(self) -> Usage:
        """Empty the cache; what it held."""
        before = self.usage()
        for _, _, folder in self.entries():
            shutil.rmtree(folder, ignore_errors=True)
        return before


def _bytes(folder: Path) -> int:
    """The bytes an entry's files take (as their sizes say)."""
    total = 0
    for path in folder.iterdir():
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total

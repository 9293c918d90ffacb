"""What ``benchmarks.gpu_check`` builds its sessions from: an image folder a model can
learn, a ``.pt2`` of someone's own model, the plain torch loop it is measured against, and
the probe a worker process runs in.

The probe (``python -m benchmarks.gpu_parts probe REPORT.json join ARGS...``) is the real
``computeshare join`` (``computeshare_desktop.cli.main``) with instruments on the worker's
compute (``GradientComputer``): the device and precision it resolved, its steps, the loss
of each, and on CUDA the host-device synchronisations inside each step's forward and
backward (``torch.cuda.set_sync_debug_mode("warn")`` around ``_batch_loss``, its warnings
counted with the first one's place). It writes REPORT.json when the worker ends.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

SYNC_WARNING = "synchroniz"  # torch's "called a synchronizing CUDA operation"

# ---------------------------------------------------------------------------- data
# Ten classes a model can tell apart from the shape alone, each in its own colour; the
# position, size, brightness and background noise vary per image.
COLOURS = ((230, 40, 40), (40, 200, 60), (50, 90, 230), (230, 210, 40), (200, 60, 220),
           (40, 210, 210), (240, 140, 30), (150, 150, 150), (120, 70, 30), (250, 250, 250))
SHAPES = ("disc", "square", "ring", "cross", "hbars", "vbars", "diagonal", "triangle",
          "dots", "checker")


def _mask(kind: str, side: int, rng: np.random.Generator) -> np.ndarray:
    """A boolean ``side`` x ``side`` mask of one shape at a random place and size."""
    r = rng.uniform(0.22, 0.36) * side
    period = max(2, side // 8)
    cy, cx = rng.uniform(r, side - r, size=2)
    y, x = np.mgrid[0:side, 0:side].astype(np.float32)
    dy, dx = y - cy, x - cx
    row, col = y.astype(int) // period, x.astype(int) // period
    inside = (np.abs(dy) < r) & (np.abs(dx) < r)
    masks = {
        "disc": dy ** 2 + dx ** 2 < r ** 2,
        "square": inside,
        "ring": np.abs(np.sqrt(dy ** 2 + dx ** 2) - 0.75 * r) < 0.22 * r,
        "cross": inside & ((np.abs(dy) < 0.25 * r) | (np.abs(dx) < 0.25 * r)),
        "hbars": inside & (row % 2 == 0),
        "vbars": inside & (col % 2 == 0),
        "diagonal": inside & (np.abs(dy - dx) < 0.3 * r),
        "triangle": inside & (dy > -r) & (np.abs(dx) < (dy + r) / 2),
        "dots": inside & (row % 2 == 0) & (col % 2 == 0),
        "checker": inside & ((row + col) % 2 == 0),
    }
    return masks[kind]


def draw(label: int, side: int, rng: np.random.Generator) -> np.ndarray:
    """One ``side`` x ``side`` RGB uint8 image of class ``label``."""
    image = rng.normal(40, 18, size=(side, side, 3))
    colour = np.asarray(COLOURS[label], dtype=np.float64) * rng.uniform(0.75, 1.0)
    image[_mask(SHAPES[label], side, rng)] = colour
    image += rng.normal(0, 12, size=image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


def write_folder(root: Path, *, images: int, side: int, classes: int, seed: int = 0) -> Path:
    """``root/CLASS/N.png``: ``images`` in all, spread evenly over ``classes`` (at most 10)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for i in range(images):
        label = i % classes
        folder = root / f"{label}-{SHAPES[label]}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(draw(label, side, rng)).save(folder / f"{i:05d}.png")
    return root


# ---------------------------------------------------------------------------- own model
class OwnNet(nn.Module):
    """Someone's own model: conv blocks with BatchNorm and GELU, global pooling, Dropout."""

    def __init__(self, in_channels: int, num_classes: int, width: int = 16) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
            nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1, bias=False), nn.BatchNorm2d(2 * width),
            nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * width, 4 * width, 3, padding=1, bias=False),
            nn.BatchNorm2d(4 * width), nn.GELU())
        self.head = nn.Sequential(nn.Dropout(0.1), nn.Linear(4 * width, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


def export_own_model(path: Path, *, channels: int, side: int, classes: int) -> Path:
    """``OwnNet`` saved as the README says users do: train mode, the batch dynamic."""
    torch.manual_seed(0)
    model = OwnNet(channels, classes).train()
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(model, (torch.randn(4, channels, side, side),),
                                  dynamic_shapes=({0: batch},))
    torch.export.save(program, path)
    return path


# ---------------------------------------------------------------------------- plain loop
@dataclass(frozen=True, slots=True)
class LoopResult:
    """The plain loop's speed and what it ran with."""

    samples_per_s: float
    batch: int
    steps: int
    precision: str
    device: str
    final_loss: float


def plain_loop(spec: str, dataset: str, *, batch: int, precision: str, device: str,
               steps: int, test_fraction: float = 0.1, warmup: int = 5,
               seed: int = 0) -> LoopResult:
    """The session's model on its data, trained alone on ``device``: the hub's own build
    (``build_hub_model``, seeded), the batch on the device, the worker's augmentation and
    autocast (fp16 behind a GradScaler), SGD with momentum. Timed after ``warmup`` steps,
    the device synchronised at both ends."""
    from computeshare_desktop.data.prepared import load_data
    from computeshare_desktop.devices import precision_for
    from computeshare_desktop.evaluation import batch_loss
    from computeshare_desktop.hub.augment import session_augment
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.hub.user_model import build_hub_model
    from computeshare_desktop.worker.augment import Augmentation, batch_generator

    train, _ = load_data(dataset, test_fraction=test_fraction)
    on = torch.device(device)
    model = build_hub_model(HubConfig(model=spec, dataset=dataset, seed=seed),
                            train.info).to(on).train()
    chosen = precision_for(precision, on)
    scaler = chosen.scaler()
    augment = Augmentation(session_augment("auto", dataset, train.info), train.info)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01,
                          momentum=0.9)
    images, labels = train.images.to(on), train.labels.to(on)
    gen = torch.Generator(on).manual_seed(seed)
    loss = torch.zeros(())
    began = 0.0
    for step in range(warmup + steps):
        if step == warmup:
            _sync(on)
            began = time.perf_counter()
        idx = torch.randint(0, len(labels), (batch,), device=on, generator=gen)
        x = augment(images[idx], batch_generator(seed, 0, step * batch))
        opt.zero_grad(set_to_none=True)
        with chosen.autocast():
            loss = batch_loss(model, x, labels[idx], train.info)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    _sync(on)
    seconds = time.perf_counter() - began
    return LoopResult(steps * batch / seconds, batch, steps, chosen.name, str(on),
                      float(loss.detach()))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---------------------------------------------------------------------------- the probe
class Probe:
    """What the instruments saw in this worker process (one compute thread writes it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.report: dict[str, Any] = {"device": None, "precision": None, "precision_note": "",
                                       "steps": 0, "nonfinite_losses": 0, "syncs": None,
                                       "first_sync": "", "errors": []}
        self._in_step = threading.local()
        self._losses: list[torch.Tensor] = []  # each step's (detached, on its device)

    def built(self, device: torch.device, precision: Any) -> None:
        with self.lock:
            self.report.update(device=str(device), precision=precision.name,
                               precision_note=precision.note)
            if device.type == "cuda":
                self.report["syncs"] = 0

    def step(self, loss: torch.Tensor) -> None:
        with self.lock:
            self.report["steps"] += 1
        self._losses.append(loss)

    def error(self, exc: BaseException) -> None:
        with self.lock:
            self.report["errors"].append(f"{type(exc).__name__}: {exc}".splitlines()[0][:400])

    def warned(self, message: Any, filename: str, lineno: int) -> bool:
        """Count a warning raised inside a step; True when it was a sync one."""
        if not getattr(self._in_step, "on", False) or SYNC_WARNING not in str(message):
            return False
        with self.lock:
            self.report["syncs"] = (self.report["syncs"] or 0) + 1
            if not self.report["first_sync"]:
                here = [f"{f.filename}:{f.lineno}" for f in traceback.extract_stack()
                        if "computeshare_desktop" in f.filename]
                self.report["first_sync"] = f"{message} (at {here[-1] if here else filename})"
        return True

    def write(self) -> None:
        with self.lock:
            # the losses are read now, after the session: reading them in the step would
            # itself synchronise
            losses = [float(v) for v in self._losses]
            self.report["nonfinite_losses"] = sum(not math.isfinite(v) for v in losses)
            self.path.write_text(json.dumps(self.report, indent=1), encoding="utf-8")


def instrument(probe: Probe) -> None:
    """Wrap the worker's compute so that ``probe`` sees every build and step."""
    from computeshare_desktop.worker import compute

    cls = compute.GradientComputer
    init, batch_loss = cls.__init__, cls._batch_loss

    def built(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        probe.built(self.device, self.precision)

    def step(self: Any, start: int, batch: int) -> torch.Tensor:
        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        probe._in_step.on = True
        try:
            loss = batch_loss(self, start, batch)
        except Exception as exc:
            probe.error(exc)
            raise
        finally:
            probe._in_step.on = False
            if cuda:
                torch.cuda.set_sync_debug_mode(0)
        probe.step(loss)
        return loss

    cls.__init__ = built  # type: ignore[method-assign]
    cls._batch_loss = step  # type: ignore[method-assign]
    shown = warnings.showwarning

    def showwarning(message: Any, category: Any, filename: str, lineno: int,
                    file: Any = None, line: Any = None) -> None:
        if not probe.warned(message, filename, lineno):
            shown(message, category, filename, lineno, file, line)

    warnings.filterwarnings("always", message=f".*{SYNC_WARNING}")
    warnings.showwarning = showwarning


def probe_main(argv: Sequence[str]) -> int:
    """``probe REPORT.json ARGS...``: ``computeshare ARGS`` with the probe; its exit code."""
    from computeshare_desktop.cli.main import main as cli_main

    probe = Probe(Path(argv[0]))
    instrument(probe)
    try:
        return cli_main(list(argv[1:]))
    except Exception as exc:
        probe.error(exc)
        raise
    finally:
        probe.write()


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "probe":
        sys.exit("usage: python -m benchmarks.gpu_parts probe REPORT.json join ARGS...")
    sys.exit(probe_main(sys.argv[2:]))

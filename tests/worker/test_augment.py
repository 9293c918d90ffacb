"""Augmentation on the worker: each op keeps the batch's shape, dtype and
device, draws per sample, repeats with its seed and matches torchvision's kernels; the
host checks ``--augment`` and picks its default from the data; the Welcome carries the
ops, a worker refuses one it does not know before its shard, and a session that augments
still learns."""

from __future__ import annotations

import copy
import dataclasses

import msgspec
import pytest
import torch
from helpers.hub import make_hub
from helpers.protocol import EXAMPLES
from torchvision.transforms.v2 import functional as TF
from worker_sim import Sim

from computeshare_desktop.data import ArrayDataset, DatasetInfo
from computeshare_desktop.data.info import table_info
from computeshare_desktop.errors import ConfigError, RejectedError
from computeshare_desktop.evaluation import evaluate
from computeshare_desktop.hub.augment import parse_augment, session_augment
from computeshare_desktop.hub.config import HubConfig
from computeshare_desktop.protocol import MsgType, RejectCode, decode, encode
from computeshare_desktop.protocol.messages import AUGMENTS, Shard
from computeshare_desktop.models import build_model, flatten, trainable
from computeshare_desktop.worker import BuiltinFactory, GradientComputer
from computeshare_desktop.worker.augment import Augmentation, batch_generator, color, flip
from computeshare_desktop.worker.core import Phase
from computeshare_desktop.worker.effects import Send
from computeshare_desktop.worker.recipe import PLAIN, Recipe

RGB = DatasetInfo("photos", 3, 32, 40, 2, (0.5, 0.4, 0.3), (0.25, 0.25, 0.25))
GRAY = DatasetInfo("scans", 1, 32, 32, 2, (0.5,), (0.25,))
WELCOME = EXAMPLES[MsgType.WELCOME]


def batch(info: DatasetInfo, n: int = 16) -> torch.Tensor:
    return torch.randint(0, 256, (n, *info.shape), dtype=torch.uint8,
                         generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("info", [RGB, GRAY], ids=["rgb", "gray"])
@pytest.mark.parametrize("op", AUGMENTS)
def test_each_op_keeps_the_batch_and_draws_per_sample(op: str, info: DatasetInfo) -> None:
    x = batch(info)
    aug = Augmentation([op], info)
    y = aug(x, batch_generator(0, 0, 0))
    assert (y.shape, y.dtype, y.device) == (x.shape, x.dtype, x.device)
    assert torch.equal(aug(x, batch_generator(0, 0, 0)), y)  # the seed says it all
    assert not torch.equal(aug(x, batch_generator(0, 0, 32)), y)  # the next batch differs
    changed = (y != x).flatten(1).any(1)
    if op in ("flip", "erase"):  # half the samples, about: some changed, some not
        assert 0 < int(changed.sum()) < len(x)
    else:  # every sample, each its own way (two samples under the same change stay apart)
        assert bool(changed.all())
        same = x[1:2].expand_as(x).contiguous()
        z = aug(same, batch_generator(0, 0, 0))
        assert len({bytes(img.flatten().numpy()) for img in z}) > len(x) // 2
    assert torch.equal(x, batch(info))  # the shard's images are never written


def test_flip_mirrors_and_color_matches_torchvision() -> None:
    x = batch(RGB, 8)
    y = flip(x, batch_generator(3, 1, 0), RGB)
    for a, b in zip(x, y, strict=True):
        assert torch.equal(b, a) or torch.equal(b, TF.horizontal_flip(a))
    known = torch.zeros(1, 1, 2, 3, dtype=torch.uint8)
    known[0, 0] = torch.tensor([[1, 2, 3], [4, 5, 6]])
    mirrored = next(flip(known, batch_generator(0, 0, s), GRAY) for s in range(64)
                    if not torch.equal(flip(known, batch_generator(0, 0, s), GRAY), known))
    assert mirrored[0, 0].tolist() == [[3, 2, 1], [6, 5, 4]]
    # one sample's factors, read back, give torchvision's three steps (on values that no
    # step pushes out of [0, 255], where ColorJitter's clamps between steps do nothing)
    assert Augmentation(["color"], RGB).names == ("color",)
    for info, start in [(RGB, 0), (RGB, 1), (RGB, 2), (GRAY, 0)]:
        one = batch(info, 1) // 2 + 50  # 50..177: times 1.4 stays below 255
        out = color(one, batch_generator(0, 0, start), info)
        b, c, s = (float(f) for f in torch.rand(3, generator=batch_generator(0, 0, start))
                   * 0.8 + 0.6)
        ref = TF.adjust_contrast(TF.adjust_brightness(one, b), c)
        if info.channels == 3:
            ref = TF.adjust_saturation(ref, s)
        assert (out.int() - ref.int()).abs().max() <= 3  # torchvision truncates each step


def test_ops_run_in_their_fixed_order_whatever_the_order_asked() -> None:
    assert Augmentation(["flip", "crop"], RGB).names == ("crop", "flip")
    x = batch(RGB)
    a = Augmentation(["flip", "crop"], RGB)(x, batch_generator(5, 0, 8))
    b = Augmentation(["crop", "flip"], RGB)(x, batch_generator(5, 0, 8))
    assert torch.equal(a, b)


def test_the_host_checks_augment_and_picks_its_default() -> None:
    assert parse_augment("auto") is None
    assert parse_augment("none") == parse_augment("") == ()
    assert parse_augment(" Flip, crop,flip ") == ("crop", "flip")
    with pytest.raises(ConfigError, match="unknown augmentation 'mixup'.*crop, flip"):
        HubConfig(augment="flip,mixup")
    assert HubConfig().augment == "auto"
    # auto: crop,flip for the user's own images of 32 px and up, else nothing
    assert session_augment("auto", "/data/photos", RGB) == ["crop", "flip"]
    small = DatasetInfo("digits", 1, 28, 28, 10, (0.1,), (0.3,))
    assert session_augment("auto", "/data/digits", small) == []
    assert session_augment("auto", "cifar10", RGB) == []  # built-ins stay as they were
    assert session_augment("auto", "python:Stripes", RGB) == []
    assert session_augment("none", "/data/photos", RGB) == []
    assert session_augment("color", "mnist-sample", small) == ["color"]
    table = table_info("people", 5, 2)
    assert session_augment("auto", "/data/t.csv", table) == []
    assert session_augment("none", "/data/t.csv", table) == []
    with pytest.raises(ConfigError, match="table cannot be augmented"):
        session_augment("flip", "/data/t.csv", table)
    with pytest.raises(RejectedError, match="augment a table"):  # a hub that asks anyway
        Augmentation(["flip"], table)
    assert not Augmentation([], table)


def test_the_welcome_carries_the_ops_and_a_worker_refuses_an_unknown_one() -> None:
    assert WELCOME.augment == []  # a hub that says nothing: no augmentation
    hub = make_hub(workers=1, rounds=2, augment="flip,crop")
    sim = Sim(hub)
    peer = sim.worker(b"w1")
    sim.run(lambda: peer.core.phase is Phase.JOIN and isinstance(peer.action, Send))
    welcome = msgspec.structs.replace(WELCOME, augment=["crop", "mixup"])
    assert decode(encode(welcome))[0].augment == ["crop", "mixup"]  # words travel as words
    with pytest.raises(RejectedError, match="'mixup'.*update ComputeShare"):
        Recipe.of(welcome)
    peer.take(peer.core.replied(encode(welcome), sim.now))
    assert peer.finish is not None and peer.finish.error is not None
    assert peer.finish.error.code is RejectCode.MALFORMED  # type: ignore[attr-defined]
    assert "mixup" in str(peer.finish.error)
    assert not peer.messages(Shard)  # refused before the shard was downloaded


def stripes(n: int, seed: int) -> ArrayDataset:
    """16×16 RGB noise with horizontal (class 0) or vertical (class 1) stripes."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 2
    images = torch.randint(0, 120, (n, 3, 16, 16), dtype=torch.uint8, generator=g)
    band = (torch.arange(16) // 2 % 2 == 0)
    images[labels == 0] += (band[:, None] * 120).to(torch.uint8)
    images[labels == 1] += (band[None, :] * 120).to(torch.uint8)
    info = DatasetInfo("stripes", 3, 16, 16, 2, (0.45,) * 3, (0.3,) * 3)
    return ArrayDataset(images.contiguous(), labels, info)


def test_a_session_that_augments_still_learns() -> None:
    """Both sans-I/O cores and real computes: two workers augment with crop, flip and
    color; the hub's model learns the stripes' direction."""
    torch.manual_seed(0)
    hub = make_hub(data=stripes(256, 0), workers=2, rounds=20, batch_size=16, lr=0.02,
                   codec="raw", augment="crop,flip,color")
    assert hub.augment == ["crop", "flip", "color"]
    sim = Sim(hub)
    peers = [sim.worker(name, factory=BuiltinFactory(torch.device("cpu")))
             for name in (b"w1", b"w2")]
    sim.finish_all()
    for peer in peers:
        assert peer.finish is not None and peer.finish.error is None, peer.finish
        assert peer.compute.augment.names == ("crop", "flip", "color")
    model = hub.server.model
    accuracy, _ = evaluate(model, stripes(64, 1))
    assert accuracy > 0.9


def test_the_compute_augments_before_the_model_and_repeats_its_gradient() -> None:
    """The hook sits in GradientComputer, under every factory (built-ins, graphs, code):
    the same work gives the same gradient, and another than without augmentation."""
    data = stripes(32, 2)
    model = build_model("simplenet", data.info, seed=0)
    weights = flatten(trainable(model)).detach().clone()

    def gradient(*ops: str) -> torch.Tensor:
        recipe = dataclasses.replace(PLAIN, augment=ops)
        compute = GradientComputer(copy.deepcopy(model), data.info, torch.device("cpu"),
                                   data.images, data.labels, shard=0, seed=0, recipe=recipe)
        return compute.gradient(weights, start=0, batch=8).flat

    assert torch.equal(gradient("crop", "flip"), gradient("crop", "flip"))
    assert not torch.equal(gradient("crop", "flip"), gradient())

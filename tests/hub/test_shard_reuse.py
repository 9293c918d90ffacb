"""A worker that holds a range of its shard sends its digest, and the hub sends no samples
for it again; a worker that comes back gets the shard it held."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from helpers.hub import T0, Worker, admit, make_hub, only, reject_code, send, send_frames

from computeshare_desktop.data import ArrayDataset
from computeshare_desktop.data.digests import chunk_digest, content_hash
from computeshare_desktop.hub import HubCore
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.messages import Bye, Shard, ShardData
from computeshare_desktop.protocol.tensors import frame_to_tensor
from helpers.hub import train_set

CAP = 1 << 26


def fetch(hub: HubCore, w: Worker, held: dict[int, str]) -> tuple[int, dict[int, str], Any]:
    """The whole shard, offering ``held`` digests by offset: the samples' frame bytes that
    came, the digest of every chunk, and the labels in order."""
    offset, moved, digests, labels = 0, 0, {}, []
    while offset < w.welcome.shard_size:
        msg = Shard(w.token, offset, 4096, have=held.get(offset, ""))
        out = send(hub, w.peer, msg, T0)
        reply, body = out[0].msg, out[0].body
        assert isinstance(reply, ShardData) and reply.offset == offset, reply
        n = reply.image_shape[0]
        moved += sum(len(f) for f in body)
        if reply.same:
            assert body == [b"", b""] and held[offset]
            digests[offset] = held[offset]
        else:
            images = frame_to_tensor(body[0], "uint8", reply.image_shape, CAP)
            labels.append(frame_to_tensor(body[1], "int64", [n], CAP))
            digests[offset] = chunk_digest(images, labels[-1])
        offset += n
    return moved, digests, labels


def bye(hub: HubCore, w: Worker) -> None:
    send(hub, w.peer, Bye(w.token), T0)


def test_a_rejoin_gets_its_shard_back_and_moves_no_samples() -> None:
    hub = make_hub(workers=2, seed=3)
    hub.shards.chunk = 500  # several chunks per shard
    a, b = admit(hub, b"a", T0), admit(hub, b"b", T0)
    assert (a.welcome.shard, b.welcome.shard) == (0, 1)
    assert a.welcome.data_hash == content_hash(train_set()) != ""
    first, digests, _ = fetch(hub, a, {})
    assert first == a.welcome.shard_size * (28 * 28 + 8)  # before: the whole shard again
    bye(hub, a)
    bye(hub, b)
    b2, a2 = admit(hub, b"b", T0), admit(hub, b"a", T0)  # b first: it still gets shard 1
    assert (a2.welcome.shard, b2.welcome.shard) == (0, 1)
    again, same, _ = fetch(hub, a2, digests)
    assert again == 0 and same == digests  # after: no sample crosses the wire


def test_a_resumed_hub_gives_each_worker_the_shard_it_held() -> None:
    hub = make_hub(workers=2, seed=3)
    admit(hub, b"a", T0), admit(hub, b"b", T0)
    held = hub.checkpoint()["held"]
    assert isinstance(held, dict) and sorted(held.values()) == [0, 1]
    resumed = make_hub(workers=2, seed=3, held=held)  # b comes back first
    b, a = admit(resumed, b"b", T0), admit(resumed, b"a", T0)
    assert (a.welcome.shard, b.welcome.shard) == (0, 1)


def test_a_digest_the_hub_does_not_share_gets_the_samples() -> None:
    hub = make_hub(workers=2, seed=3)
    w = admit(hub, b"a", T0)
    _, digests, labels = fetch(hub, w, {})
    wrong = {offset: "0" * 64 for offset in digests}
    moved, again, labels2 = fetch(hub, w, wrong)
    assert moved > 0 and again == digests
    assert torch.equal(torch.cat(labels), torch.cat(labels2))


def test_other_data_has_another_hash_and_other_digests() -> None:
    data = train_set()
    other = ArrayDataset(data.images.flip(0).contiguous(), data.labels.flip(0).contiguous(),
                         data.info)
    hub, hub2 = make_hub(workers=2, seed=3), make_hub(workers=2, seed=3, data=other)
    w, w2 = admit(hub, b"a", T0), admit(hub2, b"a", T0)
    assert w.welcome.data_hash != w2.welcome.data_hash
    _, digests, _ = fetch(hub, w, {})
    moved, _, _ = fetch(hub2, w2, digests)  # a worker offering the first data's digests
    assert moved == w2.welcome.shard_size * (28 * 28 + 8)


@pytest.mark.parametrize("have", ["0" * 63, "A" * 64, "g" * 64, "0" * 65])
def test_a_have_that_is_no_digest_is_malformed(have: str) -> None:
    hub = make_hub(workers=2)
    w = admit(hub, b"a", T0)
    frames = encode(Shard(w.token, 0, 10))
    frames[0] = bytes(frames[0]).replace(b'"have":""', b'"have":"%s"' % have.encode())
    assert reject_code(only(send_frames(hub, w.peer, frames, T0))) is RejectCode.MALFORMED

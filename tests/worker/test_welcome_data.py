"""The data's shape in the Welcome: a worker builds its DatasetInfo from what the hub says
(never from a registry by name, so a session may train on data only the hub knows), and
refuses a description that does not hold together or a shard that does not match it."""

from __future__ import annotations

import json

import msgspec
import pytest
from helpers.hub import make_hub
from helpers.protocol import EXAMPLES
from worker_sim import Sim

from computeshare_desktop.errors import RejectedError, RemoteProtocolError
from computeshare_desktop.protocol import MsgType, RejectCode, decode, encode
from computeshare_desktop.protocol.messages import ShardData, Welcome
from computeshare_desktop.worker.compute import welcome_info
from computeshare_desktop.worker.core import Phase
from computeshare_desktop.worker.effects import Send

WELCOME = EXAMPLES[MsgType.WELCOME]


def test_the_worker_takes_the_data_from_the_welcome() -> None:
    info = welcome_info(WELCOME)
    assert (info.name, info.shape, info.num_classes) == ("mnist-sample", (1, 28, 28), 10)
    assert info.mean == (0.1315,) and info.classes == ()
    odd = Welcome(**{**msgspec.structs.asdict(WELCOME), "dataset": "python:mine",
                     "channels": 2, "height": 5, "width": 7, "num_classes": 4,
                     "mean": [0.1, 0.2], "std": [0.3, 0.4]})
    assert welcome_info(odd).shape == (2, 5, 7)  # no registry knows it: nothing looked up
    wrong = Welcome(**{**msgspec.structs.asdict(WELCOME), "mean": [0.1, 0.2]})
    with pytest.raises(RejectedError) as refused:
        welcome_info(wrong)
    assert refused.value.code is RejectCode.MALFORMED


@pytest.mark.parametrize("field,value", [("std", [0.0]), ("mean", [float("nan")]),
                                         ("channels", 0), ("channels", 65), ("mean", []),
                                         ("num_classes", 0), ("width", 2**15 + 1)])
def test_a_welcome_with_an_impossible_data_shape_is_malformed(field, value) -> None:
    frames = encode(WELCOME)
    header = frames[0]
    body = msgspec.json.decode(header[header.index(b"{"):])
    body[field] = value
    bad = header[:header.index(b"{")] + json.dumps(body).encode()
    with pytest.raises(RemoteProtocolError) as info:
        decode([bad])
    assert info.value.code is RejectCode.MALFORMED


def test_the_hubs_welcome_says_its_datas_shape_and_a_chunk_of_another_is_refused() -> None:
    sim = Sim(make_hub(workers=1, rounds=10, codec="raw"))
    peer = sim.worker(b"w1")
    sim.run(lambda: peer.core.phase is Phase.SHARD and isinstance(peer.action, Send))
    welcome = peer.core.welcome
    assert (welcome.channels, welcome.height, welcome.width, welcome.num_classes) == \
        (1, 28, 28, 10)
    assert welcome.mean == [0.1315] and welcome.std == [0.3088]
    chunk = ShardData(offset=0, total=10, image_shape=[1, 1, 28, 27])
    peer.take(peer.core.replied(encode(chunk, [bytes(28 * 27), bytes(8)]), sim.now))
    peer.take(peer.core.said_goodbye(sim.now))
    error = peer.finish.error if peer.finish is not None else None
    assert isinstance(error, RejectedError) and error.code is RejectCode.MALFORMED
    assert "not the 1×28×28 its Welcome said" in error.detail

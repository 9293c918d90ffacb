"""CURVE sockets come from one factory (transport/curve.py): a client that knows the
server's key is answered, one that does not is not; and no other module of the package,
its benchmarks, its test bed or its tests sets a CURVE key by hand."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import zmq

from computeshare_desktop.transport import Identity
from computeshare_desktop.transport.curve import curve_client, curve_server
from computeshare_desktop.transport.sockets import MAX_MESSAGE_BYTES

REPO = Path(__file__).resolve().parents[2]
FACTORY = REPO / "computeshare_desktop" / "transport" / "curve.py"
CURVE_OPTIONS = {"curve_server", "curve_secretkey", "curve_publickey", "curve_serverkey"}
CURVE_CONSTANTS = {"CURVE_SERVER", "CURVE_SECRETKEY", "CURVE_PUBLICKEY", "CURVE_SERVERKEY"}


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.destroy(0)


def served(ctx: zmq.Context, hub: Identity) -> tuple[zmq.Socket, str]:
    router = curve_server(ctx, zmq.ROUTER, hub.secret)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    return router, f"tcp://127.0.0.1:{port}"


def test_a_client_that_knows_the_servers_key_is_answered(ctx):
    hub, me = Identity.generate(), Identity.generate()
    router, address = served(ctx, hub)
    req = curve_client(ctx, zmq.REQ, hub.public, me)
    req.connect(address)
    req.send(b"ping")
    assert router.poll(5000)
    peer, empty, body = router.recv_multipart()
    assert body == b"ping" and router.get(zmq.CURVE_SERVER)
    router.send_multipart([peer, empty, b"pong"])
    assert req.poll(5000) and req.recv() == b"pong"
    assert req.get(zmq.LINGER) == 0 and req.get(zmq.MAXMSGSIZE) == MAX_MESSAGE_BYTES


def test_keys_as_bytes_and_a_throwaway_identity_work_too(ctx):
    public, secret = zmq.curve_keypair()
    router = curve_server(ctx, zmq.ROUTER, secret, max_message_bytes=4096)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    dealer = curve_client(ctx, zmq.DEALER, public)
    dealer.connect(f"tcp://127.0.0.1:{port}")
    dealer.send(b"hello")
    assert router.poll(5000) and router.recv_multipart()[1] == b"hello"
    assert router.get(zmq.MAXMSGSIZE) == 4096


def test_a_client_with_the_wrong_server_key_gets_nothing(ctx):
    router, address = served(ctx, Identity.generate())
    req = curve_client(ctx, zmq.REQ, Identity.generate().public)  # another server's key
    req.connect(address)
    req.send(b"ping")
    assert not router.poll(500)


def curve_setups(path: Path) -> list[int]:
    """Lines of ``path`` that set a CURVE option by hand (an attribute or setsockopt)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and node.attr in CURVE_OPTIONS:
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in {"setsockopt", "set"} and node.args \
                and isinstance(node.args[0], ast.Attribute) \
                and node.args[0].attr in CURVE_CONSTANTS:
            lines.append(node.lineno)
    return lines


def test_the_detector_finds_both_ways_of_setting_a_key(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("s.curve_serverkey = k\ns.setsockopt(zmq.CURVE_SECRETKEY, k)\n"
                      "s.curve_serverkey\ns.setsockopt(zmq.LINGER, 0)\n", encoding="utf-8")
    assert curve_setups(sample) == [1, 2]


def test_curve_sockets_are_set_up_in_one_place():
    found = {}
    for folder in ("computeshare_desktop", "benchmarks", "testbed", "tests"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path != FACTORY and (lines := curve_setups(path)):
                found[str(path.relative_to(REPO))] = lines
    assert found == {}
    assert curve_setups(FACTORY)  # the factory itself is found

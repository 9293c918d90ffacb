"""Joining names the real cause at once: an unknown name, a refused connection, a port that
answers but is not a hub; and a real hub passes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from helpers.net import RunningHub, free_ports

from computeshare_desktop import reach
from computeshare_desktop.errors import HubUnreachableError
from computeshare_desktop.reach import REFUSAL_DELAY_S
from computeshare_desktop.transport import probe_hub


def test_a_refused_connection_is_named_within_the_timeout():
    port = free_ports()
    began = time.monotonic()
    with pytest.raises(HubUnreachableError, match="connection refused by 127.0.0.1"):
        probe_hub("127.0.0.1", port, timeout_s=2.0)
    assert time.monotonic() - began < 3.0 + REFUSAL_DELAY_S  # Windows: refused after ~2 s


def test_on_windows_the_connection_waits_out_the_slow_refusal(monkeypatch):
    """A timeout shorter than Windows' ~2 s of SYN retries would call a refusal silence."""
    asked: list[float] = []

    def refuse(address, timeout):
        asked.append(timeout)
        raise ConnectionRefusedError(10061, "refused")

    monkeypatch.setattr(reach, "REFUSAL_DELAY_S", 2.5)
    monkeypatch.setattr(reach.socket, "create_connection", refuse)
    with pytest.raises(HubUnreachableError, match="connection refused"):
        reach.probe_hub("127.0.0.1", 7341, timeout_s=1.0)
    assert asked == [3.5]


def test_an_unknown_name_is_a_dns_failure(monkeypatch):
    def no_such_name(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)  # no resolver is asked
    with pytest.raises(HubUnreachableError, match="the name 'hub.lan' was not found"):
        probe_hub("hub.lan", 7341)


def test_a_port_that_answers_but_is_not_a_hub_says_so():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    thread.start()
    try:
        began = time.monotonic()
        with pytest.raises(HubUnreachableError, match="not a ComputeShare hub"):
            probe_hub("127.0.0.1", port, timeout_s=1.0, label="my-desktop:7341")
        assert time.monotonic() - began < 3.0
    finally:
        for conn in accepted:
            conn.close()
        server.close()


def test_a_real_hub_passes(tmp_path):
    hub = RunningHub(tmp_path, workers=1, rounds=10)
    try:
        probe_hub("127.0.0.1", hub.ports.pairing)  # the pairing port
        probe_hub("127.0.0.1", hub.port)  # the request port
    finally:
        hub.close()


# Windows cannot start Python's sockets without SYSTEMROOT (WinError 10106) in the
# environment, however bare it is otherwise.
WINDOWS_ESSENTIALS = {k: v for k, v in os.environ.items() if k.upper() == "SYSTEMROOT"}


@pytest.mark.slow
def test_cli_join_with_nothing_listening_exits_3_and_says_refused(tmp_path):
    port = free_ports()
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "computeshare_desktop.cli", "join",
                           f"127.0.0.1:{port}", "--quiet"], capture_output=True, text=True,
                          timeout=60, env={"COMPUTESHARE_PIN": "123456",
                                           "COMPUTESHARE_HOME": str(tmp_path), "PATH": "",
                                           **WINDOWS_ESSENTIALS})
    elapsed = time.monotonic() - began
    assert proc.returncode == 3, proc.stderr
    assert f"connection refused by 127.0.0.1:{port}" in proc.stderr
    # process start included (the address is checked before torch loads)
    assert elapsed < 3.0 + REFUSAL_DELAY_S


def test_the_command_line_checks_the_address_before_loading_torch():
    code = ("import sys\nfrom computeshare_desktop.cli.fast import precheck\n"
            f"rc = precheck(['join', '127.0.0.1:{free_ports()}', '--pin', '1234'])\n"
            "print(rc, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["3", "False"], out.stderr


@pytest.mark.parametrize("argv", [["join"], ["join", "--session", "lab"], ["host"],
                                  ["join", "h:1", "--wait", "30"], ["join", "--help"],
                                  ["join", "h:notaport"]])
def test_only_a_join_to_an_address_is_checked_early(argv):
    from computeshare_desktop.cli.fast import join_address

    assert join_address(argv) is None
    assert join_address(["join", "--pin", "1", "tcp://hub.lan:7400"]) == ("hub.lan", 7400)
    assert join_address(["join", "hub.lan"]) == ("hub.lan", 7341)

"""Is a hub there? One TCP look at an address, before anything heavy loads. No zmq, no torch.

The command line runs this first, so ``computeshare join HOST:PORT`` with nothing there
answers within a second or two, before torch has even been imported.
"""

from __future__ import annotations

import socket
import sys

from .errors import HubUnreachableError
ZMTP_GREETING = 10  # bytes of the signature every ZeroMQ peer sends first: 0xFF ... 0x7F
# Windows reports a refused connection only after retrying the SYN for about 2 s (loopback
# included: 2.0 s on GitHub's windows-latest), where Linux and macOS report it at once. The
# connection attempt gets that much longer there, so a refusal is named as one rather than
# as "does not answer".
REFUSAL_DELAY_S = 2.5 if sys.platform == "win32" else 0.0


def probe_hub(host: str, port: int, timeout_s: float = 2.0, label: str = "") -> None:
    """Check that a ZeroMQ peer listens on ``host:port``, or say why not, within about
    ``timeout_s`` (plus ``REFUSAL_DELAY_S`` on Windows): the name is unknown, the
    connection is refused, nothing answers, or something answers that is not a hub. (A
    ZeroMQ socket alone would just keep retrying.)
    ``label`` names the hub in messages (default: host:port).

    Raises:
        HubUnreachableError: with the cause in words.
    """
    where = label or f"{host}:{port}"
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise HubUnreachableError(f"the name {host!r} was not found ({exc.strerror}): check "
                                  "the hub's address") from None
    connect_s = timeout_s + REFUSAL_DELAY_S
    try:
        conn = socket.create_connection((host, port), timeout=connect_s)
    except ConnectionRefusedError:
        raise HubUnreachableError(f"connection refused by {where}: nothing listens there (is "
                                  "the hub running, and is that its port?)") from None
    except TimeoutError:
        raise HubUnreachableError(f"{where} does not answer within {connect_s:.0f} s (a "
                                  "firewall, or the wrong address?)") from None
    except OSError as exc:
        raise HubUnreachableError(f"cannot reach {where}: {exc.strerror or exc}") from None
    greeting = b""
    with conn:
        conn.settimeout(timeout_s)
        try:
            while len(greeting) < ZMTP_GREETING:
                chunk = conn.recv(ZMTP_GREETING - len(greeting))
                if not chunk:
                    break
                greeting += chunk
        except OSError:  # silent (an HTTP server waits for us) or reset: not a hub
            pass
    if len(greeting) < ZMTP_GREETING or greeting[0] != 0xFF or greeting[-1] != 0x7F:
        raise HubUnreachableError(f"{where} answers, but it is not a ComputeShare hub (the "
                                  "wrong port?)")

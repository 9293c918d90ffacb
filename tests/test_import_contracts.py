"""The layer rules of the package are import-linter contracts (pyproject.toml,
``[tool.importlinter]``); the suite runs them, as CI would run ``lint-imports``.

The contracts, by package: views (cli, gui, the self-test) drive the service, the service
the transports (transport, discovery), the transports the cores (hub, worker), and the
cores stand on pure code (codec, models, data, protocol, events); the views never reach a
socket or a core's engine; the transports reach a hub only through ``hub.endpoint``; zmq,
zeroconf and Qt each stay in their one package; and no package's modules or subpackages
import each other in a circle. ``tests/test_architecture.py`` checks that they catch a
violation.
"""

from __future__ import annotations

from helpers.contracts import ROOT, lint_imports


def test_the_package_keeps_every_import_contract():
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout

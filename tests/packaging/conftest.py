"""Tests marked ``packaging`` build and run a real installer (minutes): they run only when
asked for by name, ``python -m pytest -m packaging``; the suite's plain ``python -m pytest``
(and any ``-m`` that does not mention them) leaves them out."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "packaging" in (config.option.markexpr or ""):
        return
    left_out = [item for item in items if item.get_closest_marker("packaging")]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if not item.get_closest_marker("packaging")]

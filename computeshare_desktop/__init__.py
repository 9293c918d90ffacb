"""ComputeShare desktop: pool the machines you have to train one PyTorch model over the LAN."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "host"]

if TYPE_CHECKING:
    from .api import host


def __getattr__(name: str) -> Any:
    """``host``, the Python API (``api.host``), imported when first asked for: it brings
    torch and the session service, which ``computeshare --help`` does not need."""
    if name == "host":
        from .api import host
        return host
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

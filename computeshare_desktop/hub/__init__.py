"""The hub (parameter server) core: no sockets, no Qt."""

from .config import HubConfig
from .core import HubCore, Reply
from .session import HubResult, HubSession

__all__ = ["HubConfig", "HubCore", "HubResult", "HubSession", "Reply"]

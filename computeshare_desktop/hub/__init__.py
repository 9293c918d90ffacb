"""The hub (parameter server) core: no sockets, no Qt."""

from .config import HubConfig
from .core import HubCore, Reply
from .session import Given, HubResult, HubSession

__all__ = ["Given", "HubConfig", "HubCore", "HubResult", "HubSession", "Reply"]

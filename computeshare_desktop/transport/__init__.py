"""ZeroMQ transport: the only package that imports zmq."""

from .keys import Identity, KnownHubs, identity_path, load_or_create
from .sockets import DEFAULT_PORT, MAX_MESSAGE_BYTES
from ..reach import probe_hub
from .zmq_client import ChannelTimeout, ReqChannel, ZmqConnector, first_reachable
from .zmq_events import EventSubscriber
from .zmq_hub import EVENT_TOPIC, HubServer

__all__ = ["ChannelTimeout", "DEFAULT_PORT", "EVENT_TOPIC", "EventSubscriber", "HubServer",
           "Identity", "KnownHubs", "MAX_MESSAGE_BYTES", "ReqChannel", "ZmqConnector",
           "first_reachable", "probe_hub", "identity_path", "load_or_create"]

"""ZeroMQ transport: the only package that imports zmq."""

from .sockets import DEFAULT_PORT, MAX_MESSAGE_BYTES
from .zmq_client import ChannelTimeout, ReqChannel
from .zmq_hub import EVENT_TOPIC, HubServer

__all__ = ["ChannelTimeout", "DEFAULT_PORT", "EVENT_TOPIC", "HubServer", "MAX_MESSAGE_BYTES",
           "ReqChannel"]

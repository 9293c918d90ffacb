"""The worker core: device choice, gradient computation and the protocol loop (no zmq)."""

from .compute import GradientComputer
from .device import DEVICE_CHOICES, DeviceChoice, pick_device
from .options import Channel, WorkerOptions, WorkerResult
from .session import WorkerSession

__all__ = ["Channel", "DEVICE_CHOICES", "DeviceChoice", "GradientComputer", "WorkerOptions",
           "WorkerResult", "WorkerSession", "pick_device"]

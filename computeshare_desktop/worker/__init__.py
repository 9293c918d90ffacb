"""The worker: its protocol core (no I/O), the driver that runs it, device choice and compute."""

from .compute import (BuiltinFactory, Compute, ComputeFactory, GradientComputer, GraphFactory,
                      ModelFactory)
from .approvals import CodeApprovals
from .code import CodeFactory, CodeNotApproved, WithCode
from .core import WorkerCore
from ..devices import DEVICE_CHOICES, DeviceChoice, pick_device
from .driver import WorkerDriver
from .options import Channel, WorkerOptions, WorkerResult
from .session import WorkerSession

__all__ = ["BuiltinFactory", "Channel", "CodeApprovals", "CodeFactory", "CodeNotApproved",
           "Compute", "ComputeFactory", "DEVICE_CHOICES", "WithCode",
           "DeviceChoice", "GradientComputer", "GraphFactory", "ModelFactory", "WorkerCore",
           "WorkerDriver", "WorkerOptions", "WorkerResult", "WorkerSession", "pick_device"]

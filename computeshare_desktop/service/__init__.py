"""The session service: hosting and joining, shared by the command line and the app.

It owns the threads and the policies (output folder, PIN, port fallback, address order,
remembered hubs); the views only start, stop and show. No Qt.
"""

from .host import HostPlan, HostService, choose_pin
from .join import (FEED, JoinPlan, JoinService, approve_code, code_approvals, join_plan,
                   remembers)
from .options import AppConfig, HostOptions, JoinTarget, host_plan
from .threads import Tagged

__all__ = ["AppConfig", "FEED", "HostOptions", "HostPlan", "HostService", "JoinPlan", "host_plan",
           "JoinService", "JoinTarget", "Tagged", "approve_code", "choose_pin",
           "code_approvals", "join_plan", "remembers"]

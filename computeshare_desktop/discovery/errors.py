"""Errors of LAN discovery: a peer's bad advert, and finding no (or no single) session."""

from __future__ import annotations

from ..errors import ComputeShareError, ConfigError, ExitCode


class AdvertError(ComputeShareError):
    """A peer's mDNS TXT record is missing a field, malformed, oversized or from the future."""


class DiscoveryError(ComputeShareError):
    """No session, or no single session, could be found on the LAN (hub unreachable family)."""

    exit_code = ExitCode.UNREACHABLE


class SessionNotFoundError(ConfigError):
    """The session the user named (--session NAME) is not among those discovered."""

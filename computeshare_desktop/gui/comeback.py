"""Workers come back, in the app: a worker window whose host stopped the session offers
(checked by default) to rejoin it when it reappears on the LAN, and then does, without the
PIN: a new worker window for the resumed session replaces the old one.

"The same session" is the session id the LAN advert carried while the worker trained (a
resumed session keeps its id, and may listen on another port); a worker that joined by
address is matched by the address, port and hub key instead. The session must first have
left the LAN (its host closed it): a window never rejoins the session that is ending. When
a worker may come back and when its session is back is the CLI's policy too
(service/comeback.py: ``stopped_by_host``, ``Return``); this module is its Qt part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from PySide6.QtWidgets import QCheckBox

from ..discovery import DiscoveredSession
from ..service import JoinService, JoinTarget, Tagged
from ..service.comeback import Return, stopped_by_host
from .join_choices import CHOICES
from .progress_window import ProgressWindow

OFFER = "Rejoin when the host resumes this session"
WAITING = "The host stopped the session: this window rejoins it, without the PIN, once it " \
          "is resumed"

NewWorker = Callable[[JoinTarget, str], JoinService]
OpenWorker = Callable[[JoinService, list[Tagged]], ProgressWindow]


@dataclass(eq=False)
class _Offer:
    box: QCheckBox
    session_id: str = ""  # the advert's, once seen while the worker trained
    back: Return = field(default_factory=Return)  # the shared rule: gone, then back
    shown: bool = field(default=False)


def _same_hub(target: JoinTarget, session: DiscoveredSession) -> bool:
    advert = session.advert
    return advert.port == target.port and target.host in session.addresses and \
        (not target.expected_key or advert.key_fingerprint == target.expected_key)


def same_choices(old: JoinService, new: JoinService) -> JoinService:
    """``new``, sharing this machine as ``old`` did (the Join dialog's threads, speed limit
    and pause on battery): a worker that joins again keeps its person's choices."""
    return new.choose(**{name: getattr(old.plan.options, name) for name in CHOICES})


class Comebacks:
    """The main window's worker windows, and the sessions on the LAN they may rejoin."""

    def __init__(self, new_worker: NewWorker, open_worker: OpenWorker) -> None:
        self._new_worker, self._open_worker = new_worker, open_worker
        self.offers: dict[ProgressWindow, _Offer] = {}
        self.sessions: list[DiscoveredSession] = []

    def watch(self, window: ProgressWindow) -> None:
        """Offer ``window`` a comeback should its host stop the session."""
        box = QCheckBox(OFFER)
        box.setChecked(True)
        box.setToolTip(WAITING)
        box.hide()
        window.statusBar().addPermanentWidget(box)
        self.offers[window] = _Offer(box)
        window.closed.connect(lambda w: self.offers.pop(w, None))

    def poll(self, sessions: list[DiscoveredSession] | None) -> list[ProgressWindow]:
        """Take the sessions on the LAN (None: unchanged) and bring back every stopped
        worker whose session is back; the new windows."""
        if sessions is not None:
            self.sessions = sessions
        opened = []
        for window, offer in list(self.offers.items()):
            target = window.runner.target if isinstance(window.runner, JoinService) else None
            if target is None:
                continue
            if not stopped_by_host(window.runner):
                offer.session_id = offer.session_id or next(
                    (s.advert.session_id for s in self.sessions if _same_hub(target, s)), "")
                continue
            if not offer.shown:
                offer.shown = True
                offer.box.show()
                window.statusBar().showMessage(WAITING)
            back = self._back(target, offer)
            if back is not None and offer.box.isChecked():
                opened.append(self.come_back(window, JoinTarget.from_session(back)))
        return opened

    def _back(self, target: JoinTarget, offer: _Offer) -> DiscoveredSession | None:
        """The session, once it left the LAN and came back (accepting workers)."""
        same = [s for s in self.sessions if (s.advert.session_id == offer.session_id
                                            if offer.session_id else _same_hub(target, s))]
        present = same[0] if same else None
        back = offer.back.seen(present is not None,
                               present is not None and present.advert.accepting)
        return present if back else None

    def come_back(self, window: ProgressWindow, target: JoinTarget) -> ProgressWindow:
        """A new worker window for ``target`` (the remembered key: no PIN) replaces
        ``window``."""
        self.offers.pop(window, None)
        runner = self._new_worker(target, "")
        if isinstance(window.runner, JoinService):
            runner = same_choices(window.runner, runner)
        runner.start()
        window.confirmed = True
        window.close()
        return self._open_worker(runner, [])

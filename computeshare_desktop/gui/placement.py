"""Windows inside the screen: a window opens within the available geometry (the screen less
its task bars) of the screen its anchor (the main window) is on, no larger than that area,
and a window restored from the settings that would fall outside comes back inside."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QWidget

CASCADE = QPoint(32, 32)  # a new window's offset from its anchor's top-left corner
FRAME_GUESS = QSize(8, 38)  # a title bar and borders, before the window manager says


def available_geometry(anchor: QWidget | None = None) -> QRect:
    """The available geometry of ``anchor``'s screen (the primary screen without one)."""
    screen = anchor.screen() if anchor is not None else None
    if screen is None:
        screen = QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, 1280, 720)


def frame_extra(window: QWidget) -> QSize:
    """How much larger the window's frame is than its client area (a guess until shown)."""
    frame, inner = window.frameGeometry(), window.geometry()
    extra = QSize(frame.width() - inner.width(), frame.height() - inner.height())
    return extra if window.isVisible() and extra.height() > 0 else FRAME_GUESS


def fit(window: QWidget, area: QRect, near: QPoint | None = None) -> QRect:
    """Size ``window`` to fit ``area`` (never below its layout's minimum), then move it so
    that its frame lies inside: at ``near`` (its frame's top-left) when given, else where it
    is. Returns the client geometry it gets."""
    extra = frame_extra(window)
    room = QSize(area.width() - extra.width(), area.height() - extra.height())
    size = window.size().boundedTo(room).expandedTo(window.minimumSize()).expandedTo(
        window.minimumSizeHint())
    window.resize(size)
    top_left = near if near is not None else window.frameGeometry().topLeft()
    width, height = size.width() + extra.width(), size.height() + extra.height()
    x = max(area.left(), min(top_left.x(), area.right() + 1 - width))
    y = max(area.top(), min(top_left.y(), area.bottom() + 1 - height))
    window.move(x, y)  # move() places the frame's top-left corner
    return QRect(QPoint(x, y), size)


def place(window: QWidget, anchor: QWidget | None, area: QRect | None = None) -> QRect:
    """Place a new ``window`` inside the available geometry of ``anchor``'s screen (or
    ``area``), cascaded from the anchor's corner and past each shown window already there
    (a second worker window never hides the first exactly)."""
    area = area if area is not None else available_geometry(anchor)
    near = anchor.frameGeometry().topLeft() + CASCADE if anchor is not None else None
    if near is not None:
        taken = [w.frameGeometry().topLeft() for w in QApplication.topLevelWidgets()
                 if w.isVisible() and w is not window and w is not anchor]
        for _ in range(len(taken)):  # a window in each step: at most that many steps
            corner = fit(window, area, near).topLeft()
            if not any(_close(corner, other) for other in taken):
                break
            near += CASCADE
    return fit(window, area, near)


def _close(a: QPoint, b: QPoint) -> bool:
    """Two windows' corners within half a cascade step: one would all but hide the other
    (a window manager may move a window by its frame's few pixels)."""
    return abs(a.x() - b.x()) < CASCADE.x() // 2 and abs(a.y() - b.y()) < CASCADE.y() // 2

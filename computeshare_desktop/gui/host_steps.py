"""The Host dialog's three steps and the messages beside its fields.

Each option's group (``schema.GROUPS``) belongs to a step: "What to train" (the model and
the data, with the data panel at the side), "How" (rounds, recipe, the network) and "Who"
(workers, output folder, the session on the LAN). An option of a group no step names goes to
``DEFAULT_STEP`` in a box of its own, so a new option needs no layout code. Each step is a
page that scrolls when the screen is smaller than it, and every field has a message line
right under it: an error shows there, on its step, scrolled into view.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtWidgets import (QFormLayout, QFrame, QHBoxLayout, QLabel, QPlainTextEdit,
                               QScrollArea, QSizePolicy, QTabWidget, QToolButton, QVBoxLayout,
                               QWidget)

from .. import schema

WHAT, HOW, WHO = "what", "how", "who"
STEPS: dict[str, str] = {WHAT: "1 · What to train", HOW: "2 · How", WHO: "3 · Who"}
# Each step's columns and the groups each shows, top to bottom; a group named by none goes
# to DEFAULT_STEP, in its shortest column. (The network preset sits with the workers: the
# How step's two columns are full with the training options and the recipe.)
STEP_GROUPS: dict[str, tuple[tuple[str, ...], ...]] = {
    WHAT: (),
    HOW: ((schema.TRAINING,), (schema.RECIPE,)),
    WHO: ((schema.WORKERS, schema.NETWORK), (schema.LINK,)),
}
DEFAULT_STEP = HOW
# Options of the training group that say what is trained (the rest say how).
WHAT_TO_TRAIN = frozenset({"dataset", "model", "weights", "train_only", "offer_code"})
WHAT_CAPTION = "Model and data"


def step_of(name: str, option: schema.Option) -> str:
    """The step an option's field is on."""
    if name in WHAT_TO_TRAIN:
        return WHAT
    return next((step for step, columns in STEP_GROUPS.items()
                 if any(option.group in column for column in columns)), DEFAULT_STEP)


def message_label() -> QLabel:
    """A message line under a field (hidden until there is something to say)."""
    label = QLabel()
    label.setObjectName("Error")
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    policy = label.sizePolicy()  # as wide as its column: a long message wraps, the dialog
    policy.setHorizontalPolicy(QSizePolicy.Policy.Ignored)  # does not widen for it
    label.setSizePolicy(policy)
    label.hide()
    return label


class Details(QWidget):
    """The technical lines behind a message (torch's own words, its traceback): a
    "Details" button that shows or hides them, collapsed at first."""

    LINES = 10  # the text's height when shown; longer text scrolls

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.toggle = QToolButton()
        self.toggle.setText("Details")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setAccessibleName("Details of the message")
        self.toggle.toggled.connect(self._toggled)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setAccessibleName("Technical details")
        self.text.setFixedHeight(self.text.fontMetrics().lineSpacing() * self.LINES + 12)
        policy = self.text.sizePolicy()  # as wide as its column: long lines scroll sideways
        policy.setHorizontalPolicy(QSizePolicy.Policy.Ignored)
        self.text.setSizePolicy(policy)
        self.text.hide()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        column.addWidget(self.text)

    def set_text(self, text: str) -> None:
        """Show ``text`` behind the button, collapsed."""
        self.text.setPlainText(text)
        self.toggle.setChecked(False)

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def _toggled(self, on: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.text.setVisible(on)


class Steps(QTabWidget):
    """The steps as tabs; each page scrolls vertically when the dialog is too short."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setDocumentMode(True)
        self.scrolls: dict[str, QScrollArea] = {}
        self.pages: dict[str, QWidget] = {}
        self.columns: dict[str, list[QVBoxLayout]] = {}
        self._load: dict[QVBoxLayout, int] = {}  # the rows in each column so far
        self.sides: dict[str, QWidget] = {}

    def add_step(self, step: str, columns: int, side: QWidget | None = None) -> None:
        """A page of ``columns`` columns (and ``side`` at the right), in a scroll area."""
        page = QWidget()
        line = QHBoxLayout(page)
        line.setContentsMargins(2, 10, 2, 2)
        line.setSpacing(14)
        self.columns[step] = []
        for _ in range(columns):
            column = QVBoxLayout()
            column.setSpacing(10)
            line.addLayout(column, 1)
            self.columns[step].append(column)
            self._load[column] = 0
        if side is not None:
            line.addWidget(side, 0, Qt.AlignmentFlag.AlignTop)
            self.sides[step] = side
        page.setObjectName("Canvas")  # the dialog's background, not the scroll area's
        scroll = QScrollArea()
        scroll.setWidget(page)
        scroll.viewport().setObjectName("Canvas")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scrolls[step], self.pages[step] = scroll, page
        self.addTab(scroll, STEPS[step])

    def finish(self) -> None:
        """Push each column's boxes to the top."""
        for columns in self.columns.values():
            for column in columns:
                column.addStretch(1)

    def _page_width(self, step: str) -> int:
        """The narrowest ``step``'s page can be, with room for its side panel even while
        that is hidden (the dialog does not widen when it shows)."""
        page = self.pages[step]
        width = page.minimumSizeHint().width()
        side = self.sides.get(step)
        if side is not None and side.isHidden():
            width += side.minimumWidth() + _spacing(page)
        return width

    def _chrome(self) -> QSize:
        """What the tabs, frames and a scroll bar add to a page's size."""
        bar = self.scrolls[WHAT].verticalScrollBar().sizeHint().width()
        return QSize(bar + 4, self.tabBar().sizeHint().height() + 6)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's API
        """As wide as the widest page (pages scroll only up and down: nothing is clipped)."""
        hint = super().minimumSizeHint()
        width = max(self._page_width(step) for step in self.pages) + self._chrome().width()
        return QSize(max(hint.width(), width), hint.height())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's API
        """Room for the tallest page without a scroll bar."""
        chrome = self._chrome()
        height = max(page.sizeHint().height() for page in self.pages.values())
        return QSize(self.minimumSizeHint().width(), height + chrome.height())

    def place(self, step: str, group: str, box: QWidget) -> None:
        """Add a group's box to its column of ``step`` (a group of no column: the column
        with the fewest rows so far)."""
        columns = STEP_GROUPS[step]
        index = next((i for i, groups in enumerate(columns) if group in groups), None)
        column = (self.columns[step][index] if index is not None
                  else min(self.columns[step], key=self._load.__getitem__))
        column.addWidget(box)
        form = box.layout()
        self._load[column] += 1 + (form.rowCount() if isinstance(form, QFormLayout) else 1)

    def step_of_widget(self, widget: QWidget) -> str | None:
        """The step whose page holds ``widget`` (None: outside the steps)."""
        return next((step for step, page in self.pages.items()
                     if page is widget or page.isAncestorOf(widget)), None)

    def show_every_page(self) -> None:
        """Show each page once, so that every page's fields count in the size hints (a
        page never shown counts as empty without a style sheet)."""
        current = self.currentIndex()
        for index in range(self.count()):
            self.setCurrentIndex(index)
        self.setCurrentIndex(current)

    def show_step(self, step: str) -> None:
        self.setCurrentWidget(self.scrolls[step])

    def current_step(self) -> str:
        return list(STEPS)[self.currentIndex()]

    def show_widget(self, widget: QWidget) -> None:
        """Switch to the step that holds ``widget`` and scroll it into view."""
        step = self.step_of_widget(widget)
        if step is None:
            return
        self.show_step(step)
        self.scrolls[step].ensureWidgetVisible(widget, 10, 10)
        # and once more when the page has grown by a message row just shown: the scroll
        # area learns the page's new height from a posted event (in the app's style sheet,
        # a two-line message stayed below the fold)
        QTimer.singleShot(0, self, lambda: self._scroll_to(step, widget))

    def _scroll_to(self, step: str, widget: QWidget) -> None:
        try:
            if widget.isVisible():
                self.scrolls[step].ensureWidgetVisible(widget, 10, 10)
        except RuntimeError:  # the widget is gone (its dialog closed)
            pass


def _spacing(page: QWidget) -> int:
    layout = page.layout()
    return layout.spacing() if layout is not None else 0


def _squash(text: str) -> str:
    return re.sub(r"[\s_\-]", "", text.lower())


def named_field(text: str, fields: Iterable[tuple[str, str]]) -> str | None:
    """The field an error's text names first: ``fields`` are (name, label); a name or label
    found earliest in ``text`` (spaces, hyphens and underscores ignored) wins."""
    squashed = _squash(text)
    best: tuple[int, int, str] | None = None
    for name, label in fields:
        for word in {_squash(name), _squash(label)}:
            at = squashed.find(word) if word else -1
            if at >= 0 and (best is None or (at, -len(word)) < best[:2]):
                best = (at, -len(word), name)
    return best[2] if best else None

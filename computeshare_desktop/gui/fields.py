"""Dialog fields made from the schema: one editor per option that has a dialog label.

The widget follows the option's type: a combo box for choices (their data are the values,
their text the schema's labels; editable where the choices are only suggestions; as wide as
its longest label, so that the closed box shows the chosen one whole), a spin
box with the option's bounds, step and decimals, a check box (or, for a ``section``
option, a checkable group box), a line edit.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (QAbstractSpinBox, QCheckBox, QComboBox, QDoubleSpinBox,
                               QGroupBox, QLineEdit, QSpinBox, QWidget)

from .. import schema
from ..schema import Option

FLOAT_DIGITS = 6  # a float read back from a spin box is rounded to this (no 0.05000000001)


class Editor:
    """One option's widget, and its value in the option's type."""

    def __init__(self, option: Option, kind: Any, value: Any) -> None:
        self.option, self.kind = option, kind
        self.widget = _make(option, kind)
        self.widget.setAccessibleName(option.label)
        if option.tip:
            self.widget.setToolTip(option.tip)
        self.set_value(value)

    def value(self) -> Any:
        """What the widget shows, as the option's value."""
        w = self.widget
        if isinstance(w, QComboBox):
            if w.isEditable():  # a choice by its text, or whatever was typed
                index = w.findText(w.currentText().strip())
                return w.itemData(index) if index >= 0 else w.currentText().strip()
            return w.currentData()
        if isinstance(w, QDoubleSpinBox):
            return round(w.value(), FLOAT_DIGITS)
        if isinstance(w, QSpinBox):
            return w.value()
        if isinstance(w, (QCheckBox, QGroupBox)):
            return w.isChecked()
        assert isinstance(w, QLineEdit)
        return w.text().strip()

    def set_value(self, value: Any) -> None:
        """Show ``value`` (a choice that is not offered leaves the first one)."""
        w = self.widget
        if isinstance(w, QComboBox):
            index = w.findData(value)
            if index < 0 and w.isEditable():
                w.setEditText(str(value))
            else:
                w.setCurrentIndex(max(0, index))
        elif isinstance(w, (QSpinBox, QDoubleSpinBox)):
            w.setValue(value)
        elif isinstance(w, (QCheckBox, QGroupBox)):
            w.setChecked(bool(value))
        else:
            assert isinstance(w, QLineEdit)
            w.setText(str(value))


def editors(cls: type, initial: Any) -> dict[str, Editor]:
    """An editor for each option of ``cls`` that has a dialog label, showing ``initial``'s
    value, in declaration order."""
    kinds = schema.types(cls)
    return {name: Editor(found, kinds[name], getattr(initial, name))
            for name, found in schema.options(cls).items() if found.label}


def _make(option: Option, kind: Any) -> QWidget:
    if option.allowed():
        combo = QComboBox()
        # as wide as its longest item: a closed combo shows its choice whole (the Host
        # dialog still fits 1280x720: tests/ui/test_ui_combo_fit.py)
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        if option.editable:  # the choices are suggestions: a value may be typed
            combo.setEditable(True)
            line = combo.lineEdit()
            assert line is not None
            line.setAccessibleName(option.label)
            line.setPlaceholderText(option.placeholder)
        for value in option.allowed():
            combo.addItem(option.labels.get(value, value), value)
        return combo
    if kind is bool:
        if option.section:
            box = QGroupBox(option.label)
            box.setCheckable(True)
            return box
        return QCheckBox(option.label)
    if kind is int:
        spin = QSpinBox()
        spin.setGroupSeparatorShown(not option.plain)
        return _number(spin, option)
    if kind is float:
        double = QDoubleSpinBox()
        double.setDecimals(option.decimals)
        return _number(double, option)
    line = QLineEdit()
    line.setPlaceholderText(option.placeholder)
    return line


def _number(spin: QSpinBox | QDoubleSpinBox, option: Option) -> QWidget:
    low, high = option.low(), option.high()
    assert low is not None and high is not None, f"{option.label}: a dialog field needs bounds"
    if isinstance(spin, QSpinBox):
        spin.setRange(int(low), int(high))
        spin.setSingleStep(int(option.step))
    else:
        spin.setRange(low, high)
        spin.setSingleStep(option.step)
    spin.setSpecialValueText(option.special)
    _pad(spin)
    return spin


def _pad(spin: QAbstractSpinBox) -> None:
    # Qt ignores a style sheet's padding-left inside spin boxes; the line edit's margin works.
    line = spin.findChild(QLineEdit)
    if line is not None:
        line.setTextMargins(8, 0, 0, 0)

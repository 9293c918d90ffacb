"""A long worker name in the workers table: it keeps its room (the rest, or its fair share),
elides before any other column hides, and tells its whole text in a tool tip."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.progress_rows import WorkerRow  # noqa: E402
from computeshare_desktop.gui.workers_table import (COLUMNS, FLOOR, NAME_ELIDE,  # noqa: E402
                                                    NAME_FLOOR, NAME_MOST, WorkersTable,
                                                    fit_columns)

# what a 1,120 px hub window's table needs: a 379 px name, then the rest
NEED = [379, 100, 85, 57, 95, 74, 91, 69]
FLOORS = [74, 70, 63, 57, 95, 74, 91, 60]
LONG = "a-very-long-worker-name-for-elision-test-machine · CPU"


def test_a_long_name_elides_before_any_column_hides():
    others = sum(NEED[1:])
    wide = fit_columns(NEED, FLOORS, others + NAME_MOST)
    assert all(wide) and wide[0] == NAME_MOST and sum(wide) == others + NAME_MOST
    enough = fit_columns(NEED, FLOORS, others + NAME_ELIDE)  # the name elides, all show
    assert all(enough) and enough[0] == NAME_ELIDE and enough[1:] == NEED[1:]
    narrow = fit_columns(NEED, FLOORS, 682)  # a 1,120 px window's: only Busy gives way
    assert [c for c, w in enumerate(narrow) if not w] == [3] and sum(narrow) == 682
    assert narrow[0] >= NAME_ELIDE
    short = [150, *NEED[1:]]  # a short name still never elides before columns hide
    assert fit_columns(short, FLOORS, others + 140)[0] >= 150


def test_the_tables_long_name_elides_with_its_whole_text_in_the_tip(qtbot, styled_app):
    table = WorkersTable(kickable=True)
    qtbot.addWidget(table)
    table.resize(900, 160)
    table.show()
    table.show_rows([WorkerRow(1, LONG, "CPU, 2 cores", pushed=21, state="training",
                               share=32, busy=0.98, last_seen=0.0)], 2.0)
    assert not any(table.isColumnHidden(c) for c in range(table.columnCount()))
    width = table.horizontalHeader().sectionSize(0)
    assert width < table.sizeHintForColumn(0)  # elided, not given the whole width
    assert table.item(0, 0).toolTip().splitlines()[0] == LONG


def test_fit_columns_gives_the_name_the_rest_or_its_fair_share():
    need, floor = [150, 80, 70, 60, 90, 130, 90, 70], [70, 70, 60, 55, 95, 70, 90, 60]
    assert fit_columns(need, floor, 900) == [310, 80, 70, 60, 90, 130, 90, 70]
    narrower = fit_columns(need, floor, 600)  # Busy, Last seen, then the rate hide
    assert narrower[3] == narrower[6] == 0 and narrower[0] >= 150 and sum(narrower) == 600
    tight = fit_columns(need, floor, 420)
    assert tight[0] >= min(150, NAME_FLOOR) and sum(tight) <= 420
    assert all(w == 0 or w >= min(need[i], floor[i]) for i, w in enumerate(tight) if i)
    tiny = fit_columns(need, floor, 200)
    assert tiny[0] >= FLOOR


def test_long_names_keep_their_room_and_tell_all_in_a_tool_tip(qtbot, styled_app):
    table = WorkersTable(kickable=True)
    qtbot.addWidget(table)
    rows = [WorkerRow(1, "vm · CPU (host)", "CPU", pushed=204, rejected=14, state="training",
                      share=32, busy=0.5, last_seen=0.0),
            WorkerRow(2, "a-laptop-with-a-very-long-host-name.local", "Apple MPS", pushed=190,
                      state="training", share=32, last_seen=0.0)]
    for width in (560, 700, 1000):
        table.resize(width, 200)
        table.show()
        table.show_rows(rows, 1.0)
        header = table.horizontalHeader()
        shown = [c for c in range(len(COLUMNS)) if not table.isColumnHidden(c)]
        assert sum(header.sectionSize(c) for c in shown) <= table.viewport().width()
        assert {0, 5, 7} <= set(shown)  # name, pushed and state always show
        metrics = table.fontMetrics()
        assert header.sectionSize(0) >= metrics.horizontalAdvance("vm · CPU (host)") + 12
        assert header.sectionSize(5) >= metrics.horizontalAdvance("204 · 14 refused") + 12
    long_name = table.item(1, 0)
    assert long_name.toolTip().splitlines()[0] == rows[1].name
    assert "Pushed: 190" in long_name.toolTip() and "Busy: —" in long_name.toolTip()
    assert table.item(0, 5).toolTip() == "204 · 14 refused"

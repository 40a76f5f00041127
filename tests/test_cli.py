"""The ``agentfsm`` command line, in process and as a real subprocess."""

from __future__ import annotations

import re

import pytest

from agentfsm.cli import main
from agentfsm.states import LOOP_TABLE, RUN_TABLE

EVENT_LINE = re.compile(r"^\s*(\d+)\s+(run|loop)\s+(\w+)\s+(\w+) [→↺] (\w+)", re.MULTILINE)


@pytest.mark.parametrize(("machine", "table"), [("run", RUN_TABLE), ("loop", LOOP_TABLE)])
def test_table_command_prints_one_row_per_transition(
    machine: str, table: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["table", machine]) == 0

    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]
    assert len(rows) == len(table.rows)  # type: ignore[attr-defined]


def test_unknown_command_is_one_clear_error_and_exit_code_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["fly"])

    assert exited.value.code == 2
    assert "invalid choice: 'fly'" in capsys.readouterr().err

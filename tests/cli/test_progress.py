"""Progress off a terminal: a line now and then, with the time left in the stage."""

import re

import kapla.cli.common as common


def test_off_a_terminal_progress_lines_carry_the_time_left(monkeypatch, capsys):
    clock = iter([0.0, 0.0, 40.0, 50.0, 90.0])  # start, then one reading per update
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))
    log = common._ProgressLog("alexnet")
    log.update("solving layers", 0, 100)  # at 0 s: too soon for a line
    log.update("solving layers", 40, 100)  # at 40 s: 40 done in 40 s, 60 to go
    log.update("solving layers", 50, 100)  # at 50 s: within 30 s of the last line
    log.update("solving layers", 90, 100)  # at 90 s
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2
    assert lines[0] == "alexnet: solving layers 40/100, 0:40 elapsed, about 1:00 left in this stage"
    assert re.fullmatch(r"alexnet: solving layers 90/100, 1:30 elapsed, about 0:10 left in this stage", lines[1])

"""The suite's own rules, without a testbed: what a run may excuse by the
host's taking of the CPU is capped, and a pass on a retry is counted."""
import os

import cpu_lost
import shplib


def took(fraction, elapsed=6.0):
    w = fraction * elapsed
    return cpu_lost.Lost(elapsed, {"rte-worker-1/1": {
        "run_s": elapsed - w, "wait_s": w, "steal_s": 0.0,
        "preempted": 100, "lost_s": w}})


def test_goodput_excuse_is_capped():
    ref = 47.8e6
    # 5% apart: fine whatever the host took
    assert shplib.goodput_errors(0.951 * ref, ref, "kernel", took(0)) == []
    # 8% below with 3% of the run lost: excused
    assert shplib.goodput_errors(0.92 * ref, ref, "kernel", took(0.03)) == []
    assert shplib.goodput_errors(0.92 * ref, ref, "kernel", took(0.01))
    # 40% below with 71% lost (seen on a loaded machine): the excuse
    # stops at LOST_CAP, and the run fails
    assert shplib.LOST_CAP == 0.05
    f = shplib.goodput_errors(0.6 * ref, ref, "kernel", took(0.71))
    assert f and "the cap 5%" in f[0], f
    assert shplib.goodput_errors(0.899 * ref, ref, "kernel", took(0.71))
    assert shplib.goodput_errors(0.901 * ref, ref, "kernel", took(0.71)) == []
    # above the reference: as far as the reference run lost, capped too
    assert shplib.goodput_errors(1.2 * ref, ref, "one queue", took(0),
                                 ref_lost=took(0.5))


class FakeShaper:
    def __init__(self, contention):
        self.c = contention
        self.lost = took(contention)

    def contention(self):
        return self.c


def test_a_pass_on_retry_is_counted(tmp_path, monkeypatch, capsys):
    out = tmp_path / "retried"
    monkeypatch.setenv("SHP_TEST_RETRIED", str(out))
    tries = iter([(FakeShaper(0.3), 30e6), (FakeShaper(0.0), 47e6)])
    s, res, fails, notes = shplib.attempts(
        lambda: next(tries),
        lambda bps: [] if bps > 40e6 else ["%.0f too low" % bps])
    assert res == 47e6 and fails == [] and len(notes) == 2, notes
    lines = out.read_text().splitlines()
    assert len(lines) == 1 and "passed on try 2" in lines[0], lines
    assert "30000000" in lines[0] and "47000000" in lines[0], lines
    said = capsys.readouterr().out
    assert "attempt 1:" in said and "attempt 2:" in said, said
    # a first-try pass is not counted; an uncontended failure not retried
    shplib.attempts(lambda: (FakeShaper(0.0), 47e6), lambda r: [])
    s, res, fails, notes = shplib.attempts(
        lambda: (FakeShaper(0.0), 1.0), lambda r: ["low"])
    assert fails == ["low"] and len(notes) == 1
    assert len(out.read_text().splitlines()) == 1
    os.unlink(out)

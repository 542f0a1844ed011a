"""--schedule through the prompt on net_null: nothing a schedule can do
hangs the program (a period below the floor is refused, SIGTERM ends a
run at once), and no change is lost when many fall at one instant: the
live program ends where the offline tool ends."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import (NULL_VDEVS, outputs, run_piped, shaper_cmd,
                      wait_started)

pexpect = pytest.importorskip("pexpect")
from pexpect.popen_spawn import PopenSpawn  # noqa: E402

MS = 10**6


def write(tmp_path, text, name="s.txt"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_repeat_below_floor_refused(tmp_path):
    """`repeat 1ns` hung the program (the worker caught up one period a
    pass, the main lcore waited for it in an RCU grace period): it is
    refused before anything runs, with the floor named; the floor itself
    runs."""
    s = write(tmp_path, "0 set netem all delay 1ms\nrepeat 1ns\n")
    r = run_piped(tmp_path, ["show schedule", "quit"],
                  ["--schedule", s], timeout=30)
    assert r.rc == 2, r.out
    assert re.search(r"s\.txt:2: repeat 1ns: the period must be at least "
                     r"1ms", r.out), r.out
    s = write(tmp_path, "0 set netem all delay 1ms\n"
                        "500us set netem all delay 2ms\nrepeat 1ms\n")
    r = run_piped(tmp_path, ["show schedule", "quit"],
                  ["--schedule", s], timeout=30)
    assert r.rc == 0, r.out
    assert "repeat 1ms" in outputs(r.out)["show schedule"][0], r.out


def test_sigterm_ends_a_fast_schedule(tmp_path):
    """A schedule at the floor with 200 changes a cycle on every port,
    run for a second: SIGTERM ends the run within a second (timed: on a
    machine loaded by others a stall can exceed it; rerun on a quiet
    one), and what the schedule did is counted, no more than came due."""
    lines = ["%dus set netem all delay %dus" % (i * 4, i + 1)
             for i in range(200)]
    s = write(tmp_path, "\n".join(lines) + "\nrepeat 1ms\n")
    cmd = shaper_cmd(NULL_VDEVS, ["--schedule", s])
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    try:
        head = wait_started(p)
        time.sleep(1.0)
        t = time.monotonic()
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=30)
        took = time.monotonic() - t
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = head + out.decode(errors="replace")
    assert p.returncode == 0, out
    assert took < 1.0, (took, out)
    m = re.search(r"^schedule .*: (\d+) changes? applied, (\d+) missed$",
                  out, re.M)
    assert m, out
    applied, missed = int(m.group(1)), int(m.group(2))
    # two ports, 200 lines a cycle of 1 ms: at least a cycle each came
    # due, and never more counted than came due in the whole run (the
    # cycles skipped by arithmetic included)
    ms = (time.monotonic() - t0) * 1000
    assert applied > 0 and 2 * 200 <= applied + missed <= 2 * 200 * ms, \
        (applied, missed, ms)


def live_final_delay(tmp_path, text, wait=1.6, pipeline=False):
    """Run the schedule live; after `wait` s, what show netem, show
    config and show schedule say, and the stats file's sojourn max.
    pipeline: RX and TX lcores apart (three lcores on the CPUs)."""
    s = write(tmp_path, text)
    stats = tmp_path / "stats.json"
    cmd = shaper_cmd(NULL_VDEVS, ["-i", "--schedule", s,
                                  "--stats-file", str(stats)])
    if pipeline:
        cmd[1:3] = ["--lcores", "(0-2)@(0-1)"]
    c = PopenSpawn(cmd, encoding="utf-8", timeout=60)
    c.expect_exact("workers")
    # the schedule's clock, not the wall's: a loaded machine may start
    # forwarding late
    unit = {"s": 10**9, "ms": MS, "us": 1000, "ns": 1}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        c.sendline("show schedule")
        c.expect(r"; (\d+)(s|ms|us|ns) since start")
        if int(c.match.group(1)) * unit[c.match.group(2)] >= wait * 10**9:
            break
        time.sleep(0.1)
    for what in ("show netem 0", "show config", "show schedule"):
        c.sendline(what)
    c.sendline("quit")
    c.expect(pexpect.EOF)
    assert c.wait() == 0
    o = outputs(c.before)
    import json
    st = json.load(open(stats))["ports"]
    return o, st


@pytest.mark.parametrize("n,pipeline", [(300, False), (20000, False),
                                        (300, True)])
def test_many_changes_at_one_instant(tmp_path, n, pipeline):
    """n lines `1s set netem all delay 1ms`, then one to 77 ms, all at
    1 s: live, every port ends on 77 ms (the retire ring's 64 slots used
    to fill in one worker round, and the rest, the newest among them,
    were missed), each counts all n + 1 applied and none missed, as
    offline does, and packets get the 77 ms."""
    text = "1s set netem all delay 1ms\n" * n + \
        "1s set netem all delay 77ms\n"
    o, st = live_final_delay(tmp_path, text, pipeline=pipeline)
    netem = o["show netem 0"][0]
    assert "delay 77ms" in netem, netem
    conf = o["show config"][0]
    assert "delay 1ms" not in conf and conf.count("delay 77ms") >= 2, conf
    sch = o["show schedule"][0]
    for p in (0, 1):
        assert "port %d: link up, %d changes applied, 0 missed" % (
            p, n + 1) in sch, sch
    for p in ("0", "1"):
        assert st[p]["sojourn_ns"]["max"] >= 77 * MS, st[p]["sojourn_ns"]


def test_time_beyond_limit_says_limit(tmp_path):
    """A time past a day says the limit (it said "expected a time")."""
    s = write(tmp_path, "86401s set netem all delay 1ms\n")
    r = run_piped(tmp_path, ["quit"], ["--schedule", s], timeout=30)
    assert r.rc == 2, r.out
    assert re.search(r"s\.txt:1: '86401s': expected a time .* time too "
                     r"large \(at most 24 hours\)", r.out), r.out

"""The prompt through a pipe and through a pseudo-terminal."""
import os
import re
import signal
import time

import pytest

from conftest import (NULL_VDEVS, clean, numbers, outputs, run_piped,
                      shaper_cmd)

EVERY = [
    "help",
    "help show",
    "help set",
    "help control",
    "show config",
    "set netem all delay 10ms 1ms loss 1%",
    "set netem 1 delay 5ms duplicate 2% reorder 10% gap 5",
    "set tbf all rate 500mbit burst 64kb limit 256kb",
    "set tbf 0 rate 100mbit burst 32kb latency 20ms",
    "set priomap 0 1 2 0 1 2 0 1 2 0 1 2 0 1 2 0",
    "set classify dscp",
    "show config",
    "show port stats all",
    "show port stats 1",
    "show bands all",
    "show bands 0",
    "show netem all",
    "show netem 1",
    "show tbf all",
    "show tbf 0",
    "show drops",
    "show lcores",
    "stop",
    "show config",
    "start",
    "clear stats",
    "show drops",
    "set netem all off",
    "set tbf 0 off",
    "set tbf all off",
    "set classify tos",
    "show netem 0",
    "show tbf all",
    "quit",
]


def test_every_command_through_a_pipe(tmp_path):
    r = run_piped(tmp_path, EVERY + ["show config"])
    assert r.rc == 0, r.out
    assert r.errors() == []
    o = outputs(r.out)
    assert "show config" not in o or len(o["show config"]) == 3, \
        "commands after quit must not run"
    assert "set netem all|P ARGS" in o["help"][0]
    assert "show lcores" in o["help show"][0]
    assert "set priomap" in o["help set"][0]
    assert "clear stats" in o["help control"][0]
    before, after, paused = o["show config"]
    assert "classify: tos" in before and "netem: off" in before
    assert "classify: dscp" in after
    assert "priomap: 0,1,2,0,1,2,0,1,2,0,1,2,0,1,2,0" in after
    assert "tbf: rate 100Mbit burst 32768b" in after
    assert re.search(r"port 1 .*\n  tbf: rate 500Mbit.*\n  netem: limit \d+ "
                     r"delay 5ms duplicate 2% reorder 10% gap 5", after)
    assert "forwarding: stopped" in paused
    stats = o["show port stats all"][0]
    assert stats.count("####### port") == 2
    n = numbers(o["show port stats 1"][0])
    for k in ("rx_packets", "tx_packets", "rx_pps", "tx_bps", "egress_in"):
        assert k in n
    assert n["rx_packets"] > 0
    assert o["show bands all"][0].count("band") >= 2
    assert "port 0: 3 bands" in o["show bands 0"][0]
    assert "netem limit" in o["show netem 1"][0]
    assert "netem_queued:" in o["show netem 1"][0]
    assert "tbf_oversize" in o["show tbf 0"][0]
    assert "lost" in o["show drops"][0]
    assert re.search(r"lcore 1: rx\+tx", o["show lcores"][0])
    assert "forwarding stopped" in o["stop"][0]
    assert "forwarding started" in o["start"][0]
    assert "counters cleared" in o["clear stats"][0]
    assert "port 0: netem off" in o["show netem 0"][0]
    assert o["show tbf all"][-1].count("tbf off") == 2


ERRORS = [
    ("shw config", "unknown command 'shw'"),
    ("show", "usage: show config|port stats"),
    ("show foo", "usage: show config|port stats"),
    ("show stats", "show KEY all|P (queue, tbf, netem"),
    ("show queue 9", "no port '9'"),
    ("set queue 0 sfq", "expected a queue kind first (pfifo_fast, fq_codel, "
                         "prio, pie, red, dualpi2)"),
    ("set queue 0 fq_codel bogus", "unknown word 'bogus'"),
    ("set queue all fq_codel", "a different kind takes a restart"),
    ("clear queue 9", "no port '9'"),
    ("show port stats", "usage: show port stats all|P"),
    ("show port stats 9", "no port '9'"),
    ("show port stats x", "no port 'x'"),
    ("show port latency x", "show port latency: no port 'x'"),
    ("show bands 5", "show bands: no port '5'"),
    ("show netem -1", "show netem: no port '-1'"),
    ("show tbf abc", "show tbf: no port 'abc'"),
    ("show config extra", "usage: show config"),
    ("set", "usage: set queue|tbf|trace|netem|police|priomap|classify"),
    ("set netem", "usage: set netem all|P ARGS|off"),
    ("set netem all", "usage: set netem all|P ARGS|off"),
    ("set netem 9 delay 1ms", "set netem: no port '9'"),
    # (a bare number is nanoseconds there, as tc's; ours need a unit)
    ("set netem all outage 10 1s", "a time needs a unit"),
    ("set netem 0 loss 200%", "loss"),
    ("set netem all bogus 1", "bogus"),
    ("set tbf all", "usage: set tbf all|P ARGS|off"),
    ("set tbf 0 rate 1mbit", "burst"),
    ("set tbf all rate fast burst 1kb limit 1kb", "fast"),
    ("set priomap 1 2", "needs 16"),
    ("set priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 3", "out of range"),
    ("set priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", "more than 16"),
    ("set classify foo", "classify 'foo'"),
    ("set classify", "usage: set classify tos|dscp|pcp|none"),
    ("help foo", "no section 'foo'"),
    ("clear", "usage: clear stats"),
    ("clear counters", "usage: clear stats"),
    ("start now", "usage: start"),
    ("stop 1", "usage: stop"),
    ("quit now", "usage: quit"),
    ("load", "usage: load FILE"),
    ("load /nonexistent/file", "No such file"),
]


def test_every_error_path(tmp_path):
    cmds = ["set netem 1 delay 7ms", "set tbf 0 rate 50mbit burst 20kb "
            "limit 100kb", "show config"]
    cmds += [c for c, _ in ERRORS] + ["show config", "quit"]
    r = run_piped(tmp_path, cmds)
    assert r.rc == 0, r.out
    o = outputs(r.out)
    for cmd, want in ERRORS:
        got = o[cmd][0]
        lines = got.strip().splitlines()
        assert len(lines) == 1, (cmd, got)
        assert lines[0].startswith("error: "), (cmd, got)
        assert want in lines[0], (cmd, got)
    # nothing changed
    assert o["show config"][0] == o["show config"][1]
    assert len(r.errors()) == len(ERRORS)


def test_eof_quits_and_stats_file(tmp_path):
    r = run_piped(tmp_path, ["set netem all delay 1ms"])
    assert r.rc == 0
    for p in ("0", "1"):
        a, b = __import__("conftest").conservation(r.stats["ports"][p])
        assert a == b


def test_fq_codel_change_without_flows_keeps_the_running_table(tmp_path):
    """Issue 30 item 5: a port started with a non-default `flows` takes
    every change that leaves flows out: the profile is the text given,
    as for any `set`, with tc's defaults for the rest but flows, which
    keeps the running table's size (so does `clear`). One naming another
    size is refused (nothing changed), one naming the same is taken;
    with --queue-port each port keeps its own size under `set queue
    all`."""
    cmds = ["set queue 1 fq_codel limit 1",
            "set queue 1 fq_codel flows 1",
            "show queue 1",
            "clear queue 1",
            "set queue 1 fq_codel flows 65536 limit 7",
            "set queue all fq_codel target 2ms",
            "clear queue all",
            "quit"]
    r = run_piped(tmp_path, cmds, app_args=[
        "--queue", "fq_codel flows 65536 quantum 300",
        "--queue-port", "0", "fq_codel"])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    defaults = ("quantum 1514 target 5ms interval 100ms memory_limit 32Mb "
                "ecn")
    got = o[cmds[0]][0]
    assert not got.startswith("error"), got
    assert got.startswith("port 1: queue fq_codel limit 1 flows 65536 "
                          + defaults + " (was fq_codel limit 10240 flows "
                          "65536 quantum 300 "), got
    got = o[cmds[1]][0].strip()
    assert got.startswith("error: ") and "flows cannot change" in got and \
        "65536 now" in got and "nothing changed" in got, got
    assert "limit 1 flows 65536 quantum 1514 " in o["show queue 1"][0]
    got = o["clear queue 1"][0]
    assert got.startswith("port 1: queue fq_codel limit 10240 flows 65536 "
                          + defaults), got
    got = o[cmds[4]][0]
    assert got.startswith("port 1: queue fq_codel limit 7 flows 65536 "), got
    got = o[cmds[5]][0]
    assert "port 0: queue fq_codel limit 10240 flows 1024 quantum 1514 " \
        "target 2ms" in got, got
    assert "port 1: queue fq_codel limit 10240 flows 65536 quantum 1514 " \
        "target 2ms" in got, got
    got = o["clear queue all"][0]
    assert "port 0: queue fq_codel limit 10240 flows 1024 " + defaults \
        in got, got
    assert "port 1: queue fq_codel limit 10240 flows 65536 " + defaults \
        in got, got
    assert r.errors() == [o[cmds[1]][0].strip()], r.errors()


# ---- pseudo-terminal ------------------------------------------------------

pexpect = pytest.importorskip("pexpect")


def test_fq_codel_schedule_without_flows_applies(tmp_path):
    """A schedule's `set queue`/`clear queue` on a port started with a
    non-default `flows` is applied and counted, keeping the running
    size; a schedule line naming another size is refused at start with
    its line (the data path would not apply it)."""
    sch = tmp_path / "s.txt"
    sch.write_text("0 clear queue 1\n100ms set queue 1 fq_codel limit 7\n")
    cmd = shaper_cmd(NULL_VDEVS, ["--queue",
                                  "fq_codel flows 65536 target 2ms",
                                  "--schedule", str(sch), "-i"])
    c = pexpect.spawn(cmd[0], cmd[1:], encoding="utf-8", timeout=20)
    try:
        c.expect_exact("shaper> ")
        end = time.monotonic() + 15
        applied = None
        while applied != (2, 0) and time.monotonic() < end:
            c.sendline("show schedule")
            c.expect(r"port 1: link up, (\d+) changes? applied, (\d+) "
                     r"missed")
            applied = (int(c.match.group(1)), int(c.match.group(2)))
            c.expect_exact("shaper> ")
            time.sleep(0.2)
        assert applied == (2, 0), applied
        c.sendline("show queue 1")
        c.expect(r"port 1: queue (fq_codel [^\r\n]*)")
        assert c.match.group(1) == (
            "fq_codel limit 7 flows 65536 quantum 1514 target 5ms "
            "interval 100ms memory_limit 32Mb ecn"), c.match.group(1)
        c.expect_exact("shaper> ")
        c.sendline("quit")
        c.expect(r"schedule \S+: 2 changes applied, 0 missed")
        c.expect(pexpect.EOF)
    finally:
        if c.isalive():
            c.kill(signal.SIGKILL)
        c.close()
    sch.write_text("0 set queue 1 fq_codel limit 7\n"
                   "1s set queue all fq_codel flows 1 limit 7\n")
    r = run_piped(tmp_path, ["quit"], app_args=[
        "--queue", "fq_codel flows 65536", "--schedule", str(sch)])
    assert r.rc == 2, r.out
    assert "s.txt:2: fq_codel: flows cannot change" in r.out and \
        "65536 now" in r.out, r.out


@pytest.fixture
def tty():
    cmd = shaper_cmd(NULL_VDEVS, ["-i"])
    c = pexpect.spawn(cmd[0], cmd[1:], encoding="utf-8", timeout=20)
    c.expect_exact("shaper> ")
    yield c
    if c.isalive():
        c.kill(signal.SIGKILL)
    c.close()


def completes(c, typed, want):
    """Type `typed` then TAB; the line must then read `want`."""
    c.send(typed + "\t")
    c.expect_exact(want)
    c.send("\x03")                       # Ctrl-C: clear the line
    c.expect_exact("shaper> ")


COMPLETIONS = [
    ("he", "help "), ("help se", "help set "), ("help c", "help control "),
    ("sh", "show "), ("show con", "show config "), ("show po", "show port "),
    ("show port st", "show port stats "), ("show port stats a",
                                           "show port stats all "),
    ("show ba", "show bands "), ("show bands a", "show bands all "),
    ("show ne", "show netem "), ("show tb", "show tbf "),
    ("show tr", "show trace "),
    ("show d", "show drops "), ("show l", "show lcores "),
    ("se", "set "), ("set n", "set netem "), ("set netem a", "set netem all "),
    ("set netem all of", "set netem all off "),
    ("set netem 1 del", "set netem 1 delay "),
    ("set netem 0 dup", "set netem 0 duplicate "),
    ("set tb", "set tbf "), ("set tbf all r", "set tbf all rate "),
    ("set tr", "set trace "), ("set trace 1 of", "set trace 1 off "),
    ("set tbf 1 of", "set tbf 1 off "),
    ("set p", "set priomap "), ("set c", "set class"),
    ("set classi", "set classify "),
    ("set classify ds", "set classify dscp "),
    ("set classify n", "set classify none "),
    ("cl", "clear "), ("clear s", "clear stats "),
    ("star", "start "), ("sto", "stop "), ("lo", "load "), ("q", "quit "),
]


def test_tab_completion(tty):
    for typed, want in COMPLETIONS:
        completes(tty, typed, want)


HELPS = [
    ("", ["help", "show", "set", "clear", "start", "stop", "load", "quit"]),
    ("help ", ["show", "set", "control", "all", "[RETURN]"]),
    ("show ", ["config", "drops", "lcores", "port", "bands", "netem", "tbf"]),
    ("show port ", ["stats", "latency"]),
    ("show port stats ", ["all", " 0 ", " 1 ", "port id"]),
    ("show netem ", ["all", " 0 ", " 1 "]),
    ("set ", ["netem", "tbf", "priomap", "classify"]),
    ("set netem ", ["all", " 0 ", " 1 ", "egress port"]),
    ("set netem all ", ["off", "delay", "loss", "duplicate", "corrupt",
                        "reorder", "rate", "slot", "limit"]),
    ("set tbf 0 ", ["off", "rate", "burst", "limit", "latency"]),
    ("set priomap ", ["P0 ... P15"]),
    ("set classify ", ["tos", "dscp", "pcp", "none"]),
    ("clear ", ["stats"]),
    ("load ", ["FILE"]),
    ("quit ", ["[RETURN]"]),
]


def test_question_mark_help(tty):
    for typed, wants in HELPS:
        tty.send(typed + "?")
        # the listing ends with the line redrawn
        tty.expect_exact("shaper> " + typed)
        listing = clean(tty.before)
        for w in wants:
            assert w in listing, (typed, w, listing)
        tty.send("\x03")
        tty.expect_exact("shaper> ")


def test_tty_commands_errors_and_quit(tty):
    tty.sendline("set netem all delay 3ms")
    tty.expect_exact("shaper> ")
    tty.sendline("show netem 0")
    tty.expect(r"port 0: netem limit \d+ delay 3ms")
    tty.expect_exact("shaper> ")
    tty.sendline("set classify bogus")
    tty.expect(r"error: set classify: classify 'bogus'")
    tty.expect_exact("shaper> ")
    tty.sendline("frobnicate")
    tty.expect_exact("error: unknown command 'frobnicate'")
    tty.expect_exact("shaper> ")
    tty.sendline("quit")
    tty.expect(pexpect.EOF)
    tty.close()
    assert tty.exitstatus == 0


def test_tty_sigint_exits_cleanly(tty):
    tty.send("show con")                 # half a line
    time.sleep(0.2)
    tty.kill(signal.SIGINT)
    tty.expect(pexpect.EOF, timeout=20)
    tty.close()
    assert tty.exitstatus == 0
    assert "port 0: rx" in clean(tty.before)   # final counters printed


def test_tty_ctrl_d_quits(tty):
    tty.send("\x04")
    tty.expect(pexpect.EOF)
    tty.close()
    assert tty.exitstatus == 0


def test_question_mark_after_a_tc_word_lists_the_next_words(tty):
    tty.send("set netem all delay 10ms ?")
    tty.expect_exact("shaper> set netem all delay 10ms ")
    listing = clean(tty.before)
    for w in ("loss", "duplicate", "reorder", "rate", "slot", "limit"):
        assert re.search(r"^ %s +\S" % w, listing, re.M), listing
    tty.send("lo\t")                     # TAB on the next word too
    tty.expect_exact("lo")
    tty.expect_exact("ss ")
    tty.send("\x03")
    tty.expect_exact("shaper> ")
    tty.send("set tbf 0 rate 1mbit b?")
    tty.expect_exact("shaper> set tbf 0 rate 1mbit b")
    assert "burst" in clean(tty.before)
    tty.send("\x03")
    tty.expect_exact("shaper> ")


def test_tty_line_beyond_the_prompt_limit_is_refused(tty):
    """rdline keeps 512 characters and drops further keys silently: the
    delay alone would have been applied, without the loss."""
    line = "set netem all delay 1ms" + " " * 500 + "loss 100%"
    for i in range(0, len(line), 64):     # typed, not one huge write
        tty.send(line[i:i + 64])
        time.sleep(0.02)
    tty.send("\r")
    tty.expect(r"error: line longer than 512 characters")
    tty.expect_exact("shaper> ")
    tty.sendline("show netem 0")
    tty.expect(r"port 0: netem (\S+)")
    assert tty.match.group(1) == "off"
    tty.sendline("set netem 0 delay 2ms")   # the next line works again
    tty.expect(r"port 0: netem limit \d+ delay 2ms \(was off\)")
    tty.sendline("quit")
    tty.expect(pexpect.EOF)


def test_fq_codel_flows_cannot_change_while_running(tmp_path):
    """The flow table is sized at start: `set queue` with another `flows`
    is refused (Linux refuses it too), the rest of a change goes through."""
    cmds = ["set queue 0 fq_codel flows 2048", "show queue 0",
            "set queue 0 fq_codel flows 512 target 2ms",
            "set queue 0 fq_codel flows 1024 target 2ms", "show queue 0",
            "quit"]
    r = run_piped(tmp_path, cmds, app_args=["--queue-port", "0",
                                            "fq_codel"])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    for c in cmds[0], cmds[2]:
        got = o[c][0].strip()
        assert got.startswith("error: ") and "flows cannot change" in got, \
            (c, got)
        assert "nothing changed" in got, got
    assert "flows 1024" in o["show queue 0"][0]
    assert "target 5ms" in o["show queue 0"][0]
    assert "flows 1024" in o["show queue 0"][1]
    assert "target 2ms" in o["show queue 0"][1]

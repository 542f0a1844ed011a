"""`update KEY all|P WORDS` (issue 26): only the parameters named change,
every other one of the stage's profile is kept; what would leave an
invalid profile is refused with nothing changed; a profile printed after
an update parses back to the same conf (`set` with it is `unchanged`);
`set` keeps replace semantics. Through the control socket and the prompt."""
import os
import re

import pytest

from conftest import outputs, run_piped
from test_ctl import live  # noqa: F401  (the fixture)
from shaper_client import Refused, Shaper

TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "config",
                      "traces")
CONST = os.path.abspath(os.path.join(TRACES, "const-12mbit.trace"))
CELL = os.path.abspath(os.path.join(TRACES, "cellular.trace"))


def profile(c, key, port):
    """The stage's text as `show KEY P` prints it (first line)."""
    first = c.show(key, port).splitlines()[0]
    m = re.match(r"port %s: %s (.*)$" % (port, key), first)
    assert m, first
    return m.group(1)


def round_trip(c, key, port):
    """set with the printed profile is no change."""
    text = profile(c, key, port)
    out = c.set(key, port, text)
    assert "(unchanged)" in out, (text, out)
    assert profile(c, key, port) == text


def refused(c, line, key, port):
    before = profile(c, key, port)
    with pytest.raises(Refused) as e:
        c.cmd(line)
    msg = str(e.value)
    assert msg.startswith("error: update") and "nothing changed" in msg
    assert profile(c, key, port) == before
    return msg


def test_update_netem(live):
    lv = live(["--netem", "delay 10ms 2ms loss 1%"])
    with Shaper(path=lv.path) as c:
        out = c.update("netem", 0, "loss 5%")
        assert re.search(r"\(was limit \d+ delay 10ms 2ms loss random 1%\)",
                         out), out
        p = profile(c, "netem", 0)
        assert "delay 10ms 2ms" in p and "loss random 5%" in p, p
        assert "loss random 1%" in profile(c, "netem", 1)   # port 1 kept
        round_trip(c, "netem", 0)
        c.update("netem", 0, "delay 20ms")
        p = profile(c, "netem", 0)
        assert "delay 20ms" in p and "loss random 5%" in p and "2ms" not in p
        round_trip(c, "netem", 0)
        c.update("netem", "all", "duplicate 1% reorder 10% gap 3 ecn")
        for port in (0, 1):
            p = profile(c, "netem", port)
            assert "duplicate 1%" in p and "reorder 10%" in p and \
                "gap 3" in p and "ecn" in p, p
            round_trip(c, "netem", port)
        # per port: each keeps its own delay
        assert "delay 20ms" in profile(c, "netem", 0)
        assert "delay 10ms 2ms" in profile(c, "netem", 1)
        c.update("netem", 1, "delay 30ms 3ms distribution normal")
        assert "distribution normal" in profile(c, "netem", 1)
        round_trip(c, "netem", 1)
        # invalid results are refused, saying why
        refused(c, "update netem 0 loss 200%", "netem", 0)
        refused(c, "update netem 0 bogus 1", "netem", 0)
        refused(c, "update netem 0 off", "netem", 0)
        refused(c, "update netem 0 delay 1ms delay 2ms", "netem", 0)
        # set replaces: what it does not name goes
        c.set("netem", 0, "delay 5ms")
        assert re.match(r"limit \d+ delay 5ms$", profile(c, "netem", 0))
        # an update of an off stage: the words alone
        c.clear("netem", 0)
        c.update("netem", 0, "loss 2%")
        assert "loss random 2%" in profile(c, "netem", 0)
        assert "delay" not in profile(c, "netem", 0)
    lv.stop()
    assert lv.proc.returncode == 0, lv.out


def test_update_tbf(live):
    lv = live(["--tbf", "rate 10mbit burst 10kb limit 100kb"])
    with Shaper(path=lv.path) as c:
        c.update("tbf", 1, "rate 20mbit")
        p = profile(c, "tbf", 1)
        assert "rate 20Mbit" in p and "burst 10240b" in p and "limit" in p, p
        assert "rate 10Mbit" in profile(c, "tbf", 0)
        round_trip(c, "tbf", 1)
        # latency takes the place of limit (tc: one or the other)
        c.update("tbf", 1, "latency 50ms")
        p = profile(c, "tbf", 1)
        assert p == "rate 20Mbit burst 10240b latency 50ms", p
        round_trip(c, "tbf", 1)
        msg = refused(c, "update tbf 1 rate", "tbf", 1)
        assert "rate" in msg
        c.clear("tbf", 0)
        refused(c, "update tbf 0 rate 1mbit", "tbf", 0)   # no burst
        # every clause given is kept, whatever the order: limit first,
        # then rate (a merge that lost the new limit to the new rate
        # found the profile without one and refused it; fuzz_cli found
        # it reading a current clause's word at a new clause's index)
        c.set("tbf", 1, "rate 10mbit burst 10kb limit 1mb")
        c.update("tbf", 1, "limit 2mb rate 20mbit")
        p = profile(c, "tbf", 1)
        assert p == "rate 20Mbit burst 10240b limit 2097152b", p
        # two new clauses that exclude each other are both kept: the
        # kind's parser says why it refuses them
        msg = refused(c, "update tbf 1 limit 3mb latency 50ms", "tbf", 1)
        assert "not both" in msg, msg
    lv.stop()


def test_update_fq_codel_and_trace(live):
    lv = live(["--queue-port", "1", "fq_codel target 5ms", "--trace-port",
               "0", CONST])
    with Shaper(path=lv.path) as c:
        c.update("queue", 1, "interval 50ms")
        p = profile(c, "queue", 1)
        assert "target 5ms" in p and "interval 50ms" in p, p
        round_trip(c, "queue", 1)
        c.update("queue", 1, "fq_codel noecn quantum 300")
        p = profile(c, "queue", 1)
        assert "noecn" in p and "quantum 300" in p and "target 5ms" in p, p
        assert re.search(r"\becn\b", p.replace("noecn", "")) is None, p
        round_trip(c, "queue", 1)
        # a run-time refusal of the stage (flows cannot change live)
        msg = refused(c, "update queue 1 flows 2048", "queue", 1)
        assert "flows" in msg
        refused(c, "update queue 1 pfifo_fast", "queue", 1)
        # trace takes one word, its file: update is set there
        c.update("trace", 0, CELL)
        assert CELL in profile(c, "trace", 0)
        with pytest.raises(Refused):
            c.cmd("update tbf 0 rate 1mbit")   # port 0 runs trace
    lv.stop()


def test_update_at_the_prompt(tmp_path):
    r = run_piped(tmp_path, ["update netem 1 loss 3%", "show netem 1",
                             "update netem 1", "update bogus 1 x",
                             "help set"],
                  app_args=["--netem", "delay 10ms"])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    assert "delay 10ms loss random 3%" in o["show netem 1"][0]
    assert o["update netem 1"][0].startswith("error: 'update netem 1': "
                                             "missing, unknown or extra words")
    assert o["update bogus 1 x"][0].startswith("error:")
    assert "update netem all|P WORDS" in o["help set"][0]


def test_update_class(live):
    lv = live(["--class", "voip", "ip_proto 17", "--class-netem", "voip",
               "delay 10ms loss 1%", "--class-prio", "voip", "1"])
    with Shaper(path=lv.path) as c:
        before = c.cmd("show class voip")
        assert "delay 10ms" in before and "loss" in before, before
        c.cmd("update class voip netem 'loss 5%'")
        out = c.cmd("show class voip")
        assert "delay 10ms" in out and "loss random 5%" in out, out
        assert "prio 1" in out, out                 # kept
        c.cmd("update class voip netem delay 20ms prio 2")
        out = c.cmd("show class voip")
        assert "delay 20ms" in out and "loss random 5%" in out, out
        assert "prio 2" in out, out
        # refused: nothing changed
        for line in ("update class voip netem 'loss 500%'",
                     "update class nobody netem 'loss 1%'",
                     "update class voip bogus 1",
                     "update class voip queue 'fq_codel target 1ms'"):
            with pytest.raises(Refused) as e:
                c.cmd(line)
            assert "nothing changed" in str(e.value), (line, e.value)
            # the profile lines (the counters move)
            assert c.cmd("show class voip").split("\n")[:4] == \
                out.split("\n")[:4]
        # set class replaces the stage's text
        c.cmd("set class voip netem 'delay 5ms'")
        out = c.cmd("show class voip")
        assert "delay 5ms" in out and "loss" not in out, out
    lv.stop()
    assert lv.proc.returncode == 0, lv.out


def test_update_was_at_the_prompt(tmp_path):
    """The "(was ...)" of `update` at the prompt is the stage's profile
    before it, exactly as `show` printed it, port by port; after a
    second update, the first one's result."""
    r = run_piped(tmp_path, [
        "show netem 0", "show netem 1", "update netem 0 loss 5%",
        "show netem 0", "update netem all delay 20ms", "show netem 0",
        "show netem 1",
        "show tbf 1", "update tbf 1 rate 20mbit", "show tbf 1",
        "update tbf 1 latency 50ms", "show tbf 1"],
        app_args=["--netem", "delay 10ms 2ms loss 1%",
                  "--tbf", "rate 10mbit burst 10kb limit 100kb"])
    assert r.rc == 0, r.out
    o = outputs(r.out)

    def shown(cmd, i, port, key):
        first = o[cmd][i].splitlines()[0]
        m = re.match(r"port %d: %s (.*)$" % (port, key), first)
        assert m, first
        return m.group(1)

    def changed(cmd, port, key):
        for line in o[cmd][0].splitlines():
            m = re.match(r"port %d: %s (.*) \(was (.*)\)$" % (port, key),
                         line)
            if m:
                return m.group(1), m.group(2)
        raise AssertionError((cmd, o[cmd]))

    n0, n1 = shown("show netem 0", 0, 0, "netem"), \
        shown("show netem 1", 0, 1, "netem")
    assert "delay 10ms 2ms loss random 1%" in n0, n0
    now, was = changed("update netem 0 loss 5%", 0, "netem")
    assert was == n0 and now == shown("show netem 0", 1, 0, "netem"), \
        (was, now, n0)
    assert "loss random 5%" in now and "loss random 1%" in was
    # all: each port's own before
    now0, was0 = changed("update netem all delay 20ms", 0, "netem")
    now1, was1 = changed("update netem all delay 20ms", 1, "netem")
    assert was0 == now and was1 == n1, (was0, was1)
    assert now0 == shown("show netem 0", 2, 0, "netem")
    assert now1 == shown("show netem 1", 1, 1, "netem")
    assert "loss random 5%" in now0 and "loss random 1%" in now1
    t1 = shown("show tbf 1", 0, 1, "tbf")
    now, was = changed("update tbf 1 rate 20mbit", 1, "tbf")
    assert was == t1 and "rate 10Mbit" in was, (was, t1)
    assert now == shown("show tbf 1", 1, 1, "tbf") and "rate 20Mbit" in now
    now2, was2 = changed("update tbf 1 latency 50ms", 1, "tbf")
    assert was2 == now and now2 == shown("show tbf 1", 2, 1, "tbf"), \
        (was2, now)
    assert now2 == "rate 20Mbit burst 10240b latency 50ms", now2

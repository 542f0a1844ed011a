"""Changes that expire, live (issue 28 item 4): `set|update KEY P ARGS for
TIME` applies the change and goes back to the profile it replaced after
TIME, made by the control lcore's tick; `show KEY` says `(reverts in ...)`;
a later change without `for` to the stage cancels it; `for`s on a stage
at once stack over the profile from before the first (issue 58 item 7).
On net_null ports forwarding flat out, a shaper at its prompt (-i, so
the tick runs between keys), commands through its control socket (the
prompt's own parser, cli_exec)."""
import re
import socket
import subprocess
import time

import pytest

from conftest import NULL_VDEVS, clean, prefix, shaper_cmd, wait_started
from test_ctl import CTL  # noqa: F401  (puts scripts/ on the path)
from shaper_client import Refused, Shaper, sock_path


@pytest.fixture
def prompt():
    procs = []

    def start(app_args):
        pf = prefix()
        proc = subprocess.Popen(
            shaper_cmd(NULL_VDEVS, ["-i"] + list(app_args), file_prefix=pf),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        procs.append(proc)
        wait_started(proc)
        path = sock_path(pf)
        deadline = time.monotonic() + 20
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
            finally:
                s.close()
        return proc, path
    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def first(c, port=0):
    return c.show("netem", port).splitlines()[0]


def counters(c, port=0):
    """(tx_packets, lost) of egress port `port`"""
    tx = int(re.search(r"tx_packets: (\d+)",
                       c.cmd("show port stats %d" % port)).group(1))
    lost = int(re.search(r"lost: (\d+)", c.show("netem", port)).group(1))
    return tx, lost


def test_loss_for_one_second(prompt):
    proc, path = prompt(["--netem", "delay 1ms"])
    with Shaper(path=path) as c:
        out = c.set("netem", 0, "loss 100% for 1s")
        t0 = time.monotonic()
        assert re.search(r"loss random 100% \(was limit \d+ delay 1ms\) "
                         r"\(reverts in (1\.0|0\.9) s\)", out), out
        time.sleep(0.05)   # what netem held before (1 ms) has left
        show = c.show("netem", 0).splitlines()
        # the profile's line stays the profile (scripts parse it); the
        # revert has a line of its own
        assert re.match(r"port 0: netem limit \d+ loss random 100%$",
                        show[0]), show
        assert re.match(r"  \(reverts in 0\.\d s, to delay 1ms\)$",
                        show[1]), show
        a = counters(c)
        time.sleep(0.3)
        b = counters(c)
        assert time.monotonic() - t0 < 0.9, "too slow to see the window"
        assert b[0] == a[0], (a, b)          # nothing sent
        assert b[1] > a[1], (a, b)           # everything lost
        assert "loss" not in first(c, 1)     # port 1 untouched
        while time.monotonic() - t0 < 1.3:
            time.sleep(0.05)
        line = first(c)
        assert re.match(r"port 0: netem limit \d+ delay 1ms$", line), line
        assert "(reverts in" not in c.show("netem", 0)
        a = counters(c)
        time.sleep(0.3)
        b = counters(c)
        assert b[1] == a[1], (a, b)          # nothing lost
        assert b[0] > a[0], (a, b)           # sent again

        # a later change cancels the revert
        c.set("netem", 0, "loss 100% for 1s")
        out = c.set("netem", 0, "delay 2ms")
        assert "reverts" not in out, out
        assert "(reverts in" not in c.show("netem", 0)
        time.sleep(1.3)
        assert re.match(r"port 0: netem limit \d+ delay 2ms$", first(c))

        # update ... for, on every port: each goes back to its own
        out = c.update("netem", "all", "loss 50% for 300ms")
        assert out.count("(reverts in") == 2, out
        assert "delay 2ms loss random 50%" in first(c, 0)
        assert "delay 1ms loss random 50%" in first(c, 1)
        time.sleep(0.8)
        assert re.match(r"port 0: netem limit \d+ delay 2ms$", first(c, 0))
        assert re.match(r"port 1: netem limit \d+ delay 1ms$", first(c, 1))

        # bad TIMEs: one line, nothing changed
        before = first(c)
        for line, what in [
                ("set netem 0 loss 1% for 500us", "at least 1ms"),
                ("set netem 0 loss 1% for 86401s", "at most 24 hours"),
                ("set netem 0 loss 1% for soon", "for: 'soon'"),
                ("set netem 0 loss 1% for", "needs a TIME"),
                ("set netem 0 for 1s", "the profile comes before it"),
                ("update netem 0 loss 1% for 0", "for: '0'")]:
            with pytest.raises(Refused) as e:
                c.cmd(line)
            msg = str(e.value)
            assert msg.startswith("error: ") and what in msg and \
                "nothing changed" in msg and "\n" not in msg.strip(), msg
            assert first(c) == before
    proc.stdin.write(b"quit\n")
    proc.stdin.flush()
    out = clean(proc.communicate(timeout=60)[0].decode(errors="replace"))
    assert proc.returncode == 0, out
    # the prompt says when a change went back
    assert re.search(r"port 0: netem limit \d+ delay 1ms \(was limit \d+ "
                     r"loss random 100%; its 'for' ended\)", out), out


def test_schedule_for_live(prompt, tmp_path):
    """`0 set netem 0 loss 100% for 1s` in a live --schedule: lost
    during its first second, then the port's own profile again, made on
    the data path as any schedule line (listed as a line of its own)."""
    sch = tmp_path / "s.txt"
    sch.write_text("0 set netem 0 loss 100% for 1s\n")
    proc, path = prompt(["--netem", "delay 1ms", "--schedule", str(sch)])
    unit = {"s": 10**9, "ms": 10**6, "us": 1000, "ns": 1}
    with Shaper(path=path) as c:
        def since():
            m = re.search(r"; ([\d.]+)(s|ms|us|ns) since start",
                          c.cmd("show schedule"))
            return float(m.group(1)) * unit[m.group(2)] / 1e9
        t = since()
        if t < 0.7:
            assert "loss random 100%" in first(c)
            assert "set netem 0 delay 1ms (line 1's for ends)" in \
                c.cmd("show schedule")
        while since() < 1.2:
            time.sleep(0.05)
        assert re.match(r"port 0: netem limit \d+ delay 1ms$", first(c)), \
            first(c)
        a = counters(c)
        time.sleep(0.3)
        b = counters(c)
        assert b[1] == a[1] and b[0] > a[0], (a, b)
        assert a[1] > 0   # its first second lost something
        assert "1 line" in c.cmd("show schedule")
    proc.stdin.write(b"quit\n")
    proc.stdin.flush()
    out = clean(proc.communicate(timeout=60)[0].decode(errors="replace"))
    assert proc.returncode == 0, out
    assert "2 changes applied, 0 missed" in out, out


def profile(c, key, port=0):
    """the profile's line of `show KEY P`, without the port"""
    return c.show(key, port).splitlines()[0].split(": ", 1)[1]


def test_stacked_for_end_on_the_base(prompt):
    """Issue 58 item 7: `set netem 0 loss 100% for 2s` then `update netem
    0 delay 50ms for 3s` ended on loss 100% for ever (the second `for`
    went back to the first's profile); tbf and police the same. Each
    `for` is taken out when it ends and the others are made again over
    the profile from before the first (here for 2 s, then for 5 s):
    once the first ends the loss is gone and the delay stays, once the
    second ends every stage runs its profile of before."""
    proc, path = prompt(["--netem", "delay 1ms",
                         "--tbf", "rate 50mbit burst 20kb latency 40ms",
                         "--police", "rate 80mbit burst 30kb"])
    with Shaper(path=path) as c:
        base = {k: profile(c, k) for k in ("netem", "tbf", "police")}
        t0 = time.monotonic()
        c.set("netem", 0, "loss 100% for 2s")
        c.set("tbf", 0, "rate 1mbit burst 5kb latency 20ms for 2s")
        c.set("police", 0, "rate 2mbit burst 5kb for 2s")
        out = c.update("netem", 0, "delay 50ms for 5s")
        assert re.search(r"delay 50ms loss random 100% .*\(reverts in "
                         r"[45]\.\d s; 2 'for' changes run, the next "
                         r"ends in [12]\.\d s\)", out), out
        c.update("tbf", 0, "rate 3mbit for 5s")
        c.update("police", 0, "rate 4mbit for 5s")
        assert time.monotonic() - t0 < 1.5, "too slow to see the window"
        show = c.show("netem", 0).splitlines()
        assert re.match(r"  \(reverts in [345]\.\d s, to delay 1ms; 2 "
                        r"'for' changes run, the next ends in [012]\.\d "
                        r"s\)$", show[1]), show
        assert profile(c, "tbf") == \
            "tbf rate 3Mbit burst 5120b latency 20ms", profile(c, "tbf")
        # (the first `for`s end by 3.5 s, the second not before 5 s)
        while time.monotonic() - t0 < 3.6:
            time.sleep(0.05)
        # the first `for`s ended: the second's words over the base
        assert re.match(r"netem limit \d+ delay 50ms$",
                        profile(c, "netem")), profile(c, "netem")
        assert profile(c, "tbf") == \
            "tbf rate 3Mbit burst 20480b latency 40ms", profile(c, "tbf")
        assert profile(c, "police") == "police rate 4Mbit burst 30720b", \
            profile(c, "police")
        assert time.monotonic() - t0 < 5, "too slow to see the window"
        while time.monotonic() - t0 < 6.6:
            time.sleep(0.05)
        for k, v in base.items():
            assert profile(c, k) == v, (k, profile(c, k), v)
            assert "(reverts in" not in c.show(k, 0)
    proc.stdin.write(b"quit\n")
    proc.stdin.flush()
    out = clean(proc.communicate(timeout=60)[0].decode(errors="replace"))
    assert proc.returncode == 0, out
    assert re.search(r"port 0: netem limit \d+ delay 50ms \(was limit \d+ "
                     r"delay 50ms loss random 100%; a 'for' ended, 1 "
                     r"more running\)", out), out
    assert re.search(r"port 0: netem limit \d+ delay 1ms \(was limit \d+ "
                     r"delay 50ms; its 'for' ended\)", out), out


def test_change_without_for_holds(prompt):
    """A `set`, `update` or `clear` without `for` while `for`s run on
    the stage is the stage's new profile: no `for` of before changes it
    back. Other stages' `for`s still end."""
    proc, path = prompt(["--netem", "delay 1ms",
                         "--tbf", "rate 50mbit burst 20kb latency 40ms"])
    with Shaper(path=path) as c:
        t0 = time.monotonic()
        c.set("netem", 0, "loss 100% for 2s")
        c.update("netem", 0, "delay 20ms for 3s")
        c.set("tbf", 0, "rate 1mbit burst 5kb latency 20ms for 2s")
        c.set("tbf", 0, "rate 2mbit burst 5kb latency 20ms for 3s")
        c.set("netem", 1, "loss 100% for 2s")
        c.set("tbf", 1, "rate 1mbit burst 5kb latency 20ms for 2s")
        out = c.set("netem", 0, "delay 7ms")
        assert "reverts" not in out, out
        out = c.clear("tbf", 0)
        assert "reverts" not in out, out
        out = c.update("netem", 1, "delay 9ms")
        assert "reverts" not in out, out
        out = c.atomic(["update tbf 1 rate 7mbit"])   # (an --atomic file)
        assert "reverts" not in out, out
        assert time.monotonic() - t0 < 1.9, "too slow to see the window"
        while time.monotonic() - t0 < 3.4:
            time.sleep(0.05)
        assert re.match(r"netem limit \d+ delay 7ms$", profile(c, "netem")), \
            profile(c, "netem")
        assert profile(c, "tbf") == "tbf off", profile(c, "tbf")
        assert re.match(r"netem limit \d+ delay 9ms loss random 100%$",
                        profile(c, "netem", 1)), profile(c, "netem", 1)
        assert profile(c, "tbf", 1) == \
            "tbf rate 7Mbit burst 5120b latency 20ms", profile(c, "tbf", 1)
        for k, p in (("netem", 0), ("tbf", 0), ("netem", 1), ("tbf", 1)):
            assert "(reverts in" not in c.show(k, p)
        # a `for` after it goes back to it
        c.set("netem", 0, "loss 5% for 300ms")
        time.sleep(0.7)
        assert re.match(r"netem limit \d+ delay 7ms$", profile(c, "netem"))
    proc.stdin.write(b"quit\n")
    proc.stdin.flush()
    out = clean(proc.communicate(timeout=60)[0].decode(errors="replace"))
    assert proc.returncode == 0, out
    assert "its 'for' ended" in out and "a 'for' ended" not in out, out


def test_stacked_for_from_a_command_file(prompt, tmp_path):
    """The same through `load FILE` (a command file's lines are the
    prompt's): the stage ends on the profile from before the first."""
    cmds = tmp_path / "cmds.txt"
    cmds.write_text("set netem 0 loss 100% for 1s\n"
                    "update netem 0 delay 50ms for 1500ms\n")
    proc, path = prompt(["--netem", "delay 1ms"])
    with Shaper(path=path) as c:
        before = profile(c, "netem")
        t0 = time.monotonic()
        c.cmd("load %s" % cmds)
        assert re.match(r"netem limit \d+ delay 50ms loss random 100%$",
                        profile(c, "netem")), profile(c, "netem")
        while time.monotonic() - t0 < 2.0:
            time.sleep(0.05)
        assert profile(c, "netem") == before, (profile(c, "netem"), before)
        assert "(reverts in" not in c.show("netem", 0)
    proc.stdin.write(b"quit\n")
    proc.stdin.flush()
    out = clean(proc.communicate(timeout=60)[0].decode(errors="replace"))
    assert proc.returncode == 0, out

"""The trace kind through the program: --trace-port, `set trace`, `show
trace`, a bad file refused by `set` with the file and line named and
nothing changed, a port that runs tbf refused."""
import os

from test_cmdfile import run_file
from conftest import outputs

TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "config",
                      "traces")
CONST = os.path.join(TRACES, "const-12mbit.trace")
CELL = os.path.join(TRACES, "cellular.trace")


def test_set_and_show_trace(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("5\n3\n")
    rc, out, _ = run_file(tmp_path, "", ["-i", "--trace-port", "0", CONST],
                          stdin="\n".join([
                              "show trace 0",
                              "show qdisc 0",
                              "set trace 0 %s" % CELL,
                              "set trace 0 %s" % bad,
                              "show trace 0",
                              "set trace 1 %s" % CONST,
                              "set trace 0 off",
                              "show trace 0",
                              "quit", ""]))
    assert rc == 0, out
    o = outputs(out)
    shown = o["show trace 0"]
    assert CONST in shown[0], out
    # where tbf would be, as tc shows the chain
    q = "".join(o["show qdisc 0"])
    assert "qdisc trace 2: root refcnt 2 %s" % CONST in q, q
    assert "qdisc pfifo_fast 3: parent 2:1" in q, q
    # refused: one line naming the file and line; the trace is unchanged
    assert "%s:2:" % bad in out and "never decrease" in out, out
    assert CELL in shown[1], out
    # port 1 runs tbf: a trace there takes a restart
    assert "runs tbf" in o["set trace 1 %s" % CONST][0], out
    assert "off" in shown[2], out


def test_set_trace_again_says_reloaded(tmp_path):
    """`set trace P FILE` reads FILE each time: after the file changed the
    same name is a new profile, and `set` says it reloaded it (it said
    "(unchanged)"); the same netem text twice is still unchanged."""
    import pexpect
    from pexpect.popen_spawn import PopenSpawn
    from conftest import shaper_cmd, NULL_VDEVS

    t = tmp_path / "t.trace"
    t.write_text("1\n2\n")
    c = PopenSpawn(shaper_cmd(NULL_VDEVS, ["-i", "--trace-port", "0",
                                           str(t)]),
                   encoding="utf-8", timeout=60)
    c.expect_exact("workers")
    t.write_text("1\n1\n1\n5\n")
    c.sendline("set trace 0 %s" % t)
    c.expect(r"port 0: trace [^\n]*\n")
    said = c.match.group(0)
    c.sendline("set netem 1 delay 1ms")
    c.sendline("set netem 1 delay 1ms")
    c.sendline("quit")
    c.expect(pexpect.EOF)
    assert c.wait() == 0
    assert "(reloaded from the file)" in said, said
    assert "unchanged" not in said, said
    o = outputs(c.before)
    assert "(unchanged)" in o["set netem 1 delay 1ms"][1], c.before


def test_binary_trace_refused_escaped(tmp_path):
    """A binary file as a trace: refused with the file and line, none of
    its bytes in the error line (they were echoed raw, then escaped; a
    file's content is never quoted: issue 58)."""
    b = tmp_path / "bin.trace"
    b.write_bytes(b"\x1b[2J\x1b]0;pwned\x07\xff\xfe" + b"A" * 200 + b"\n")
    rc, out, _ = run_file(tmp_path, "", ["-i"], stdin="\n".join([
        "set trace 0 %s" % b, "quit", ""]), timeout=60)
    err = [l for l in out.splitlines() if "bin.trace:1:" in l]
    assert len(err) == 1, out
    e = err[0]
    assert "not a time in ms" in e, e
    assert "pwned" not in e and "x1b" not in e and "AAAA" not in e, e
    assert all(0x20 <= ord(c) < 0x7f for c in e), repr(e)

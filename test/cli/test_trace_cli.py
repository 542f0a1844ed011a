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

"""--cmdline-file and `load`: success, comments, a failing line."""
import subprocess

from conftest import (NULL_VDEVS, clean, outputs, run_piped, shaper_cmd,
                      wait_started)

GOOD = """# a profile
  # indented comment
set netem all delay 2ms

set tbf 1 rate 100mbit burst 32kb limit 128kb
show netem 0
# done
"""

BAD = """set netem all delay 4ms
set netem all delay 4m   # no such unit
set tbf all rate 1mbit burst 10kb limit 10kb
"""


def run_file(tmp_path, content, extra=(), stdin="", timeout=30):
    f = tmp_path / "cmds.txt"
    f.write_text(content)
    cmd = shaper_cmd(NULL_VDEVS, ["--cmdline-file", str(f)] + list(extra))
    p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.returncode, clean(p.stdout), str(f)


def test_file_then_prompt(tmp_path):
    rc, out, path = run_file(tmp_path, GOOD, ["-i"],
                             stdin="show config\nquit\n")
    assert rc == 0, out
    o = outputs(out)
    # every command echoed, comments and blank lines not
    assert list(o)[:3] == ["set netem all delay 2ms",
                           "set tbf 1 rate 100mbit burst 32kb limit 128kb",
                           "show netem 0"]
    assert "#" not in "".join(o)
    assert "port 0: netem limit" in o["show netem 0"][0]
    assert "--cmdline-file %s done" % path in out
    assert "tbf: rate 100Mbit" in o["show config"][0]


def test_file_without_prompt_runs_on_until_signal(tmp_path):
    f = tmp_path / "cmds.txt"
    f.write_text(GOOD)
    cmd = shaper_cmd(NULL_VDEVS, ["--cmdline-file", str(f)])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    head = wait_started(p)
    try:
        out, _ = p.communicate(timeout=3)
        assert False, "must keep forwarding: " + head + out
    except subprocess.TimeoutExpired:
        p.send_signal(2)
        out, _ = p.communicate(timeout=30)
    out = head + out
    assert p.returncode == 0
    assert "shaper> show netem 0" in clean(out)


def test_failing_line_without_prompt(tmp_path):
    rc, out, path = run_file(tmp_path, BAD)
    assert rc == 1, out
    assert "error: set netem all: netem: delay: '4m'" in out
    assert "%s:2: command failed: skipping the rest of %s" % (path, path) \
        in out
    assert "failed: stopping, exit status 1" in out
    assert "set tbf all rate 1mbit" not in out      # not run


def test_failing_line_with_prompt_goes_on(tmp_path):
    rc, out, path = run_file(tmp_path, BAD, ["-i"],
                             stdin="show config\nquit\n")
    assert rc == 0, out
    assert "%s:2: command failed: skipping the rest" % path in out
    o = outputs(out)
    assert "netem: limit" in o["show config"][0] and "delay 4ms" in \
        o["show config"][0]
    assert "tbf: off" in o["show config"][0]


def test_load_at_the_prompt(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text(GOOD)
    bad = tmp_path / "bad.txt"
    bad.write_text(BAD)
    r = run_piped(tmp_path, ["load %s" % good, "load %s" % bad,
                             "show tbf all", "quit"])
    assert r.rc == 0
    assert "shaper> set tbf 1 rate 100mbit" in r.out
    assert "%s:2: command failed" % bad in r.out
    o = outputs(r.out)
    assert "port 1: tbf rate 100Mbit" in o["show tbf all"][0]


def test_quit_in_file(tmp_path):
    rc, out, _ = run_file(tmp_path, "show drops\nquit\nshow lcores\n")
    assert rc == 0
    assert "shaper> show lcores" not in out

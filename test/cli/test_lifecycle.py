"""Start-up and exit: errors a user meets before anything runs (issue 10
item 4), signals during start-up (issue 15 defect 10) and the EAL run
directory (issue 15 defect 11).

Most runs here leave out --log-level: an error found before the EAL starts
must then be the only line printed (no EAL banner at all).
"""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import (BIN, BUILD, NULL_VDEVS, SAMPLE, prefix, run_piped,
                      shaper_cmd)

RUN = "/var/run/dpdk"
REPLAY_BIN = os.path.join(BUILD, "tools", "dpdk-shaper-replay")
EAL_QUIET = ["-l", "0-1", "--no-huge", "-m", "512", "--no-pci"]


def run_raw(eal, app, timeout=30, **kw):
    """dpdk-shaper EAL -- APP with no log-level option; (rc, lines, pre)."""
    pre = prefix()
    cmd = [BIN] + EAL_QUIET + ["--file-prefix", pre] + list(eal)
    for v in NULL_VDEVS:
        cmd += ["--vdev", v]
    if app is not None:
        cmd += ["--"] + list(app)
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout,
                       **kw)
    return p.returncode, p.stdout.splitlines(), pre


def one_line(rc, lines, *words, code=2):
    assert rc == code, lines
    assert len(lines) == 1, lines
    for w in words:
        assert w in lines[0], (w, lines)
    return lines[0]


# ---- before the EAL: one line, nothing started -----------------------

def test_forgotten_double_dash_names_the_option():
    rc, lines, pre = run_raw(["--netem", "delay 10ms"], None)
    one_line(rc, lines, "'--netem'", "after '--'")
    assert not os.path.exists(os.path.join(RUN, pre))


def test_forgotten_double_dash_with_equals_and_short_option():
    rc, lines, _ = run_raw(["--stats-file=/tmp/x.json"], None)
    one_line(rc, lines, "'--stats-file=/tmp/x.json'", "after '--'")
    rc, lines, _ = run_raw(["-i"], None)
    one_line(rc, lines, "'-i'", "after '--'")


@pytest.mark.parametrize("path,words", [
    ("/nonexistent-dir/s.json", ["--stats-file", "/nonexistent-dir/s.json",
                                 "No such file"]),
    ("/tmp", ["--stats-file", "is a directory"]),
])
def test_stats_file_checked_before_the_eal(path, words):
    rc, lines, pre = run_raw([], ["--stats-file", path])
    one_line(rc, lines, *words)
    assert not os.path.exists(os.path.join(RUN, pre))


def test_cmdline_file_missing_checked_before_the_eal(tmp_path):
    missing = str(tmp_path / "none.cmds")
    rc, lines, _ = run_raw([], ["--cmdline-file", missing])
    one_line(rc, lines, "--cmdline-file", missing, "No such file")


def test_cmdline_file_unparsable_checked_before_the_eal(tmp_path):
    f = tmp_path / "bad.cmds"
    f.write_text("# profile\nshow config\nset netem all delay 1ms\n"
                 "frobnicate 3\nquit\n")
    rc, lines, _ = run_raw([], ["--cmdline-file", str(f)])
    # the line is named, not quoted (issue 58: a file's content never is)
    line = one_line(rc, lines, "%s:4" % f, "not a command")
    assert "frobnicate" not in line, line


def test_unwritable_tx_pcap_named(tmp_path):
    out = "/nonexistent-dir/out.pcap"
    rc, lines, _ = run_raw(
        ["--vdev", "net_pcap9,rx_pcap=%s,tx_pcap=%s" % (SAMPLE, out)], [])
    one_line(rc, lines, "tx_pcap", out)


def test_second_instance_same_prefix_says_so(tmp_path):
    pre = prefix()
    first = subprocess.Popen(shaper_cmd(NULL_VDEVS, [], file_prefix=pre),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        # each port's lossless budget line comes first
        for _ in range(4):
            line = first.stdout.readline()
            if "lossless budget" not in line:
                break
        assert "dpdk-shaper: 2 ports" in line
        p = subprocess.run(shaper_cmd(NULL_VDEVS, [], file_prefix=pre),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
        line = one_line(p.returncode, p.stdout.splitlines(), "--file-prefix",
                        pre, "pid %d" % first.pid, code=1)
        assert "Success" not in line
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=30)
    assert first.returncode == 0


# ---- what needs the ports: one line after the EAL's own ---------------

def shaper_lines(lines):
    """The program's lines, after the EAL's start-up banner."""
    return [l for l in lines if not l.startswith(("EAL:", "TELEMETRY:"))]


@pytest.mark.parametrize("app,words", [
    (["--netem-port", "5", "delay 1ms"], ["--netem-port 5", "no port 5",
                                          "0, 1"]),
    (["--tbf-port", "5", "rate 1mbit burst 10kb limit 100kb"],
     ["--tbf-port 5", "no port 5", "0, 1"]),
    (["--pairs", "0:5"], ["--pairs", "no port 5", "0, 1"]),
    (["--rx-lcores", "5"], ["--rx-lcores", "lcore 5"]),
])
def test_needs_ports_one_line(app, words):
    rc, lines, pre = run_raw([], app)
    one_line(rc, shaper_lines(lines), *words)
    assert not os.path.exists(os.path.join(RUN, pre))


def test_config_section_for_missing_port(tmp_path):
    ini = tmp_path / "p.ini"
    ini.write_text("[port 5]\nnetem = delay 10ms\n")
    rc, lines, _ = run_raw([], ["--config", str(ini)])
    one_line(rc, shaper_lines(lines), str(ini), "[port 5]", "no port 5",
             "0, 1")


def test_cli_set_for_missing_port_refused(tmp_path):
    r = run_piped(tmp_path, ["set netem 5 delay 10ms", "show netem all",
                             "quit"])
    assert r.rc == 0, r.out
    errs = r.errors()
    assert len(errs) == 1, r.out
    assert "no port '5'" in errs[0] and "0, 1" in errs[0], errs
    # (what show netem all printed, up to the next prompt)
    shown = r.out.split("show netem all", 1)[1].split("shaper>", 1)[0]
    assert "delay" not in shown, r.out


def test_cmdline_file_applied_before_forwarding(tmp_path):
    """With the file's `loss 100%` not one packet leaves: the file runs
    before any worker polls a port."""
    f = tmp_path / "p.cmds"
    f.write_text("set netem all loss 100%\n")
    stats = tmp_path / "s.json"
    vdev = "net_pcap0,rx_pcap=%s,tx_pcap=%s" % (SAMPLE, tmp_path / "o.pcap")
    p = subprocess.run(shaper_cmd([vdev], ["--replay", "--cmdline-file",
                                           str(f), "--stats-file",
                                           str(stats)]),
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    port = json.loads(stats.read_text())["ports"]["0"]
    assert port["rx_packets"] > 0
    assert port["tx_packets"] == 0, port
    assert port["drops"]["lost"] == port["rx_packets"], port


# ---- distribution tables -------------------------------------------

def replay_profile(tmp_path, netem, env=None):
    return subprocess.run([REPLAY_BIN, SAMPLE, str(tmp_path / "o.pcap"),
                           "--netem", netem], capture_output=True,
                          text=True, timeout=60, env=env)


def test_distribution_found_where_debian_installs_it(tmp_path):
    tables = [d for d in ("/usr/lib/x86_64-linux-gnu/tc",
                          "/usr/lib/aarch64-linux-gnu/tc")
              if os.path.exists(os.path.join(d, "experimental.dist"))]
    if not tables:
        pytest.fail("iproute2's experimental.dist missing (scripts/deps.sh "
                    "--test installs iproute2)")
    env = dict(os.environ)
    env.pop("TC_LIB_DIR", None)
    p = replay_profile(tmp_path, "delay 10ms 5ms distribution experimental",
                       env)
    assert p.returncode == 0, p.stderr


def test_distribution_from_tc_lib_dir(tmp_path):
    (tmp_path / "mine.dist").write_text("# two values\n-100 100\n")
    env = dict(os.environ, TC_LIB_DIR=str(tmp_path))
    p = replay_profile(tmp_path, "delay 10ms 5ms distribution mine", env)
    assert p.returncode == 0, p.stderr


def test_distribution_missing_says_where_it_looked(tmp_path):
    env = dict(os.environ, TC_LIB_DIR=str(tmp_path))
    p = replay_profile(tmp_path, "delay 10ms 5ms distribution nosuch", env)
    assert p.returncode == 2
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1, err
    for w in ("nosuch.dist", str(tmp_path), "/usr/lib/tc"):
        assert w in err, (w, err)


# ---- the run directory and signals ----------------------------------

def test_clean_exit_removes_the_run_directory(tmp_path):
    pre = prefix()
    p = subprocess.run(shaper_cmd(NULL_VDEVS, ["--stats-file",
                                               str(tmp_path / "s.json"), "-i"],
                                  file_prefix=pre),
                       input="quit\n", capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not os.path.exists(os.path.join(RUN, pre))


def wait_for(pred, timeout, proc):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.001)
    return False


# Moments after the EAL created its run directory (it is in rte_eal_init),
# in seconds; the last ones fall after set-up on a quiet machine.
MOMENTS = [0.0, 0.05, 0.2, 0.5, 1.5]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("delay", MOMENTS)
def test_signal_during_start_up_ends_cleanly(tmp_path, sig, delay):
    """A signal during start-up ends the run once set-up is complete: exit
    0, the stats file written, the run directory removed. SIGINT arrives
    while inherited as ignored (a script's background job)."""
    pre = prefix()
    stats = tmp_path / "s.json"
    cmd = [BIN] + EAL_QUIET + ["--file-prefix", pre, "--log-level",
                               "*:error"]
    for v in NULL_VDEVS:
        cmd += ["--vdev", v]
    cmd += ["--", "--stats-file", str(stats)]
    ign = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) \
        if sig == signal.SIGINT else None
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, preexec_fn=ign)
    try:
        assert wait_for(lambda: os.path.isdir(os.path.join(RUN, pre)), 30, p)
        time.sleep(delay)
        p.send_signal(sig)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, (p.returncode, out)
    s = json.loads(stats.read_text())
    assert sorted(s["ports"]) == ["0", "1"]
    assert not os.path.exists(os.path.join(RUN, pre))

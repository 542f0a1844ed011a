"""CLI, command-file, telemetry and live-reconfiguration tests.

dpdk-shaper runs on net_null / net_pcap vdevs without hugepages (except the
capture test). Every process is bounded by a timeout. SHAPER_BUILD picks the
build directory (default build/); ASAN_BIN is the sanitizer build's
program (build-san/: AddressSanitizer and UBSan), which scripts/test.sh
builds first.
"""
import json
import os
import re
import subprocess
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import rundir  # noqa: E402
# a skip under CI=true fails (test/skips.py)
from skips import (pytest_make_collect_report,  # noqa: E402,F401
                   pytest_runtest_makereport)
BUILD = os.environ.get("SHAPER_BUILD", os.path.join(REPO, "build"))
BIN = os.path.join(BUILD, "app", "dpdk-shaper")
ASAN_BIN = os.path.join(REPO, "build-san", "app", "dpdk-shaper")
SAMPLE = os.path.join(REPO, "test", "data", "sample.pcap")
TELEMETRY = "/usr/bin/dpdk-telemetry.py"
PY = "/usr/bin/python3"

NULL_VDEVS = ["net_null0,copy=1", "net_null1,copy=1"]


TAG = "cli%d_" % os.getpid()   # every --file-prefix of this session


def prefix():
    return TAG + uuid.uuid4().hex[:8]


@pytest.fixture(scope="session", autouse=True)
def run_dirs():
    """No /var/run/dpdk/PREFIX left behind by a process a test killed."""
    yield
    rundir.sweep(TAG)


def shaper_cmd(vdevs, app_args, file_prefix=None, huge=False, binary=None,
               lcores="0-1"):
    # a map (0@0,1@0,2@1) is --lcores', a list -l's
    cmd = [binary or BIN, "--lcores" if "@" in lcores else "-l", lcores]
    if not huge:
        cmd += ["--no-huge", "-m", "512"]
    cmd += ["--no-pci", "--file-prefix", file_prefix or prefix(),
            "--log-level", "*:error"]
    for v in vdevs:
        cmd += ["--vdev", v]
    return cmd + ["--"] + list(app_args)


def wait_started(proc):
    """Read PROC's stdout up to the line set-up ends with ("dpdk-shaper: N
    ports, ..."): a test that times something from the start must not
    count the EAL's start-up, which takes seconds on a loaded machine (a
    signal during it ends the run at once). The lines read, to prepend to
    what communicate() returns."""
    # byte by byte from the pipe: a buffered read would take lines that
    # communicate(), which reads the pipe itself, then never sees
    got, line = "", b""
    while True:
        c = os.read(proc.stdout.fileno(), 1)
        if not c:
            raise AssertionError("dpdk-shaper did not start: " + got)
        line += c
        if c == b"\n":
            got += line.decode(errors="replace")
            if re.match(rb"dpdk-shaper: \d+ ports?, ", line):
                return got
            line = b""


def clean(text):
    """Output as a terminal would show it: no CRs, no VT100 sequences."""
    text = re.sub(r"\x1b(\[[0-9;]*[A-Za-z]|[ME78])", "", text)
    return text.replace("\r", "")


class Result:
    def __init__(self, proc, out, stats_path):
        self.rc = proc.returncode
        self.out = clean(out)
        self.stats = None
        if stats_path and os.path.exists(stats_path):
            with open(stats_path) as f:
                self.stats = json.load(f)

    def errors(self):
        return [l for l in self.out.splitlines() if l.startswith("error:")]


def run_piped(tmp_path, commands, app_args=(), vdevs=NULL_VDEVS,
              timeout=60, interactive=True, binary=None, env=None):
    """Run the shaper with the commands on a pipe as its stdin."""
    stats = str(tmp_path / ("stats-%s.json" % uuid.uuid4().hex[:6]))
    args = list(app_args) + ["--stats-file", stats]
    if interactive:
        args.append("-i")
    cmd = shaper_cmd(vdevs, args, binary=binary)
    text = "".join(c + "\n" for c in commands)
    p = subprocess.run(cmd, input=text, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout,
                       env=env)
    return Result(p, p.stdout, stats)


def outputs(out):
    """Map each command echoed after the prompt to the output that follows.
    Repeated commands get a list of outputs."""
    res = {}
    cur = None
    for line in out.splitlines():
        m = re.match(r"^(?:shaper> )+(.*)$", line)
        if m:
            cur = m.group(1).strip()
            res.setdefault(cur, []).append("")
            continue
        if cur is not None:
            res[cur][-1] += line + "\n"
    return res


def numbers(text):
    """key: value pairs of `show port stats` style output."""
    return {k: int(v) for k, v in re.findall(r"(\w+): (\d+)\b", text)}


def telemetry(file_prefix, *commands, timeout=20):
    """Answers of dpdk-telemetry.py, one JSON value per command."""
    p = subprocess.run([PY, TELEMETRY, "-f", file_prefix],
                       input="".join(c + "\n" for c in commands),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    res = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{") and not line.startswith('{"version"'):
            res.append(json.loads(line))
    # the client prints its own banner (version, pid, max_output_len)
    res = [r for r in res if "version" not in r]
    assert len(res) == len(commands), (p.stdout, p.stderr)
    return [list(r.values())[0] for r in res]


def conservation(port):
    """egress_in + duplicated == tx + dropped + queued (stats-file keys)."""
    return (port["egress_in"] + port["duplicated"],
            port["tx_packets"] + sum(port["drops"].values()) +
            port["queued"])


@pytest.fixture
def need_telemetry_client():
    if not os.path.exists(TELEMETRY):
        pytest.skip("dpdk-telemetry.py missing (Debian package dpdk-dev)")

"""Fixtures for the end-to-end tests (issue 5).

Run:  sudo /usr/bin/python3 -m pytest test/e2e
Environment: SHAPER_BIN (default build/app/dpdk-shaper), TESTPMD_BIN,
SHP_TESTBED_NET (default 192.168.213), SHP_E2E_LCORES (default 0-1),
SHP_E2E_RESULTS (write the measured figures there as JSON).
"""
import json
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import shplib  # noqa: E402
# a skip under CI=true fails (test/skips.py)
from skips import (pytest_make_collect_report,  # noqa: E402,F401
                   pytest_runtest_makereport)

_RESULTS = []
_PRIV = {}


def _privileges():
    if "reason" not in _PRIV:
        _PRIV["reason"] = shplib.privilege_problem()
        if _PRIV["reason"]:
            sys.stderr.write("\ne2e: skipping: %s\n" % _PRIV["reason"])
    return _PRIV["reason"]


def pytest_configure(config):
    config.addinivalue_line("markers", "shaper: needs build/app/dpdk-shaper")


@pytest.fixture(scope="session")
def privileged():
    reason = _privileges()
    if reason:
        pytest.skip(reason)
    # testbeds left behind by runs that died (their owner pid is gone)
    shplib.run([str(shplib.TESTBED), "gc"], timeout=120, check=False)
    missing = [t for t in ("iperf3", "ping", "ethtool", "tc", "ss") if shutil.which(t) is None]
    if missing:
        pytest.skip("missing tool(s): %s (install iperf3 iputils-ping ethtool iproute2)"
                    % ", ".join(missing))
    return True


@pytest.fixture(scope="module")
def testbed(privileged, request):
    mod = request.module.__name__.split(".")[-1].replace("test_", "")
    tag = "".join(c for c in mod if c.isalnum())[:3] or "x"
    name = ("e%d%s" % (os.getpid() % 100000, tag))[:10].lower()
    tb = shplib.Testbed(name)
    try:
        tb.up()
    except Exception as e:  # cannot create namespaces/veths: a privilege problem
        tb.down()
        pytest.skip("cannot create the testbed: %s" % e)
    yield tb
    tb.down()


@pytest.fixture
def kernel(testbed):
    """The kernel reference on the same veths: bridge + qdiscs; reset after."""
    testbed.kernel_reset()
    yield testbed
    for d in (testbed.root_a, testbed.root_b):
        shplib.run(["ip", "link", "set", d, "txqueuelen", "1000"], timeout=10, check=False)
    testbed.kernel_reset()


@pytest.fixture
def shaper(testbed, tmp_path):
    """shaper(args..., tag=...) -> started Shaper; stopped at teardown."""
    started = []

    def start(*app_args, tag="shaper", qpairs=1):
        if not shplib.SHAPER.exists():
            pytest.fail("dpdk-shaper binary not found at %s (build it: meson setup build "
                        "&& ninja -C build)" % shplib.SHAPER)
        s = shplib.Shaper(testbed, tmp_path, app_args, tag=tag, qpairs=qpairs)
        started.append(s)
        return s.start()

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def testpmd(testbed, tmp_path):
    started = []

    def start():
        if not os.path.exists(shplib.TESTPMD):
            pytest.skip("dpdk-testpmd not found at %s (Debian package dpdk)" % shplib.TESTPMD)
        t = shplib.Testpmd(testbed, tmp_path)
        started.append(t)
        return t.start()

    yield start
    for t in started:
        t.stop()


@pytest.fixture(scope="session")
def record():
    def rec(test, what, value, cmd=""):
        _RESULTS.append({"test": test, "what": what, "value": value, "cmd": cmd})
    return rec


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _PRIV.get("reason"):
        terminalreporter.write_line("e2e skipped: %s" % _PRIV["reason"])
    if not _RESULTS:
        return
    terminalreporter.section("e2e measurements")
    for r in _RESULTS:
        v = r["value"]
        if isinstance(v, float):
            v = "%.3f" % v
        terminalreporter.write_line("%-12s %-44s %s" % (r["test"], r["what"], v))
    out = os.environ.get("SHP_E2E_RESULTS")
    if out:
        with open(out, "w") as f:
            json.dump(_RESULTS, f, indent=1)
        terminalreporter.write_line("written to %s" % out)

"""Replay tests: dpdk-shaper on net_pcap vdevs, without hugepages."""
import json
import os
import subprocess
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

REPO = os.path.dirname(os.path.dirname(HERE))
import cpu_lost  # noqa: E402
import rundir  # noqa: E402
# a skip under CI=true fails (test/skips.py)
from skips import (pytest_make_collect_report,  # noqa: E402,F401
                   pytest_runtest_makereport)
TAG = "rp%d_" % os.getpid()   # every --file-prefix of this session
BUILD = os.environ.get("SHAPER_BUILD", os.path.join(REPO, "build"))
BIN = os.path.join(BUILD, "app", "dpdk-shaper")
REPLAY_BIN = os.path.join(BUILD, "tools", "dpdk-shaper-replay")

# Run to completion (one worker) and pipeline (RX and TX lcores); on two
# CPUs the pipeline maps three lcores onto them.
MODES = {
    "rtc": ["-l", "0-1"],
    "pipeline": ["--lcores", "(0-2)@(0-1)"],
}


class Run:
    def __init__(self, proc, stats_path, lost=None):
        self.proc = proc
        self.lost = lost          # cpu_lost.Lost of the run, if watched
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.stats = None
        if stats_path and os.path.exists(stats_path):
            with open(stats_path) as f:
                self.stats = json.load(f)

    def port(self, p):
        return self.stats["ports"][str(p)]


def new_prefix():
    return TAG + uuid.uuid4().hex[:8]


def eal_args(mode="rtc", prefix=None):
    prefix = prefix or new_prefix()
    return MODES[mode] + ["--no-huge", "-m", "512", "--no-pci",
                          "--file-prefix", prefix, "--log-level", "*:error"]


def forget_prefix(prefix):
    """dpdk-shaper removes its /var/run/dpdk/PREFIX at a clean exit; this
    is for one that did not exit cleanly."""
    rundir.forget(prefix)


WATCHED_NICE = int(os.environ.get("SHP_E2E_NICE", "-10"))


def run_watched(cmd, timeout, during=None):
    """subprocess.run(cmd) with the kernel's figures of what the host took
    from its threads (cpu_lost.py): (CompletedProcess, Lost). during(proc),
    if given, runs while it does (before waiting for its exit)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    # a timing test: the poller preempted less by other sessions' load
    # (what it still loses is measured, and excused only up to a cap)
    cpu_lost.favour(proc.pid, WATCHED_NICE)
    watch = cpu_lost.Watch(proc.pid, from_spawn=True).start(sample=True)
    try:
        if during is not None:
            during(proc)
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    finally:
        lost = watch.stop()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), lost


def run_shaper(tmp_path, vdevs, app_args, mode="rtc", timeout=120,
               stats=True, watch=False):
    stats_path = str(tmp_path / ("stats-%s.json" % uuid.uuid4().hex[:6]))
    prefix = new_prefix()
    cmd = [BIN] + eal_args(mode, prefix)
    for v in vdevs:
        cmd += ["--vdev", v]
    cmd += ["--"] + list(app_args)
    if stats:
        cmd += ["--stats-file", stats_path]
    lost = None
    try:
        if watch:
            proc, lost = run_watched(cmd, timeout)
        else:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=timeout)
    finally:
        forget_prefix(prefix)
    return Run(proc, stats_path, lost)


def pcap_port(rx, tx, idx=0):
    return "net_pcap%d,rx_pcap=%s,tx_pcap=%s" % (idx, rx, tx)


def assert_conserved(run, egress_ports=None, ingress_of=None):
    """For each egress port: what arrived for it = sent + dropped + queued,
    and what arrived for it is what its ingress port(s) received."""
    ports = run.stats["ports"]
    for p, s in ports.items():
        if egress_ports is not None and int(p) not in egress_ports:
            continue
        dropped = sum(s["drops"].values())
        dup = s.get("duplicated", 0)
        assert s["egress_in"] + dup == s["tx_packets"] + dropped + \
            s["queued"], (p, s)
        assert s["queued"] == 0, (p, s)
        assert sum(b["depth"] for b in s["bands"]) == 0
        if ingress_of is not None:
            src = ingress_of[int(p)]
            assert ports[str(src)]["rx_packets"] == s["egress_in"]


# Which tests may run side by side. scripts/test.sh runs the tests marked
# `parallel` on several workers (-m parallel -n N) and the rest one at a
# time: those run dpdk-shaper on the wall clock, read the kernel's own
# qdiscs or time the replay tool itself, and another process on the CPUs
# would change what they measure. Parallel are the tests that only run
# dpdk-shaper-replay on its virtual clock (or no program at all): every
# test of OFFLINE_MODULES and, in MIXED_MODULES, each test without the
# live `mode`/`netns` fixtures that WALL_CLOCK does not name; and the
# tests that only see dpdk-shaper refuse to start (REFUSALS).
OFFLINE_MODULES = {"test_aqm", "test_bench_publish", "test_capture",
                   "test_classes", "test_for",
                   "test_offline", "test_plot",
                   "test_schedule", "test_shards", "test_store",
                   "test_tc_exact", "test_timevar", "test_tdc_replay",
                   "test_inorder", "test_misorder", "test_ci_skips",
                   "test_presets", "test_theaterq", "test_link_loss",
                   "test_link_limits", "test_link_fq_limits",
                   "test_link_netem_limit",
                   "test_aqm_link",
                   "test_link_priority", "test_link_fairness",
                   "test_tree", "test_layers"}
MIXED_MODULES = {"test_dualpi2", "test_fq_codel", "test_mtu",
                 "test_offline_ux", "test_police", "test_replay_latency"}
WALL_CLOCK = {"test_mtu_above_the_port_refused", "test_nic_drops_reported",
              "test_ctrl_c_partial_summary", "test_progress_line_on_a_tty"}
REFUSALS = {"test_bad_options", "test_bad_capture",
            "test_help_lists_every_option", "test_start_refusals",
            "test_bad_schedule_refused",
            "test_pace_refuses_ports_without_capture_times"}


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "parallel: may run beside other tests (scripts/test.sh)")
    config.addinivalue_line(
        "markers", "q4_xfail(reason): the --queues 4 variant of a LINK "
        "test is a known difference of the shaper at 4 shards")


# A profile means the same link whatever the number of shards (issue 56):
# a test whose assertion is about what the link does under a profile is
# marked @LINK and runs twice, [q1] and [q4]: its replays at --queues 1
# and at --queues 4 (the flows spread over 4 shards as RSS would), with
# the same tolerances. The replay helpers (test_offline.run,
# test_classes.run, test_timevar.run) pass their arguments through
# replay_args(), which adds `--queues N` under [qN], N > 1, unless the
# test says --queues itself. Only `parallel` tests (the virtual clock)
# may be marked. A variant that shows a real difference of the shaper at
# 4 shards is also @pytest.mark.q4_xfail(reason=...): an xfail of [q4]
# only, strict, so that it fails as soon as the difference is gone.
_link_queues = [1]


def replay_args(args):
    args = [str(a) for a in args]
    q = _link_queues[0]
    if q > 1 and "--queues" not in args:
        args += ["--queues", str(q)]
    return args


@pytest.fixture(params=[1, 4], ids=["q1", "q4"])
def link_queues(request):
    mark = request.node.get_closest_marker("q4_xfail")
    if request.param > 1 and mark is not None:
        request.applymarker(pytest.mark.xfail(
            strict=True, reason=mark.kwargs.get("reason", mark.args[0]
                                                if mark.args else "")))
    _link_queues[0] = request.param
    yield request.param
    _link_queues[0] = 1


LINK = pytest.mark.usefixtures("link_queues")


def pytest_collection_modifyitems(config, items):
    for item in items:
        mod = item.module.__name__.rsplit(".", 1)[-1]
        name = item.originalname
        if mod in OFFLINE_MODULES or name in REFUSALS or (
                mod in MIXED_MODULES and name not in WALL_CLOCK and
                not {"mode", "netns"} & set(item.fixturenames)):
            item.add_marker(pytest.mark.parallel)
        if "link_queues" in item.fixturenames and \
                item.get_closest_marker("parallel") is None:
            raise pytest.UsageError("%s: @LINK on a test off the virtual "
                                    "clock" % item.nodeid)


@pytest.fixture(params=list(MODES))
def mode(request):
    return request.param


@pytest.fixture(scope="session", autouse=True)
def run_dirs():
    """No /var/run/dpdk/PREFIX left behind by a process a test killed."""
    yield
    rundir.sweep(TAG)


@pytest.fixture(scope="session", autouse=True)
def built():
    if not os.path.exists(BIN):
        pytest.fail("%s is missing: build first (scripts/test.sh)" % BIN)

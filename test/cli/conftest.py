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


# The tests that may run side by side (scripts/test.sh runs those marked
# `parallel` on several workers, then the rest one at a time): each starts
# dpdk-shaper only to give it options or piped commands and read what it
# says (or to see it refuse to start), with nothing timed, no telemetry
# socket, TCP port or file name shared with another test. All others (a
# run that lasts, a rate, a deadline, a signal in flight, the exporter,
# the API) run alone on the machine.
PARALLEL = {
    "test_presets": {"test_prompt_command_file_and_own_directory"},
    "test_bands_port": {
        "test_each_port_maps_by_its_own_priomap",
        "test_show_qdisc_and_config_per_port", "test_ini_port_queue",
        "test_bands_alias_every_port_own_wins",
        "test_bands_alias_alone_applies_to_every_port",
        "test_bad_priomap_refused_at_start",
        "test_alias_priomap_past_a_ports_own_bands_refused_at_start",
        "test_run_time_per_port_and_alias",
        "test_class_queue_maps_by_its_own_priomap"},
    "test_capture_live": {
        "test_capture_commands_and_refusals",
        "test_capture_options_refused_before_the_eal"},
    "test_classes": {
        "test_classes_from_the_command_line_and_stats",
        "test_class_on_a_port_that_does_not_exist",
        "test_class_fq_codel_change_keeps_its_flows",
        "test_classes_out_of_memory_exit_1"},
    "test_cli": {
        "test_every_command_through_a_pipe", "test_every_error_path",
        "test_eof_quits_and_stats_file",
        "test_fq_codel_change_without_flows_keeps_the_running_table",
        "test_tab_completion", "test_question_mark_help",
        "test_tty_commands_errors_and_quit", "test_tty_ctrl_d_quits",
        "test_question_mark_after_a_tc_word_lists_the_next_words",
        "test_fq_codel_flows_cannot_change_while_running"},
    "test_cmdfile": {
        "test_file_then_prompt", "test_failing_line_without_prompt",
        "test_failing_line_with_prompt_goes_on", "test_load_at_the_prompt",
        "test_quit_in_file"},
    "test_ctl": {"test_missing_shaper_and_usage"},
    "test_ctl_clients": {"test_ctl_idle_refused"},
    "test_ctl_files": {"test_start_up_files_not_regular_refused"},
    "test_latency": {"test_stats_file_schema"},
    "test_lifecycle": {
        "test_forgotten_double_dash_names_the_option",
        "test_forgotten_double_dash_with_equals_and_short_option",
        "test_stats_file_checked_before_the_eal",
        "test_cmdline_file_missing_checked_before_the_eal",
        "test_cmdline_file_unparsable_checked_before_the_eal",
        "test_unwritable_tx_pcap_named", "test_needs_ports_one_line",
        "test_config_section_for_missing_port",
        "test_cli_set_for_missing_port_refused",
        "test_cmdline_file_applied_before_forwarding",
        "test_distribution_found_where_debian_installs_it",
        "test_distribution_from_tc_lib_dir",
        "test_distribution_missing_says_where_it_looked"},
    "test_nic": {
        "test_rxd_txd_applied_and_counted_in_the_pool",
        "test_rxd_txd_from_the_ini_file",
        "test_rxd_txd_zero_or_too_large_refused",
        "test_show_port_xstats_and_stats_file", "test_lcore_sockets"},
    "test_output": {
        "test_set_confirms_what_changed",
        "test_start_stop_say_when_nothing_to_do_and_exit_quits",
        "test_priomap_count_error_says_values",
        "test_show_config_seed_is_the_one_used",
        "test_show_config_says_when_own_drops_begin",
        "test_long_piped_line_is_refused_whole",
        "test_long_line_in_command_file_fails_the_file",
        "test_bad_pool_prints_no_zero_counters",
        "test_show_qdisc_reads_like_tc",
        "test_flushed_at_shutdown_is_not_pushed_out"},
    "test_schedule_cli": {
        "test_repeat_below_floor_refused",
        "test_time_beyond_limit_says_limit"},
    "test_shards_live": {
        "test_bad_value", "test_ini_queues", "test_pcap_refused",
        "test_refused_combinations", "test_port_short_of_queues",
        "test_runtime_changes_on_shards", "test_class_changes_on_shards",
        "test_default_pcap_one_queue",
        "test_what_the_link_does_not_keep_is_said_at_start"},
    "test_tdc": {"test_tdc_cases_live", "test_tdc_round_trip_live"},
    "test_trace_cli": {
        "test_set_and_show_trace", "test_binary_trace_refused_escaped"},
    "test_update": {
        "test_update_at_the_prompt", "test_update_was_at_the_prompt"},
}


def _parallel_modules_once():
    """A module named twice in PARALLEL's literal keeps only its last set,
    and the first set's tests then run serially unnoticed: refuse it."""
    import ast
    with open(__file__) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and
                getattr(node.targets[0], "id", None) == "PARALLEL"):
            keys = [k.value for k in node.value.keys]
            twice = sorted({k for k in keys if keys.count(k) > 1})
            assert not twice, "PARALLEL names %s twice" % twice


def pytest_configure(config):
    _parallel_modules_once()
    config.addinivalue_line(
        "markers", "parallel: may run beside other tests (scripts/test.sh)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        mod = item.module.__name__.rsplit(".", 1)[-1]
        if item.originalname in PARALLEL.get(mod, ()):
            item.add_marker(pytest.mark.parallel)

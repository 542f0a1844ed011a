"""Telemetry endpoints against `show` and --stats-file; the periodic table."""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import (NULL_VDEVS, SAMPLE, clean, numbers, prefix,
                      shaper_cmd, telemetry, wait_started)

pexpect = pytest.importorskip("pexpect")
from pexpect.popen_spawn import PopenSpawn  # noqa: E402

PORT_KEYS = ["rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "queued",
             "egress_in", "dropped", "netem_queued", "tx_pending",
             "duplicated", "corrupted", "reordered", "ecn_marked"]


def test_endpoints_match_show_and_stats_file(tmp_path, need_telemetry_client):
    import json
    pre = prefix()
    stats = tmp_path / "stats.json"
    vdevs = ["net_pcap0,rx_pcap=%s,tx_pcap=%s" % (SAMPLE, tmp_path / "o0.pcap"),
             "net_pcap1,rx_pcap=%s,tx_pcap=%s" % (SAMPLE, tmp_path / "o1.pcap")]
    cmd = shaper_cmd(vdevs, ["--replay", "-i", "--stats-file", str(stats),
                             "--netem", "loss 5% duplicate 5%",
                             "--tbf-port", "1", "rate 20mbit burst 10kb "
                             "limit 20kb", "--seed", "7", "--late-drop",
                             "20us"], file_prefix=pre)
    c = PopenSpawn(cmd, encoding="utf-8", timeout=60)
    c.expect_exact("replay done")
    tel = telemetry(pre, "/shaper/stats", "/shaper/drops", "/shaper/bands",
                    "/shaper/config", "/shaper/lcores", "/shaper/stats,1",
                    "/shaper/bands,0", "/shaper/stats,7")
    st, dr, bd, cf, lc, st1, bd0, bad = tel
    c.sendline("show port stats all")
    c.sendline("show drops")
    c.sendline("quit")
    c.expect(pexpect.EOF)
    out = clean(c.before)
    c.wait()
    with open(stats) as f:
        file = json.load(f)["ports"]
    assert bad is None
    assert st1 == {"1": st["1"]}
    assert set(bd0) == {"0_0", "0_1", "0_2"}
    # the replay is over and everything drained: nothing moves any more
    blocks = out.split("####### port")[1:]
    assert len(blocks) == 2
    for p, blk in zip(("0", "1"), blocks):
        shown = numbers(blk)
        for k in PORT_KEYS:
            assert st[p][k] == file[p][k], k
            assert shown[k] == st[p][k], k
        assert dr[p] == file[p]["drops"]
        for b, band in enumerate(file[p]["bands"]):
            assert bd["%s_%d" % (p, b)] == band
        drops_line = [l for l in out.splitlines()
                      if re.match(r"^%s\s+\d" % p, l)][0].split()
        assert [int(x) for x in drops_line[1:-1]] == \
            list(file[p]["drops"].values())
    assert st["1"]["tx_packets"] > 0 and st["1"]["duplicated"] > 0
    assert dr["1"]["lost"] > 0
    assert cf["global"]["bands"] == 3 and cf["global"]["classify"] == "tos"
    # --replay without --pace: no overload threshold
    assert cf["global"]["max_late_ns"] == 0
    assert cf["global"]["late_drop_ns"] == 20000
    assert cf["1"]["tbf"].startswith("rate 20Mbit")
    assert "loss random 5%" in cf["0"]["netem"]
    assert lc["1"]["role"] == "rx+tx" and lc["1"]["loops"] > 0
    # the worker's stalls, as in the stats file (loops over 1 ms)
    assert lc["1"]["longest_loop_ns"] > 0
    assert lc["1"]["stalled_ns"] >= lc["1"]["stalls"] * 1_000_000, lc
    # (read live: the longest loop may be a stall not counted yet)
    assert lc["1"]["stalls"] == 0 or \
        lc["1"]["longest_loop_ns"] >= 999_000, lc


def test_telemetry_follows_changes_and_clear(tmp_path, need_telemetry_client):
    pre = prefix()
    cmd = shaper_cmd(NULL_VDEVS, ["-i"], file_prefix=pre)
    c = PopenSpawn(cmd, encoding="utf-8", timeout=30)
    c.expect_exact("workers")
    c.sendline("set netem 0 delay 1ms")
    c.sendline("set classify pcp")
    c.sendline("stop")
    c.expect_exact("forwarding stopped")
    time.sleep(0.2)
    cf, st = telemetry(pre, "/shaper/config", "/shaper/stats")
    assert "delay 1ms" in cf["0"]["netem"] and cf["1"]["netem"] == "off"
    assert cf["global"]["classify"] == "pcp"
    assert cf["global"]["forwarding"] == "stopped"
    assert st["0"]["rx_packets"] > 0
    c.sendline("clear stats")
    c.expect_exact("counters cleared")
    (st,) = telemetry(pre, "/shaper/stats")
    assert st["0"]["rx_packets"] == 0 and st["1"]["tx_packets"] == 0
    c.sendline("start")
    c.expect_exact("forwarding started")
    time.sleep(0.5)
    c.sendline("show port stats 0")
    c.expect(r"rx_pps: (\d+)")
    assert int(c.match.group(1)) > 1000
    c.sendline("quit")
    c.expect(pexpect.EOF)
    assert c.wait() == 0


@pytest.mark.parametrize("ops", [None, "ring_mp_mc"])
def test_pool_store_is_a_stack_unless_named(ops, need_telemetry_client):
    """The mbuf pool's store, in show config and /shaper/config: a stack by
    default (docs/usage.md), the EAL's --mbuf-pool-ops-name when given;
    its size as DPDK's own /mempool/info has it."""
    pre = prefix()
    cmd = shaper_cmd(NULL_VDEVS, ["-i", "--mbufs", "50000"], file_prefix=pre)
    if ops:
        cmd[1:1] = ["--mbuf-pool-ops-name", ops]
    c = PopenSpawn(cmd, encoding="utf-8", timeout=30)
    c.expect_exact("workers")
    out = c.before
    cf, info = telemetry(pre, "/shaper/config", "/mempool/info,shaper_pool")
    c.sendline("show config")
    c.expect(r"mbufs: (\d+)  store: (\S+)")
    shown = (int(c.match.group(1)), c.match.group(2))
    c.sendline("quit")
    c.expect(pexpect.EOF)
    assert c.wait() == 0
    want = ops or "stack"
    assert shown == (50000, want)
    assert cf["global"]["mbuf_store"] == want
    assert cf["global"]["mbufs"] == info["size"] == 50000
    # no error line from trying a store DPDK does not have
    assert "MBUF" not in out + c.before, out


def test_stats_period_table(tmp_path):
    cmd = shaper_cmd(NULL_VDEVS, ["--stats-period", "1",
                                  "--netem", "delay 1ms"])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    head = wait_started(p)
    time.sleep(3.8)
    p.send_signal(2)
    out, _ = p.communicate(timeout=30)
    out = head + out
    assert p.returncode == 0
    heads = [l for l in out.splitlines() if l.startswith("port ") and
             "rx-pps" in l]
    assert len(heads) >= 2
    rows = [l.split() for l in out.splitlines() if re.match(r"^[01] +\d", l)]
    assert len(rows) >= 4
    assert any(r[1].endswith("M") or r[1].endswith("k") for r in rows)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_bands_beyond_one_reply_pages_and_never_leaks(need_telemetry_client):
    """18 ports x 16 bands = 288 entries: more than a telemetry dictionary
    (256) and its 16 KiB reply hold. The whole-table request says so and
    names the paged form; each page is complete; nothing leaks (each
    request used to leak every container it could not add, ~2.5 MB)."""
    pre = prefix()
    vdevs = ["net_null%d,copy=1" % i for i in range(18)]
    cmd = shaper_cmd(vdevs, ["-i", "--bands", "16", "--ring-size", "64",
                             "--mbufs", "32768"], file_prefix=pre)
    # on the ASan build (SHAPER_BUILD=build-san), freed memory would sit
    # in ASan's quarantine and count as RSS; LeakSanitizer checks at exit
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + \
        ":quarantine_size_mb=0:detect_leaks=1"
    c = PopenSpawn(cmd, encoding="utf-8", timeout=60, env=env)
    try:
        c.expect_exact("workers")
        (whole,) = telemetry(pre, "/shaper/bands")
        assert set(whole) == {"error"}, whole
        assert "/shaper/bands,P" in whole["error"]
        for p in (0, 17):
            (page,) = telemetry(pre, "/shaper/bands,%d" % p)
            assert set(page) == {"%d_%d" % (p, b) for b in range(16)}
            assert all(set(v) == {"enqueued", "dequeued", "dropped",
                                  "depth", "full", "pushed_out",
                                  "flushed"}
                       for v in page.values())
        (st,) = telemetry(pre, "/shaper/stats")
        assert set(st) == {str(p) for p in range(18)}
        before = rss_kb(c.proc.pid)
        res = telemetry(pre, *(["/shaper/bands"] * 40 +
                               ["/shaper/bands,3"] * 40), timeout=60)
        grown = rss_kb(c.proc.pid) - before
        assert all(r == whole or "error" in r for r in res[:40])
        assert all(len(r) == 16 for r in res[40:])
        assert grown < 8 * 1024, "RSS grew by %d kB over 80 requests" % grown
        c.sendline("quit")
        c.expect(pexpect.EOF)
        assert c.wait() == 0
    finally:
        if c.proc.poll() is None:
            c.proc.kill()
        shutil.rmtree("/var/run/dpdk/" + pre, ignore_errors=True)

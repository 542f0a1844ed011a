"""Stats-file schema (every key, with issue 9's latency and NIC keys), and
the latency distributions as the stats file, `show port latency`,
telemetry and the --stats-period table report them."""
import json
import os
import re
import subprocess
import time

import pytest

from conftest import (NULL_VDEVS, SAMPLE, clean, prefix, run_piped,
                      shaper_cmd, telemetry)

SUMMARY = ["count", "min", "p50", "p90", "p99", "p99.9", "max"]
PORT_SCHEMA = {
    "rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "queued",
    "egress_in", "dropped", "netem_queued", "tx_pending", "rx_pool_empty",
    "duplicated",
    "corrupted", "reordered", "ecn_marked", "sojourn_ns", "latency", "nic",
    "bands", "drops", "xstats",
    "link",   # the port's link (issue 29)
    "shards",   # one a shard, one without --queues (issue 24)
    "budget"}   # the lossless budget (issue 61): a live port's
NIC = ["imissed", "ierrors", "rx_nombuf", "oerrors"]
STALLS = ["loops", "stalls", "stalled_ns", "hiccups", "hiccup_ns",
          "longest_loop_ns", "socket",   # issue 29; hiccups: issue 30.7
          "runq_wait_ns", "cpu_slices", "steal_ns"]   # the kernel's count
DELAY_NS = 5_000_000


def pcap_vdevs(tmp_path):
    return ["net_pcap%d,rx_pcap=%s,tx_pcap=%s" % (i, SAMPLE,
                                                  tmp_path / ("o%d.pcap" % i))
            for i in (0, 1)]


def check_summary(h):
    assert list(h) == SUMMARY, h
    assert all(isinstance(v, int) and v >= 0 for v in h.values()), h
    if h["count"] == 0:
        assert all(v == 0 for v in h.values()), h
        return
    vals = [h[k] for k in SUMMARY[1:]]
    assert vals == sorted(vals), h   # min <= p50 <= ... <= p99.9 <= max


def test_stats_file_schema(tmp_path):
    """Port 1 delays by netem, port 0 has no netem: lateness is measured
    for the packets netem scheduled only; sojourn for every packet."""
    stats = tmp_path / "s.json"
    cmd = shaper_cmd(pcap_vdevs(tmp_path),
                     ["--replay", "--stats-file", str(stats),
                      "--netem-port", "1", "delay 5ms"])
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout
    with open(stats) as f:
        doc = json.load(f)
    assert set(doc) == {"elapsed_s", "ports", "lcores"}
    assert set(doc["ports"]) == {"0", "1"}
    # each worker's stalls (loops over 1 ms: its CPU was taken away)
    assert len(doc["lcores"]) >= 1
    for lc in doc["lcores"].values():
        assert list(lc) == STALLS, lc
        assert all(isinstance(v, int) and v >= 0 for v in lc.values()), lc
        assert lc["loops"] > 0
        assert lc["stalled_ns"] >= lc["stalls"] * 1_000_000, lc
        # a hiccup: a loop over 200 us, up to a stall
        assert 200_000 * lc["hiccups"] <= lc["hiccup_ns"] <= \
            1_000_000 * lc["hiccups"], lc
        assert lc["longest_loop_ns"] * lc["hiccups"] >= lc["hiccup_ns"], lc
        assert lc["longest_loop_ns"] * lc["stalls"] >= lc["stalled_ns"], lc
        # over 1 ms is a stall (to the ns the TSC rounds to)
        assert lc["stalls"] == 0 or lc["longest_loop_ns"] >= 999_000, lc
        assert lc["longest_loop_ns"] <= 1_001_000 or lc["stalls"] > 0, lc
        # the kernel's count: steal comes in clock ticks, and the
        # worker cannot have waited longer than it ran (set-up and the
        # flush after forwarding are a few seconds at most)
        assert lc["steal_ns"] % (10**9 // os.sysconf("SC_CLK_TCK")) == 0, lc
        assert lc["runq_wait_ns"] <= (doc["elapsed_s"] + 10) * 1e9, lc
    for name, port in doc["ports"].items():
        assert set(port) == PORT_SCHEMA, set(port) ^ PORT_SCHEMA
        assert list(port["sojourn_ns"]) == ["min", "avg", "max"]
        # one queue: one shard, the port itself
        (shard,) = port["shards"]
        assert shard["tx_packets"] == port["tx_packets"], shard
        assert shard["latency"] == port["latency"], shard
        assert list(port["latency"]) == ["lateness_ns", "sojourn_ns"]
        assert list(port["nic"]) == NIC + ["xstats"]
        # pcap ports drop nothing themselves
        assert all(port["nic"][k] == 0 for k in NIC), port["nic"]
        # the NIC's extended statistics (issue 29), by name
        assert port["nic"]["xstats"]["rx_good_packets"] == \
            port["rx_packets"], port["nic"]
        for h in port["latency"].values():
            check_summary(h)
        soj = port["latency"]["sojourn_ns"]
        assert port["tx_packets"] > 0
        assert soj["count"] == port["tx_packets"]
        # the exact extremes are the legacy min/max
        assert soj["min"] == port["sojourn_ns"]["min"]
        assert soj["max"] == port["sojourn_ns"]["max"]
        assert soj["min"] <= port["sojourn_ns"]["avg"] <= soj["max"]
    late0 = doc["ports"]["0"]["latency"]["lateness_ns"]
    late1 = doc["ports"]["1"]["latency"]["lateness_ns"]
    soj1 = doc["ports"]["1"]["latency"]["sojourn_ns"]
    assert late0["count"] == 0          # netem never held these
    assert late1["count"] == doc["ports"]["1"]["tx_packets"]
    assert soj1["min"] >= DELAY_NS
    # sojourn = delay + lateness, within the buckets' 1.6%
    assert soj1["p50"] >= DELAY_NS + late1["p50"] * 0.98 - 1
    assert "lateness_ns: count %d" % late1["count"] in p.stdout
    assert re.search(r"nic: imissed 0 ierrors 0 rx_nombuf 0 oerrors 0",
                     p.stdout)


def test_show_latency_and_telemetry_match_stats_file(tmp_path,
                                                     need_telemetry_client):
    pexpect = pytest.importorskip("pexpect")
    from pexpect.popen_spawn import PopenSpawn
    pre = prefix()
    stats = tmp_path / "s.json"
    cmd = shaper_cmd(pcap_vdevs(tmp_path),
                     ["--replay", "-i", "--stats-file", str(stats),
                      "--netem", "delay 2ms 1ms"], file_prefix=pre)
    c = PopenSpawn(cmd, encoding="utf-8", timeout=60)
    c.expect_exact("replay done")
    all_, one, bad, st = telemetry(pre, "/shaper/latency",
                                   "/shaper/latency,1", "/shaper/latency,5",
                                   "/shaper/stats")
    c.sendline("show port latency")
    c.sendline("show port latency 1")
    c.sendline("show port latency 7")
    c.sendline("show port stats 1")
    c.sendline("clear stats")
    c.sendline("show port latency 1")
    c.sendline("quit")
    c.expect(pexpect.EOF)
    out = clean(c.before)
    assert c.wait() == 0
    shown_out, exit_out = out.split("shaper> quit")
    with open(stats) as f:
        ports = json.load(f)["ports"]
    assert bad is None
    assert set(all_) == {"0_lateness_ns", "0_sojourn_ns",
                         "1_lateness_ns", "1_sojourn_ns"}
    assert set(one) == {"1_lateness_ns", "1_sojourn_ns",
                        "1_lateness_buckets", "1_sojourn_buckets"}
    for p in ("0", "1"):
        for k in ("lateness", "sojourn"):
            want = ports[p]["latency"][k + "_ns"]
            # telemetry names cannot hold a '.'
            tel = {("p99.9" if n == "p99_9" else n): v
                   for n, v in all_["%s_%s_ns" % (p, k)].items()}
            assert tel == want
            line = re.findall(r"%s_ns: +count (\d+) min (\d+) p50 (\d+) "
                              r"p90 (\d+) p99 (\d+) p99.9 (\d+) max (\d+)"
                              % k, shown_out)
            # every port, then port 1, then port 1 after the clear
            assert len(line) == 4, out
            assert [int(x) for x in line[int(p)]] == list(want.values())
            if p == "1":
                assert [int(x) for x in line[2]] == list(want.values())
                assert [int(x) for x in line[3]] == [0] * 7   # cleared
            # the exit summary: since start, as the file
            assert re.search(r"%s_ns: +count %d min %d p50 %d p90 %d p99 %d "
                             r"p99.9 %d max %d" % ((k,) +
                                                   tuple(want.values())),
                             exit_out.split("port 1:")[int(p)])
    for k in ("lateness", "sojourn"):
        b = one["1_%s_buckets" % k]
        want = ports["1"]["latency"][k + "_ns"]
        uppers, counts = b[0::2], b[1::2]
        assert len(b) % 2 == 0 and len(b) <= 256
        assert uppers == sorted(uppers) and all(counts)
        assert sum(counts) == want["count"] > 0
        # the first and last buckets hold min and max
        assert uppers[0] >= want["min"] and uppers[-1] >= want["max"]
        assert len(uppers) == 1 or uppers[-2] < want["max"]
    for p in ("0", "1"):
        # (the stats file's nic also has the NIC's xstats, issue 29)
        assert list(ports[p]["nic"]) == NIC + ["xstats"]
        assert {k: st[p]["nic_" + k] for k in NIC} == \
            {k: ports[p]["nic"][k] for k in NIC}
    assert "show port latency: no port '7'" in out
    assert re.search(r"NIC drops: imissed: 0 +ierrors: 0 +rx_nombuf: 0 +"
                     r"oerrors: 0", out)


def test_stats_period_latency_columns(tmp_path):
    """net_null at full speed, netem on port 1 only: mbufs go round the
    pool between the ports, so a packet for port 0 often reuses an mbuf
    that last carried a send time (RX must clear it)."""
    stats = tmp_path / "s.json"
    cmd = shaper_cmd(NULL_VDEVS, ["--stats-period", "1", "--stats-file",
                                  str(stats), "--netem-port", "1",
                                  "delay 1ms"])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    # wait for two rows of port 1 (a loaded machine starts slowly)
    out, seen, t0 = "", 0, time.monotonic()
    while seen < 2 and time.monotonic() - t0 < 30:
        line = p.stdout.readline()
        if not line:
            break
        out += line
        seen += bool(re.match(r"^1 +\d", line))
    p.send_signal(2)
    rest, _ = p.communicate(timeout=30)
    out += rest
    assert p.returncode == 0, out
    heads = [l for l in out.splitlines() if l.startswith("port ") and
             "rx-pps" in l]
    assert heads and heads[0].split()[-2:] == ["late-p99.9", "soj-p99.9"]
    rows = [l.split() for l in out.splitlines() if re.match(r"^1 +\d", l)]
    assert len(rows) >= 2

    def ns(text):
        m = re.match(r"^([\d.]+)(ns|us|ms|s)$", text)
        assert m, text
        return float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6,
                                    "s": 1e9}[m.group(2)]
    # port 1: every packet held 1 ms by netem
    for r in rows:
        assert ns(r[-1]) >= 1e6 and ns(r[-2]) < ns(r[-1])
    with open(stats) as f:
        ports = json.load(f)["ports"]
    p0, p1 = ports["0"], ports["1"]
    assert p0["tx_packets"] > 10000 and p1["tx_packets"] > 10000
    assert p0["latency"]["lateness_ns"]["count"] == 0
    assert p1["latency"]["lateness_ns"]["count"] == p1["tx_packets"]
    for p in (p0, p1):
        assert p["latency"]["sojourn_ns"]["count"] == p["tx_packets"]


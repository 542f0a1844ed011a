"""Lateness and sojourn: the live shaper (run to completion and pipeline)
and dpdk-shaper-replay, which prints them as dpdk-shaper reports them. On
the virtual clock lateness is 0 by construction: a nonzero value means a
stage announced a send time it did not keep (or, for slots, that the send
time TX measures from is not the slot)."""
import random
import re
import subprocess

import pytest

import pcaplib
from conftest import REPLAY_BIN, assert_conserved, pcap_port, run_shaper

MS = 10**6
T0 = 1_700_000_000 * 10**9
KEYS = ["count", "min", "p50", "p90", "p99", "p99.9", "max"]


def latency(text, name):
    m = re.search(r"^%s_ns: +count (\d+) min (\d+) p50 (\d+) p90 (\d+) "
                  r"p99 (\d+) p99\.9 (\d+) max (\d+)$" % name, text, re.M)
    assert m, text
    return dict(zip(KEYS, (int(x) for x in m.groups())))


def replay(tmp_path, n, netem):
    rnd = random.Random(5)
    ts, t = [], T0
    for _ in range(n):
        t += rnd.randint(1, 400_000)
        ts.append(t)
    frames = [pcaplib.eth_ipv4(0, rnd.randint(60, 1500), i)
              for i in range(n)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    args = [REPLAY_BIN, str(inp), str(out)]
    if netem:
        args += ["--netem", netem]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    _, got = pcaplib.read(str(out))
    sent = {pcaplib.seq_of(f): d for d, f in got}
    return p.stdout, sorted(sent[i] - ts[i] for i in sent)


@pytest.mark.parametrize("netem", ["delay 10ms 3ms",
                                   "delay 2ms 1ms slot 1ms 3ms packets 4",
                                   "delay 1ms rate 20mbit"])
def test_lateness_zero_sojourn_exact(tmp_path, netem):
    out, soj = replay(tmp_path, 3000, netem)
    late, s = latency(out, "lateness"), latency(out, "sojourn")
    assert "0 by construction" in out
    assert late == dict(count=len(soj), **{k: 0 for k in KEYS[1:]}), late
    assert s["count"] == len(soj) == 3000
    assert s["min"] == soj[0] and s["max"] == soj[-1]
    for k, q in (("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9)):
        ref = soj[max(int(-(-len(soj) * q // 100)), 1) - 1]
        assert abs(s[k] - ref) <= ref / 64, (k, s[k], ref)


def test_no_netem_no_lateness(tmp_path):
    """Nothing netem scheduled: no lateness to count, sojourn 0."""
    out, soj = replay(tmp_path, 200, None)
    assert latency(out, "lateness")["count"] == 0
    s = latency(out, "sojourn")
    assert s["count"] == 200 and s["max"] == soj[-1] == 0


def test_live_lateness_and_sojourn(tmp_path, mode):
    """Every packet netem delayed has a lateness and a sojourn, recorded on
    whichever lcore transmits; the packet late by the most stayed at
    least the delay plus that (exact extremes, no timing assumption)."""
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(rx), [pcaplib.eth_ipv4(0, 300, i) for i in range(500)])
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--netem", "delay 20ms"], mode)
    assert run.rc == 0, run.err
    p = run.port(0)
    late, soj = p["latency"]["lateness_ns"], p["latency"]["sojourn_ns"]
    assert p["tx_packets"] == 500
    assert late["count"] == soj["count"] == 500
    assert soj["min"] >= 20 * MS
    assert soj["max"] >= 20 * MS + late["max"]
    for h in (late, soj):
        assert [h[k] for k in KEYS[1:]] == sorted(h[k] for k in KEYS[1:])
    assert_conserved(run)


def test_nic_drops_reported(tmp_path):
    """The port's own drops: net_pcap counts rx_nombuf (and loses the
    record it read) when the pool is empty, which it is as soon as netem
    holds every mbuf. Those packets never entered the shaper: they are in
    `nic`, not in `drops`, and conservation still holds. (`store off`:
    netem's byte store would hold these 200-byte frames without their
    mbufs, issue 25.)"""
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(rx), [pcaplib.eth_ipv4(0, 200, i) for i in range(5000)])
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--mbufs", "1024", "--netem",
                      "delay 200ms limit 100000 store off"])
    assert run.rc == 0, run.err
    p = run.port(0)
    assert p["nic"]["rx_nombuf"] > 0, p
    assert p["rx_packets"] + p["nic"]["rx_nombuf"] <= 5000
    assert p["dropped"] == 0
    assert "rx_nombuf %d" % p["nic"]["rx_nombuf"] in run.out
    assert_conserved(run)

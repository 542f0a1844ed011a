"""Hundreds of live changes per second under load: no crash, no error,
conservation of packets per egress port; the same under AddressSanitizer
(build-san, which scripts/test.sh builds)."""
import os
import random
import time

import pytest

from conftest import (ASAN_BIN, BIN, NULL_VDEVS, SAMPLE, clean, conservation,
                      shaper_cmd)

pexpect = pytest.importorskip("pexpect")
from pexpect.popen_spawn import PopenSpawn  # noqa: E402

NETEM = [
    "delay 1ms", "delay 2ms 1ms", "delay 1ms 500us 25%",
    "delay 1ms 1ms distribution normal", "loss 10%", "loss 5% 25%",
    "duplicate 20%", "duplicate 10% corrupt 5%", "delay 2ms reorder 25% gap 3",
    "rate 200mbit", "delay 500us slot 100us 200us packets 8",
    "loss gemodel 5% 20%", "delay 1ms loss 3% duplicate 3% reorder 10%",
    "limit 500 delay 3ms", "off",
]
TBF = [
    "rate 300mbit burst 32kb limit 64kb", "rate 50mbit burst 10kb latency 5ms",
    "rate 1gbit burst 64kb limit 1mb peakrate 2gbit mtu 2kb", "off",
    "rate 10mbit burst 1540 limit 3kb",
]
CLASSIFY = ["tos", "dscp", "pcp", "none"]


def commands(n, rng):
    out = []
    for _ in range(n):
        k = rng.random()
        port = rng.choice(["all", "0", "1"])
        if k < 0.4:
            out.append("set netem %s %s" % (port, rng.choice(NETEM)))
        elif k < 0.7:
            out.append("set tbf %s %s" % (port, rng.choice(TBF)))
        elif k < 0.85:
            out.append("set priomap " + " ".join(
                str(rng.randrange(3)) for _ in range(16)))
        elif k < 0.97:
            out.append("set classify " + rng.choice(CLASSIFY))
        else:
            out.append(rng.choice(["stop", "start"]))
    return out + ["start"]


def hammer(tmp_path, binary, vdevs, secs=5.0, rate=400, env=None,
           timeout=120):
    stats = tmp_path / "stats.json"
    cmd = shaper_cmd(vdevs, ["-i", "--stats-file", str(stats), "--seed", "3"],
                     binary=binary)
    c = PopenSpawn(cmd, encoding="utf-8", timeout=timeout, env=env)
    try:
        return drive(c, stats, secs, rate)
    except (OSError, pexpect.EOF, pexpect.TIMEOUT) as e:
        try:
            c.expect(pexpect.EOF, timeout=30)
        except Exception:
            c.proc.kill()
        pytest.fail("the shaper died or hung (%s): %s" % (
            type(e).__name__, clean(str(c.before))[-3000:]))


def drive(c, stats, secs, rate):
    c.expect_exact("workers")
    rng = random.Random(1)
    cmds = commands(int(secs * rate), rng)
    t0 = time.monotonic()
    batch = max(1, rate // 20)
    for i in range(0, len(cmds), batch):
        c.send("".join(x + "\n" for x in cmds[i:i + batch]))
        # pace: `rate` commands per second
        ahead = t0 + (i + batch) / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    c.sendline("show lcores")
    c.expect_exact("egress ports")
    elapsed = time.monotonic() - t0
    c.sendline("show port stats all")
    c.sendline("quit")
    c.expect(pexpect.EOF)
    out = clean(c.before)
    rc = c.wait()
    import json
    with open(stats) as f:
        st = json.load(f)["ports"]
    return rc, out, st, len(cmds), elapsed


def check(rc, out, st, n, elapsed, min_rate=100):
    assert "AddressSanitizer" not in out and "LeakSanitizer" not in out, \
        out[-3000:]
    assert rc == 0, out[-3000:]
    assert [l for l in out.splitlines() if l.startswith("error")] == []
    assert n / elapsed >= min_rate, (n, elapsed)
    total_tx = 0
    for p, port in st.items():
        a, b = conservation(port)
        assert a == b, (p, port)
        assert port["queued"] == 0
        total_tx += port["tx_packets"]
    assert total_tx > 0


def test_reconfig_under_load_null(tmp_path):
    r = hammer(tmp_path, BIN, NULL_VDEVS)
    check(*r)
    print("%d changes in %.2f s (%.0f/s)" % (r[3], r[4], r[3] / r[4]))


def test_reconfig_under_load_pcap_infinite(tmp_path):
    vdevs = ["net_pcap0,rx_pcap=%s,tx_pcap=/dev/null,infinite_rx=1" % SAMPLE,
             "net_pcap1,rx_pcap=%s,tx_pcap=/dev/null,infinite_rx=1" % SAMPLE]
    check(*hammer(tmp_path, BIN, vdevs, secs=3))


@pytest.mark.skipif(not os.path.exists(ASAN_BIN),
                    reason="no build-san (scripts/test.sh builds it)")
def test_reconfig_under_load_asan(tmp_path):
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "detect_leaks=1:halt_on_error=1:abort_on_error=0"
    r = hammer(tmp_path, ASAN_BIN, NULL_VDEVS, secs=4, rate=300, env=env,
               timeout=180)
    check(*r, min_rate=100)

"""The byte store live (issue 25): net_null's unbounded load through
`delay 100ms` with the default options (no --mbufs, no limit). Before
the store netem's default limit (half the pool) dropped nearly every
packet as `netem_limit` (14-20 M in 5 s here, d385ee8); now the frames
wait as bytes and nothing is dropped for want of an mbuf or by the
limit. What the lcore cannot carry is still counted (`overload`,
`late`), every packet is accounted for and the pool is full at exit
(a leak exits 3)."""
import os
import signal
import subprocess
import time

from conftest import BIN, Run, assert_conserved, forget_prefix


def run_live(tmp_path, netem, secs=4):
    stats = tmp_path / "stats.json"
    prefix = "rpstore%d" % os.getpid()
    cmd = [BIN, "-l", "0-1", "--no-huge", "-m", "2048", "--no-pci",
           "--file-prefix", prefix, "--log-level", "*:error",
           "--vdev", "net_null0,copy=1", "--vdev", "net_null1,copy=1",
           "--", "--netem", netem, "--stats-file", str(stats)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        # secs of forwarding from the end of set-up, which takes seconds on
        # a loaded machine
        head = b""
        while b"dpdk-shaper: 2 ports" not in head or \
                not head.endswith(b"\n"):
            c = os.read(proc.stdout.fileno(), 1)
            assert c, head
            head += c
        time.sleep(secs)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        out = head.decode() + out
    finally:
        if proc.poll() is None:
            proc.kill()
        forget_prefix(prefix)
    return Run(subprocess.CompletedProcess(cmd, proc.returncode, out, err),
               str(stats))


def test_delay_100ms_default_options_loses_nothing_to_mbufs(tmp_path):
    run = run_live(tmp_path, "delay 100ms")
    assert run.rc == 0, (run.err, run.out[-2000:])
    assert "mbuf leak" not in run.out
    for p in ("0", "1"):
        s = run.port(p)
        assert s["tx_packets"] > 10000, s
        assert s["drops"]["netem_limit"] == 0, s["drops"]
        assert s["drops"]["no_mbuf"] == 0, s["drops"]
        assert s["drops"]["store_no_mbuf"] == 0, s["drops"]
        assert s["drops"]["pool_share"] == 0, s["drops"]
        x = s["xstats"]["netem"]
        # 100 ms of frames were held as bytes: more than the pool's half
        assert x["store_hwm"] > 4 << 20, x
        assert s["sojourn_ns"]["min"] >= 100_000_000, s["sojourn_ns"]
    assert_conserved(run, ingress_of={0: 1, 1: 0})

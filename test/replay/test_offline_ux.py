"""dpdk-shaper-replay explains itself and never destroys its input (issue
10 item 3), and keeps time past 2038 (issue 15 item 3)."""
import json
import os
import pty
import select
import signal
import struct
import subprocess
import time

import pytest

import pcaplib
from conftest import REPLAY_BIN
from test_offline import MS, T0, frames_mixed, ok_run, run, summary, \
    write_pcapng

S = 10**9


def capture(path, n=300, size=200, gap=1 * MS, t0=T0, nano=True):
    frames = [pcaplib.eth_ipv4(0, size, i) for i in range(n)]
    ts = [t0 + i * gap for i in range(n)]
    pcaplib.write(str(path), frames, ts, nano=nano)
    return frames, ts


# ------------------------------------------------------- never destroy IN

@pytest.mark.parametrize("how", ["same", "dot", "link"])
def test_out_same_file_as_in_refused(tmp_path, how):
    inp = tmp_path / "in.pcap"
    capture(inp)
    before = inp.read_bytes()
    out = {"same": inp, "dot": tmp_path / "." / "in.pcap",
           "link": tmp_path / "hard.pcap"}[how]
    if how == "link":
        os.link(inp, out)
    proc = run(inp, out, "--netem", "delay 1ms")
    assert proc.returncode == 2, proc.stdout
    assert "same file as IN" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert inp.read_bytes() == before
    assert not list(tmp_path.glob("*.partial-*"))


def test_stdout_redirected_onto_in_refused(tmp_path):
    inp = tmp_path / "in.pcap"
    capture(inp)
    before = inp.read_bytes()
    with open(inp, "ab") as f:     # appending keeps the input readable
        proc = subprocess.run([REPLAY_BIN, str(inp), "-"], stdout=f,
                              stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 2
    assert "refusing to overwrite" in proc.stderr
    assert inp.read_bytes() == before


def test_out_dash_writes_stdout(tmp_path):
    inp, ref = tmp_path / "in.pcap", tmp_path / "ref.pcap"
    capture(inp)
    args = ["--netem", "delay 3ms 1ms loss 5%", "--seed", "4"]
    s = ok_run(inp, ref, *args)
    proc = subprocess.run([REPLAY_BIN, str(inp), "-"] + args,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ref.read_bytes()       # the capture, whole
    # and the summary went to stderr instead
    assert summary(proc.stderr.decode()) == s


def test_out_dash_on_a_terminal_refused(tmp_path):
    inp = tmp_path / "in.pcap"
    capture(inp)
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([REPLAY_BIN, str(inp), "-"], stdout=slave,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 2
    assert "terminal" in proc.stderr and proc.stderr.count("\n") == 1


def test_in_dash_reads_stdin(tmp_path):
    inp, ref, out = (tmp_path / n for n in ("in.pcap", "ref.pcap",
                                            "out.pcap"))
    capture(inp)
    ok_run(inp, ref, "--netem", "delay 2ms")
    with open(inp, "rb") as f:
        proc = subprocess.run([REPLAY_BIN, "-", str(out), "--netem",
                               "delay 2ms"], stdin=f, capture_output=True,
                              text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == ref.read_bytes()


# --------------------------------------------------------------- summary

def test_summary_echoes_profile(tmp_path):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp)
    proc = run(inp, out, "--tbf", "rate 10mbit burst 10kb limit 100kb",
               "--netem", "delay 5ms")
    assert proc.returncode == 0, proc.stderr
    line = [x for x in proc.stdout.splitlines()
            if x.startswith("profile:")]
    assert len(line) == 1, proc.stdout
    assert "port 0:" in line[0] and "bands 3" in line[0]
    assert "tbf rate 10Mbit" in line[0] and "delay 5ms" in line[0]


def test_port1_only_config_is_visible(tmp_path):
    """A profile written for [port 1] applies nothing here: say so."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    frames, ts = capture(inp)
    ini = tmp_path / "p.ini"
    ini.write_text("[port 1]\nnetem = delay 99ms\n")
    proc = run(inp, out, "--config", str(ini))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert ("port 0: bands 3, classify tos; queue pfifo_fast bands 3; "
            "tbf off; netem off") in text
    assert "port 1: NOT APPLIED" in text and "delay 99ms" in text
    s = summary(text)
    assert any(n.startswith("nothing was applied") for n in s["notes"])
    # and indeed nothing was: every packet left at its arrival
    assert [t for t, _ in pcaplib.read(str(out))[1]] == ts


def test_rates_loss_and_delay_split(tmp_path):
    """8 Mbit/s into a 6 Mbit/s bucket with netem's constant 10 ms: the
    rates, the loss and the two parts of the delay as the profile says."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, n=2500, size=1000, gap=1 * MS)      # 8 Mbit/s for 2.5 s
    s = ok_run(inp, out, "--tbf", "rate 6mbit burst 20kb limit 50kb",
               "--netem", "delay 10ms")
    assert abs(s["in_mbit"] - 8.0) < 0.01, s
    assert abs(s["out_mbit"] - 6.0) < 0.1, s
    assert s["by_cause"]["tbf_limit"] > 300
    assert s["loss"] == pytest.approx(100 * s["drops"] / s["in"], abs=0.01)
    assert s["loss_by_cause"] == {
        "tbf_limit": pytest.approx(100 * s["by_cause"]["tbf_limit"] /
                                   s["in"], abs=0.01)}
    # netem holds every packet exactly 10 ms; the rest is the bucket
    assert s["netem_min"] == s["netem_max"] == 10 * MS
    assert s["queueing_min"] == 0 and s["queueing_max"] > 50 * MS
    assert s["min"] == 10 * MS
    assert s["max"] == s["queueing_max"] + 10 * MS
    assert abs(s["mean"] - s["queueing_mean"] - s["netem_mean"]) <= 1
    # the delays from the files themselves
    _, got = pcaplib.read(str(out))
    d = sorted(t - (T0 + pcaplib.seq_of(f) * MS) for t, f in got)
    assert s["p99"] == d[(len(d) * 99 + 99) // 100 - 1]
    assert s["mean"] == sum(d) // len(d)


def test_stats_file_live_schema(tmp_path):
    inp, out, js = (tmp_path / n for n in ("in.pcap", "out.pcap", "s.json"))
    capture(inp, n=2000, size=1000)
    s = ok_run(inp, out, "--tbf", "rate 5mbit burst 20kb limit 30kb",
               "--netem", "delay 4ms loss 2%", "--stats-file", str(js))
    st = json.loads(js.read_text())
    assert set(st) == {"elapsed_s", "ports"} and list(st["ports"]) == ["0"]
    p = st["ports"]["0"]
    # the keys dpdk-shaper writes (lib/core/shp_stats.c, docs/usage.md),
    # and the port's shards (issue 24: one here, the port itself)
    assert set(p) == {"rx_packets", "rx_bytes", "tx_packets", "tx_bytes",
                      "queued", "egress_in", "dropped", "netem_queued",
                      "tx_pending", "rx_pool_empty", "duplicated", "corrupted",
                      "reordered",
                      "ecn_marked", "sojourn_ns", "bands", "drops",
                      "latency", "nic", "xstats", "shards"}
    [one] = p["shards"]
    assert one["queue"] == 0 and one["lcore"] is None
    assert [one[k] for k in ("tx_packets", "tx_bytes", "queued", "drops",
                             "latency")] == \
        [p[k] for k in ("tx_packets", "tx_bytes", "queued", "drops",
                        "latency")]
    # each stage kind's own statistics, by kind; the older top-level
    # names are the same counters
    assert "netem" in p["xstats"] and "fq_codel" in p["xstats"]
    for k in ("duplicated", "corrupted", "reordered", "ecn_marked"):
        assert p["xstats"]["netem"][k] == p[k]
    assert p["xstats"]["netem"]["queued"] == p["netem_queued"]
    assert set(p["xstats"]["fq_codel"].values()) == {0}
    # no NIC offline; latency as the live program reports it
    assert set(p["nic"].values()) == {0}
    assert p["latency"]["sojourn_ns"]["count"] == p["tx_packets"]
    assert p["latency"]["lateness_ns"]["max"] == 0
    assert p["rx_packets"] == s["in"] and p["tx_packets"] == s["out"]
    assert p["tx_bytes"] == s["out_bytes"]
    assert p["drops"] == s["by_cause"] and p["dropped"] == s["drops"]
    assert p["sojourn_ns"]["min"] == s["min"]
    assert p["sojourn_ns"]["max"] == s["max"]
    assert p["egress_in"] == p["tx_packets"] + p["dropped"] + p["queued"]
    assert len(p["bands"]) == 3
    assert st["elapsed_s"] > 1.9


def test_stats_file_bad_directory(tmp_path):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp)
    proc = run(inp, out, "--stats-file", str(tmp_path / "no" / "s.json"))
    assert proc.returncode == 2
    assert "no directory" in proc.stderr
    assert not out.exists()


def feeder(n, size=200):
    """A pcap header and n records, to stream into the tool's stdin."""
    head = struct.pack("<IHHiIII", pcaplib.MAGIC_NS, 2, 4, 0, 0, 65535, 1)
    recs = []
    for i in range(n):
        f = pcaplib.eth_ipv4(0, size, i)
        t = T0 + i * MS
        recs.append(struct.pack("<IIII", t // S, t % S, len(f), len(f)) + f)
    return head, recs


def test_ctrl_c_partial_summary(tmp_path):
    """SIGINT while IN (a pipe) is still open: the summary so far,
    balanced, exit 130, and no OUT that would pass for a whole one."""
    out = tmp_path / "out.pcap"
    head, recs = feeder(500)
    proc = subprocess.Popen([REPLAY_BIN, "-", str(out), "--netem",
                             "delay 50ms"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=False)
    proc.stdin.write(head + b"".join(recs))
    proc.stdin.flush()
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    proc.stdin.close()
    proc.wait(timeout=30)
    so, se = proc.stdout.read(), proc.stderr.read()
    text = so.decode()
    assert proc.returncode == 130, (so, se)
    assert "interrupted: summary of the first 500 packets" in text
    s = summary(text)
    assert s["in"] == 500
    assert s["conservation"][-1] == "ok"
    # what netem still held was flushed, and said so
    assert s["by_cause"]["flushed"] == 500 - s["out"] > 0
    assert any("still queued at the interruption" in x for x in s["notes"])
    assert not out.exists()
    assert not list(tmp_path.glob("*.partial-*"))


def test_progress_line_on_a_tty(tmp_path):
    out = tmp_path / "out.pcap"
    head, recs = feeder(3000)
    master, slave = pty.openpty()
    proc = subprocess.Popen([REPLAY_BIN, "-", str(out), "--progress",
                             "0.05"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    proc.stdin.write(head)
    for i in range(0, len(recs), 1024):   # a capture still being written
        proc.stdin.write(b"".join(recs[i:i + 1024]))
        proc.stdin.flush()
        time.sleep(0.2)
    proc.stdin.close()
    proc.wait(timeout=30)
    so = proc.stdout.read()
    err = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    assert proc.returncode == 0, err
    assert b"packets in" in err and b"s elapsed" in err, err
    assert summary(so.decode())["in"] == 3000


def test_no_progress_line_off_a_tty(tmp_path):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, n=3000)
    proc = run(inp, out, "--progress", "0")
    assert proc.returncode == 0 and proc.stderr == ""
    proc = run(inp, out)
    assert proc.returncode == 0 and "packets in" not in proc.stderr


# ----------------------------------------------------------------- notes

def test_note_burst_smaller_than_frames(tmp_path):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, n=200, size=1514)
    s = ok_run(inp, out, "--tbf", "rate 10mbit burst 1000 limit 100kb")
    assert s["by_cause"]["tbf_oversize"] == 200
    note = [n for n in s["notes"] if "tbf_oversize" in n]
    assert len(note) == 1, s["notes"]
    assert "burst 1000 bytes" in note[0] and "1514 bytes" in note[0]
    s = ok_run(inp, out, "--tbf", "rate 10mbit burst 2000 limit 100kb")
    assert not [n for n in s["notes"] if "tbf_oversize" in n]


def test_note_jitter_reorders(tmp_path):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, n=1000, gap=100_000)      # 0.1 ms apart, 5 ms jitter
    s = ok_run(inp, out, "--netem", "delay 20ms 5ms", "--seed", "3")
    assert s["out_of_order"] > s["out"] // 2
    assert [n for n in s["notes"] if "noreorder" in n], s["notes"]
    s = ok_run(inp, out, "--netem", "delay 20ms 5ms noreorder", "--seed",
               "3")
    assert s["out_of_order"] == 0
    assert not [n for n in s["notes"] if "noreorder" in n]


# ------------------------------------------------ times past 2038 (15.3)

def test_pcap_seconds_past_2038(tmp_path):
    """pcap seconds are unsigned: 2147483658 s (2038) is not 1901."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    t0 = 2147483658 * S
    _, ts = capture(inp, n=50, t0=t0, nano=False)
    s = ok_run(inp, out, "--netem", "delay 1ms")
    assert s["min"] == s["max"] == 1 * MS
    assert [t for t, _ in pcaplib.read(str(out))[1]] == \
        [t + 1 * MS for t in ts]


def test_pcap_last_second_plus_delay(tmp_path):
    """A capture at 0xFFFFFFFF s with delay 2s: the delay is kept (the
    summary), and the output, which cannot say 2106 + 2 s, says the last
    time it can, never a wrapped early one."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    _, ts = capture(inp, n=5, gap=1000, t0=0xFFFFFFFF * S)
    s = ok_run(inp, out, "--netem", "delay 2s")
    assert s["min"] == s["max"] == 2 * S
    got = [t for t, _ in pcaplib.read(str(out))[1]]
    assert got == [0xFFFFFFFF * S + S - 1] * 5
    assert [n for n in s["notes"] if "2106" in n], s["notes"]


def test_pcapng_64bit_times(tmp_path):
    """pcapng holds 64-bit times: 2300 is exact inside, refused past the
    clock's 2^63 ns (year 2262) with one line and no OUT."""
    frames = frames_mixed(20)
    inp, out = tmp_path / "in.pcapng", tmp_path / "out.pcap"
    t0 = (1 << 62) + 123
    write_pcapng(str(inp), frames, [t0 + i * MS for i in range(20)])
    s = ok_run(inp, out, "--netem", "delay 5ms")
    assert s["in"] == s["out"] == 20
    assert s["min"] == s["max"] == 5 * MS
    # the last nanosecond the clock takes, plus 2 s: no wrap
    write_pcapng(str(inp), frames[:1], [(1 << 63) - 1])
    s = ok_run(inp, out, "--netem", "delay 2s")
    assert s["out"] == 1 and s["min"] == s["max"] == 2 * S
    write_pcapng(str(inp), frames, [(1 << 63) + i for i in range(20)])
    out2 = tmp_path / "out2.pcap"
    proc = run(inp, out2, "--netem", "delay 5ms")
    assert proc.returncode == 2
    assert "record 1" in proc.stderr and "2262" in proc.stderr
    assert not out2.exists()

"""The drop capture and the packet log of dpdk-shaper-replay (issue 60):
offline every dropped frame is in the pcapng file, with its cause, byte
for byte up to snaplen, and the packet log says what became of each
input frame, matching the output capture and the drop capture."""
import collections
import csv
import json
import os
import random
import subprocess

import pytest

import pcaplib
import pcapng_read
from conftest import REPLAY_BIN
from test_classes import frame
from test_offline import T0, ok_run, run

# five causes at once: the policer, the port's tbf limit (pushed out of
# pfifo_fast), netem's loss, a class's fq_codel (CoDel), and --mtu
FIVE = ["--mtu", "1500",
        "--police", "rate 50mbit burst 20kb",
        "--tbf", "rate 20mbit burst 10kb limit 30kb",
        "--netem", "loss 5%",
        "--class", "fq", "dst_ip 10.1.0.0/16",
        "--class-queue", "fq", "fq_codel target 1ms interval 5ms",
        "--class-tbf", "fq", "rate 5mbit burst 5kb limit 1mb"]
CAUSES = {"policed", "tbf_limit", "lost", "codel", "oversize"}


def offered(n=12000, mbit=60, seed=5):
    """n frames of 60..1500 bytes (every 97th 1600: above --mtu), a third
    to 10.1.0.1 (class fq), at `mbit` Mbit/s; the frame's UDP sequence
    number is its index."""
    rng = random.Random(seed)
    frames, ts, t = [], [], 0
    for i in range(n):
        size = 1600 if i % 97 == 0 else rng.randint(60, 1500)
        dst = (10, 1, 0, 1) if i % 3 == 0 else (10, 2, 0, 1)
        frames.append(frame(dst, i, size))
        ts.append(T0 + t)
        t += size * 8 * 1000 // mbit
    return frames, ts


def tshark_comments(path):
    proc = subprocess.run(["tshark", "-r", str(path), "-T", "fields",
                           "-e", "frame.comment"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.fixture(scope="module")
def five(tmp_path_factory):
    d = tmp_path_factory.mktemp("five")
    frames, ts = offered()
    pcaplib.write(str(d / "in.pcap"), frames, ts, nano=True)
    s = ok_run(d / "in.pcap", d / "out.pcap", *FIVE,
               "--capture-drops", str(d / "drops.pcapng"),
               "--packet-log", str(d / "log.csv"),
               "--stats-file", str(d / "stats.json"))
    with open(d / "stats.json") as f:
        stats = json.load(f)
    with open(d / "log.csv") as f:
        log = list(csv.DictReader(f))
    return {"dir": d, "frames": frames, "ts": ts, "summary": s,
            "stats": stats, "drops": pcapng_read.read(d / "drops.pcapng"),
            "out": pcaplib.read(str(d / "out.pcap"))[1], "log": log}


def test_capture_counts_equal_the_stats_file_by_cause(five):
    """tshark reads the file; its comments' causes counted are the stats
    file's drops by cause, all five of them, and nothing else."""
    comments = tshark_comments(five["dir"] / "drops.pcapng")
    by_cause = collections.Counter(
        pcapng_read.comment_fields(c)["cause"] for c in comments)
    drops = five["stats"]["ports"]["0"]["drops"]
    assert set(by_cause) == CAUSES, by_cause
    assert by_cause == {k: v for k, v in drops.items() if v}, drops
    assert len(comments) == len(five["drops"]) == five["summary"]["drops"]


def test_captured_frames_are_the_input_frames_up_to_snaplen(five):
    """Each captured frame is its input frame's first 128 bytes, with its
    length; each comment names port 0, shard 0, and the class fq for the
    class's CoDel drops only."""
    seen = set()
    for iface, _, orig, data, comment in five["drops"]:
        seq = pcaplib.seq_of(data)
        f = five["frames"][seq]
        assert iface == 0 and orig == len(f)
        assert data == f[:128]
        assert seq not in seen
        seen.add(seq)
        c = pcapng_read.comment_fields(comment)
        assert c["port"] == "0" and c["shard"] == "0", comment
        assert (c.get("class") == "fq") == (c["cause"] == "codel"), comment
        assert ("band" in c) == (c["cause"] == "tbf_limit"), comment


def test_capture_times_within_the_run_and_in_order(five):
    """Each drop is stamped with its instant: no earlier than its frame's
    arrival, within the run, and the file's times never go back."""
    times = [t for _, t, _, _, _ in five["drops"]]
    assert times == sorted(times)
    end = max(five["ts"][-1], five["out"][-1][0])
    for _, t, _, data, _ in five["drops"]:
        assert five["ts"][pcaplib.seq_of(data)] <= t <= end


def test_packet_log_matches_both_captures(five):
    """One line per input frame, in order; its sent lines are the output
    capture's frames (departure == output timestamp to the ns, sojourn
    == departure - arrival), its dropped lines the drop capture's (cause
    and instant)."""
    log = five["log"]
    assert [int(e["index"]) for e in log] == list(range(len(five["frames"])))
    for e, t in zip(log, five["ts"]):
        assert int(e["arrival_ns"]) == t
    sent = {int(e["index"]): e for e in log if e["fate"] == "sent"}
    assert len(sent) == len(five["out"])
    for t, f in five["out"]:
        e = sent[pcaplib.seq_of(f)]
        assert int(e["departure_ns"]) == t
        assert int(e["sojourn_ns"]) == t - int(e["arrival_ns"])
    dropped = {int(e["index"]): e for e in log if e["fate"] != "sent"}
    assert len(dropped) == len(five["drops"])
    for _, t, _, data, comment in five["drops"]:
        e = dropped[pcaplib.seq_of(data)]
        assert e["fate"] == pcapng_read.comment_fields(comment)["cause"]
        assert int(e["dropped_ns"]) == t
        assert e["departure_ns"] == ""
    # the class column: the class's frames (to 10.1.0.1) only
    for e, f in zip(log, five["frames"]):
        if e["fate"] != "oversize":
            assert (e["class"] == "fq") == (f[30:34] == bytes([10, 1, 0, 1]))


def test_packet_log_flags(tmp_path):
    """netem's duplicate, corrupt, reorder and ECN marks show in the
    flags of the frames they touched, and the sums are the summary's."""
    frames = [pcaplib.eth_ipv4(2, 200, i) for i in range(4000)]  # ECT(0)
    ts = [T0 + i * 100_000 for i in range(4000)]
    pcaplib.write(str(tmp_path / "in.pcap"), frames, ts, nano=True)
    s = ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap", "--netem",
               "delay 1ms reorder 10% duplicate 5% corrupt 5% "
               "loss 5% ecn seed 3",
               "--packet-log", str(tmp_path / "log.csv"))
    with open(tmp_path / "log.csv") as f:
        log = list(csv.DictReader(f))
    assert len(log) == 4000
    n = {k: sum(int(e[k]) for e in log)
         for k in ("duplicated", "corrupted", "ecn_marked")}
    assert n["duplicated"] == s["duplicated"] > 0, (n, s)
    # the summary counts the copies' marks and changes too, a line is
    # its input frame's (and a corruption of the bits a mark rewrites
    # is not seen): most of them, never more
    for k in ("ecn_marked", "corrupted"):
        assert 0.8 * s[k] <= n[k] <= s[k], (k, n, s)
    assert sum(int(e["reordered"]) for e in log) > 0
    # `ecn`: an ECN-capable frame is marked where it would be lost
    assert all(e["fate"] == "sent" for e in log)


def test_capture_limit_ends_the_file_cleanly(tmp_path):
    """A 16kb limit: the file holds what fits, whole blocks, tshark reads
    it; snaplen 64 keeps 64 bytes."""
    frames, ts = offered(n=3000)
    pcaplib.write(str(tmp_path / "in.pcap"), frames, ts, nano=True)
    ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap", *FIVE,
           "--capture-drops", str(tmp_path / "d.pcapng"),
           "--capture-snaplen", "64", "--capture-limit", "16kb")
    size = os.path.getsize(tmp_path / "d.pcapng")
    assert 15 * 1024 < size <= 16 * 1024
    got = pcapng_read.read(tmp_path / "d.pcapng")
    assert len(tshark_comments(tmp_path / "d.pcapng")) == len(got) > 50
    assert all(len(d) == min(64, orig) for _, _, orig, d, _ in got)
    assert any(len(d) == 64 for _, _, _, d, _ in got)


@pytest.mark.parametrize("args,word", [
    (["--capture-drops", "/nonexistent/dir/d.pcapng"], "/nonexistent"),
    (["--capture-drops", "DIR"], "is a directory"),
    (["--capture-snaplen", "0"], "1..65535"),
    (["--capture-snaplen", "65536"], "1..65535"),
    (["--capture-limit", "1"], "limit"),
    (["--packet-log", "/nonexistent/dir/l.csv"], "/nonexistent"),
    (["--capture-drops", "IN"], "is the input"),
    (["--capture-drops", "OUT"], "is the input, the output"),
    (["--packet-log", "IN"], "is the input"),
])
def test_bad_capture_options(tmp_path, args, word):
    """One clear line naming what is wrong, exit 2, no output written."""
    names = {"DIR": str(tmp_path), "IN": str(tmp_path / "in.pcap"),
             "OUT": str(tmp_path / "out.pcap")}
    args = [names.get(a, a) for a in args]
    pcaplib.write(str(tmp_path / "in.pcap"), [pcaplib.eth_ipv4(0, 100, 0)],
                  [T0], nano=True)
    before = open(tmp_path / "in.pcap", "rb").read()
    proc = run(tmp_path / "in.pcap", tmp_path / "out.pcap", *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0], proc.stderr
    assert not os.path.exists(tmp_path / "out.pcap")
    assert open(tmp_path / "in.pcap", "rb").read() == before

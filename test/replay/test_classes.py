"""Per-class profiles (issue 13) in dpdk-shaper-replay: match rules send
traffic to classes, each with its own rate and delay; what matches no
class passes as without classes.

The virtual clock makes the departures exact: a class's packets offered
below its rate leave exactly its netem delay after they arrived, and a
class offered twice its rate leaves at its rate."""
import json
import os
import re
import struct
import subprocess

import pytest

import pcaplib
from conftest import LINK, REPLAY_BIN, REPO, replay_args

MS = 10**6
S = 10**9
T0 = 1_700_000_000 * S

# class -> (destination, netem delay in ms, tbf rate in bit/s)
CLASSES = {
    "east": ((10, 1, 0, 7), 20, 4_000_000),
    "west": ((10, 2, 3, 9), 50, 2_000_000),
    "north": ((10, 3, 200, 1), 120, 1_000_000),
}
OTHER = (192, 168, 7, 7)          # matches no class
LEN = 1000                        # frame bytes


@pytest.fixture(scope="module", autouse=True)
def replay_built():
    if not os.path.exists(REPLAY_BIN):
        pytest.fail("%s is missing: build first (ninja -C build)"
                    % REPLAY_BIN)


def frame(dst, seq, length=LEN):
    f = bytearray(pcaplib.eth_ipv4(0, length, seq))
    f[30:34] = bytes(dst)
    f[24:26] = b"\0\0"
    f[24:26] = struct.pack("!H", pcaplib._csum(bytes(f[14:34])))
    return bytes(f)


def dst_of(f):
    return tuple(f[30:34])


def class_args(rates=True, delays=True):
    args = []
    for name, (dst, delay, rate) in CLASSES.items():
        prefix = "%d.%d.0.0/16" % dst[:2]
        args += ["--class", name, "dst_ip " + prefix]
        if delays:
            args += ["--class-netem", name, "delay %dms" % delay]
        if rates:
            args += ["--class-tbf", name,
                     "rate %d burst 10kb limit 200kb" % rate]
    return args


def run(inp, out, *args):
    proc = subprocess.run([REPLAY_BIN, str(inp), str(out)] +
                          replay_args(args),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "conservation:" in proc.stdout and \
        "VIOLATED" not in proc.stdout, proc.stdout
    # the clock never had to guess (docs/replay.md)
    assert "clock anomalies" not in proc.stdout, proc.stdout
    return proc


def write_input(path, pps, seconds, with_other=True):
    """Every destination at pps packets per second, interleaved."""
    frames, ts = [], []
    dsts = [c[0] for c in CLASSES.values()] + ([OTHER] if with_other
                                               else [])
    gap = S // pps
    for i in range(pps * seconds):
        for k, d in enumerate(dsts):
            frames.append(frame(d, i * len(dsts) + k))
            ts.append(T0 + i * gap + k * 1000)
    pcaplib.write(str(path), frames, ts, nano=True)
    return list(zip(ts, frames))


@LINK
def test_each_class_leaves_with_exactly_its_delay(tmp_path):
    # 100 pps of 1000 bytes: 0.8 Mbit/s, under every class's rate
    sent = write_input(tmp_path / "in.pcap", 100, 3)
    out = tmp_path / "out.pcap"
    proc = run(tmp_path / "in.pcap", out, *class_args())
    _, got = pcaplib.read(str(out))
    assert len(got) == len(sent), proc.stdout
    arrival = {f: t for t, f in sent}
    delay_of = {c[0]: c[1] * MS for c in CLASSES.values()}
    delay_of[OTHER] = 0
    seen = {d: 0 for d in delay_of}
    for t, f in got:
        d = dst_of(f)
        # unmatched traffic untouched: same bytes, no delay
        assert f in arrival, "a frame was changed"
        assert t - arrival[f] == delay_of[d], (d, t - arrival[f])
        seen[d] += 1
    assert all(n == 300 for n in seen.values()), seen
    for name in CLASSES:
        assert re.search(r"^class %s: in 300 packets, out 300 packets"
                         % name, proc.stdout, re.M), proc.stdout


@LINK
def test_each_class_gets_its_rate(tmp_path):
    # 500 pps of 1000 bytes: 4 Mbit/s offered to each class for 10 s
    write_input(tmp_path / "in.pcap", 500, 10)
    out = tmp_path / "out.pcap"
    stats = tmp_path / "stats.json"
    proc = run(tmp_path / "in.pcap", out, *class_args(delays=True),
               "--stats-file", str(stats))
    _, got = pcaplib.read(str(out))
    by = {}
    for t, f in got:
        by.setdefault(dst_of(f), []).append(t)
    for name, (dst, delay, rate) in CLASSES.items():
        ts = by[dst]
        # the first packet finds a full bucket: its delay alone
        assert ts[0] == T0 + delay * MS + list(CLASSES).index(name) * 1000
        if rate >= 4_000_000:
            continue   # offered at its rate: nothing to shape
        # from 1 s to 10 s after the start: the class's rate
        win = [t for t in ts if T0 + 1 * S <= t < T0 + 10 * S]
        mbit = len(win) * LEN * 8 / ((win[-1] - win[0]) / S)
        assert abs(mbit - rate) / rate < 0.01, (name, mbit, rate)
    # the unmatched traffic was not shaped: all of it, at once
    assert len(by[OTHER]) == 5000
    st = json.load(open(stats))
    cls = st["ports"]["0"]["classes"]
    assert set(cls) == set(CLASSES)
    for name, c in cls.items():
        assert c["in_packets"] == 5000
        assert c["in_packets"] == c["packets"] + c["dropped"] + c["queued"]
        assert c["packets"] == len(by[CLASSES[name][0]])
    assert cls["north"]["drops"]["tbf_limit"] > 0
    assert cls["east"]["dropped"] == 0
    # the port's drops are its classes' (nothing else dropped)
    assert st["ports"]["0"]["dropped"] == sum(c["dropped"]
                                              for c in cls.values())


def test_reruns_byte_identical(tmp_path):
    write_input(tmp_path / "in.pcap", 400, 2)
    outs = []
    for i in range(2):
        out = tmp_path / ("out%d.pcap" % i)
        run(tmp_path / "in.pcap", out, *class_args(),
            "--netem", "delay 1ms")
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert len(outs[0]) > 24


@LINK
@pytest.mark.q4_xfail(reason=(
    "classes at 4 shards (a and b on shards 0 and 2): each shard's "
    "DRR shares the link's tbf evenly, a:b 750:750 (1.0) in 2-5 s "
    "where one queue gives 1125:375 (3.0, the quanta); said at "
    "start (shp_classes_link_note)"))
def test_port_tbf_caps_the_sum_drr_shares(tmp_path):
    """Two classes without rates of their own at a port tbf of 4 Mbit/s,
    both offered 4 Mbit/s: deficit round robin gives them the bucket in
    the ratio of their quanta."""
    frames, ts = [], []
    a, b = (10, 1, 0, 1), (10, 2, 0, 1)
    for i in range(500 * 6):
        for k, d in enumerate((a, b)):
            frames.append(frame(d, 2 * i + k))
            ts.append(T0 + i * (S // 500) + k * 1000)
    pcaplib.write(str(tmp_path / "in.pcap"), frames, ts, nano=True)
    out = tmp_path / "out.pcap"
    run(tmp_path / "in.pcap", out,
        "--class", "a", "dst_ip 10.1.0.0/16", "--class-quantum", "a", "3000",
        "--class", "b", "dst_ip 10.2.0.0/16", "--class-quantum", "b", "1000",
        "--class-queue", "a", "pfifo_fast", "--ring-size", "4096",
        "--tbf", "rate 4mbit burst 10kb limit 10mb")
    _, got = pcaplib.read(str(out))
    win = [f for t, f in got if T0 + 2 * S <= t < T0 + 5 * S]
    na = sum(1 for f in win if dst_of(f) == a)
    nb = sum(1 for f in win if dst_of(f) == b)
    assert abs(na / nb - 3.0) < 0.1, (na, nb)
    # the sum is the port's rate
    assert abs((na + nb) * LEN * 8 / 3 - 4e6) / 4e6 < 0.01


@LINK
@pytest.mark.q4_xfail(reason=(
    "classes at 4 shards (lo and hi on shards 0 and 2): a class's "
    "prio holds within a shard only, hi 500 / lo 500 frames in 1-3 "
    "s where one queue gives 1000 / 0; said at start "
    "(shp_classes_link_note)"))
def test_strict_priority_first(tmp_path):
    frames, ts = [], []
    a, b = (10, 1, 0, 1), (10, 2, 0, 1)
    for i in range(500 * 4):
        for k, d in enumerate((a, b)):
            frames.append(frame(d, 2 * i + k))
            ts.append(T0 + i * (S // 500) + k * 1000)
    pcaplib.write(str(tmp_path / "in.pcap"), frames, ts, nano=True)
    out = tmp_path / "out.pcap"
    run(tmp_path / "in.pcap", out,
        "--class", "lo", "dst_ip 10.1.0.0/16", "--class-prio", "lo", "1",
        "--class", "hi", "dst_ip 10.2.0.0/16",
        "--tbf", "rate 4mbit burst 10kb limit 10mb")
    _, got = pcaplib.read(str(out))
    win = [f for t, f in got if T0 + 1 * S <= t < T0 + 3 * S]
    # hi offers 4 Mbit/s, the whole bucket: lo gets nothing meanwhile
    assert sum(1 for f in win if dst_of(f) == b) >= 990
    assert sum(1 for f in win if dst_of(f) == a) <= 2


@pytest.mark.parametrize("args,word", [
    (["--class", "x", "dst_ipp 10.0.0.0/8"], "dst_ipp"),
    (["--class", "x", "dst_ip 10.0.0.0/33"], "10.0.0.0/33"),
    (["--class", "x", "dst_port 90-80"], "90-80"),
    (["--class-netem", "x", "delay 1ms"], "x"),
    (["--class", "x", "dst_ip 10.0.0.0/8", "--class", "y",
      "dst_ip 10.0.0.0/8"], "dst_ip"),
    (["--class", "x", "dst_ip 10.0.0.0/8", "--class-netem", "x",
      "delay 1parsec"], "1parsec"),
    (["--class", "x", "dst_ip 10.0.0.0/8", "--class-prio", "x", "9"], "9"),
    (["--class", "x", "dst_ip 10.0.0.0/8", "--class-quantum", "x", "0"],
     "0"),
    (["--class", "x"], "--class"),
    # the tool has one port, 0
    (["--class", "x", "dst_ip 10.0.0.0/8", "--class-ports", "x", "0,1"],
     "no port 1"),
])
def test_bad_class_input(tmp_path, args, word):
    write_input(tmp_path / "in.pcap", 10, 1)
    out = tmp_path / "out.pcap"
    proc = subprocess.run([REPLAY_BIN, str(tmp_path / "in.pcap"), str(out)]
                          + args, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert word in lines[0], lines[0]
    assert not out.exists()


def test_class_config_file(tmp_path):
    sent = write_input(tmp_path / "in.pcap", 100, 1)
    ini = tmp_path / "c.ini"
    ini.write_text("[class east]\nmatch = dst_ip 10.1.0.0/16, "
                   "dst_ip 10.3.0.0/16\nnetem = delay 20ms\n"
                   "tbf = rate 4mbit burst 10kb limit 100kb\nquantum = 3000\n"
                   "[class west]\nmatch = dst_ip 10.2.0.0/16\n"
                   "netem = delay 50ms\n")
    out = tmp_path / "out.pcap"
    proc = run(tmp_path / "in.pcap", out, "--config", str(ini))
    _, got = pcaplib.read(str(out))
    arrival = {f: t for t, f in sent}
    want = {(10, 1, 0, 7): 20 * MS, (10, 3, 200, 1): 20 * MS,
            (10, 2, 3, 9): 50 * MS, OTHER: 0}
    assert len(got) == len(sent)
    for t, f in got:
        assert t - arrival[f] == want[dst_of(f)]
    assert "class east: match 'dst_ip 10.1.0.0/16' match " \
           "'dst_ip 10.3.0.0/16'" in proc.stdout
    bad = tmp_path / "bad.ini"
    bad.write_text("[class east]\nmatch = dst_ip 10.1.0.0/16\n"
                   "colour = blue\n")
    p = subprocess.run([REPLAY_BIN, str(tmp_path / "in.pcap"), str(out),
                        "--config", str(bad)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "colour" in p.stderr, p.stderr


def many_classes_ini(path, n, seed=4096):
    """n classes c0..c(n-1), each matching a random /24 of its own (all
    distinct), with no stage of its own; returns the /24s in order."""
    import random
    rnd = random.Random(seed)
    nets = []
    seen = set()
    while len(nets) < n:
        a = (rnd.randrange(1, 224), rnd.randrange(256), rnd.randrange(256))
        if a[0] in (10, 127, 192) or a in seen:
            continue
        seen.add(a)
        nets.append(a)
    with open(path, "w") as f:
        for i, a in enumerate(nets):
            f.write("[class c%d]\nmatch = dst_ip %d.%d.%d.0/24\n" % (i, *a))
    return nets


def test_4096_classes_load_and_classify(tmp_path):
    """SHP_MAX_CLASSES classes (rules over random distinct /24s) load in
    the offline tool; packets sent to a few chosen ones are counted in
    those classes and no other, and leave with their own delay (two of
    the chosen get a netem); the 4097th class is refused with one line,
    exit 2."""
    ini = tmp_path / "many.ini"
    nets = many_classes_ini(str(ini), 4097)
    text = ini.read_text()
    cut = text.index("[class c4096]")
    ini.write_text(text[:cut] + "[class c17]\nnetem = delay 7ms\n"
                   "[class c4095]\nnetem = delay 3ms\n")
    # class -> packets sent to it (a host in its /24)
    chosen = {0: 3, 17: 5, 1000: 2, 2222: 7, 4095: 4}
    delay = {17: 7 * MS, 4095: 3 * MS}
    frames, ts = [], []
    for k, (c, cnt) in enumerate(sorted(chosen.items())):
        for j in range(cnt):
            frames.append(frame(nets[c] + (1 + j,), len(frames)))
            ts.append(T0 + len(ts) * 100_000)
    frames.append(frame(OTHER, len(frames)))
    ts.append(T0 + len(ts) * 100_000)
    pcaplib.write(str(tmp_path / "in.pcap"), frames, ts, nano=True)
    stats = tmp_path / "s.json"
    out = tmp_path / "out.pcap"
    run(tmp_path / "in.pcap", out, "--config", str(ini),
        "--stats-file", str(stats))
    classes = json.load(open(str(stats)))["ports"]["0"]["classes"]
    assert len(classes) == 4096
    for name, c in classes.items():
        want = chosen.get(int(name[1:]), 0)
        assert (c["in_packets"], c["packets"]) == (want, want), (name, c)
    arrival = dict(zip(frames, ts))
    _, got = pcaplib.read(str(out))
    assert len(got) == len(frames)
    by_net = {nets[c]: c for c in chosen}
    for t, f in got:
        c = by_net.get(dst_of(f)[:3])
        assert t - arrival[f] == delay.get(c, 0), (dst_of(f), c)

    ini.write_text(text)   # all 4097
    p = subprocess.run([REPLAY_BIN, str(tmp_path / "in.pcap"), str(out),
                        "--config", str(ini)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "c4096" in lines[0] and \
        "more than 4096 classes" in lines[0], p.stderr


@pytest.mark.parametrize("n", [1024, 4096])
def test_many_classes_each_with_a_netem(tmp_path, n):
    """n classes, each with a netem of its own (issue 30, defect 4): an
    idle netem costs no time calendar, so they load in memory the tool
    sizes from what it builds (no more than dpdk-shaper's -m 2048 would
    give), and every packet leaves exactly its class's delay after it
    came. One class is sent enough at once to be given a calendar while
    the run goes; its packets keep their exact delay across the change."""
    ini = tmp_path / "many.ini"
    nets = many_classes_ini(str(ini), n)
    delay = {c: (1 + c % 5) * MS for c in range(n)}
    with open(str(ini), "a") as f:
        for c in range(n):
            f.write("[class c%d]\nnetem = delay %dms\n"
                    % (c, delay[c] // MS))
    busy = 7
    frames, ts = [], []
    for c in range(n):                       # one to every class
        frames.append(frame(nets[c] + (1,), len(frames)))
        ts.append(T0 + len(ts) * 10_000)
    t = ts[-1]
    for j in range(3000):                    # then a rush to one
        frames.append(frame(nets[busy] + (2 + j % 200,), len(frames)))
        ts.append(t + (j + 1) * 1_000)
    pcaplib.write(str(tmp_path / "in.pcap"), frames, ts, nano=True)
    stats = tmp_path / "s.json"
    out = tmp_path / "out.pcap"
    p = run(tmp_path / "in.pcap", out, "--config", str(ini),
            "--stats-file", str(stats))
    m = re.search(r"memory: +(\d+) MB of DPDK's heap.*; (\d+) class netems "
                  r"got a time calendar", p.stdout)
    assert m, p.stdout[-2000:]
    assert int(m.group(1)) <= 2048, m.group(0)
    assert int(m.group(2)) >= 1, m.group(0)
    classes = json.load(open(str(stats)))["ports"]["0"]["classes"]
    assert len(classes) == n
    for name, c in classes.items():
        want = 1 + (3000 if int(name[1:]) == busy else 0)
        assert (c["in_packets"], c["packets"]) == (want, want), (name, c)
    arrival = dict(zip(frames, ts))
    _, got = pcaplib.read(str(out))
    assert len(got) == len(frames)
    by_net = {nets[c]: c for c in range(n)}
    for t, f in got:
        c = by_net[dst_of(f)[:3]]
        assert t - arrival[f] == delay[c], (dst_of(f), c)


def test_classes_out_of_memory_is_a_runtime_error(tmp_path):
    """Classes the memory cannot hold (fq_codel's 65536 flows each, which
    the tool does not size for) fail to build with one line naming the
    class and exit status 1, a runtime error as docs/replay.md says and
    as dpdk-shaper gives, not 2 (bad input)."""
    ini = tmp_path / "fat.ini"
    nets = many_classes_ini(str(ini), 64)
    with open(str(ini), "a") as f:
        for c in range(64):
            f.write("[class c%d]\nqueue = fq_codel flows 65536\n" % c)
    pcaplib.write(str(tmp_path / "in.pcap"), [frame(nets[0] + (1,), 0)],
                  [T0], nano=True)
    p = subprocess.run([REPLAY_BIN, str(tmp_path / "in.pcap"),
                        str(tmp_path / "out.pcap"), "--config", str(ini)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(r"class c\d+: .*memory",
                                         lines[0]), p.stderr
    assert not (tmp_path / "out.pcap").exists()


def test_failed_eal_start_leaves_no_run_dir(tmp_path):
    """An EAL that cannot start (here: no address space for its memory)
    is exit 1 with one line, and the run directory it made,
    /var/run/dpdk/replay-PID, is removed."""
    import resource

    binary = REPLAY_BIN
    with open(binary, "rb") as f:
        if b"__asan_init" in f.read():
            # a sanitizer build reserves terabytes of address space: a
            # limit on it cannot fail the EAL alone. The plain build's
            # program runs the same code (and is always built first).
            binary = os.path.join(REPO, "build", "tools",
                                  "dpdk-shaper-replay")
            assert os.path.exists(binary), "build first: %s" % binary
    pcaplib.write(str(tmp_path / "in.pcap"), [frame(OTHER, 0)], [T0],
                  nano=True)

    def small():
        resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))

    p = subprocess.Popen([binary, str(tmp_path / "in.pcap"),
                          str(tmp_path / "out.pcap"), "--mbufs", "100000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=small)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1, err
    assert "cannot start DPDK's EAL" in err, err
    base = "/var/run/dpdk" if os.geteuid() == 0 else os.path.join(
        os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")
    left = os.path.join(base, "replay-%d" % p.pid)
    exists = os.path.exists(left)
    if exists:
        import shutil
        shutil.rmtree(left, ignore_errors=True)
    assert not exists, left

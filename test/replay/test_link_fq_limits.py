"""fq_codel's `limit` and `memory_limit` on a link's shards (issue 56,
"one link, one profile"): they bound the link's backlog, not each
shard's, so a profile drops what one queue drops at --queues 1, 2 and 4,
however RSS spreads the load (evenly, 90/10, all on one shard).

Each shard publishes its packets, its memory and its fattest bucket's
backlog when they change (once a call) and reads the others' once a
poll; over the link's limits the shard holding the link's fattest
bucket sheds, as one queue's overflow drop (Linux fq_codel_drop) would
(sch_fq_codel.c). CoDel is kept out of it (target 10s): every drop is
an overflow drop. The link drops what one queue drops, within a burst
(32), and the sojourn max is within one burst of the link's time (32
frames of 1000 bytes at 10 Mbit/s, 25.6 ms) of the one-queue figure.
With limits a shard's own, as before, the link held N times the limit:
spread evenly, `limit 100` dropped 3541 at 2 shards and 3347 at 4 (3640
on one queue), its sojourn max 278.2 and 489.4 ms (145.4 on one);
`memory_limit 150kb` 3613 and 3491 (3676), 190.2 and 373.8 ms (128.6).
Spread 90/10 or on one shard the light shards never fill, and old and
new agree."""
import json
import random

import pytest

import pcaplib
from test_shards import flow_frame, flows_on, ok_run, shards_sum_to_port

MS = 10**6
T0 = 1_700_000_000 * 10**9
FRAME = 1000
RATE = 10_000_000                    # the tbf's, bit/s
BURST_NS = 32 * FRAME * 8 * 10**9 // RATE   # one burst of the link's time
TBF = "rate 10mbit burst 10kb limit 10mb"
NOCODEL = " target 10s interval 20s"


def capture(path, spread, seconds=3, seed=11, mult=2):
    """mult times the rate (20 Mbit/s) of 1000-byte frames of 64 flows:
    spread "even" (flows at random), "90/10" (a flow of shard 0 of 4
    carries 90% of the frames) or "one" (every flow on shard 0 of 4, so
    of 2 too). The frame count."""
    rnd = random.Random(seed)
    gap = FRAME * 8 * 10**9 // int(mult * RATE)
    n = seconds * 10**9 // gap
    heavy = flows_on(4, 0, 1)[0]
    on0 = flows_on(4, 0, 8)
    frames, ts = [], []
    for i in range(n):
        if spread == "even":
            f = rnd.randrange(64)
        elif spread == "90/10":
            f = heavy if rnd.random() < 0.9 else rnd.randrange(64)
        else:
            f = rnd.choice(on0)
        frames.append(flow_frame(f, FRAME, i))
        ts.append(T0 + i * gap)
    pcaplib.write(str(path), frames, ts, nano=True)
    return n


def run(tmp_path, inp, queue, q):
    out, st = tmp_path / ("out%d.pcap" % q), tmp_path / ("st%d" % q)
    ok_run(inp, out, "--tbf", TBF, "--queue", queue, "--queues", str(q),
           "--stats-file", str(st))
    with open(st) as f:
        port = json.load(f)["ports"]["0"]
    if q > 1:
        shards_sum_to_port(port)
    return port


@pytest.mark.parametrize("spread", ["even", "90/10", "one"])
@pytest.mark.parametrize("queue", [
    "fq_codel limit 100" + NOCODEL,
    "fq_codel memory_limit 150kb" + NOCODEL,
])
def test_fq_limits_are_the_links(tmp_path, queue, spread):
    inp = tmp_path / "in.pcap"
    n = capture(inp, spread)
    one = run(tmp_path, inp, queue, 1)
    # twice the rate: the overflow drops, and bounds the sojourn
    assert one["drops"].get("codel", 0) == 0, one["drops"]
    assert one["drops"]["fq_overlimit"] > 0.3 * n, one["drops"]
    for q in (2, 4):
        port = run(tmp_path, inp, queue, q)
        if spread == "even":
            assert all(s["egress_in"] > 0.1 * n for s in port["shards"]), \
                port["shards"]
        drops = port["drops"]
        print("%s, %s, %d shards: sojourn max %.1f ms (1 shard %.1f), "
              "fq_overlimit %d (1 shard %d)" % (
                  queue, spread, q, port["sojourn_ns"]["max"] / MS,
                  one["sojourn_ns"]["max"] / MS, drops["fq_overlimit"],
                  one["drops"]["fq_overlimit"]))
        # every frame sent or dropped by the overflow, nothing left
        assert drops.get("codel", 0) == 0, drops
        assert port["tx_packets"] + drops["fq_overlimit"] == n, port
        assert sum(drops.values()) == drops["fq_overlimit"], drops
        assert port["queued"] == 0
        # the link drops what one queue drops, give or take a burst
        assert abs(drops["fq_overlimit"] -
                   one["drops"]["fq_overlimit"]) <= 32, (q, drops)
        # and holds what one queue holds
        assert port["sojourn_ns"]["max"] <= \
            one["sojourn_ns"]["max"] + BURST_NS, (q, port["sojourn_ns"])

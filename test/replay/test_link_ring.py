"""The bands' ring-size on a link's shards (issue 56): --ring-size bounds
the link's count of each band, not each shard's, so --queues 2 and 4
refuse what one queue refuses (band_full) and hold what it holds,
however RSS spreads the load (all on one shard, evenly, 90/10).

On one queue ring-size bounds the band's ring, and its consumer's stash
(a burst out of the ring) holds more. A shard enqueuing into band b
takes no more than ring-size less what the link's rings and all its
stashes but the largest hold of b, summed over the shards' counters
once a burst (sch_bands.c, link_room): the tool enqueues a frame at a
time, so the band never holds more than one queue can, ring-size and a
burst, and a shard alone is one queue. With a ring-size a shard, as
before, the link held up to N times it: an even spread over 2 shards at
--ring-size 128 peaked at 298 frames in the band (145 on one queue) and
refused 3473 (3608).
"""
import csv
import json

import pytest

import test_link_limits
import test_link_priority
from test_shards import ok_run, shards_sum_to_port

RING = 128
BURST = 32
TBF = "rate 10mbit burst 10kb limit 10mb"   # the ring binds, not the limit


def run(tmp_path, inp, q):
    """The stats file's port and, from the packet log, the link's peak
    count of each band: a frame is in its band from its arrival to its
    departure (the tool sends at the dequeue: tbf is the root), the
    departures of an instant before its arrivals, as the tool polls."""
    out = tmp_path / ("out%d.pcap" % q)
    st, log = tmp_path / ("st%d" % q), tmp_path / ("log%d.csv" % q)
    ok_run(inp, out, "--tbf", TBF, "--ring-size", str(RING), "--queues",
           str(q), "--stats-file", str(st), "--packet-log", str(log))
    with open(st) as f:
        port = json.load(f)["ports"]["0"]
    if q > 1:
        shards_sum_to_port(port)
    ev = []
    with open(log) as f:
        for row in csv.DictReader(f):
            if row["fate"] == "band_full":
                continue
            b = int(row["band"])
            ev.append((int(row["arrival_ns"]), 1, b))
            if row["fate"] == "sent":
                ev.append((int(row["departure_ns"]), 0, b))
            else:   # flushed at the end
                assert row["fate"] == "flushed", row
    ev.sort()
    held, peak = {}, {}
    for _, arrival, b in ev:
        held[b] = held.get(b, 0) + (1 if arrival else -1)
        peak[b] = max(peak.get(b, 0), held[b])
    return port, peak


def check(tmp_path, inp, name, alone=False):
    """alone: every frame on one shard"""
    one, peak1 = run(tmp_path, inp, 1)
    # the ring binds on one queue
    assert one["drops"]["band_full"] > 1000, one["drops"]
    assert all(v > RING for v in peak1.values()), peak1
    for q in (2, 4):
        port, peak = run(tmp_path, inp, q)
        slack = BURST * (q - 1)   # a stash a shard besides the first
        print("%s, %d shards: band_full %d (1 shard %d), peak %s (1 shard "
              "%s)" % (name, q, port["drops"]["band_full"],
                       one["drops"]["band_full"], peak, peak1))
        assert port["queued"] == 0
        assert set(peak) == set(peak1)
        if alone:   # one queue
            assert peak == peak1
            assert port["drops"] == one["drops"]
            continue
        for b, v in peak.items():
            # within one queue's bound (its ring and a stash), and
            # within a burst of its peak
            assert peak1[b] - BURST <= v <= RING + BURST, \
                (q, b, peak, peak1)
        # one queue's refusals, within a burst a shard
        assert abs(port["drops"]["band_full"] -
                   one["drops"]["band_full"]) <= slack, (q, port["drops"])
        # nothing else drops in its place
        assert {k: v for k, v in port["drops"].items()
                if k not in ("band_full", "flushed")} == \
            {k: v for k, v in one["drops"].items()
             if k not in ("band_full", "flushed")}


@pytest.mark.parametrize("spread", ["one", "even", "90/10"])
def test_ring_size_is_the_links(tmp_path, spread):
    """64 flows of 1000-byte frames at twice tbf's 10 Mbit/s, in one band
    (test_link_limits' captures)."""
    inp = tmp_path / "in.pcap"
    test_link_limits.capture(inp, spread)
    check(tmp_path, inp, spread, alone=spread == "one")


def test_ring_size_is_the_links_per_band(tmp_path):
    """Band 0 at 12 Mbit/s on shard 0's flows, band 2 at 12 on the
    others' (test_link_priority's capture): both bands fill, band 2
    starved, each its own count over the link."""
    inp = tmp_path / "in.pcap"
    test_link_priority.capture(inp, 12, 12)
    check(tmp_path, inp, "band 0 on shard 0, band 2 on the others")

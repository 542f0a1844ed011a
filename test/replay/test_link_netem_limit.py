"""netem's limit on a link's shards (issue 56): the limit, given or the
default one (half the pool), bounds the link's backlog, the sum over its
shards, not each shard's, so that --queues 2 and 4 drop what one queue
drops, however RSS spreads the load (evenly, 90/10, all on one shard).

Each shard publishes what it holds once a call and reads the others'
figures once a poll: a shard may see the others' backlog one poll late,
so the link drops what one queue drops within a burst (32 frames).
With a limit per shard, as before, `delay 50ms limit 100` dropped
nothing at 2 and 4 shards of a load spread evenly (the link held up to
125 frames, 100 a shard allowed), against 20% at one queue."""
import json

import pytest

from test_link_limits import capture
from test_shards import ok_run, shards_sum_to_port

BURST = 32

# 1000-byte frames at 20 Mbit/s (2500 a second, 7500 in all): a delay of
# 50 ms holds 125, the limit 100; behind a rate of 10 Mbit/s (netem's own
# or a tbf's in front, which the link shares) the queue grows until the
# limit, or the default one (half of 1024 mbufs, the byte store off: it
# would keep the frames without their mbufs) drops
PROFILES = [
    ["--netem", "delay 50ms limit 100"],
    ["--netem", "delay 20ms rate 10mbit limit 100"],
    ["--netem", "delay 100ms limit 100",
     "--tbf", "rate 10mbit burst 10kb limit 1mb"],
    ["--netem", "delay 20ms duplicate 20% rate 10mbit limit 100"],
    ["--netem", "delay 20ms rate 10mbit store off", "--mbufs", "1024"],
]


def run(tmp_path, inp, args, q):
    out, st = tmp_path / ("out%d.pcap" % q), tmp_path / ("st%d" % q)
    ok_run(inp, out, *args, "--queues", str(q), "--stats-file", str(st))
    with open(st) as f:
        port = json.load(f)["ports"]["0"]
    if q > 1:
        shards_sum_to_port(port)
    return port


def sent_or_dropped(port, n):
    """every frame and copy sent or dropped, nothing left"""
    assert port["tx_packets"] + sum(port["drops"].values()) == \
        n + port["duplicated"], port
    assert port["queued"] == 0, port


@pytest.mark.parametrize("spread", ["even", "90/10", "one"])
@pytest.mark.parametrize("args", PROFILES, ids=[" ".join(a) for a in PROFILES])
def test_netem_limit_is_the_links(tmp_path, args, spread):
    inp = tmp_path / "in.pcap"
    n = len(capture(inp, spread))
    one = run(tmp_path, inp, args, 1)
    # the limit binds at one queue
    assert one["drops"]["netem_limit"] > 0.1 * n, one["drops"]
    sent_or_dropped(one, n)
    for q in (2, 4):
        port = run(tmp_path, inp, args, q)
        if spread == "even":
            assert all(s["egress_in"] > 0.1 * n for s in port["shards"]), \
                port["shards"]
        sent_or_dropped(port, n)
        print("%s, %s, %d shards: netem_limit %d (1 shard %d), tx %d "
              "(%d)" % (" ".join(args), spread, q,
                        port["drops"]["netem_limit"],
                        one["drops"]["netem_limit"], port["tx_packets"],
                        one["tx_packets"]))
        # nothing else drops in its place (the pool running dry)
        others = sum(v for k, v in port["drops"].items()
                     if k != "netem_limit")
        others1 = sum(v for k, v in one["drops"].items()
                      if k != "netem_limit")
        assert abs(others - others1) <= BURST, (q, port["drops"])
        # the link drops what one queue drops, give or take a burst
        assert abs(port["drops"]["netem_limit"] -
                   one["drops"]["netem_limit"]) <= BURST, \
            (q, port["drops"], one["drops"])
        assert abs(port["tx_packets"] - one["tx_packets"]) <= BURST, \
            (q, port["tx_packets"], one["tx_packets"])

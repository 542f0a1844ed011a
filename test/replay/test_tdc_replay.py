"""The kernel's own tc tests (tdc, test/data/tdc_qdiscs.json) through
dpdk-shaper-replay: each case's arguments as --netem, --tbf or --queue,
its acceptance (exit 0) or refusal (exit 2), and the summary's `qdisc:`
lines read as tdc reads `tc qdisc show` (test/tdc.py). Then the round
trip (the printed parameters given back print the same line) and tc's
bare numbers against their units (the same profile)."""
import pytest

import tdc
from conftest import REPO
from test_offline import run

SAMPLE = REPO + "/test/data/sample.pcap"
CASES = tdc.cases()
# a count of packets sent (the Sent line) is the live program's
# (test/cli/test_tdc.py); the offline summary has the qdisc heads only
LIVE_ONLY = {"7470"}
# lines that do not read back in tc either: tbf's burst printed with the
# overhead or ATM cells counted in (another bucket), fq_codel's noecn
# printed as nothing (ecn, the default, when read)
NOT_ROUND = {"c975", "948c", "b190"}


def replay(tmp_path, kind, text):
    """(accepted, the summary's qdisc lines, the profile line)."""
    p = run(SAMPLE, tmp_path / "out.pcap", "--" + tdc.key(kind), text)
    assert p.returncode in (0, 2), p.stderr
    lines, block = p.stdout.splitlines(), ""
    for i, l in enumerate(lines):
        if l.startswith("qdisc:"):
            block = l + "\n"
            for m in lines[i + 1:]:
                if not m.startswith(" "):
                    break
                block += m + "\n"
    return (p.returncode == 0, block,
            [l for l in lines if l.startswith("profile:")])


def own_line(case, qdiscs):
    names = {"prio", "pfifo_fast"} if case["kind"] in ("prio",
                                                       "pfifo_fast") \
        else {case["kind"]}
    for line in qdiscs.splitlines():
        m = tdc.HEAD.match(line)
        if m and m.group(1) in names:
            return line
    return None


def test_tdc_cases_offline(tmp_path):
    results = []
    for c in CASES:
        if c["id"] in LIVE_ONLY:
            continue
        ok, qdiscs, _ = replay(tmp_path, c["kind"], tdc.text(c))
        results.append((c, tdc.verdict(c, ok, qdiscs)))
    print("tdc offline: " + tdc.report(results))
    failed = ["%s (%s): %s" % (c["id"], c["kind"], v)
              for c, v in results if v is not None]
    assert failed == [], "\n".join(failed)


@pytest.mark.parametrize("case", [c for c in CASES
                                  if int(c["exit"]) == 0 and
                                  c["id"] not in NOT_ROUND | LIVE_ONLY],
                         ids=lambda c: c["id"])
def test_tdc_round_trip_offline(tmp_path, case):
    """show qdisc's parameters given back: the same qdisc line."""
    ok, qdiscs, _ = replay(tmp_path, case["kind"], tdc.text(case))
    line = own_line(case, qdiscs)
    assert ok and line, qdiscs
    kind = tdc.HEAD.match(line).group(1)
    again = dict(case, kind=kind, args=tdc.params(line))
    ok, qdiscs, _ = replay(tmp_path, kind, tdc.text(again))
    assert ok, tdc.text(again)
    assert own_line(again, qdiscs) == line


# tc's bare numbers, per keyword (get_time: microseconds; get_time64,
# netem's delay and slot: nanoseconds; get_rate: bit/s; get_size: bytes)
BARE = [
    ("netem", "delay 100000000 10000000", "delay 100ms 10ms"),
    ("netem", "slot 10 200 packets 2000 bytes 9000",
     "slot 10ns 200ns packets 2000 bytes 9000"),
    ("netem", "slot distribution pareto 1000000 100000",
     "slot distribution pareto 1ms 100us"),
    ("netem", "rate 20000", "rate 20kbit"),
    ("tbf", "limit 1000 burst 1500 rate 10000",
     "limit 1000b burst 1500b rate 10kbit"),
    ("tbf", "burst 1500 rate 20000 latency 100000",
     "burst 1500b rate 20kbit latency 100ms"),
    ("tbf", "limit 1000 burst 1500 rate 20000 mtu 1510 peakrate 30000",
     "limit 1000b burst 1500b rate 20kbit mtu 1510b peakrate 30kbit"),
    ("fq_codel", "target 2000", "target 2ms"),
    ("fq_codel", "interval 5000", "interval 5ms"),
    ("fq_codel", "ce_threshold 1024000", "ce_threshold 1024ms"),
    ("fq_codel", "memory_limit 100000", "memory_limit 100000b"),
]


@pytest.mark.parametrize("kind,bare,units", BARE,
                         ids=[b[1] for b in BARE])
def test_bare_numbers_as_tc(tmp_path, kind, bare, units):
    c = {"kind": kind}
    a = replay(tmp_path, kind, tdc.text(dict(c, args=bare)))
    b = replay(tmp_path, kind, tdc.text(dict(c, args=units)))
    assert a[0] and b[0]
    assert a[2] == b[2] and a[1] == b[1], (a, b)

"""fq_codel as the bottleneck queue, end to end through dpdk-shaper-replay
(issue 12): flow isolation against an unresponsive flood, and CoDel's
control law as it shows in the output capture. The unit test
(test/unit/test_fq_codel.c) checks the same on the queue alone; here the
queue runs under tbf, with the options, summary and stats file users see.
"""
import json
import math
import re
import struct

import pytest

import pcaplib
from conftest import LINK, assert_conserved, pcap_port, run_shaper
from test_offline import MS, T0, ok_run, run

SIZE = 1000                       # bytes per frame
TBF = "rate 10mbit burst 10kb limit 1mb"
PKT_NS = SIZE * 8 * 1000 // 10    # one frame's time at 10 Mbit/s: 800 us
HEAVY, LIGHT = 1000, 3000         # UDP source ports of the two flows


def frame(seq, sport):
    f = bytearray(pcaplib.eth_ipv4(0, SIZE, seq))
    f[34:36] = struct.pack("!H", sport)
    return bytes(f)


def flow_of(f):
    return struct.unpack_from("!H", f, 34)[0]


def write_flows(path, flows, dur_ns):
    """flows: (sport, Mbit/s, offset ns); constant-rate UDP flows of
    SIZE-byte frames, merged by time. Returns {(sport, seq): arrival}."""
    ev = []
    for sport, mbit, off in flows:
        gap = round(SIZE * 8 * 1000 / mbit)
        for i in range((dur_ns - off) // gap):
            ev.append((T0 + off + i * gap, sport, i))
    ev.sort()
    pcaplib.write(str(path), [frame(s, p) for _, p, s in ev],
                  [t for t, _, _ in ev], nano=True)
    return {(p, s): t for t, p, s in ev}


def per_flow(out, arrivals):
    """{sport: sorted delays (ns)} of what left, from the output capture."""
    _, got = pcaplib.read(str(out))
    d = {}
    for t, f in got:
        p = flow_of(f)
        d.setdefault(p, []).append(t - arrivals[(p, pcaplib.seq_of(f))])
    for v in d.values():
        v.sort()
    return d


def pct(sorted_v, p):
    k = (len(sorted_v) * p + 99) // 100
    return sorted_v[max(k, 1) - 1]


# ----------------------------------------- isolation against a flood

@pytest.fixture(scope="module")
def flood(tmp_path_factory):
    """A heavy unresponsive flow at 100 Mbit/s and a light one at
    1 Mbit/s (offset so that it never arrives with a heavy frame), 2 s,
    into a 10 Mbit/s tbf."""
    d = tmp_path_factory.mktemp("flood")
    inp = d / "in.pcap"
    arr = write_flows(inp, [(HEAVY, 100, 0), (LIGHT, 1, 37_000)],
                      2000 * MS)
    sent = {HEAVY: 0, LIGHT: 0}
    for p, _ in arr:
        sent[p] += 1
    return d, inp, arr, sent


def test_flood_pfifo_fast_starves_light_flow(flood):
    """The reference: in one FIFO the light flow waits behind the flood
    (hundreds of ms: the tbf limit and the band ring are full) and loses
    most of its packets."""
    d, inp, arr, sent = flood
    out = d / "pfifo.pcap"
    s = ok_run(inp, out, "--tbf", TBF)
    got = per_flow(out, arr)
    light = got.get(LIGHT, [])
    print("pfifo_fast: light %d/%d through, p50 %.1f ms, p99 %.1f ms"
          % (len(light), sent[LIGHT], pct(light, 50) / MS,
             pct(light, 99) / MS))
    assert len(light) < sent[LIGHT] // 2
    assert pct(light, 50) > 200 * MS
    assert s["by_cause"]["codel"] == s["by_cause"]["fq_overlimit"] == 0


@LINK
def test_flood_fq_codel_isolates_light_flow(flood):
    """With fq_codel the light flow's bucket empties after each packet:
    every packet of it is served next, behind at most the heavy frame in
    service, and the heavy flow takes every drop."""
    d, inp, arr, sent = flood
    out = d / "fq.pcap"
    s = ok_run(inp, out, "--tbf", TBF, "--queue", "fq_codel")
    got = per_flow(out, arr)
    light, heavy = got[LIGHT], got[HEAVY]
    print("fq_codel: light %d/%d through, p99 %.3f ms; heavy %d/%d "
          "through, p50 %.0f ms, p99 %.0f ms; drops codel %d "
          "fq_overlimit %d"
          % (len(light), sent[LIGHT], pct(light, 99) / MS, len(heavy),
             sent[HEAVY], pct(heavy, 50) / MS, pct(heavy, 99) / MS,
             s["by_cause"]["codel"], s["by_cause"]["fq_overlimit"]))
    assert len(light) == sent[LIGHT]
    assert pct(light, 99) < 5 * MS
    assert max(light) <= 2 * PKT_NS
    # every drop is the heavy flow's, counted by cause
    assert s["drops"] == sent[HEAVY] - len(heavy)
    assert s["drops"] == s["by_cause"]["codel"] + \
        s["by_cause"]["fq_overlimit"]
    # an unresponsive flood at 10x the rate outruns the control law:
    # the heavy bucket fills to the limit and overflow drops from it
    assert s["by_cause"]["fq_overlimit"] > 0
    assert s["by_cause"]["codel"] > 0
    assert pct(heavy, 50) > 1000 * MS
    assert s["out_mbit"] == pytest.approx(10, rel=0.02)


def test_flood_fq_codel_reruns_byte_identical(flood):
    d, inp, _, _ = flood
    outs = []
    for i, extra in enumerate([[], [], ["--burst", "1"]]):
        out = d / ("rerun%d.pcap" % i)
        ok_run(inp, out, "--tbf", TBF, "--queue", "fq_codel", *extra)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]       # same input, same output
    assert outs[0] == outs[2]       # the burst size does not matter


def test_fq_codel_config_file_form(flood, tmp_path):
    """[port 0] queue = ... is --queue; the stats file carries the kind's
    statistics under xstats.fq_codel and its drop causes."""
    d, inp, _, _ = flood
    ref, out = tmp_path / "ref.pcap", tmp_path / "ini.pcap"
    ini = tmp_path / "q.ini"
    ini.write_text("[port 0]\nqueue = fq_codel target 5ms interval 100ms\n"
                   "tbf = %s\n" % TBF)
    s_ref = ok_run(inp, ref, "--tbf", TBF, "--queue", "fq_codel")
    stats = tmp_path / "stats.json"
    proc = run(inp, out, "--config", str(ini), "--stats-file", str(stats))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == ref.read_bytes()
    prof = [x for x in proc.stdout.splitlines() if x.startswith("profile:")]
    assert "queue fq_codel limit 10240" in prof[0], prof
    p = json.loads(stats.read_text())["ports"]["0"]
    assert p["drops"]["codel"] == s_ref["by_cause"]["codel"] > 0
    assert p["drops"]["fq_overlimit"] == s_ref["by_cause"]["fq_overlimit"]
    assert p["xstats"]["fq_codel"]["new_flows"] > 0
    assert p["xstats"]["fq_codel"]["queued"] == 0


@pytest.mark.parametrize("text", [
    "sfq", "", "fq_codel bogus", "fq_codel limit", "fq_codel limit 0",
    "fq_codel flows 0", "fq_codel target 5parsecs",
    "fq_codel quantum 100000000", "fq_codel bogus\nx", "sfq\nx",
    "pfifo_fast x\ny", "pfifo_fast fq_codel"])
def test_bad_queue_text_one_line_exit_2(tmp_path, text):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    write_flows(inp, [(HEAVY, 1, 0)], 10 * MS)
    proc = run(inp, out, "--queue", text)
    assert proc.returncode == 2, (text, proc.stdout)
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("dpdk-shaper-replay: "), proc.stderr
    assert not out.exists()


def test_queue_text_line_breaks_separate_words(flood, tmp_path):
    """A line break between words is a separator, after the kind as
    between its arguments (shp_split_words), not part of the kind."""
    d, inp, _, _ = flood
    ref = tmp_path / "ref.pcap"
    ok_run(inp, ref, "--tbf", TBF, "--queue", "fq_codel limit 500")
    for i, text in enumerate(["fq_codel\nlimit 500", "\nfq_codel limit\n500\n",
                              "fq_codel\tlimit 500"]):
        out = tmp_path / ("o%d.pcap" % i)
        ok_run(inp, out, "--tbf", TBF, "--queue", text)
        assert out.read_bytes() == ref.read_bytes(), repr(text)
    proc = run(inp, tmp_path / "p.pcap", "--queue", "pfifo_fast\n")
    assert proc.returncode == 0, proc.stderr


def test_summary_names_each_counter_once(flood, tmp_path):
    """fq_codel and netem both count ecn_marked: the summary names each
    kind's own counter KIND_NAME (as telemetry), so no label repeats and
    netem's keeps its old name."""
    d, inp, _, _ = flood
    proc = run(inp, tmp_path / "o.pcap", "--tbf", TBF, "--queue",
               "fq_codel", "--netem", "delay 1ms")
    assert proc.returncode == 0, proc.stderr
    labels = [line.split(":")[0] for line in proc.stdout.splitlines()
              if line[:1].isalpha() and ":" in line]
    assert len(labels) == len(set(labels)), labels
    for name in ("fq_codel_ecn_marked", "fq_codel_new_flows",
                 "fq_codel_ce_marked", "fq_codel_overmemory", "ecn_marked"):
        assert name in labels, (name, labels)
    new_flows = re.search(r"^fq_codel_new_flows:\s+(\d+)$", proc.stdout,
                          re.M)
    assert int(new_flows.group(1)) > 0


# ------------------------------------------------------ control law

@LINK
def test_control_law_drop_schedule(tmp_path):
    """One flow at 11 Mbit/s into 10 Mbit/s: the queue grows slowly, its
    sojourn passes target and stays above it, and CoDel drops at times
    interval / sqrt(count) apart for the rest of the run (one dropping
    state: the flow's excess, 125 packets/s, stays above the drop rate).

    Drop times come from the output: a missing sequence number was
    dropped when tbf took the packet after the one before the gap from
    the queue, i.e. when that one left (tbf pulls the next packet as it
    sends one, as Linux's qdisc_peek_dequeued). Dequeues come one packet
    time apart, so drop k+1 is at the first one at or after
    drop 1 + sum(interval / sqrt(i), i = 1..k)."""
    interval, target = 100 * MS, 5 * MS
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    arr = write_flows(inp, [(HEAVY, 11, 0)], 3000 * MS)
    s = ok_run(inp, out, "--tbf", TBF, "--queue", "fq_codel")
    _, got = pcaplib.read(str(out))
    seqs = [pcaplib.seq_of(f) for _, f in got]
    times = [t for t, _ in got]
    assert seqs == sorted(seqs)
    drops, prev = [], -1
    for i, q in enumerate(seqs):
        # (seqs[0] is 0: the first packet goes at once)
        drops += [times[i - 1]] * (q - prev - 1)
        prev = q
    assert len(drops) == s["drops"] == s["by_cause"]["codel"] > 50
    assert len(set(drops)) == len(drops)     # one at a time: no catch-up
    # onset: the first dequeue with a sojourn at or above target (the
    # packet leaves one packet time later), then one interval: the first
    # dequeue strictly after that drops
    above = next(times[i - 1] for i in range(1, len(seqs))
                 if times[i - 1] - arr[(HEAVY, seqs[i])] >= target)
    first = next(t for t in times if t > above + interval)
    assert drops[0] == first
    sched, late = drops[0], []
    for k in range(1, len(drops)):
        sched += int(interval / math.sqrt(k))
        late.append(drops[k] - sched)
    print("%d drops over %.2f s; each %d..%d ns after its schedule"
          % (len(drops), (drops[-1] - drops[0]) / 1e9, min(late),
             max(late)))
    assert all(0 <= x < PKT_NS for x in late), late
    # no drop while the sojourn was below target after the onset: it
    # only grew (one dropping state, count never restarted)
    assert drops[-1] - drops[0] > 2000 * MS


# ------------------------------------------- the live program, both modes

def test_live_fq_codel_both_modes(tmp_path, mode):
    """dpdk-shaper itself, run to completion and pipeline (RX lcores hand
    their packets to the TX lcore through the chain's inbox): a light
    flow among a heavy one that overflows `limit 200` gets every packet
    through, the heavy flow takes every drop, as fq_overlimit (or codel),
    and nothing is lost or left (exit 0: the pool is full again). 1230
    packets fit the inbox (2048), so no inbox_full drop is expected."""
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    frames = []
    for i in range(1200):
        frames.append(frame(i, HEAVY))
        if i % 40 == 0:
            frames.append(frame(i // 40, LIGHT))
    pcaplib.write(str(rx), frames)
    r = run_shaper(tmp_path, [pcap_port(rx, tx)],
                   ["--replay", "--queue", "fq_codel limit 200", "--tbf",
                    TBF], mode)
    assert r.rc == 0, r.err
    assert_conserved(r)
    p = r.port(0)
    _, out = pcaplib.read(str(tx))
    got = {HEAVY: 0, LIGHT: 0}
    for _, f in out:
        got[flow_of(f)] += 1
    assert got[LIGHT] == 30
    drops = {k: v for k, v in p["drops"].items() if v}
    assert set(drops) <= {"fq_overlimit", "codel"}, drops
    assert drops.get("fq_overlimit", 0) > 0, drops
    assert got[HEAVY] == 1200 - sum(drops.values())
    assert p["xstats"]["fq_codel"]["queued"] == 0
    assert p["xstats"]["fq_codel"]["new_flows"] >= 2

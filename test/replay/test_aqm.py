"""The `pie` and `red` queue kinds (issue 59) through dpdk-shaper-replay,
behind tbf at 10 Mbit/s, against the reference models of aqm_ref.py:
every arrival's fate (queued, marked CE, dropped) as the output capture
shows it is the model's, for a fixed seed, on steady overload, on/off
bursts, idle gaps and mixed ECT/non-ECT traffic. The models draw the
shaper's own random numbers (aqm_ref.draw is shp_rand.h's stream), so
the comparison is exact, draws included.
"""
import json

import pytest

import aqm_ref
import pcaplib
from conftest import LINK
from test_offline import MS, T0, ok_run, run

SIZE = 1000
TBF = "rate 10mbit burst 10kb limit 1mb"
SEED = 7


def capture(path, pattern):
    """(arrival ns, seq, len, ecn) of a pattern's frames, written to
    path. Gaps are a few ns off the frame time so that no arrival ties a
    departure."""
    ev = []
    t, seq = T0, 0

    def add(n, gap, ecn=lambda s: 0):
        nonlocal t, seq
        for _ in range(n):
            ev.append((t, seq, SIZE, ecn(seq)))
            t += gap
            seq += 1

    if pattern == "steady":            # 2x the link, 3 s
        add(7500, 400_007)
    elif pattern == "onoff":           # 300 ms at 3x, 200 ms off
        for _ in range(6):
            add(1125, 266_671)
            t += 200 * MS + 13
    elif pattern == "idle":            # 1.5x with 700 ms idle gaps
        for _ in range(4):
            add(900, 533_339)
            t += 700 * MS + 29
    elif pattern == "mixed":           # ECT(0), ECT(1), not-ECT in turn
        add(7500, 400_007, lambda s: (2, 1, 0)[s % 3])
    frames = [pcaplib.eth_ipv4(e, n, s) for _, s, n, e in ev]
    pcaplib.write(str(path), frames, [x[0] for x in ev], nano=True)
    return ev


def output(path):
    _, got = pcaplib.read(str(path))
    return [(t, pcaplib.seq_of(f), pcaplib.tos_of(f) & 3) for t, f in got]


PATTERNS = ["steady", "onoff", "idle", "mixed"]


def compare(ev, out, model, marks_ok):
    fates, left = aqm_ref.run(model, ev, [t for t, _, _ in out])
    assert left == [s for _, s, _ in out], "the model's head left first"
    kept = {s for s, f in fates.items() if f in ("q", "m")}
    marked = {s for s, f in fates.items() if f == "m"}
    ecn_in = {s: e for _, s, _, e in ev}
    assert {s for _, s, _ in out} == kept
    assert {s for _, s, e in out if e == 3 and ecn_in[s] != 3} == marked
    if not marks_ok:
        assert not marked
    return fates


@pytest.mark.parametrize("pattern", PATTERNS)
@LINK
@pytest.mark.q4_xfail(reason=(
    "pie at 4 shards, the one flow on one shard: the link's "
    "controller decides other frames than one queue's (steady: 1 of "
    "7500 fates, frame 539 dropped at 1 queue, 540 at 4; onoff 1922 "
    "of 6750, drops 3475/3495; idle 681 of 3600, 432/429; mixed "
    "1950 of 7500, 3730/3713); said at start (pie's shards_note)"))
def test_pie_decisions_match_the_model(tmp_path, pattern):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    ev = capture(inp, pattern)
    ecn = pattern == "mixed"
    q = "pie ecn" if ecn else "pie"
    s = ok_run(inp, out, "--queue", q, "--tbf", TBF, "--seed", str(SEED))
    fates = compare(ev, output(out), aqm_ref.Pie(SEED, ecn=ecn), ecn)
    drops = sum(f == "d" for f in fates.values())
    marks = sum(f == "m" for f in fates.values())
    print(pattern, "drops", drops, "marks", marks)
    assert s["by_cause"]["pie_dropped"] + \
        s["by_cause"]["pie_overlimit"] == drops
    assert drops > (1000 if pattern in ("steady", "mixed") else 100)
    assert (marks > 0) == ecn


@pytest.mark.parametrize("pattern", PATTERNS)
def test_red_decisions_match_the_model(tmp_path, pattern):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    ev = capture(inp, pattern)
    ecn = pattern == "mixed"
    text = "red limit 100000 avpkt 1000" + (" ecn" if ecn else "")
    s = ok_run(inp, out, "--queue", text, "--tbf", TBF, "--seed",
               str(SEED))
    par = aqm_ref.red_params(100000, 1000)
    fates = compare(ev, output(out), aqm_ref.Red(SEED, par, ecn=ecn), ecn)
    by = {c: sum(f == c for f in fates.values())
          for c in ("early", "forced", "limit", "m")}
    print(pattern, by)
    assert s["by_cause"]["red_early"] == by["early"]
    assert s["by_cause"]["red_forced"] == by["forced"]
    assert s["by_cause"]["red_limit"] == by["limit"]
    assert by["early"] + by["m"] > 0


def test_red_early_drops_follow_the_ramp(tmp_path):
    """Between min and max the early-drop fraction at an average a is
    Linux's (and Floyd's uniform) spacing of p_b = max_P (a - min) /
    (max - min): 2 p_b / (1 + p_b) on the whole, within 10% in each
    band of the average (the model gives each arrival's average: its
    decisions are the shaper's, as the tests above show)."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    ev, t = [], T0
    # slowly rising overload: the average sweeps min..max
    for i in range(40000):
        ev.append((t, i, SIZE, 0))
        t += int(800_000 / (1.0 + 0.12 * i / 40000)) + 3
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, SIZE, s & 0xffffffff)
                             for _, s, _, _ in ev],
                  [x[0] for x in ev], nano=True)
    text = "red limit 400000 min 20000 max 80000 avpkt 1000 " \
           "probability 0.1"
    ok_run(inp, out, "--queue", text, "--tbf", TBF, "--seed", str(SEED))
    par = aqm_ref.red_params(400000, 1000, 20000, 80000, probability=0.1)
    model = aqm_ref.Red(SEED, par)
    compare(ev, output(out), model, False)
    bands = {}
    for avg, fate in model.avgs:
        if 20000 <= avg < 80000:
            pb = 0.1 * (avg - 20000) / 60000
            b = bands.setdefault((avg - 20000) * 6 // 60000, [0, 0, 0.0])
            b[0] += 1
            b[1] += fate == "early"
            b[2] += 2 * pb / (1 + pb)
    seen = 0
    for k, (n, d, want) in sorted(bands.items()):
        if n < 2000:
            continue
        print("avg %6d..: %5d arrivals, %.4f dropped early, ramp %.4f"
              % (20000 + k * 10000, n, d / n, want / n))
        assert d / n == pytest.approx(want / n, rel=0.10)
        seen += 1
    assert seen >= 2


def test_pie_holds_the_delay_at_target(tmp_path):
    """PIE at 10 Mbit/s under twice that of unresponsive traffic: once
    the start-up overshoot is over (after 2 s) the median queueing delay
    is within 30% of the 15 ms target."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    gap = 400_007
    n = 6000 * MS // gap
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, SIZE, i) for i in range(n)],
                  [T0 + i * gap for i in range(n)], nano=True)
    s = ok_run(inp, out, "--queue", "pie", "--tbf", TBF, "--seed",
               str(SEED))
    d = sorted(t - (T0 + seq * gap) for t, seq, _ in output(out)
               if seq * gap >= 2000 * MS)
    med = d[len(d) // 2]
    print("median %.2f ms, p99 %.2f ms, loss %.1f%%"
          % (med / MS, d[len(d) * 99 // 100] / MS, s["loss"]))
    assert med == pytest.approx(15 * MS, rel=0.30)
    assert s["out_mbit"] == pytest.approx(10, rel=0.02)


@pytest.mark.parametrize("text", [
    "pie", "pie limit 50 target 5ms tupdate 30ms alpha 4 beta 30 ecn "
    "bytemode dq_rate_estimator",
    "red limit 100000 avpkt 1000", "red limit 60kb min 5kb max 20kb "
    "avpkt 1500 burst 8 probability 0.05 bandwidth 100mbit ecn harddrop "
    "adaptive nodrop"])
def test_profile_round_trip(tmp_path, text):
    """What the profile line prints parses to itself (format, then parse
    again: the same text)."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, "idle")
    proc = run(inp, out, "--queue", text, "--tbf", TBF)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines()
                if x.startswith("profile:"))
    printed = line.split("queue ", 1)[1].split(";", 1)[0]
    proc2 = run(inp, tmp_path / "o2.pcap", "--queue", printed, "--tbf", TBF)
    assert proc2.returncode == 0, proc2.stderr
    line2 = next(x for x in proc2.stdout.splitlines()
                 if x.startswith("profile:"))
    assert line2 == line
    assert out.read_bytes() == (tmp_path / "o2.pcap").read_bytes()


@pytest.mark.parametrize("text", [
    "pie limit 0", "pie alpha 33", "pie beta -1", "pie target 0",
    "pie tupdate", "pie bogus", "pie ecn noecn x",
    "red limit 0 avpkt 1000", "red limit 1000 avpkt 1000 min 500 max 100",
    "red limit 100000 avpkt 1000 probability 0",
    "red limit 100000 avpkt 1000 probability 1.5",
    "red limit 100000 avpkt 1000 burst 1", "red bandwidth 0",
    "red limit 100000 avpkt 1000 bandwidth 9",
    "red limit 100000 avpkt 1000 bogus"])
def test_bad_values_one_line_exit_2(tmp_path, text):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, "idle")
    proc = run(inp, out, "--queue", text)
    assert proc.returncode == 2, (text, proc.stdout)
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert not out.exists()


def test_stats_file_names_causes_and_state(tmp_path):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, "mixed")
    st = tmp_path / "s.json"
    proc = run(inp, out, "--queue", "pie ecn", "--tbf", TBF,
               "--stats-file", str(st))
    assert proc.returncode == 0, proc.stderr
    p = json.loads(st.read_text())["ports"]["0"]
    assert p["drops"]["pie_dropped"] > 0
    x = p["xstats"]["pie"]
    assert x["marked"] > 0 and x["queued"] == 0
    assert "prob_ppm" in x and "delay_ns" in x
    assert "pie_marked:" in proc.stdout


@pytest.mark.parametrize("text", ["pie ecn", "red limit 100000 avpkt 1000 "
                                  "ecn adaptive"])
def test_reruns_byte_identical(tmp_path, text):
    """Same input and seed, same output, whatever the burst size; another
    seed, other draws."""
    inp = tmp_path / "in.pcap"
    capture(inp, "mixed")
    outs = []
    for i, extra in enumerate([[], ["--burst", "1"], ["--seed", "8"]]):
        out = tmp_path / ("o%d.pcap" % i)
        ok_run(inp, out, "--queue", text, "--tbf", TBF, *extra)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert outs[0] != outs[2]

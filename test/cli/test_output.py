"""What users read and type (issue 10 item 5, issue 15 item 4): command
confirmations, tc-style `show qdisc`, the periodic table, the end-of-run
summary, over-long lines, and output free of terminal control codes."""
import io
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import (BIN, NULL_VDEVS, REPO, SAMPLE, clean, outputs, prefix,
                      wait_started,
                      run_piped, shaper_cmd)


def test_set_confirms_what_changed(tmp_path):
    r = run_piped(tmp_path, [
        "set netem 1 delay 10ms",
        "set tbf all rate 10mbit burst 10kb limit 100kb",
        "set netem 1 delay 10ms",
        "set priomap 0 1 2 0 1 2 0 1 2 0 1 2 0 1 2 0",
        "set classify dscp",
        "quit"])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    first, again = o["set netem 1 delay 10ms"]
    assert re.search(r"^port 1: netem limit \d+ delay 10ms \(was off\)$",
                     first, re.M), first
    assert "port 0" not in first
    assert "(unchanged)" in again
    tbf = o["set tbf all rate 10mbit burst 10kb limit 100kb"][0]
    for p in (0, 1):
        assert re.search(r"^port %d: tbf rate 10Mbit burst 10240b limit "
                         r"102400b \(was off\)$" % p, tbf, re.M), tbf
    assert ("priomap 0,1,2,0,1,2,0,1,2,0,1,2,0,1,2,0 (was "
            "1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1)") in \
        o["set priomap 0 1 2 0 1 2 0 1 2 0 1 2 0 1 2 0"][0]
    assert "classify dscp (was tos)" in o["set classify dscp"][0]


def test_start_stop_say_when_nothing_to_do_and_exit_quits(tmp_path):
    r = run_piped(tmp_path, ["start", "stop", "stop", "start", "exit",
                             "show config"])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    assert o["start"][0].strip() == "forwarding is already started"
    assert "forwarding stopped" in o["stop"][0]
    assert "already stopped" in o["stop"][1]
    assert o["start"][1].strip() == "forwarding started"
    assert "show config" not in o, "exit must end the prompt like quit"
    assert r.stats is not None   # the stats file of a clean exit


def test_priomap_count_error_says_values(tmp_path):
    r = run_piped(tmp_path, ["set priomap 1 2", "quit"])
    assert "needs 16 values" in r.out and "got 2" in r.out


def test_show_config_seed_is_the_one_used(tmp_path):
    r = run_piped(tmp_path, ["show config", "quit"])
    seed = re.search(r"^seed: (\d+) \(default", r.out, re.M)
    assert seed and int(seed.group(1)) != 0, r.out
    r0 = run_piped(tmp_path, ["show config", "quit"], app_args=["--seed",
                                                                "0"])
    assert re.search(r"^seed: 0$", r0.out, re.M), r0.out


def test_show_config_says_when_own_drops_begin(tmp_path):
    """The overload threshold and --late-drop, as given or by default."""
    r = run_piped(tmp_path, ["show config", "quit"])
    assert re.search(r"^max-late: 50us  late-drop: off$", r.out, re.M), \
        r.out
    r = run_piped(tmp_path, ["show config", "quit"],
                  app_args=["--max-late", "2ms", "--late-drop", "50us"])
    assert re.search(r"^max-late: 2ms  late-drop: 50us$", r.out, re.M), \
        r.out
    # from a profile file's [global], the command line still winning
    ini = tmp_path / "g.ini"
    ini.write_text("[global]\nmax_late = 1ms\nlate_drop = 20us\n")
    r = run_piped(tmp_path, ["show config", "quit"],
                  app_args=["--config", str(ini)])
    assert re.search(r"^max-late: 1ms  late-drop: 20us$", r.out, re.M), \
        r.out
    r = run_piped(tmp_path, ["show config", "quit"],
                  app_args=["--config", str(ini), "--late-drop", "0"])
    assert re.search(r"^max-late: 1ms  late-drop: off$", r.out, re.M), \
        r.out


def test_pipe_output_has_no_terminal_codes(tmp_path):
    """Through a pipe: lines, no VT100 sequences or carriage returns (not
    even when the end of a replay is announced at the prompt)."""
    vdevs = ["net_pcap0,rx_pcap=%s,tx_pcap=%s" % (SAMPLE, tmp_path / "o.pcap")]
    cmd = shaper_cmd(vdevs, ["-i", "--replay"])
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    head = wait_started(p).encode()   # 3 s from the end of set-up
    p.stdin.write(b"show config\n")
    p.stdin.flush()
    time.sleep(3)                     # the replay ends: announced
    out, _ = p.communicate(b"help\nquit\n", timeout=60)
    out = head + out
    assert p.returncode == 0
    assert b"replay done" in out
    assert b"\x1b" not in out and b"\r" not in out, repr(out[:400])
    assert b"shaper> show config\n" in out


def long_netem_line():
    # what fits is a valid command on its own: a cut line would apply it
    return "set netem all delay 1ms" + " " * 2100 + "loss 100%"


def test_long_piped_line_is_refused_whole(tmp_path):
    r = run_piped(tmp_path, [long_netem_line(), "show config", "quit"])
    assert "input line 1" in r.out and "more than 2048" in r.out, \
        r.out[-600:]
    assert "netem: off" in outputs(r.out)["show config"][0]


def test_long_line_in_command_file_fails_the_file(tmp_path):
    f = tmp_path / "long.cmd"
    f.write_text("show drops\n" + long_netem_line() + "\nshow lcores\n")
    stats = tmp_path / "s.json"
    cmd = shaper_cmd(NULL_VDEVS, ["--cmdline-file", str(f),
                                  "--stats-file", str(stats)])
    p = subprocess.run(cmd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    out = clean(p.stdout)
    assert p.returncode == 1, out
    assert "more than 2048" in out
    assert "%s:2: command failed" % f in out
    assert "shaper> show lcores" not in out


def test_bad_pool_prints_no_zero_counters(tmp_path):
    cmd = shaper_cmd(NULL_VDEVS, ["--mbufs", str(1 << 30)])
    p = subprocess.run(cmd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    assert p.returncode != 0
    assert "cannot create a pool" in p.stdout
    assert not re.search(r"^port \d+: rx", p.stdout, re.M), p.stdout


TC_SENT = re.compile(r"^ Sent (\d+) bytes (\d+) pkt \(dropped (\d+), "
                     r"overlimits (\d+) requeues (\d+)\) $")
TC_BACKLOG = re.compile(r"^ backlog (\d+)b (\d+)p requeues (\d+)$")


def qdiscs(text):
    """(head, sent, backlog) triples of `tc -s qdisc show` output."""
    lines = text.splitlines()
    res = []
    for i, l in enumerate(lines):
        if l.startswith("qdisc "):
            sent = TC_SENT.match(lines[i + 1])
            back = TC_BACKLOG.match(lines[i + 2])
            assert sent and back, lines[i:i + 3]
            res.append((l, [int(x) for x in sent.groups()],
                        [int(x) for x in back.groups()]))
    return res


def test_show_qdisc_reads_like_tc(tmp_path):
    r = run_piped(tmp_path, [
        "show qdisc 0",
        "set netem 1 delay 20ms loss 10%",
        "set tbf 1 rate 100mbit burst 32kb limit 1mb",
        "stop",
        "show qdisc 1",
        "show qdisc",
        "show qdisc all",
        "quit"], app_args=["--seed", "3"])
    assert r.rc == 0, r.out
    assert r.errors() == []
    o = outputs(r.out)
    (only,) = qdiscs(o["show qdisc 0"][0])
    assert re.match(r"qdisc pfifo_fast 3: root refcnt 2 bands 3 priomap "
                    r"1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 $", only[0]), only[0]
    assert only[1][1] > 0   # it forwarded
    # net_null frames are 64 bytes, also those the bands let by (bypass)
    assert only[1][0] == 64 * only[1][1], only
    chain = qdiscs(o["show qdisc 1"][0])
    heads = [c[0] for c in chain]
    # the newest tc's words: `loss 10%` (random is its default model)
    assert re.match(r"qdisc netem 1: root refcnt 2 limit \d+ delay 20ms "
                    r"loss 10% seed 3 $", heads[0]), heads
    # tc prints tbf's limit as the latency it allows: (1mb - 32kb)/100mbit
    assert heads[1] == ("qdisc tbf 2: parent 1:1 rate 100Mbit burst 32Kb "
                        "lat 81.3ms "), heads
    assert heads[2].startswith("qdisc pfifo_fast 3: parent 2:1 bands 3")
    netem, tbf, bands = chain
    for q in chain:
        assert q[1][0] == 64 * q[1][1] and q[2][0] == 64 * q[2][1], q
    # stopped: nothing moves any more, the stats file written at exit has
    # the same totals
    port = r.stats["ports"]["1"]
    assert netem[1][:2] == [port["tx_bytes"], port["tx_packets"]]
    assert netem[1][2] == port["drops"]["lost"] + \
        port["drops"]["netem_limit"]
    assert tbf[1][2] == port["drops"]["tbf_oversize"] + \
        port["drops"]["tbf_limit"]
    assert bands[1][1] == sum(b["dequeued"] for b in port["bands"])
    # what was queued at stop is what the exit flushed (net_null takes
    # every burst: nothing waits at the port)
    assert netem[2][1] == port["drops"]["flushed"]
    assert netem[2][1] >= tbf[2][1]          # a parent's backlog holds
    assert tbf[1][1] <= bands[1][1]          # its children's
    every = o["show qdisc"][0]
    assert len(qdiscs(every)) == 4
    devs = re.findall(r"^qdisc \S+ \d: dev (\S+) ", every, re.M)
    assert devs == ["net_null0", "net_null1", "net_null1", "net_null1"], \
        every



def test_show_qdisc_other_kinds(tmp_path):
    """fq_codel under tbf, and prio bands: each kind prints itself for
    tc (its tc_print, or its own text); a queue's drops are its own
    causes, tbf's its own."""
    pexpect = pytest.importorskip("pexpect")
    from pexpect.popen_spawn import PopenSpawn
    stats = tmp_path / "stats.json"
    cmd = shaper_cmd(NULL_VDEVS, ["-i", "--stats-file", str(stats),
                                  "--queue", "fq_codel limit 2000 target 2ms"])
    log = io.StringIO()
    c = PopenSpawn(cmd, encoding="utf-8", timeout=30)
    c.logfile_read = log
    c.expect_exact("workers")
    c.sendline("set tbf 0 rate 100mbit burst 32kb limit 1mb")
    # stop only once the bucket holds packets back: a stop right after
    # the set can come before the worker took a packet under the new
    # bucket (nothing queued, nothing to compare)
    for _ in range(200):
        c.sendline("show qdisc 0")
        c.expect(r"qdisc fq_codel [^\n]*\n[^\n]*\n backlog \d+b (\d+)p")
        if int(c.match.group(1)) > 0:
            break
        time.sleep(0.05)
    c.sendline("stop")
    c.expect_exact("forwarding stopped")
    c.sendline("show qdisc 0")
    c.sendline("quit")
    c.expect(pexpect.EOF)
    out = clean(log.getvalue())
    assert c.wait() == 0, out
    assert [l for l in out.splitlines() if l.startswith("error:")] == []
    with open(stats) as f:
        port = json.load(f)["ports"]["0"]
    chain = qdiscs(outputs(out)["show qdisc 0"][-1])
    heads = [c[0] for c in chain]
    assert heads == [
        "qdisc tbf 2: root refcnt 2 rate 100Mbit burst 32Kb lat 81.3ms ",
        "qdisc fq_codel 3: parent 2:1 limit 2000p flows 1024 quantum 1514 "
        "target 2ms interval 100ms memory_limit 32Mb ecn drop_batch 64 "],\
        heads
    tbf, fq = chain
    assert tbf[1][:2] == [port["tx_bytes"], port["tx_packets"]]
    assert tbf[1][2] == port["drops"]["tbf_oversize"] + \
        port["drops"]["tbf_limit"]
    assert fq[1][2] == port["drops"]["codel"] + \
        port["drops"]["fq_overlimit"]
    # what was queued at stop is what the exit flushed
    assert fq[2][1] == tbf[2][1] == port["drops"]["flushed"] > 0
    # four bands: tc calls them prio
    r = run_piped(tmp_path, ["show qdisc 0", "quit"],
                  app_args=["--bands", "4"])
    assert r.rc == 0, r.out
    (only,) = qdiscs(outputs(r.out)["show qdisc 0"][0])
    assert re.match(r"qdisc prio 3: root refcnt 2 bands 4 priomap( \d){16} $",
                    only[0]), only[0]

def test_stats_period_has_time_and_period_drops(tmp_path):
    cmd = shaper_cmd(NULL_VDEVS, ["--stats-period", "1",
                                  "--netem", "loss 50%"])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    head = wait_started(p)   # the periods count from the end of set-up
    time.sleep(3.8)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    out = head + out
    assert p.returncode == 0
    stamps = re.findall(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ), forwarding "
                        r"for ([\d.]+) s$", out, re.M)
    assert len(stamps) >= 2, out
    assert float(stamps[1][1]) > float(stamps[0][1])
    head = [l for l in out.splitlines() if "rx-pps" in l][0].split()
    # "band depths" is two words of the head, one column of a row
    col = head.index("dropped") - 1
    assert head[col + 2] == "+dropped", head
    rows = [l.split() for l in out.splitlines() if re.match(r"^0 +\d", l)]
    assert len(rows) >= 2
    totals = [int(r[col]) for r in rows]
    period = [int(r[col + 1]) for r in rows]
    assert period[0] == totals[0]
    for i in range(1, len(rows)):
        assert period[i] == totals[i] - totals[i - 1], rows
    assert all(x > 0 for x in period)


def test_flushed_at_shutdown_is_not_pushed_out(tmp_path):
    """Packets still in the bands at exit are flushed: counted as such per
    band, not as tbf's pushed_out."""
    r = run_piped(tmp_path, ["set tbf all rate 1mbit burst 2kb limit 10mb",
                             "stop", "quit"])
    assert r.rc == 0, r.out
    for port in r.stats["ports"].values():
        flushed = sum(b["flushed"] for b in port["bands"])
        assert sum(b["pushed_out"] for b in port["bands"]) == 0
        assert flushed > 0
        assert flushed <= port["drops"]["flushed"]
        for b in port["bands"]:
            assert b["dropped"] == b["full"] + b["pushed_out"] + \
                b["flushed"]


def test_run_default_prints_what_it_did(tmp_path):
    p = subprocess.run([os.path.join(REPO, "scripts", "run-default.sh")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout
    out = p.stdout
    assert "TELEMETRY" not in out
    assert "dpdk-shaper: 1 port," in out
    assert re.search(r"^summary: forwarding ran [\d.]+ s", out, re.M)
    assert "port 0: tbf rate 10Mbit" in out
    assert re.search(r"received 600 pkts [\d.]+ Mbit/s, sent 600 pkts "
                     r"[\d.]+ Mbit/s", out)
    assert "output capture: build/default-out.pcap" in out
    assert "counters (JSON): build/default-stats.json" in out

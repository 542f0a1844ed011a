"""Per-class profiles (issue 13): two destinations behind the shaper, each
its own class with its own delay and rate; ping and iperf3 to each show
the RTT and the TCP goodput its class says."""
import json
import re
import subprocess

from shplib import attempts, rtt_summary, run, stop_and_check, summarize_iperf3

# class -> (one-way delay ms, rate Mbit/s)
NEAR = (5, 20)
FAR = (40, 5)


def second_address(testbed):
    """A second address on side b's interface (same prefix), for the far
    destination; returns it."""
    out = run(["ip", "-n", testbed.ns_b, "-o", "-4", "addr", "show"],
              timeout=10).stdout
    m = re.search(r"^\d+: (\S+)\s+inet %s/(\d+)" % re.escape(testbed.addr_b),
                  out, re.M)
    assert m, out
    dev, plen = m.group(1), m.group(2)
    last = int(testbed.addr_b.rsplit(".", 1)[1])
    far = "%s.%d" % (testbed.addr_b.rsplit(".", 1)[0], (last + 100) % 250 + 2)
    run(["ip", "-n", testbed.ns_b, "addr", "replace", "%s/%s" % (far, plen),
         "dev", dev], timeout=10)
    return far


def ping(testbed, dst, count=20, interval=0.05):
    p = run(testbed.exec_args("a", ["ping", "-n", "-c", count, "-i", interval,
                                    "-W", 2, dst]),
            timeout=count * interval + 15, check=False)
    return [float(m) for m in re.findall(r"time=([0-9.]+) ms", p.stdout)]


def iperf3(testbed, dst, t=5, omit=1):
    """TCP from a to dst (an address on b)."""
    port = testbed.next_port()
    srv = subprocess.Popen(testbed.exec_args("b", [
        "iperf3", "-s", "-1", "-p", port, "-B", dst, "--idle-timeout", 30]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        run(testbed.exec_args("b", ["sh", "-c", "for i in $(seq 50); do "
                                    "ss -Hltn 'sport = :%d' | grep -q . && "
                                    "exit 0; sleep 0.1; done; exit 1" % port]),
            timeout=10)
        args = ["iperf3", "-c", dst, "-p", port, "-t", t, "-O", omit, "-J",
                "--connect-timeout", 3000, "-B", testbed.addr_a]
        cli = run(testbed.exec_args("a", args), timeout=t + omit + 30,
                  check=False)
        return summarize_iperf3(json.loads(cli.stdout),
                                {"cmd": " ".join(map(str, args)), "udp": False})
    finally:
        srv.kill()
        srv.wait(timeout=5)


def class_args(near, far):
    args = []
    for name, addr, (delay, rate) in (("near", near, NEAR), ("far", far, FAR)):
        args += ["--class", name, "dst_ip %s/32" % addr,
                 "--class", name, "src_ip %s/32" % addr,
                 "--class-netem", name, "delay %dms" % delay,
                 "--class-tbf", name,
                 "rate %dmbit burst 32kb limit 256kb" % rate]
    return args


def test_two_destinations_two_classes(testbed, shaper, record):
    far = second_address(testbed)
    near = testbed.addr_b

    def measure():
        s = shaper(*class_args(near, far))
        res = {"rtt_near": ping(testbed, near), "rtt_far": ping(testbed, far),
               "tcp_near": iperf3(testbed, near),
               "tcp_far": iperf3(testbed, far)}
        res["stats"] = stop_and_check(s)
        return s, res

    def check(res):
        f = []
        for name, (delay, rate) in (("near", NEAR), ("far", FAR)):
            r = rtt_summary(res["rtt_" + name])
            if r["n"] < 18:
                f.append("%s: lost pings %s" % (name, r))
                continue
            if r["min"] < 2 * delay - 0.1:
                f.append("%s: an RTT below 2 x %d ms: %s" % (name, delay, r))
            if abs(r["median"] - 2 * delay) > 2.0:
                f.append("%s: median RTT %.2f ms, not %d +- 2" % (
                    name, r["median"], 2 * delay))
            bps = res["tcp_" + name]["bps"]
            if not 0.80 * rate * 1e6 < bps < 1.02 * rate * 1e6:
                f.append("%s: TCP goodput %.2f Mbit/s, not within 80..102%% of "
                         "%d: %s" % (name, bps / 1e6, rate,
                                     res["tcp_" + name]["intervals"]))
        for p in ("0", "1"):
            cls = res["stats"]["ports"][p].get("classes", {})
            if set(cls) != {"near", "far"}:
                f.append("port %s classes %s" % (p, sorted(cls)))
            elif min(c["packets"] for c in cls.values()) < 20:
                f.append("port %s: a class saw too little: %s" % (p, cls))
        return f

    s, res, fails, notes = attempts(measure, check)
    for name in ("near", "far"):
        r = rtt_summary(res["rtt_" + name])
        record("classes", "%s: RTT median ms" % name, r.get("median"),
               s.cmdline())
        record("classes", "%s: TCP goodput Mbit/s" % name,
               res["tcp_" + name]["bps"] / 1e6)
    for n in notes:
        record("classes", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)

#!/usr/bin/env bash
# Does every packet leave when the profile says, at any load? Offers
# net_null's unbounded load (copy=1, 64 B, lcores 0-1: run to completion)
# to a set of profiles and prints, for each: achieved Mpps, lateness
# (TX time minus netem's send time) p50/p99/p99.9/max, sojourn (TX minus
# RX) p50/p99.9/max, and drops by cause (`overload` is the emulator's
# own limit; `late` what was shed rather than sent late: a backlog later
# than --max-late, or with --late-drop anything later than that; `shed %`
# is its share of what netem scheduled). Then a paced sweep: a tbf in front
# lets 25..90% of the measured capacity through to 'delay 10ms', and the
# lateness p99.9 at each step; the capacity printed is the highest offered
# rate whose lateness p99.9 stays under 50 us with at most 0.1% shed (a
# shed packet is one that could not leave in time). First, the machine's
# own noise floor
# (bench/bench_hiccup.c), with the lateness percentiles its gaps alone
# impose on any emulator that sends late. Figures only: never a test.
#
# Usage: scripts/bench-fidelity.sh [SECONDS]   (default 8 s per run)
#   SHP_BENCH_BASE=PATH: each profile also through another build's
#   dpdk-shaper, just before this one's (a before/after pair)
#   2 MiB hugepages where they can be had (scripts/bench-lib.sh)
#   FID_WORKERS=2: each link over two workers instead (--queues 2,
#   --lcores 0@0,1@0,2@1: on a 2-vCPU machine worker 1 shares CPU 0 with
#   the main lcore), the promise kept by a link's shards on two lcores
#   (issue 24); the figures are still the worst port's, each port the
#   sum of its shards
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-8}
case ${FID_WORKERS:-1} in
1) LC=(-l 0-1) Q=() lcdesc="-l 0-1" cpus=1 ;;
2) LC=(--lcores 0@0,1@0,2@1) Q=(--queues 2)
   lcdesc="--lcores 0@0,1@0,2@1 --queues 2" cpus="1 0" ;;
*) echo "$0: FID_WORKERS: 1 or 2" >&2; exit 2 ;;
esac
. scripts/bench-lib.sh
bench_publish_begin "Timing at load (bench-fidelity)" "$@"
bench_mem
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/bfid$$; bench_mem_restore' EXIT
[ -x build/app/dpdk-shaper ] || scripts/build.sh >/dev/null

run() {
	# run() NAME -- shaper options; prints one row, leaves the JSON (of
	# this build: with SHP_BENCH_BASE=PATH, another build's dpdk-shaper
	# runs the same profile just before, its row marked [base])
	if [ -n "${SHP_BENCH_BASE:-}" ]; then
		run_one "$SHP_BENCH_BASE" "$1 [base]" "${@:2}"
	fi
	run_one ./build/app/dpdk-shaper "$@"
}

run_one() {
	local bin=$1 name=$2
	shift 2
	timeout -s INT "$secs" "$bin" "${LC[@]}" --no-pci \
		"${MEM_SHAPER[@]}" --log-level '*:error' --file-prefix bfid$$ \
		--vdev net_null0,copy=1 --vdev net_null1,copy=1 -- \
		${Q[@]+"${Q[@]}"} --mbufs 400000 --stats-file "$tmp/s.json" "$@" \
		>"$tmp/log" 2>&1 || true
	/usr/bin/python3 - "$tmp/s.json" "$name" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ports = s["ports"].values()
mpps = sum(p["tx_packets"] for p in ports) / s["elapsed_s"] / 1e6
def worst(kind, key):
    v = [p.get("latency", {}).get(kind, {}).get(key) for p in ports]
    v = [x for x in v if x is not None]
    return max(v) / 1e3 if v else float("nan")
drops = {}
sent = sum(p.get("latency", {}).get("lateness_ns", {}).get("count", 0)
           for p in ports)
for p in ports:
    for k, v in p["drops"].items():
        if v and k != "flushed":
            drops[k] = drops.get(k, 0) + v
# the worker's loops over 1 ms (its CPU taken away): the host's share of
# the lateness tail
lc = list(s.get("lcores", {}).values())
stalls = "%d, %.1fms" % (sum(x["stalls"] for x in lc),
                         max([x["longest_loop_ns"] for x in lc] or [0]) / 1e6)
shed = 100.0 * drops.get("late", 0) / max(1, sent + drops.get("late", 0))
print("%-34s %6.2f | %7.1f %7.1f %8.1f %9.1f %6.3f | %8.1f %8.1f %9.1f | %11s | %s" % (
    sys.argv[2], mpps,
    worst("lateness_ns", "p50"), worst("lateness_ns", "p99"),
    worst("lateness_ns", "p99.9"), worst("lateness_ns", "max"), shed,
    worst("sojourn_ns", "p50"), worst("sojourn_ns", "p99.9"),
    worst("sojourn_ns", "max"), stalls,
    " ".join("%s=%d" % kv for kv in sorted(drops.items())) or "-"))
open(sys.argv[1] + ".mpps", "w").write("%f\n" % mpps)
open(sys.argv[1] + ".p999", "w").write("%f\n" %
                                       worst("lateness_ns", "p99.9"))
open(sys.argv[1] + ".shed", "w").write("%f\n" % shed)
PY
}

# the machine's own noise on the worker's CPU: no lateness can be below
# it (the second line: the lateness percentiles these gaps alone impose
# on a sender that sends late, --late-drop aside)
for c in $cpus; do
	echo -n "noise floor (bench_hiccup, CPU $c): "
	taskset -c "$c" ./build/bench/bench_hiccup 5
done
echo "net_null copy=1 (unbounded), 64 B, $lcdesc, ${secs} s per run;" \
	"worst port; times in us"
printf "%-34s %6s | %7s %7s %8s %9s %6s | %8s %8s %9s | %11s | %s\n" \
	profile Mpps "late50" "late99" "late99.9" "late max" "shed %" "soj50" \
	"soj99.9" "soj max" "stalls, max" "drops (not flushed)"
run "no impairment"
run "delay 10ms" --netem 'delay 10ms'
cap=$(cat "$tmp/s.json.mpps")
run "delay 10ms, --late-drop 50us" --netem 'delay 10ms' --late-drop 50us
run "delay 10ms 1ms loss 1%" --netem 'delay 10ms 1ms loss 1%'
run "tbf 1gbit + delay 10ms" --tbf 'rate 1gbit burst 1mb limit 100mb' \
	--netem 'delay 10ms'

echo
echo "paced sweep: tbf at a share of the 'delay 10ms' capacity" \
	"($cap Mpps, both ports), then 'delay 10ms'"
best=0
for pct in 25 50 75 90; do
	# per port: half the capacity; 64 B frames, 84 B on the wire for
	# nobody here, so the bucket counts the 64 B
	bps=$(/usr/bin/python3 -c "print(int($cap * 1e6 / 2 * $pct / 100 * 64 * 8))")
	run "tbf ${pct}% ($bps bit/s/port)" \
		--tbf "rate ${bps}bit burst 64kb limit 10mb" \
		--netem 'delay 10ms'
	p=$(cat "$tmp/s.json.p999")
	shed=$(cat "$tmp/s.json.shed")
	ok=$(/usr/bin/python3 -c "import math; print(int(not math.isnan($p) and $p < 50 and $shed <= 0.1))")
	[ "$ok" = 1 ] && best=$(/usr/bin/python3 -c "print('%.2f' % ($cap * $pct / 100))")
done
echo "capacity (highest offered rate with lateness p99.9 < 50 us, at most 0.1% shed): $best Mpps"
bench_publish_end

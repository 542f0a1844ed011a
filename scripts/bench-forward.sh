#!/usr/bin/env bash
# Packets per second through dpdk-shaper (3 bands, tbf off, netem off by
# default) and through dpdk-testpmd io forwarding, on the same vdevs
# (net_null with copy=1, 64-byte frames) and the same lcores (main + one
# worker). The two alternate for ROUNDS rounds in one run, so a noisy
# neighbour hits both; prints every round, the medians and their ratio.
# Figures only: this is never a test.
#
# Usage: scripts/bench-forward.sh [SECONDS [ROUNDS]] [-- shaper options]
#   (defaults: 10 s, 3 rounds; 2 MiB hugepages, reserved and mounted as
#   root where they can be had, else --no-huge: the first line says which;
#   SHP_BENCH_HUGE=0 forces --no-huge)
# Two more programs run in every round, at the depth the shaper held at
# the end of its run (flushed packets, both ports): bench_delay_floor,
# what merely holding that many packets in their mbufs costs here, and
# bench_store_floor -f, the same in a byte store (issue 25's design: each
# frame copied into a FIFO of records and its mbuf freed hot, a hot one
# taken and filled at release), with no shaping at all; neither where
# the shaper held nothing. The store floor over testpmd is the most any
# shaper built that way could reach in the same run, and the summary's
# last line adds the two: a shaper must forward (testpmd's work) and
# store (the floor's), so 1 / (1 / testpmd + 1 / store floor) is what it
# could carry with nothing else to do, and that over the store floor the
# best share of the floor it could keep.
#   e.g. scripts/bench-forward.sh 8 3 -- --mbufs 262144 \
#        --tbf 'rate 100gbit burst 1mb limit 100mb' \
#        --netem 'delay 10ms 1ms loss 1%'
# SHP_BENCH_QUEUES="pfifo_fast fq_codel" runs the shaper once per queue
# kind in every round (--queue KIND appended to the options), so the rows
# are measured side by side; the "fq_codel under a non-throttling tbf"
# row of git log -p docs/benchmarks.md is
#   SHP_BENCH_QUEUES="pfifo_fast fq_codel" scripts/bench-forward.sh 6 3 \
#        -- --mbufs 65536 --tbf 'rate 100gbit burst 1mb limit 100mb'
# SHP_BENCH_NETEMS="delay 10ms|delay 10ms store off" does the same for
# netem profiles ('|' between them; --netem PROFILE appended), e.g. the
# byte store on and off side by side (git log -p docs/benchmarks.md,
# "The byte store", issue 25).
# SHP_BENCH_CAPTURE=1 runs the shaper twice in every round, without and
# with the drop capture (--capture-drops, issue 60; to a file in a
# temporary directory, SHP_BENCH_CAPTURE_LIMIT its --capture-limit,
# default 256mb), e.g. the capture's cost at 10% of 64-byte frames
# dropped:
#   SHP_BENCH_CAPTURE=1 scripts/bench-forward.sh 10 3 -- --netem 'loss 10%'
set -euo pipefail
cd "$(dirname "$0")/.."
# SHP_BENCH_BASE=PATH runs another build's dpdk-shaper (a before/after
# pair) in every round too, with the same options, e.g.
#   SHP_BENCH_BASE=/tmp/base/build/app/dpdk-shaper scripts/bench-forward.sh 6 3
# the variants run in every round: q:KIND (--queue), n:PROFILE (--netem),
# b: (the SHP_BENCH_BASE build)
queues=()
if [ -n "${SHP_BENCH_NETEMS:-}" ]; then
	IFS='|' read -r -a nets <<<"$SHP_BENCH_NETEMS"
	for n in "${nets[@]}"; do queues+=("n:$n"); done
else
	read -r -a qs <<<"${SHP_BENCH_QUEUES:-}"
	for q in ${qs[@]+"${qs[@]}"}; do queues+=("q:$q"); done
fi
[ -z "${SHP_BENCH_CAPTURE:-}" ] || queues+=("" "c:")
[ ${#queues[@]} -gt 0 ] || queues=("")
[ -z "${SHP_BENCH_BASE:-}" ] || queues+=("b:")
eal=(-l 0-1 --no-pci --log-level '*:error'
     --vdev net_null0,copy=1 --vdev net_null1,copy=1)
# (testpmd 22.11 stops at once with --no-huge -m 3072; the shaper needs
# room for large delay queues)
. scripts/bench-lib.sh
bench_args "$@"
bench_publish_begin "Forwarding against dpdk-testpmd (bench-forward)" "$@"
bench_mem
mem_t=("${MEM_SMALL[@]}") mem_s=("${MEM_SHAPER[@]}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/bt$$ /var/run/dpdk/bs$$ /var/run/dpdk/bf$$
      bench_mem_restore' EXIT

testpmd_once() {
	# with --stats-period testpmd runs until SIGINT, in the foreground,
	# with its stdin open; average the per-port Rx-pps after the first
	# period
	(sleep $((secs + 1)); echo) | timeout -s INT "$secs" dpdk-testpmd \
		"${eal[@]}" "${mem_t[@]}" --file-prefix bt$$ -- --forward-mode=io \
		--stats-period 1 --total-num-mbufs=65536 -a \
		>"$tmp/testpmd.log" 2>&1 || true
	/usr/bin/python3 - "$tmp/testpmd.log" <<'PY'
import re, sys
v = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", open(sys.argv[1]).read())]
v = v[2:] if len(v) > 2 else v   # the first period includes start-up
pairs = [v[i] + v[i + 1] for i in range(0, len(v) - 1, 2)]
print(sum(pairs) / len(pairs) if pairs else 0)
PY
}

testpmd_run() {
	# testpmd 22.11 now and then forwards nothing in a run (0 Mpps): one
	# more try, said on stderr, so that a round's median is not of a
	# failed run
	local v
	v=$(testpmd_once)
	if [ "${v%.*}" = 0 ]; then
		echo "(testpmd forwarded nothing: run again)" >&2
		v=$(testpmd_once)
	fi
	echo "$v"
}

shaper_run() {
	# packets sent / time forwarding ran, from --stats-file; the depth
	# it held (what was flushed at the end) to $tmp/depth. $1: a
	# variant (q:KIND for --queue, n:PROFILE for --netem), or empty
	local q=() bin=./build/app/dpdk-shaper
	case "$1" in
	q:*) q=(--queue "${1#q:}") ;;
	n:*) q=(--netem "${1#n:}") ;;
	b:) bin=$SHP_BENCH_BASE ;;
	c:) q=(--capture-drops "$tmp/drops.pcapng" --capture-limit
	       "${SHP_BENCH_CAPTURE_LIMIT:-256mb}") ;;
	esac
	rm -f "$tmp/s.json" "$tmp/drops.pcapng"
	timeout -s INT "$secs" "$bin" "${eal[@]}" "${mem_s[@]}" \
		--file-prefix bs$$ -- --stats-file "$tmp/s.json" \
		"${extra[@]}" "${q[@]}" >"$tmp/shaper.log" 2>&1 || true
	/usr/bin/python3 - "$tmp/s.json" "$tmp/depth" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
tx = sum(p["tx_packets"] for p in s["ports"].values())
depth = sum(p["drops"]["flushed"] for p in s["ports"].values())
open(sys.argv[2], "w").write("%d\n" % depth)
cap = [p["capture"] for p in s["ports"].values() if "capture" in p]
open(sys.argv[2] + ".cap", "w").write(
    ", drop capture: captured %d, capture_lost %d" %
    (sum(c["captured"] for c in cap), sum(c["capture_lost"] for c in cap))
    if cap else "")
print(tx / s["elapsed_s"])
PY
}

floor_run() {
	# bench_delay_floor at the shaper's depth (Mpps at that depth); 0
	# where the shaper held none (a floor of nothing says nothing)
	[ "$1" -gt 0 ] || { echo 0; return; }
	./build/bench/bench_delay_floor -l 1 "${mem_t[@]}" --no-pci \
		--log-level '*:error' --file-prefix bf$$ -- "$1" \
		>"$tmp/floor.log" 2>&1 || true
	# (printf: print would write 2.916e+07 for some, which bc refuses)
	awk -v d="$1" '$1 == d { v = $2 } END { printf "%.0f\n", (v == "" ? 0 : v * 1e6) }' \
		"$tmp/floor.log"
}

store_floor_run() {
	# bench_store_floor's floor at the shaper's depth, as 10 ms at
	# depth / 10 ms (Mpps at that depth); 0 where the shaper held none
	[ "$1" -gt 0 ] || { echo 0; return; }
	./build/bench/bench_store_floor -l 1 "${mem_t[@]}" --no-pci \
		--log-level '*:error' --file-prefix bf$$ -- -f \
		-r "$(echo "$1 / 10000" | bc -l)" -n 5000000 10000000 \
		>"$tmp/sfloor.log" 2>&1 || true
	awk '$1 == "10.000" { v = $3 } END { printf "%.0f\n", (v == "" ? 0 : v * 1e6) }' \
		"$tmp/sfloor.log"
}

echo "net_null copy=1, 64 B, lcores 0-1 (main + 1 worker), ${secs} s per run"
echo "dpdk-shaper options: ${extra[*]}"
t=()
for r in $(seq "$rounds"); do
	t+=("$(testpmd_run)")
	printf "round %d: testpmd %.2f Mpps" "$r" \
		"$(echo "${t[-1]} / 1000000" | bc -l)"
	for i in "${!queues[@]}"; do
		q=${queues[$i]}
		s=$(shaper_run "$q")
		d=$(cat "$tmp/depth")
		f=$(floor_run "$d")
		g=$(store_floor_run "$d")
		# per variant (one, "", without SHP_BENCH_*): shaper, floor,
		# store floor
		echo "$s $f $g" >>"$tmp/res_$i"
		case "$q" in
		q:*) name=" --queue ${q#q:}" ;;
		n:*) name=" --netem '${q#n:}'" ;;
		b:) name=" (base build)" ;;
		c:) name=" --capture-drops" ;;
		*) name="" ;;
		esac
		printf ", dpdk-shaper%s %.2f Mpps (held %d)%s" \
			"$name" "$(echo "$s / 1000000" | bc -l)" "$d" \
			"$(cat "$tmp/depth.cap")"
		[ "$f" = 0 ] ||
			printf ", delay floor at that depth %.2f Mpps" \
				"$(echo "$f / 1000000" | bc -l)"
		[ "$g" = 0 ] ||
			printf ", store floor %.2f Mpps" \
				"$(echo "$g / 1000000" | bc -l)"
	done
	echo
done
for i in "${!queues[@]}"; do
	/usr/bin/python3 - "${t[*]}" "$tmp/res_$i" "${queues[$i]}" <<'PY'
import statistics, sys
t = statistics.median(float(x) for x in sys.argv[1].split())
rows = [line.split() for line in open(sys.argv[2])]
s = statistics.median(float(r[0]) for r in rows)
f = statistics.median(float(r[1]) for r in rows)
g = statistics.median(float(r[2]) for r in rows)
v = sys.argv[3]
name = "dpdk-shaper" + (" --queue " + v[2:] if v.startswith("q:") else
                        " --netem '%s'" % v[2:] if v.startswith("n:") else
                        " (base build)" if v == "b:" else
                        " --capture-drops" if v == "c:" else "")
print("median: dpdk-testpmd io %.2f Mpps, %s %.2f Mpps" %
      (t / 1e6, name, s / 1e6) +
      (", delay floor %.2f Mpps" % (f / 1e6) if f else ""))
print("ratio shaper/testpmd: %.2f" % (s / t if t else 0))
if f:
    print("ratio shaper/delay floor at its depth: %.2f" % (s / f))
if g:
    print("store floor at that depth %.2f Mpps; ratio shaper/store floor: "
          "%.2f" % (g / 1e6, s / g))
    print("ratio store floor/testpmd (the byte store's ceiling here): %.2f"
          % (g / t if t else 0))
    if t:
        # a shaper that only forwarded (testpmd's work) and stored (the
        # floor's) would spend the two times a frame one after the
        # other: what that sum allows, and its share of the floor
        b = 1 / (1 / t + 1 / g)
        print("forward + store, their times added: %.2f Mpps, %.2f of the "
              "store floor (ratio shaper/that: %.2f)" % (b / 1e6, b / g,
                                                         s / b))
PY
done
bench_publish_end

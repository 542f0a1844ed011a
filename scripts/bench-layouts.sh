#!/usr/bin/env bash
# Run to completion (-l 0-1) against the pipeline (--lcores 0@0,1@0,2@1,
# one RX and one TX lcore) at overload: net_null copy=1 through a profile,
# alternating the two layouts (and two builds, when given) for ROUNDS
# rounds, so a noisy neighbour hits all of them. One line a run: Mpps over
# both ports, `late` per port against what the TX lcore's lost time
# explains (test_live.py's stalls_explain: the loop clock's stalls and
# hiccups or the kernel's run-queue wait and steal, whichever says more,
# times the admitted rate, twice, plus a burst a loss), `overload`.
# Figures only: this is never a test.
#
# Usage: scripts/bench-layouts.sh [SECONDS [ROUNDS [BIN [BIN2]]]] [-- ARGS]
#   default: 5 s, 2 rounds, build/app/dpdk-shaper, ARGS --netem 'delay 10ms'
set -euo pipefail
. "$(dirname "$0")/bench-lib.sh"
bench_publish_begin "Run to completion against the pipeline (bench-layouts)" "$@"
S=5 R=2 bins=()
[ $# -gt 0 ] && [ "$1" != "--" ] && { S=$1; shift; }
[ $# -gt 0 ] && [ "$1" != "--" ] && { R=$1; shift; }
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bins+=("$1"); shift; done
[ $# -gt 0 ] && shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--netem 'delay 10ms')
[ ${#bins[@]} -gt 0 ] || bins=(build/app/dpdk-shaper)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/bl$$' EXIT
for r in $(seq "$R"); do
	for bin in "${bins[@]}"; do
		for lay in rtc pipeline; do
			if [ $lay = pipeline ]; then
				L=(--lcores 0@0,1@0,2@1); X=(--rx-lcores 1 --tx-lcores 2); T=2
			else
				L=(-l 0-1); X=(); T=1
			fi
			rm -f "$tmp/s.json"
			"$bin" "${L[@]}" --no-huge -m 2048 --no-pci --file-prefix bl$$ \
				--log-level '*:error' --vdev net_null0,copy=1 \
				--vdev net_null1,copy=1 -- "${X[@]}" --mbufs 400000 \
				--stats-file "$tmp/s.json" "${args[@]}" >"$tmp/out" 2>&1 &
			pid=$!
			# from the end of set-up (the line of ports), which takes
			# seconds on a fresh machine (400000 mbufs, first touch)
			for _ in $(seq 600); do
				grep -q "dpdk-shaper: 2 ports" "$tmp/out" && break
				kill -0 $pid 2>/dev/null || break
				sleep 0.1
			done
			sleep "$S"
			kill -TERM $pid
			wait $pid || true
			python3 - "$tmp/s.json" "$T" "$lay" "$r" "$bin" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lc, el = d["lcores"][sys.argv[2]], d["elapsed_s"]
g = lambda k: lc.get(k, 0)
gaps = max(g("stalls") + g("hiccups"), g("cpu_slices")) + 1
lost = max(g("stalled_ns") + g("hiccup_ns"),
           g("runq_wait_ns") + g("steal_ns")) + gaps * 50000
tx, out = 0, []
for k, p in sorted(d["ports"].items()):
    rate = (p["egress_in"] - p["drops"]["overload"]) / el
    out.append("late %d of %d explained" % (
        p["drops"]["late"], 2 * rate * lost / 1e9 + gaps * 32))
    tx += p["tx_packets"]
# what the host took from each worker lcore, as the kernel counts it
# (run-queue wait and steal): the pipeline's RX lcore shares CPU 0 with
# the main lcore on two vCPUs
took = " ".join("lcore %s %.0f%%" % (k, 100 * (v.get("runq_wait_ns", 0) +
                                             v.get("steal_ns", 0)) / 1e9 / el)
                for k, v in sorted(d["lcores"].items()))
print("round %s %-8s %6.2f Mpps  %s  (%s; host took: %s)" % (
    sys.argv[4], sys.argv[3], tx / el / 1e6, "; ".join(out), sys.argv[5],
    took))
PY
		done
	done
done
bench_publish_end

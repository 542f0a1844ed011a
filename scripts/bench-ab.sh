#!/usr/bin/env bash
# Two builds of dpdk-shaper side by side: the same overload commands
# (net_null copy=1, lcores 0-1, --no-huge) alternate between binary A and
# binary B for ROUNDS rounds, so a noisy neighbour hits both; prints one
# line a run: Mpps over both ports (tx_packets over the forwarding time),
# `late` and `overload` drops, the worst port's lateness p99.9; then per
# profile the medians and the ratio B / A. Figures only: this is never a
# test.
#
# SHP_BENCH_AB_LCORES: the EAL's lcores (default 0-1; a map, e.g.
# 0@0,1@0,2@1, goes to --lcores); SHP_BENCH_AB_ARGS: options every run
# gets, '|'-separated (e.g. '--queues|2': a link of two shards);
# SHP_BENCH_AB_PROFILES: which profiles (default: none tbf delay full;
# also fq_codel pie red dualpi2, each behind the tbf of `tbf`).
#
# Usage: scripts/bench-ab.sh A_BIN B_BIN [SECONDS [ROUNDS]]
#   e.g. git worktree add /tmp/base 813a7a5 && (cd /tmp/base &&
#        scripts/build.sh app/dpdk-shaper) &&
#        scripts/bench-ab.sh /tmp/base/build/app/dpdk-shaper \
#            build/app/dpdk-shaper 4 2
set -euo pipefail
. "$(dirname "$0")/bench-lib.sh"
[ $# -ge 2 ] || { sed -n 2,14p "$0" >&2; exit 2; }
A=$1 B=$2 S=${3:-4} R=${4:-2}
bench_publish_begin "Two builds side by side (bench-ab)" "$@"
read -r -a profiles <<<"${SHP_BENCH_AB_PROFILES:-none tbf delay full}"
tbf="--tbf|rate 100gbit burst 1mb limit 100mb"
declare -A P=(
	[none]=""
	[tbf]="$tbf"
	[delay]="--mbufs|400000|--netem|delay 10ms"
	[full]="--mbufs|400000|$tbf|--netem|delay 10ms 1ms loss 1%"
	[fq_codel]="--queue|fq_codel|$tbf"
	[pie]="--queue|pie|$tbf"
	[red]="--queue|red limit 4000000 avpkt 1000|$tbf"
	[dualpi2]="--queue|dualpi2|$tbf"
)
lcores=${SHP_BENCH_AB_LCORES:-0-1}
lflag=-l
case $lcores in *@*) lflag=--lcores ;; esac
common=()
[ -z "${SHP_BENCH_AB_ARGS:-}" ] ||
	IFS='|' read -r -a common <<<"$SHP_BENCH_AB_ARGS"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/ab$$' EXIT
for r in $(seq "$R"); do
	for prof in "${profiles[@]}"; do
		for which in A B; do
			bin=${!which}
			extra=()
			[ -z "${P[$prof]}" ] || IFS='|' read -r -a extra <<<"${P[$prof]}"
			st=$tmp/s.json
			rm -f "$st"
			"$bin" $lflag "$lcores" --no-huge -m 2048 --no-pci \
				--file-prefix ab$$ --log-level '*:error' \
				--vdev net_null0,copy=1 --vdev net_null1,copy=1 -- \
				${common[@]+"${common[@]}"} "${extra[@]}" \
				--stats-file "$st" >/dev/null 2>&1 &
			pid=$!
			sleep $((S + 3))
			kill -TERM $pid
			wait $pid || true
			python3 - "$st" "$which" "$prof" "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ports = d["ports"].values()
tx = sum(p["tx_packets"] for p in ports)
late = sum(p["drops"].get("late", 0) for p in ports)
ovl = sum(p["drops"].get("overload", 0) for p in ports)
lat = max(p["latency"]["lateness_ns"]["p99.9"] for p in ports)
print("%-5s round %s %s: %6.2f Mpps  late %d  overload %d  "
      "lateness p99.9 %.1f us" % (sys.argv[3], sys.argv[4], sys.argv[2],
                                  tx / d["elapsed_s"] / 1e6, late, ovl,
                                  lat / 1e3))
PY
		done
	done
done | tee "$tmp/runs"
python3 - "$tmp/runs" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w = line.split()
    runs[(w[0], w[3].rstrip(":"))].append(float(w[4]))
print("\nmedians (Mpps) and B / A:")
for prof in dict.fromkeys(k[0] for k in runs):
    a = statistics.median(runs[(prof, "A")])
    b = statistics.median(runs[(prof, "B")])
    print("%-9s A %7.2f  B %7.2f  B/A %.3f" % (prof, a, b, b / a))
PY
bench_publish_end

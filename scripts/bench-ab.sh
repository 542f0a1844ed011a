#!/usr/bin/env bash
# Two builds of dpdk-shaper side by side: the same overload commands
# (net_null copy=1, lcores 0-1, --no-huge) alternate between binary A and
# binary B for ROUNDS rounds, so a noisy neighbour hits both; prints one
# line a run: Mpps over both ports (tx_packets over the forwarding time),
# `late` and `overload` drops, the worst port's lateness p99.9.
# Figures only: this is never a test.
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
profiles=(none tbf delay full)
declare -A P=(
	[none]=""
	[tbf]="--tbf|rate 100gbit burst 1mb limit 100mb"
	[delay]="--mbufs|400000|--netem|delay 10ms"
	[full]="--mbufs|400000|--tbf|rate 100gbit burst 1mb limit 100mb|--netem|delay 10ms 1ms loss 1%"
)
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
			"$bin" -l 0-1 --no-huge -m 2048 --no-pci --file-prefix ab$$ \
				--log-level '*:error' --vdev net_null0,copy=1 \
				--vdev net_null1,copy=1 -- "${extra[@]}" \
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
done
bench_publish_end

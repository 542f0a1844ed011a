#!/usr/bin/env bash
# Packets per second through dpdk-shaper (3 bands, tbf off, netem off by
# default) and through dpdk-testpmd io forwarding, on the same vdevs
# (net_null with copy=1, 64-byte frames) and the same lcores (main + one
# worker). The two alternate for ROUNDS rounds in one run, so a noisy
# neighbour hits both; prints every round, the medians and their ratio.
# Figures only: this is never a test.
#
# Usage: scripts/bench-forward.sh [SECONDS [ROUNDS]] [-- shaper options]
#   (defaults: 10 s, 3 rounds; SHP_BENCH_HUGE=1: both on 2 MiB hugepages,
#   reserved and mounted if needed, as root)
#   e.g. scripts/bench-forward.sh 8 3 -- --mbufs 262144 \
#        --tbf 'rate 100gbit burst 1mb limit 100mb' \
#        --netem 'delay 10ms 1ms loss 1%'
set -euo pipefail
cd "$(dirname "$0")/.."
secs=10
rounds=3
[ $# -gt 0 ] && [ "$1" != "--" ] && { secs=$1; shift; }
[ $# -gt 0 ] && [ "$1" != "--" ] && { rounds=$1; shift; }
[ "${1:-}" = "--" ] && shift
extra=("$@")
[ ${#extra[@]} -gt 0 ] || extra=(--mbufs 65536)
eal=(-l 0-1 --no-pci --log-level '*:error'
     --vdev net_null0,copy=1 --vdev net_null1,copy=1)
# (testpmd 22.11 stops at once with --no-huge -m 3072; the shaper needs
# room for large delay queues)
mem_t=(--no-huge -m 1024) mem_s=(--no-huge -m 3072)
if [ "${SHP_BENCH_HUGE:-0}" = 1 ]; then
	# 2 MiB pages for both programs (root): fewer TLB misses when
	# 1e5 packets wait in a delay queue
	want=2048
	have=$(cat /proc/sys/vm/nr_hugepages)
	[ "$have" -ge "$want" ] || echo "$want" >/proc/sys/vm/nr_hugepages
	mountpoint -q /dev/hugepages ||
		{ mkdir -p /dev/hugepages &&
		  mount -t hugetlbfs nodev /dev/hugepages; }
	mem_t=() mem_s=()
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/bt$$ /var/run/dpdk/bs$$' EXIT

testpmd_run() {
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

shaper_run() {
	# packets sent / time forwarding ran, from --stats-file
	timeout -s INT "$secs" ./build/app/dpdk-shaper "${eal[@]}" "${mem_s[@]}" \
		--file-prefix bs$$ -- --stats-file "$tmp/s.json" \
		"${extra[@]}" >"$tmp/shaper.log" 2>&1 || true
	/usr/bin/python3 - "$tmp/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
tx = sum(p["tx_packets"] for p in s["ports"].values())
print(tx / s["elapsed_s"])
PY
}

echo "net_null copy=1, 64 B, lcores 0-1 (main + 1 worker), ${secs} s per run," \
	"${mem_s[*]:-2 MiB hugepages}"
echo "dpdk-shaper options: ${extra[*]}"
t=() s=()
for r in $(seq "$rounds"); do
	t+=("$(testpmd_run)")
	s+=("$(shaper_run)")
	printf "round %d: testpmd %.2f Mpps, dpdk-shaper %.2f Mpps\n" "$r" \
		"$(echo "${t[-1]} / 1000000" | bc -l)" \
		"$(echo "${s[-1]} / 1000000" | bc -l)"
done
/usr/bin/python3 - "${t[*]}" "${s[*]}" <<'PY'
import statistics, sys
t = statistics.median(float(x) for x in sys.argv[1].split())
s = statistics.median(float(x) for x in sys.argv[2].split())
print("median: dpdk-testpmd io %.2f Mpps, dpdk-shaper %.2f Mpps"
      % (t / 1e6, s / 1e6))
print("ratio shaper/testpmd: %.2f" % (s / t if t else 0))
PY

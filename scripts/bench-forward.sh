#!/usr/bin/env bash
# Packets per second through dpdk-shaper (3 bands, tbf off, netem off)
# and through dpdk-testpmd io forwarding, on the same vdevs (net_null with
# copy=1, 64-byte frames) and the same lcores, one after the other in one
# run. Prints both and the ratio. Never a test: figures only.
#
# Usage: scripts/bench-forward.sh [SECONDS] [-- extra shaper options]
#   e.g. scripts/bench-forward.sh 10 -- --tbf 'rate 100gbit burst 1mb
#        limit 100mb' --netem 'delay 10ms 1ms loss 1%'
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
shift || true
[ "${1:-}" = "--" ] && shift
extra=("$@")
label=${BENCH_LABEL:-"dpdk-shaper (3 bands${extra:+, ${extra[*]}})"}
eal=(-l 0-1 --no-huge -m 2048 --no-pci --log-level '*:error'
     --vdev net_null0,copy=1 --vdev net_null1,copy=1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# testpmd: average of the per-port Rx-pps lines after the first two seconds
# (with --stats-period it runs until SIGINT, in the foreground, stdin open)
(sleep $((secs + 1)); echo) | timeout -s INT "$secs" dpdk-testpmd \
	"${eal[@]}" --file-prefix bt$$ -- --forward-mode=io --stats-period 1 \
	--total-num-mbufs=65536 -a >"$tmp/testpmd.log" 2>&1 || true
testpmd_pps=$(/usr/bin/python3 - "$tmp/testpmd.log" <<'PY'
import re, sys
v = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", open(sys.argv[1]).read())]
# two ports print one line each per period; drop the first two periods
v = v[4:]
pairs = [v[i] + v[i + 1] for i in range(0, len(v) - 1, 2)]
print(sum(pairs) / len(pairs) if pairs else 0)
PY
)

# dpdk-shaper: packets forwarded / time forwarding ran, from --stats-file
timeout -s INT "$secs" ./build/app/dpdk-shaper "${eal[@]}" \
	--file-prefix bs$$ -- --mbufs 65536 --stats-file "$tmp/s.json" \
	"${extra[@]}" >"$tmp/shaper.log" 2>&1 || true
shaper_pps=$(/usr/bin/python3 - "$tmp/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
tx = sum(p["tx_packets"] for p in s["ports"].values())
print(tx / s["elapsed_s"])
PY
)
/usr/bin/python3 - "$testpmd_pps" "$shaper_pps" "$secs" "$label" <<'PY'
import sys
t, s, secs, label = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
print("net_null copy=1, 64 B, lcores 0-1 (main + 1 worker), %s s each" % secs)
print("%-50s %8.2f Mpps" % ("dpdk-testpmd io forwarding", t / 1e6))
print("%-50s %8.2f Mpps" % (label, s / 1e6))
print("ratio shaper/testpmd: %.2f" % (s / t if t else 0))
PY

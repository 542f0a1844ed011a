#!/usr/bin/env bash
# A long delay line at 10 Gbit/s (issue 61): net_null ports sending
# 1500-byte frames through --tbf 'rate 10gbit burst 1mb limit 2gb'
# --netem 'delay 600ms' for SECONDS, then the drops of the delay line's
# own causes (netem_limit, store_no_mbuf, no_mbuf, pool_share and the
# store's store_full, which must all be 0), the others (the machine's
# overload and late, the bands'), the store's high-water mark, the
# sojourn's percentiles and the budget line. Figures only: the test is
# test/cli/test_budget.py.
#
# Usage: scripts/bench-long-delay.sh [SECONDS [RATE DELAY]]
#   (defaults: 20 s, 10gbit 600ms; `1gbit 10s` is the issue's other
#   case; --no-huge -m 4096, or SHP_BENCH_EAL='-m 4096' with hugepages)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
rate=${2:-10gbit}
delay=${3:-600ms}
eal=${SHP_BENCH_EAL:---no-huge -m 4096}
prefix=longdelay$$
stats=$(mktemp)
out=$(mktemp)
trap 'rm -f "$stats" "$out"; rm -rf /var/run/dpdk/$prefix' EXIT
# shellcheck disable=SC2086
timeout -s INT "$secs" build/app/dpdk-shaper -l 0-1 $eal --no-pci \
	--file-prefix "$prefix" --log-level '*:error' \
	--vdev net_null0,copy=1,size=1500 --vdev net_null1,copy=1,size=1500 \
	-- --tbf "rate $rate burst 1mb limit 2gb" --netem "delay $delay" \
	--stats-file "$stats" >"$out" 2>&1 || true
grep 'lossless budget' "$out" || true
python3 - "$stats" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["ports"]
own = ("netem_limit", "store_no_mbuf", "no_mbuf", "pool_share")
for n, p in sorted(st.items()):
    d = p["drops"]
    nx = p["xstats"]["netem"]
    print("port %s: tx %d, delay line drops %s store_full %d, other drops %s,"
          " store_hwm %.0f MB" % (
              n, p["tx_packets"], {k: d.get(k, 0) for k in own},
              nx["store_full"],
              {k: v for k, v in d.items() if v and k not in own},
              nx["store_hwm"] / 1e6))
    print("port %s: sojourn_ns %s" % (n, p["latency"]["sojourn_ns"]))
PY

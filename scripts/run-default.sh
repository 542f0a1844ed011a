#!/usr/bin/env bash
# The main job on a built-in default, no NIC needed: replay the bundled
# capture through a net_pcap port with config/default.ini, print counters.
# Installs and builds only what this needs (not the tests).
# lib.telemetry:error keeps out telemetry's "No legacy callbacks" warning;
# it must come before '*:warning' (the other way round, '*' wins).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh app/dpdk-shaper >/dev/null
out=build/default-out.pcap
prefix=shaper-default-$$
# dpdk-shaper removes its EAL run directory when it exits cleanly; this is
# for when it does not
trap 'rm -rf "/var/run/dpdk/$prefix"' EXIT
./build/app/dpdk-shaper -l 0-1 --no-huge -m 512 --no-pci \
	--file-prefix "$prefix" \
	--log-level 'lib.telemetry:error' --log-level '*:warning' \
	--vdev "net_pcap0,rx_pcap=test/data/sample.pcap,tx_pcap=$out" \
	-- --config config/default.ini --replay \
	--stats-file build/default-stats.json "$@"
echo "output capture: $out"
echo "counters (JSON): build/default-stats.json"

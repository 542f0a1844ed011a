#!/usr/bin/env bash
# Installs the Debian 12 packages dpdk-shaper needs, only those missing.
# Usage: scripts/deps.sh [--test]   (--test adds what the tests need)
set -euo pipefail

pkgs=(gcc pkg-config meson ninja-build libdpdk-dev dpdk libpcap-dev
      libnuma-dev libbsd-dev libjansson-dev python3
      python3-aiohttp python3-prometheus-client)   # shaper-api, -exporter
if [ "${1:-}" = "--test" ]; then
	pkgs+=(dpdk-dev libcmocka-dev python3-pytest python3-pytest-xdist python3-scapy
	       python3-pexpect iperf3 iproute2 ethtool iputils-ping procps
	       nftables bc python3-matplotlib
	       prometheus tcpdump   # tcpdump: scripts/trace-demo
	       chromium chromium-driver python3-selenium   # the dashboard's test
	       firefox-esr   # the dashboard in Firefox (WebDriver BiDi)
	       tshark   # reads the drop capture (test_capture.py)
	       clang libclang-rt-14-dev)   # fuzz/: clang, libFuzzer, sanitizers
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -q
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
		--no-install-recommends "${missing[@]}"
fi

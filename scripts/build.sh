#!/usr/bin/env bash
# Configures and builds into build/ (or DIR).
#
# Usage: scripts/build.sh [--dir DIR] [--setup 'MESON OPTIONS'] [TARGET...]
#   e.g. scripts/build.sh app/dpdk-shaper   (only the program)
#
# Meson looks dependencies up when it configures, and caches what it found:
# a build dir configured before `apt-get install libcmocka-dev` would never
# build the unit tests, one configured before a purge would fail to compile
# them. So the set of dependencies pkg-config finds is recorded next to the
# configuration, and the build dir is configured afresh (--wipe: the build
# starts over, keeping its options) whenever that set changed.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
setup=()
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) dir=$2; shift 2 ;;
	--setup) read -r -a setup <<<"$2"; shift 2 ;;
	*) break ;;
	esac
done

# Every dependency() of the meson.build files, required or not.
fingerprint() {
	local d
	for d in libdpdk libpcap numa libbsd jansson cmocka; do
		echo "$d $(pkg-config --modversion "$d" 2>/dev/null || echo none)"
	done
}
stamp=$dir/.shaper-deps
now=$(fingerprint)
if [ ! -f "$dir/build.ninja" ]; then
	rm -rf "$dir"
	meson setup "${setup[@]}" "$dir"
elif [ "$(cat "$stamp" 2>/dev/null)" != "$now" ]; then
	echo "build.sh: the dependencies found changed since $dir/ was" \
		"configured: configuring it again"
	meson setup --wipe "$dir"
fi
echo "$now" >"$stamp"
ninja -C "$dir" "$@"

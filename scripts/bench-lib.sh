# Sourced by the benchmark scripts: memory for the DPDK programs.
#
# 2 MiB hugepages where they can be had (as root: reserve them and mount
# hugetlbfs), else --no-huge; says which in one line. SHP_BENCH_HUGE=0
# forces --no-huge. Sets MEM_SHAPER and MEM_SMALL (EAL memory options for
# the shaper, and for testpmd / bench_delay_floor); bench_args, below,
# reads the common arguments. What bench_mem reserved or mounted,
# bench_mem_restore (the scripts' exit trap) gives back: the machine is
# left as it was found (SHP_BENCH_KEEP_HUGE=1 keeps them, for a series of
# runs).
BENCH_HUGE_WAS= BENCH_HUGE_MOUNTED=
bench_mem() {
	local want=${1:-2048} have
	MEM_SHAPER=(--no-huge -m 3072) MEM_SMALL=(--no-huge -m 1024)
	if [ "${SHP_BENCH_HUGE:-1}" = 0 ]; then
		echo "memory: --no-huge (SHP_BENCH_HUGE=0)"
		return
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "memory: --no-huge (hugepages need root)"
		return
	fi
	have=$(cat /proc/sys/vm/nr_hugepages)
	if [ "$have" -lt "$want" ]; then
		BENCH_HUGE_WAS=$have
		echo "$want" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
	fi
	have=$(cat /proc/sys/vm/nr_hugepages)
	if ! mountpoint -q /dev/hugepages; then
		mkdir -p /dev/hugepages
		mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null &&
			BENCH_HUGE_MOUNTED=1
	fi
	if [ "$have" -lt "$want" ] || ! mountpoint -q /dev/hugepages; then
		echo "memory: --no-huge (could reserve only $have of $want" \
			"2 MiB pages or mount hugetlbfs)"
		return
	fi
	MEM_SHAPER=() MEM_SMALL=()
	echo "memory: 2 MiB hugepages ($have reserved, hugetlbfs on" \
		"/dev/hugepages)"
}

# Undo what bench_mem did, after the programs exited (their files in
# hugetlbfs gone: the EAL removes them, a killed one's are removed here).
bench_mem_restore() {
	[ "${SHP_BENCH_KEEP_HUGE:-0}" = 1 ] && return 0
	if [ -n "$BENCH_HUGE_MOUNTED" ]; then
		rm -f /dev/hugepages/* 2>/dev/null || true
		umount /dev/hugepages 2>/dev/null || true
	fi
	if [ -n "$BENCH_HUGE_WAS" ]; then
		echo "$BENCH_HUGE_WAS" >/proc/sys/vm/nr_hugepages 2>/dev/null ||
			true
	fi
	return 0
}

# [SECONDS [ROUNDS]] [-- shaper options]: sets secs (10), rounds (3) and
# extra (the shaper options, --mbufs 65536 when none are given).
bench_args() {
	secs=10
	rounds=3
	[ $# -gt 0 ] && [ "$1" != "--" ] && { secs=$1; shift; }
	[ $# -gt 0 ] && [ "$1" != "--" ] && { rounds=$1; shift; }
	[ "${1:-}" = "--" ] && shift
	extra=("$@")
	[ ${#extra[@]} -gt 0 ] || extra=(--mbufs 65536)
}


# docs/benchmarks.md is written by the benchmarks: bench_publish_begin
# TITLE "$@" (after the script's cd to the top) tees what the script
# prints; bench_publish_end, at the end of a run that finished, writes it
# into the section of its benchmark (the script: a run with other
# arguments replaces it), with the command line (the script, its
# arguments and the SHP_BENCH_*, FID_*, SCALE_* and BENCH_* settings it ran
# with), the machine and the date (scripts/bench_publish.py).
# SHP_BENCH_PUBLISH=0: print only.
bench_quote() {
	case $1 in
	''|*[!A-Za-z0-9_./:,=@%+-]*)
		case $1 in *"'"*) printf %q "$1" ;; *) printf "'%s'" "$1" ;; esac ;;
	*) printf %s "$1" ;;
	esac
}
BENCH_OUT= BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench_publish_begin() {
	local v a cmd=
	BENCH_TITLE=$1
	shift
	for v in $(compgen -e | grep -E '^(SHP_BENCH_|FID_|BENCH_|SCALE_)' | sort); do
		case $v in SHP_BENCH_PUBLISH|SHP_BENCH_KEEP_HUGE) continue ;; esac
		cmd+="$v=$(bench_quote "${!v}") "
	done
	cmd+="scripts/$(basename "$0")"
	for a in "$@"; do cmd+=" $(bench_quote "$a")"; done
	BENCH_CMD=$cmd
	[ "${SHP_BENCH_PUBLISH:-1}" = 1 ] || return 0
	BENCH_OUT=$(mktemp)
	exec 3>&1 > >(tee "$BENCH_OUT")
	BENCH_TEE=$!
}
bench_publish_end() {
	[ -n "$BENCH_OUT" ] || return 0
	exec >&3 3>&-
	wait "$BENCH_TEE" 2>/dev/null || true
	(cd "$BENCH_DIR" && /usr/bin/python3 scripts/bench_publish.py \
		"$BENCH_TITLE" "$BENCH_CMD" "$BENCH_OUT")
	rm -f "$BENCH_OUT"
	BENCH_OUT=
}

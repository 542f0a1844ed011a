#!/usr/bin/env bash
# The micro-benchmarks of bench/ (build/bench/), each with the arguments
# docs/benchmarks.md gives it, one after the other; each run's output is
# written into its section of docs/benchmarks.md (scripts/bench-lib.sh,
# SHP_BENCH_PUBLISH=0: print only). They print figures and ratios
# measured side by side in one run; nothing here asserts a timing.
#
# Usage: scripts/bench-micro.sh [NAME...]   (default: all; NAME e.g. bands)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
eal=(--no-pci --no-shconf --log-level '*:error' --file-prefix bm$$)
declare -A title=(
	[bands]="Band choice: bitmap against scanning (bench_bands)"
	[counters]="Counters: per-lcore blocks against a shared atomic (bench_counters)"
	[netem]="netem's stage cost (bench_netem)"
	[netem_flush]="Flushing netem's tree (bench_netem_flush)"
	[delay_floor]="The floor: holding packets at all (bench_delay_floor)"
	[store_floor]="The byte store's floor (bench_store_floor)"
	[delay_line]="netem at depth, with the work around it (bench_delay_line)"
	[hiccup]="The host's own noise (bench_hiccup)"
	[fq_codel]="Queue kinds beside pfifo_fast: fq_codel, dualpi2, pie, red (bench_fq_codel)"
	[class_match]="Per-class lookup (bench_class_match)"
	[classify]="Classify (bench_classify)"
	[tbf_shared]="One bucket shared by a link's shards (bench_tbf_shared)"
	[netem_chain]="netem's loss as the link's one process (bench_netem_chain)"
	[link_claims]="Each link-wide claim, alone and contended (bench_link_claims)"
)
# the arguments of each (as the sections' commands have them)
args_of() {
	case $1 in
	bands|fq_codel) echo "-l 0 --no-huge -m 512" ;;
	counters) echo "--lcores 0@0,1@0,2@1 --no-huge -m 512" ;;
	netem) echo "10000" ;;
	netem_flush) echo "1000000" ;;
	hiccup) echo "5" ;;
	delay_floor) echo "-l 1 --no-huge -m 2048 -- 70000 200000" ;;
	store_floor) echo "-l 1 --no-huge -m 1024 -- -f -n 5000000 10000000" ;;
	delay_line) echo "-l 1 --no-huge -m 2048 -- 10000 40000 160000" ;;
	class_match) echo "-l 0 --no-huge -m 1024" ;;
	classify) echo "-l 0 --no-huge -m 256" ;;
	tbf_shared) echo "--lcores 0@0,1@1 --no-huge -m 64" ;;
	netem_chain) echo "--lcores 0@0,1@1 --no-huge -m 256" ;;
	link_claims) echo "--lcores 0@0,1@1 --no-huge -m 256" ;;
	esac
}
all=(bands counters netem netem_flush delay_floor store_floor delay_line
     hiccup fq_codel class_match classify tbf_shared netem_chain
     link_claims)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
status=0
for n in "${names[@]}"; do
	bin=build/bench/bench_$n
	[ -n "${title[$n]:-}" ] || { echo "bench-micro: no benchmark $n" >&2; exit 2; }
	[ -x "$bin" ] || { echo "bench-micro: build first (scripts/build.sh)" >&2; exit 2; }
	read -ra a <<<"$(args_of "$n")"
	# EAL programs take the common EAL options before their own "--"
	case " ${a[*]} " in
	*" -l "*|*" --lcores "*)
		i=${#a[@]}
		for j in "${!a[@]}"; do [ "${a[$j]}" = -- ] && { i=$j; break; }; done
		a=("${a[@]:0:$i}" "${eal[@]}" "${a[@]:$i}") ;;
	esac
	# the section's key: the benchmark's program, bench_NAME
	( bench_publish_begin "${title[$n]}" "$n"
	  echo "build/bench/bench_$n $(args_of "$n")"
	  "$bin" "${a[@]}" 2>&1
	  rc=$?
	  rm -rf /var/run/dpdk/bm$$
	  [ $rc -eq 0 ] && bench_publish_end
	  exit $rc ) || { echo "bench-micro: $n failed"; status=1; }
done
exit $status

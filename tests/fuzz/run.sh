#!/bin/bash
# Runs each libFuzzer target given for SECONDS, from its seed corpus
# tests/fuzz/corpus/<target>/ (read only: new inputs go to a scratch
# directory) with its dictionary tests/fuzz/<target>.dict if any.  One line
# per target: executions, corpus size, result.  Crash inputs are kept as
# tests/fuzz/crash-* (and leak-*, timeout-*, oom-*).  Exit 1 on any failure.
#
#   tests/fuzz/run.sh SECONDS tests/fuzz/fuzz_s3 ...
set -u
cd "$(dirname "$0")/../.."
secs=${1:?usage: run.sh SECONDS TARGET...}
shift
fail=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for bin in "$@"; do
	name=$(basename "$bin")
	target=${name#fuzz_}
	seeds=tests/fuzz/corpus/$target
	work=$scratch/$target
	log=$scratch/$target.log
	mkdir -p "$work"
	args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048
	      -print_final_stats=1 -artifact_prefix=tests/fuzz/)
	dict=tests/fuzz/$target.dict
	[ -f "$dict" ] && args+=(-dict="$dict")
	[ -d "$seeds" ] || seeds=
	"$bin" "${args[@]}" "$work" $seeds >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" |
		tail -1)
	corpus=$(ls "$work" | wc -l)
	if [ $rc -eq 0 ]; then
		result=ok
	else
		result="FAIL (exit $rc)"
		fail=1
	fi
	printf '%-16s %12s execs  %6s new inputs  %s\n' "$name" "${execs:-?}" \
		"$corpus" "$result"
	if [ $rc -ne 0 ]; then
		grep -E 'ERROR|invariant|SUMMARY|artifact' "$log" | head -20
		tail -30 "$log"
	fi
done
exit $fail

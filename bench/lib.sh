# bench/lib.sh - what the benchmark scripts share, sourced (after
# tests/lib.sh) by bench/shuffle.sh and bench/suite.sh: the CPU time and
# peak memory of a daemon, read from /proc while it runs.
#   daemon_cpu PID  its utime + stime, in seconds (2 decimals)
#   daemon_hwm PID  its VmHWM (peak resident set), in MiB
# Both print nothing once PID is gone.

CLK_TCK=$(getconf CLK_TCK)

daemon_cpu() {
	awk -v t="$CLK_TCK" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat" 2>/dev/null
}
daemon_hwm() {
	awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null
}

# bench/lib.sh - what the benchmark scripts share, sourced by bench/core.sh,
# objstore.sh, shuffle.sh and suite.sh: the CPU time and peak memory of a
# daemon, read from /proc while it runs, and the machine a run was on.
#   daemon_cpu PID  its utime + stime, in seconds (2 decimals)
#   daemon_hwm PID  its VmHWM (peak resident set), in MiB
# Both print nothing once PID is gone.
#   bench_machine   one line naming the machine for a result's header:
#                   CPU model, cores, kernel, glibc.  Rows taken on other
#                   CPUs differ for reasons of their own: glibc's memcpy
#                   copies a large buffer backwards on some CPUs (AMD with
#                   a 1 MiB L2, glibc 2.36), which changes the order an mmap
#                   reader faults its pages in.  And whether the guest
#                   hands free memory back to its host (virtio-balloon's
#                   free page reporting, on the Firecracker VMs this was
#                   measured on): memory written for the first time since
#                   the host took it back costs a host fault (8 GiB
#                   written to /dev/shm: 8.5 s, at once again 4.8-5.6 s).
#                   Issue 14's four readers did not measurably pay it
#                   (alternated with reporting off, docs/benchmarks.md,
#                   "Cost per byte"), but other loads may.

CLK_TCK=$(getconf CLK_TCK)

daemon_cpu() {
	awk -v t="$CLK_TCK" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat" 2>/dev/null
}
daemon_hwm() {
	awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null
}

bench_machine() {
	printf '%s, %s cores, Linux %s, glibc %s%s' \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
		"$(nproc)" "$(uname -r)" "$(ldd --version | awk 'NR == 1 { print $NF }')" \
		"$(free_page_reporting)"
}

# ", free page reporting on (order N)" where a virtio balloon negotiated
# VIRTIO_BALLOON_F_REPORTING (feature bit 5) and the guest reports free
# blocks of order N (at most the kernel's largest, 10); nothing elsewhere.
free_page_reporting() {
	local f=/sys/module/page_reporting/parameters/page_reporting_order
	local d o

	[ -r "$f" ] || return 0
	o=$(cat "$f" 2>/dev/null)
	[ -n "$o" ] && [ "$o" -le 10 ] 2>/dev/null || return 0
	for d in /sys/bus/virtio/drivers/virtio_balloon/virtio*/features; do
		[ -r "$d" ] && [ "$(cut -c6 "$d")" = 1 ] || continue
		printf ', free page reporting on (order %s)' "$o"
		return 0
	done
}

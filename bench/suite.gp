# bench/suite.gp - the plots of bench/suite.sh (gnuplot 5, pngcairo).
#
#   gnuplot -e "plotdir='DIR'; out='OUT'; stores='slowfs http s3'" bench/suite.gp
#
# Reads DIR/wait-STORE.dat (one block per system: a title line, then
# "latency_ms data_wait_pct" lines; blocks separated by two blank lines)
# and DIR/inflight.dat (one block per store: "max_inflight mb_s"); DIR/blocks.gp
# sets nb_STORE and nb_inflight, the number of blocks of each file.
# Writes OUT/suite-wait-latency.png (one panel per store) and
# OUT/suite-inflight.png.

load plotdir . "/blocks.gp"
set terminal pngcairo size 1500,480 font ",10" noenhanced
set output out . "/suite-wait-latency.png"
n = words(stores)
set multiplot layout 1, n title "Data wait of the seq-batches workload (8 MiB batches, 40 ms compute) against store latency"
set xlabel "store latency (ms; slowfs: per READ, HTTP/S3: to the first byte)"
set ylabel "data wait (% of wall)"
set yrange [0:100]
set logscale x
set key top left
set grid
do for [i = 1:n] {
	s = word(stores, i)
	f = plotdir . "/wait-" . s . ".dat"
	set title (s eq "slowfs" ? "slow directory (bench/slowfs)" : (s eq "http" ? "HTTP (nginx + delayproxy)" : "S3 (s3rver + delayproxy)"))
	blocks = value("nb_" . s)
	if (blocks > 0) {
		plot for [b = 0:blocks - 1] f index b using 1:2 with linespoints lw 2 pt 7 title columnheader(1)
	} else {
		# no seq-workload rows for this store (e.g. --workloads scan)
		set xrange [1:100]
		plot 200 title "no seq-workload rows"
		set autoscale x
	}
}
unset multiplot

set terminal pngcairo size 800,520 font ",10" noenhanced
set output out . "/suite-inflight.png"
set title "prefetchfs: plain scan (1 MiB read()s) against -o max_inflight"
set xlabel "-o max_inflight"
set ylabel "MB/s"
set logscale x 2
set yrange [0:*]
set key top left
f = plotdir . "/inflight.dat"
blocks = nb_inflight
if (blocks > 0) {
	plot for [b = 0:blocks - 1] f index b using 1:2 with linespoints lw 2 pt 7 title columnheader(1)
} else {
	set xrange [1:32]
	set yrange [0:1]
	plot 2 title "no max_inflight rows"
}

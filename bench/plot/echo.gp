# Echo throughput of every server, per shape, relative to the hand-written C
# epoll loop measured in the same run (1.0 = the ceiling). Called by bench/run
# with datafile and outfile set.
set terminal pngcairo size 1200,560 font "sans,10" noenhanced
set output outfile
# One distinct colour per server, in bench/run's order: ours in purples and
# blues, library peers in warm colours, the C ceilings in greys.
set linetype 1 lc rgb "#5e3c99"
set linetype 2 lc rgb "#8073ac"
set linetype 3 lc rgb "#2166ac"
set linetype 4 lc rgb "#e66101"
set linetype 5 lc rgb "#fdb863"
set linetype 6 lc rgb "#b2182b"
set linetype 7 lc rgb "#d6604d"
set linetype 8 lc rgb "#f4a582"
set linetype 9 lc rgb "#333333"
set linetype 10 lc rgb "#999999"
set title "Echo throughput relative to the C epoll ceiling (median of runs; higher is better)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.9 border -1
set boxwidth 0.9
set ylabel "x C epoll ceiling"
set yrange [0:*]
set grid ytics
set key outside right top vertical
set xtics nomirror
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "black"

ncol = words(system("head -1 " . datafile))
plot for [i=2:ncol] datafile using i:xtic(1) title columnheader(i)

# Micro benchmark times per library (ns, log scale; lower is better). Called by
# bench/run with datafile and outfile set.
set terminal pngcairo size 1200,560 font "sans,10" noenhanced
set output outfile
# Ours in purples and blue, the peers in warm colours.
set linetype 1 lc rgb "#5e3c99"
set linetype 2 lc rgb "#8073ac"
set linetype 3 lc rgb "#2166ac"
set linetype 4 lc rgb "#e66101"
set linetype 5 lc rgb "#fdb863"
set linetype 6 lc rgb "#b2182b"
set title "Micro benchmarks: ns per operation (median of runs; lower is better)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.9 border -1
set boxwidth 0.9
set logscale y
set ylabel "ns per operation (log scale)"
set grid ytics
set key outside right top vertical
set xtics nomirror rotate by -25

ncol = words(system("head -1 " . datafile))
plot for [i=2:ncol] datafile using i:xtic(1) title columnheader(i)

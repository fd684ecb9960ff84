#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/fabric_scale_plot.sh: the chart of bench/fabric_scale.sh's runs.
#
#   bench/fabric_scale_plot.sh OUT.png RUNDIR...
#
# One group of bars per run (each RUNDIR a fabric_scale.sh --out directory;
# other arguments, such as the runs' logs a glob brings, are left out; runs in
# the order of their numbers):
# inference p99 over both replicas in the noload, nolanes and lanes scenarios,
# on a log scale, with each p99's bootstrap 95 % CI as an error bar. Needs
# gnuplot and python3. Exit: 0 drawn, 1 error.
set -uo pipefail
(($# >= 2)) || { echo "usage: fabric_scale_plot.sh OUT.png RUNDIR..." >&2; exit 1; }
png=$1
shift
command -v gnuplot >/dev/null || { echo "fabric_scale_plot: needs gnuplot" >&2; exit 1; }
dat=$(mktemp) || exit 1
trap 'rm -f "$dat"' EXIT
python3 - "$@" >"$dat" <<'PY' || exit 1
import os, random, re, sys
def p99(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(0.99 * (len(v) - 1) + 0.5))]
# Run directories only (a glob such as runs/run* also matches each run's
# .log), in the order of their numbers: run2 before run10.
def natural(d):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", d)]
dirs = sorted((d for d in sys.argv[1:] if os.path.isdir(d)), key=natural)
if not dirs:
    sys.exit("fabric_scale_plot: no run directory among the arguments")
for n, d in enumerate(dirs, 1):
    row = [str(n)]
    for label in ("noload", "nolanes", "lanes"):
        v = []
        for r in ("i1", "i2"):
            try:
                v += [float(x) for x in open(f"{d}/{label}-{r}.samples")]
            except OSError:
                pass
        if not v:
            row += ["NaN"] * 3
            continue
        rnd = random.Random(24)
        b = sorted(p99([rnd.choice(v) for _ in v]) for _ in range(1000))
        row += [f"{p99(v):.3f}", f"{b[25]:.3f}", f"{b[974]:.3f}"]
    print(" ".join(row))
PY
gnuplot <<GP || exit 1
set terminal pngcairo size 900,480 font "sans,11" noenhanced
set output "$png"
set title "Inference p99 on a leaf-spine fabric, 10 slurmd nodes, 2 training jobs (bench/fabric_scale.sh)"
set ylabel "p99 latency, ms (log scale; bars: bootstrap 95 % CI)"
set xlabel "run"
set logscale y
set yrange [0.1:30000]
set style data histograms
set style histogram errorbars gap 2 lw 1
set style fill solid 0.8 border -1
set key top left horizontal
plot "$dat" using 2:3:4:xtic(1) title "no load" lc rgb "#999999", \
     "" using 5:6:7 title "training without Lanes" lc rgb "#d62728", \
     "" using 8:9:10 title "training with Lanes (real plugins)" lc rgb "#2ca02c"
GP
echo "fabric_scale_plot: $png"

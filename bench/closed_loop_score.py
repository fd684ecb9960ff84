#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The closed loop's figures from a run's directory (bench/closed_loop.sh): per
# phase the controller's changes per node, SLO attainment per row, training
# throughput; the sweep's best fixed ceils (or an earlier run's, --best);
# JSON for bench/closed_loop_runs.sh (--json); the chart's data files.
#
#   closed_loop_score.py DIR [--best FILE] [--json FILE]
#
# The run's settings come from DIR/score.args (closed_loop.sh writes it: t0,
# SLO in ms, row in s, mode, uplink in bit/s, a line each); a run recorded
# before it did ran with the defaults, and its t0 is the second its first
# phase began.
import argparse, json, re, statistics, sys
ap = argparse.ArgumentParser(description="Score a run of bench/closed_loop.sh.")
ap.add_argument("dir")
ap.add_argument("--best", default="", help="an earlier run's JSON: its best fixed ceils, when DIR has no sweep")
ap.add_argument("--json", default="", help="write the figures here")
args = ap.parse_args()
out, best_from, json_to = args.dir, args.best, args.json
marks = [(l.split()[0], float(l.split()[1])) for l in open(out + "/phases.txt")]
try:
    t0, slo, row, mode, uplink_bits = open(out + "/score.args").read().split()
except FileNotFoundError:
    t0, slo, row, mode, uplink_bits = int(marks[0][1]), 10, 10, "control", 200e6
t0, slo, row, uplink_bits = float(t0), float(slo) / 1000, int(row), float(uplink_bits)
phases = [(n, a, b) for (n, a), (_, b) in zip(marks, marks[1:])]
# Every change of the offered load: each phase's start, the ramp's steps, the
# spike's end. closed_loop.sh records them (steps.txt: start, rate); for a run
# recorded before it did, they are rebuilt from the phases and the probe's
# load calls in order (load.json: rate, elapsed), each at the end of the last
# one in its phase (the probe starts in tens of milliseconds).
def load_steps():
    try:
        recs = [(float(t), float(r)) for t, r in (l.split()[:2] for l in open(out + "/steps.txt"))]
    except FileNotFoundError:
        recs = []
        calls = [json.loads(l) for l in open(out + "/load.json") if l.strip()]
        calls = [(float(c["rate"]), float(c["elapsed_s"])) for c in calls]
        i = 0
        for name, a, b in phases:
            t = a
            while i < len(calls) and (t == a or t + 1.5 < b):
                recs.append((t, calls[i][0]))
                t += calls[i][1]
                i += 1
    changed, last = [], None
    for t, r in sorted(recs):
        if r != last:
            changed.append(t)
        last = r
    return changed
steps = load_steps() + [a for n, a, b in phases if n != "end"]
# A row is judged ("late") when it starts more than 5 s after the last change
# of the load and holds none (issue 23: "every 10 s row more than 5 s after a
# step"): a row that holds a step, a ramp's or the spike's end, is part of
# that step's transient.
def judged(end):
    start = end - row
    return all(s <= start - 5 or s >= end for s in steps)
p99 = [(float(t), float(v)) for t, v in (l.split() for l in open(out + "/p99.txt"))]
good = {float(t): float(v) for t, v in (l.split() for l in open(out + "/good.txt"))}
alls = {float(t): float(v) for t, v in (l.split() for l in open(out + "/all.txt"))}
changes = []  # (t, node, from, to, cause)
for node in ("train1", "train2"):
    for l in open("%s/agent-%s.log" % (out, node)):
        m = re.search(r"class training ceil (\S+) -> (\S+) on \S+ \(cause: (.*)\)", l) if mode == "control" else \
            re.search(r"JobId=\d+ \(training\) on \S+: ceil (\S+) -> (\S+) \((.*)\)", l)
        if m:
            changes.append((float(l.split()[0]), node, m.group(1), m.group(2), m.group(3)))
changes.sort()
holds = []  # (t, node): an SLO break the congestion signal said was not the network's
for node in ("train1", "train2"):
    for l in open("%s/agent-%s.log" % (out, node)):
        if re.search(r"class training ceil \S+ held on ", l):
            holds.append((float(l.split()[0]), node))
tb = [(float(t), int(b)) for t, b in (l.split() for l in open(out + "/training-bytes.txt"))]
thr = []
for (ta, ba), (tb_, bb) in zip(tb, tb[1:]):
    if bb >= ba and tb_ > ta:
        thr.append(((ta + tb_) / 2, (bb - ba) * 8 / (tb_ - ta) / 1e6))
def mean_in(xs, a, b):
    v = [y for t, y in xs if a <= t < b]
    return statistics.mean(v) if v else float("nan")
# The FIFO's queueing delay (ms) at each end of the uplink: its backlog over
# the uplink's rate. sw/up0 holds the replies (and training's bulk), far/up0
# the requests; a request and its reply can meet both. A row misses 99 % only
# when 1 % of its requests were late: 0.1 s of them at 1500 req/s, 0.5 s at
# 200, so a queue that did it lasted longer than the sampler's 0.1 s and shows.
queues = {"sw/up0": [], "far/up0": []}
try:
    for l in open(out + "/queues.txt"):
        f = l.split()
        try:
            if len(f) == 5 and f[1] in queues:
                queues[f[1]].append((float(f[0]), sum(int(x) for x in f[2:]) * 8 / uplink_bits * 1e3))
        except ValueError:
            pass  # the sampler's last line, cut short
except FileNotFoundError:
    pass
def queue_max(a, b):  # the worst delay the two ends held in [a, b): ms, or None (no samples)
    ends = [max((d for t, d in queues[e] if a <= t < b), default=None) for e in ("far/up0", "sw/up0")]
    return None if None in ends else sum(ends)
def attain(a, b):  # rows ending in (a, b]
    out = []
    for t in sorted(alls):
        if a < t <= b and alls[t] > 0:
            out.append((t, 100.0 * good.get(t, 0) / alls[t]))
    return out
# The sweep: best fixed ceil per load (every row of every cell it had at that
# load >= 99 %: a ceil swept twice at one load is judged on both).
best = {}
cells = {}
try:
    sw = [l.split() for l in open(out + "/sweep.txt")]
    runs = []
    for cur, nxt in zip(sw, sw[1:]):
        if cur[0] != "end":
            runs.append((int(cur[0]), int(cur[1]), float(cur[2]), float(nxt[2])))
    for c, rate, a, b in runs:
        rows = attain(a + row, b)
        ok = rows and min(v for t, v in rows) >= 99.0
        tput = mean_in(thr, a + 3, b)
        q = queue_max(a, b)
        print("sweep: fixed ceil %3d Mbit/s at %4d req/s: rows %s  training %.1f Mbit/s  switch queue max %s%s" % (
            c, rate, " ".join("%.1f" % v for t, v in rows), tput, "-" if q is None else "%.1f ms" % q,
            "  meets the SLO" if ok else ""))
        prev_ok, tputs = cells.get((c, rate), (True, []))
        cells[(c, rate)] = (prev_ok and bool(ok), tputs + [tput])
    for (c, rate), (ok, tputs) in cells.items():
        if ok and (rate not in best or c > best[rate][0]):
            best[rate] = (c, sum(tputs) / len(tputs))
except FileNotFoundError:
    pass
best_source = "this run's sweep" if best else ""
if not best and best_from:
    try:
        best = {int(r): (int(c), float(t)) for r, c, t in json.load(open(best_from))["best_fixed"]}
        best_source = best_from
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("closed_loop: CL_BEST=%s: no best_fixed in it (%s)" % (best_from, e))
print("mode %s; phases: %s" % (mode, ", ".join("%s at %.0f s" % (n, a - t0) for n, a, b in phases)))
summary = []
for name, a, b in phases:
    ch = {n: sum(1 for t, nn, *_ in changes if nn == n and a <= t < b) for n in ("train1", "train2")}
    rows = attain(a, b)
    late = [v for t, v in rows if judged(t)]
    # Each late row under 99 %, with the worst queue the switch held in it.
    missed = [(t - t0, v, queue_max(t - row, t)) for t, v in rows if judged(t) and v < 99.0]
    qmax = queue_max(a, b)
    tput = mean_in(thr, a, b)
    med = statistics.median([v for t, v in p99 if a <= t < b] or [float("nan")]) * 1e3
    print("  %-6s changes train1 %d train2 %d | p99 median %6.2f ms | rows %s | min row >5 s after a step %s | training %5.1f Mbit/s | switch queue max %s" % (
        name, ch["train1"], ch["train2"], med, " ".join("%.1f" % v for t, v in rows) or "-",
        "%.1f %%" % min(late) if late else "-", tput, "-" if qmax is None else "%.1f ms" % qmax))
    held = {n: sum(1 for t, nn in holds if nn == n and a <= t < b) for n in ("train1", "train2")}
    if any(held.values()):
        print("         held train1 %d train2 %d: p99 over the SLO with no queue in the switch" % (held["train1"], held["train2"]))
    for t, v, q in missed:
        print("         row ending at %.0f s: %.2f %% under the SLO; the switch's queue at most %s in it" % (
            t, v, "(not sampled)" if q is None else "%.1f ms (%s)" % (q, "a queue" if q >= slo * 1e3 / 2 else "no queue: a stall of this machine")))
    summary.append((name, ch, late, tput, med, missed, qmax))
ref = {}
if best:
    print("best fixed ceil (%s): " % best_source + "; ".join("%d req/s: %d Mbit/s per node, training %.1f Mbit/s" % (r, c, t)
                                          for r, (c, t) in sorted(best.items())))
    ref = {"low": best.get(min(best)), "fall": best.get(min(best)), "high": best.get(max(best))}
    for name, ch, late, tput, med, *_ in summary:
        if ref.get(name):
            print("  %-6s training %.1f / best fixed %.1f Mbit/s = %.0f %%" % (name, tput, ref[name][1], 100 * tput / ref[name][1]))
if json_to:
    with open(json_to, "w") as f:
        json.dump({"mode": mode, "slo_ms": slo * 1000, "row_s": row,
                   "best_fixed": [[r, c, t] for r, (c, t) in sorted(best.items())],
                   "phases": [{"name": name, "changes": ch, "late_rows": late, "training_mbit": tput,
                               "p99_median_ms": med,
                               "vs_best": (tput / ref[name][1]) if ref.get(name) else None,
                               "missed_rows": [{"end_s": t, "attainment": v, "queue_max_ms": q} for t, v, q in missed],
                               "queue_max_ms": qmax}
                              for name, ch, late, tput, med, missed, qmax in summary],
                   "changes": [[t - t0, n, a, b, c] for t, n, a, b, c in changes]}, f, indent=1)
print("changes: " + "; ".join("%.1f s %s %s->%s (%s)" % (t - t0, n, a, b, c) for t, n, a, b, c in changes))
with open(out + "/timeline.dat", "w") as f:
    for t, v in p99:
        f.write("p %.3f %.3f\n" % (t - t0, v * 1e3))
with open(out + "/throughput.dat", "w") as f:
    for t, v in thr:
        f.write("%.3f %.2f\n" % (t - t0, v))
with open(out + "/marks.gp", "w") as f:
    for name, a, b in phases:
        f.write('set arrow from %.1f, graph 0 to %.1f, graph 1 nohead dt 3 lc rgb "#777777"\n' % (a - t0, a - t0))
        f.write('set label "%s" at %.1f, graph 0.97 offset 0.5,0 font ",9"\n' % (name, a - t0))
    for t, n, a, b, c in changes:
        down = "> slo" in c or "no usable" in c or c.startswith("window busy")
        f.write('set arrow from %.1f, graph 0 to %.1f, graph 1 nohead lc rgb "%s" lw 1\n' % (
            t - t0, t - t0, "#cc3311" if down else "#228833"))

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/fabric_scale_report.py: the figures of one bench/fabric_scale.sh run.

    bench/fabric_scale_report.py OUTDIR

Reads what fabric_scale.sh left in OUTDIR (params, the probe's samples and
JSON, iperf3's JSON, the uplink counters and the queue sampler's file),
prints the figures per scenario and writes OUTDIR/summary.json. Run again on
a saved directory, it prints the same figures.

Training's share of the capacity left (lanes scenario). Training crosses the
fabric on paths leaf L -> spine S -> leaf M (L, M the training leaves 1 and
2, L != M; S every spine), each two links at the uplink rate: leaf L's upS
and spine S's dnM. In a window W the capacity a path leaves training is
rate x |W| minus the bytes the classes above training (priority: inference;
best effort: storage and anything unmarked) sent on the busier of its two
links; training's bytes on the path are the scavenger class's bytes spine S
sent to leaf M. The share is the sum over paths of training's bytes over the
sum of capacity left. W is the steady window: from 2 s after the last ring
started (iperf3's start timestamps are whole seconds: one more second) and
1 s after the last storage stream started, to 1 s before the first ring or
storage stream ended. Byte counts are the qdiscs' (frames with their
Ethernet header), the unit HTB's rate is in.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from latency_ci import bootstrap_p99, interval95, p99, ratio_interval95, read_samples  # noqa: E402

RAMP_S = 2.0  # a ring's first seconds, left out (TCP's start, all four streams up)
TAIL_S = 1.0  # the last second before the first flow ended, left out


def rate_bits(text):
    m = re.match(r"(\d+)(k|m|g)bit$", text.lower())
    return int(m.group(1)) * {"k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class Run:
    def __init__(self, out):
        self.out = out
        params = {}
        for line in open(os.path.join(out, "params")):
            k, _, v = line.strip().partition("=")
            params[k] = v
        self.seconds = float(params["seconds"])
        self.uplink = params["uplink"]
        self.rate_bits = rate_bits(self.uplink)
        self.job_a = params["job_a"].split(",")
        self.job_b = params["job_b"].split(",")
        self.train_rate = params.get("train_rate", "?")
        self.train_ceil = params.get("train_ceil", "?")

    def path(self, name):
        return os.path.join(self.out, name)

    def time(self, name):
        try:
            return float(open(self.path(name)).read())
        except (OSError, ValueError):
            return None

    def samples(self, label):
        return read_samples(self.path(f"{label}-i1.samples")) + read_samples(self.path(f"{label}-i2.samples"))

    def lost(self, label):
        t = 0
        for r in ("i1", "i2"):
            j = load_json(self.path(f"{label}-{r}.json"))
            if j is None:
                return None
            t += j["errors"] + j["timeouts"] + max(0, j["scheduled"] - j["ok"] - j["errors"] - j["timeouts"])
        return t

    def late(self, label):
        m = 0.0
        for r in ("i1", "i2"):
            j = load_json(self.path(f"{label}-{r}.json"))
            if j is not None:
                m = max(m, j.get("max_send_lag_ms", 0.0))
        return m

    def counters(self, label):
        c = {}
        for when in ("before", "after"):
            try:
                for line in open(self.path(f"{label}-{when}.txt")):
                    f = line.split()
                    c.setdefault((f[0], f[1]), {})[when] = [int(x) for x in f[2:]]
            except (OSError, ValueError, IndexError):
                pass
        return {k: [a - b for a, b in zip(v["after"], v["before"])] for k, v in c.items() if len(v) == 2}

    def goodput(self, label, job, letter):
        tot = 0.0
        for n in job:
            j = load_json(self.path(f"{label}-{letter}-{n}.json"))
            try:
                tot += j["end"]["sum_received"]["bits_per_second"]
            except (TypeError, KeyError):
                pass
        return tot / 1e6

    def queue_rows(self, label):
        rows = []
        try:
            for line in open(self.path(f"{label}-queues.txt")):
                f = line.split()
                if len(f) >= 5:
                    rows.append((float(f[0]), f[1], [int(float(x)) for x in f[2:]]))
        except (OSError, ValueError):
            pass
        return rows

    def queue_delay(self, label, col):
        """The class's backlog over the uplink rate at every uplink end, in the
        probe's window: requests cross leaf 3's uplinks and the spines' ports to
        leaves 1-2, replies the leaf 1-2 uplinks and the spines' ports to leaf 3."""
        t0, t1 = self.time(f"{label}-probe.start"), self.time(f"{label}-probe.end")
        d = []
        for t, end, v in self.queue_rows(label):
            if t0 is not None and t1 is not None and not t0 <= t <= t1:
                continue
            if re.match(r"(lf\d/up|sp\d/dn)\d", end):
                d.append(v[col] * 8 / self.rate_bits * 1000)
        if not d:
            return None
        d.sort()
        return {"mean_ms": sum(d) / len(d), "p99_ms": d[min(len(d) - 1, int(0.99 * len(d)))], "max_ms": d[-1], "samples": len(d)}

    def flow_spans(self, label):
        """(start, end) of every ring's and storage stream's iperf3 client:
        start a whole second (iperf3's timesecs), end = start + its duration."""
        rings, storage = [], []
        for letter, job in (("A", self.job_a), ("B", self.job_b)):
            for n in job:
                rings.append(load_json(self.path(f"{label}-{letter}-{n}.json")))
        for n in self.job_a + self.job_b:
            storage.append(load_json(self.path(f"{label}-store-{n}.json")))

        def span(j):
            try:
                ts = float(j["start"]["timestamp"]["timesecs"])
                return ts, ts + float(j["end"]["sum_sent"]["end"])
            except (TypeError, KeyError, ValueError):
                return None

        return [span(j) for j in rings], [span(j) for j in storage]

    def steady_window(self, label):
        rings, storage = self.flow_spans(label)
        if not rings or None in rings or None in storage:
            return None
        start = max(s for s, _ in rings) + 1 + RAMP_S
        if storage:
            start = max(start, max(s for s, _ in storage) + 1)
        end = min(e for _, e in rings + storage) - TAIL_S
        return (start, end) if end - start >= 1 else None

    def series(self, label):
        """Per uplink end: [(time, [sent10, sent20, sent30])], in time order."""
        s = {}
        for t, end, v in self.queue_rows(label):
            if len(v) >= 6:
                s.setdefault(end, []).append((t, v[3:6]))
        for v in s.values():
            v.sort()
        return s

    @staticmethod
    def at(points, t):
        """The counters at time t, linearly between the samples around it."""
        if not points or t < points[0][0] or t > points[-1][0]:
            return None
        for (ta, a), (tb, b) in zip(points, points[1:]):
            if ta <= t <= tb:
                w = (t - ta) / (tb - ta) if tb > ta else 0.0
                return [x + w * (y - x) for x, y in zip(a, b)]
        return points[-1][1]

    def share_between(self, series, t0, t1):
        """Training bytes, capacity left and the higher classes' bytes on the
        busier link of each path, summed over the paths, between t0 and t1."""
        spines = sorted({m.group(1) for end in series for m in [re.match(r"sp(\d+)/dn\d+$", end)] if m})
        delta = {}
        for end, points in series.items():
            a, b = self.at(points, t0), self.at(points, t1)
            if a is None or b is None:
                return None
            delta[end] = [y - x for x, y in zip(a, b)]
        train = left = higher = 0.0
        paths = 0
        for s in spines:
            for src, dst in (("1", "2"), ("2", "1")):
                up, dn = delta.get(f"lf{src}/up{s}"), delta.get(f"sp{s}/dn{dst}")
                if up is None or dn is None:
                    return None
                busy = max(up[0] + up[1], dn[0] + dn[1])
                train += dn[2]
                higher += busy
                left += max(0.0, self.rate_bits / 8 * (t1 - t0) - busy)
                paths += 1
        return {"train_bytes": train, "left_bytes": left, "higher_bytes": higher, "paths": paths}

    def share(self, label):
        w = self.steady_window(label)
        if w is None:
            return None
        series = self.series(label)
        whole = self.share_between(series, *w)
        if whole is None or whole["left_bytes"] <= 0:
            return None
        per_second = []
        t = w[0]
        while t + 1 <= w[1] + 1e-9:
            s = self.share_between(series, t, t + 1)
            if s and s["left_bytes"] > 0:
                per_second.append(s["train_bytes"] / s["left_bytes"])
            t += 1
        dt = w[1] - w[0]
        origin = self.time(f"{label}-before.time") or w[0]
        mbit = lambda b: b * 8 / dt / 1e6
        return {
            "window_s": [w[0] - origin, w[1] - origin],
            "window_len_s": dt,
            "paths": whole["paths"],
            "capacity_mbit": whole["paths"] * self.rate_bits / 1e6,
            "higher_mbit": mbit(whole["higher_bytes"]),
            "left_mbit": mbit(whole["left_bytes"]),
            "train_mbit": mbit(whole["train_bytes"]),
            "share": whole["train_bytes"] / whole["left_bytes"],
            "share_per_second_min": min(per_second) if per_second else None,
            "share_per_second_max": max(per_second) if per_second else None,
        }


def fmt_q(q):
    if q is None:
        return "n/a"
    return f"mean {q['mean_ms']:.2f} ms, p99 {q['p99_ms']:.2f} ms, max {q['max_ms']:.2f} ms ({q['samples']} samples)"


def main():
    if len(sys.argv) != 2:
        print("usage: fabric_scale_report.py OUTDIR", file=sys.stderr)
        return 1
    run = Run(sys.argv[1])
    summary = {"uplink": run.uplink, "seconds": run.seconds, "train_rate": run.train_rate, "train_ceil": run.train_ceil}
    base = run.samples("noload")
    base_p99, base_boot = p99(base), bootstrap_p99(base)
    print(f"\nfabric_scale: {len(run.job_a) + len(run.job_b) + 2} nodes, uplinks {run.uplink} (2 per leaf), "
          f"{run.seconds:.0f} s per scenario, training class rate {run.train_rate} ceil {run.train_ceil} per node")
    for label in ("noload", "nolanes", "lanes"):
        v = run.samples(label)
        boot = base_boot if label == "noload" else bootstrap_p99(v)
        p, (lo, hi) = p99(v), interval95(boot)
        ratio = p / base_p99 if base_p99 > 0 else float("nan")
        rlo, rhi = ratio_interval95(boot, base_boot) if label != "noload" else (1.0, 1.0)
        lost = run.lost(label)
        c = run.counters(label)
        ecmp = " ".join(f"{k[1]}={v[0]}" for k, v in sorted(c.items()) if k[0] == "lf1")
        col = 0 if label == "lanes" else 1  # the inference class: priority with Lanes, best effort without
        q = run.queue_delay(label, col)
        s = {"p99_ms": p, "p99_ci_ms": [lo, hi], "requests": len(v), "lost": lost, "client_late_ms": run.late(label),
             "queue_inference": q}
        late = f"; client late by up to {run.late(label):.1f} ms"
        print(f"\n  {label}: inference p99 {p:.2f} ms (95 % CI {lo:.2f}-{hi:.2f}, {len(v)} requests)", end="")
        if label != "noload":
            s.update(ratio=ratio, ratio_ci=[rlo, rhi])
            print(f", x{ratio:.2f} of noload (95 % CI {rlo:.2f}-{rhi:.2f})", end="")
        print(f"; lost {lost if lost is not None else 'n/a'}{late}")
        if label != "noload":
            ga, gb = run.goodput(label, run.job_a, "A"), run.goodput(label, run.job_b, "B")
            jain = (ga + gb) ** 2 / (2 * (ga * ga + gb * gb)) if ga + gb > 0 else float("nan")
            s.update(train_a_mbit=ga, train_b_mbit=gb, jain=jain)
            print(f"    training (iperf3 goodput, whole run): job A {ga:.1f} Mbit/s, job B {gb:.1f} Mbit/s, "
                  f"aggregate {ga + gb:.1f}; Jain {jain:.3f}")
            leaf_up = {k: v for k, v in c.items() if re.match(r"lf[12]$", k[0])}
            print(f"    leaf 1-2 uplinks, whole scenario: bytes priority {sum(v[1] for v in leaf_up.values())}, "
                  f"best effort {sum(v[2] for v in leaf_up.values())}, scavenger {sum(v[3] for v in leaf_up.values())}")
        if label == "lanes":
            sh = run.share(label)
            s["share"] = sh
            if sh is None:
                print("    training's share of the capacity left: n/a (no steady window or no byte samples)")
            else:
                ps = ""
                if sh["share_per_second_min"] is not None:
                    ps = f"; per second {100 * sh['share_per_second_min']:.1f}-{100 * sh['share_per_second_max']:.1f} %"
                print(f"    training's share of the capacity left, steady window {sh['window_s'][0]:.1f}-{sh['window_s'][1]:.1f} s "
                      f"of the scenario ({sh['window_len_s']:.1f} s): {sh['paths']} paths x {run.uplink} = "
                      f"{sh['capacity_mbit']:.0f} Mbit/s, higher classes {sh['higher_mbit']:.1f}, left {sh['left_mbit']:.1f}, "
                      f"training {sh['train_mbit']:.1f} Mbit/s: {100 * sh['share']:.1f} %{ps}")
        print(f"    ECMP, packets on leaf 1's uplinks: {ecmp}")
        print(f"    switch queueing delay of the inference class ({'priority' if label == 'lanes' else 'best effort'}), "
              f"while the probe ran: {fmt_q(q)}")
        summary[label] = s
    with open(run.path("summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: GPL-2.0-or-later
"""A latency sample's p99 and its bootstrap 95 % confidence interval, as the
benchmarks print them (contrib/demo.sh, bench/fabric_scale_report.py).

p99 is the nearest-rank 99th percentile; the interval is that of RESAMPLES
p99s of resamples drawn with replacement (a fixed seed, so that a report
redone from the same samples prints the same interval). A ratio's interval
pairs the two samples' resamples one by one."""
import random

RESAMPLES = 1000


def p99(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(0.99 * (len(v) - 1) + 0.5))] if v else float("nan")


def bootstrap_p99(v, seed=24):
    if not v:
        return []
    rnd = random.Random(seed)
    return [p99([rnd.choice(v) for _ in v]) for _ in range(RESAMPLES)]


def interval95(b):
    b = sorted(x for x in b if x == x)
    if not b:
        return (float("nan"), float("nan"))
    return b[int(0.025 * len(b))], b[min(len(b) - 1, int(0.975 * len(b)))]


def ratio_interval95(num, den):
    return interval95([a / b for a, b in zip(num, den) if b > 0])


def read_samples(path):
    """One latency in ms per line (inference_probe --samples); [] if unreadable."""
    try:
        with open(path) as f:
            return [float(x) for x in f if x.strip()]
    except (OSError, ValueError):
        return []

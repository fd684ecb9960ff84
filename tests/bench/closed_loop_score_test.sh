#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/closed_loop_score.py on a made-up run directory, so that the rows it
# judges have one right answer: a 10 s row counts for the goal only when it
# begins more than 5 s after the last change of the load and holds none (a
# phase's start, a step of the ramp, the end of the spike). Then the same
# directory without steps.txt and score.args (a run recorded before
# closed_loop.sh wrote them): the steps rebuilt from the phases and the
# probe's load calls, and the default settings, give the same rows. Then bench/closed_loop_runs.sh --rescore over it, against a best fixed
# ceil of another batch; and a run at a fixed ceil, judged on its rows
# only. Last, a sweep: a ceil swept twice at one load is
# the best fixed ceil only when the rows of both its cells meet the SLO.
set -uo pipefail
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
out=$(mktemp -d "${TMPDIR:-/tmp}/lanes-cl-score.XXXXXX")
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 - "$out/batch/run-1" "$out/best.json" <<'PY' || fail "could not write the run directory"
import json, os, sys
d, best = sys.argv[1], sys.argv[2]
os.makedirs(d)
T0 = 1000000
# low 30 s at 200 req/s, high 50 s at 1500, fall 30 s at 200, a ramp of five
# 25 s steps, a spike of 6 s at 1500 and 34 s at 200.
loads = [("low", 200, 30), ("high", 1500, 50), ("fall", 200, 30)] + \
        [("ramp" if i == 0 else None, 200 + 260 * (i + 1), 25) for i in range(5)] + \
        [("spike", 1500, 6), (None, 200, 34)]
t, phases, steps, calls = T0, [], [], []
for name, rate, secs in loads:
    if name:
        phases.append("%s %.3f" % (name, t + 0.01))
    steps.append("%.3f %d" % (t + 0.01, rate))
    calls.append(json.dumps({"rate": rate, "duration_s": secs, "elapsed_s": secs + 0.004}))
    t += secs
phases.append("end %.3f" % (t + 0.05))
open(d + "/phases.txt", "w").write("\n".join(phases) + "\n")
open(d + "/steps.txt", "w").write("\n".join(steps) + "\n")
open(d + "/load.json", "w").write("\n".join(calls) + "\n")
open(d + "/score.args", "w").write("%d\n10\n10\ncontrol\n200000000\n" % T0)
# Rows (end time: attainment %); every other row is 100 %.
special = {
    T0 + 40: 10.0,   # high: begins at the step, not judged
    T0 + 60: 99.2,   # high: judged
    T0 + 140: 50.0,  # ramp: holds the step at +135, not judged
    T0 + 150: 45.0,  # ramp: begins 4.99 s after the step at +135.01, not judged
    T0 + 160: 98.0,  # ramp: begins 14.99 s after it and ends before +160.01: judged, missed
    T0 + 200: 40.0,  # ramp: begins 4.99 s after the step at +185.01, not judged
    T0 + 240: 30.0,  # spike: holds the spike's start (+235), not judged
    T0 + 250: 20.0,  # spike: holds its end (+241), not judged
    T0 + 260: 99.5,  # spike: begins 9 s after its end: judged
}
with open(d + "/good.txt", "w") as g, open(d + "/all.txt", "w") as a:
    for end in range(T0 + 10, t + 1, 10):
        a.write("%d 1000\n" % end)
        g.write("%d %g\n" % (end, 10 * special.get(end, 100.0)))
open(d + "/p99.txt", "w").write("".join("%d 0.002\n" % s for s in range(T0, t)))
open(d + "/training-bytes.txt", "w").write("".join("%d %d\n" % (s, (s - T0) * 20000000) for s in range(T0, t)))
for n in ("train1", "train2"):
    open("%s/agent-%s.log" % (d, n), "w").write(
        "%d.5 lanes: agent: class training ceil 94Mbit -> 47Mbit on fab0 (cause: p99 0.03 > slo 0.01)\n" % (T0 + 35))
json.dump({"best_fixed": [[200, 94, 160.0], [1500, 75, 150.0]]}, open(best, "w"))
PY

score() {  # DIR JSON
    python3 "$src/bench/closed_loop_score.py" "$1" --best "$out/best.json" --json "$2" >"$2.out" 2>&1 || { cat "$2.out"; fail "closed_loop_score.py failed on $1"; }
}
check() {  # JSON: the judged rows, phase by phase
    local j=$1 got
    got=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
for p in j["phases"]:
    print(p["name"], " ".join("%g" % v for v in p["late_rows"]) or "-",
          "missed", " ".join("%g" % m["attainment"] for m in p["missed_rows"]) or "-")
' "$j")
    local want="low 100 100 missed -
high 100 99.2 100 100 missed -
fall 100 100 missed -
ramp 100 98 100 100 100 missed 98
spike 99.5 100 missed -"
    [[ $got == "$want" ]] || fail "$j: judged rows
$got
want
$want"
    grep -q "^  ramp .*min row >5 s after a step 98.0 %" "$j.out" || fail "$j: the ramp's worst judged row is not 98 %: $(cat "$j.out")"
    grep -q "row ending at 160 s: 98.00 %" "$j.out" || fail "$j: the missed row is not listed"
}
score "$out/batch/run-1" "$out/with-steps.json"
check "$out/with-steps.json"
echo "PASS: a row that holds a step (a phase's start, the ramp's, the spike's end) is not judged; 5 s after one it is"

rm "$out/batch/run-1/steps.txt" "$out/batch/run-1/score.args"
score "$out/batch/run-1" "$out/rebuilt.json"
check "$out/rebuilt.json"
echo "PASS: without steps.txt and score.args, the steps rebuilt from the phases and load.json judge the same rows"

bash "$src/bench/closed_loop_runs.sh" --rescore --out "$out/batch" --best "$out/best.json" >"$out/table" 2>&1 ||
    fail "closed_loop_runs.sh --rescore failed: $(cat "$out/table")"
grep -q "^  1 | .* | ramp 98.00 %: n/m | missed: rows" "$out/table" || fail "the rescored table: $(cat "$out/table")"
grep -q "every late row >= 99 % in 0; training >= 90 % of the best fixed ceil in" "$out/table" ||
    fail "the rescored goals: $(cat "$out/table")"
[[ -s $out/batch/run-1.json ]] || fail "--rescore wrote no run-1.json"
echo "PASS: closed_loop_runs.sh --rescore scores the batch again against another best fixed ceil"

# A run at a fixed ceil (CL_MODE=fixed): judged on its rows only.
mkdir -p "$out/fixed"
cp -r "$out/batch/run-1" "$out/fixed/run-1"
printf '%s\n' 1000000 10 10 fixed 200000000 >"$out/fixed/run-1/score.args"
for n in train1 train2; do
    echo "1000001.5 lanes: agent: JobId=7 (training) on fab0: ceil 94Mbit -> 56Mbit (window busy)" >"$out/fixed/run-1/agent-$n.log"
done
bash "$src/bench/closed_loop_runs.sh" --rescore --out "$out/fixed" >"$out/fixed.table" 2>&1 ||
    fail "closed_loop_runs.sh --rescore of a fixed run failed: $(cat "$out/fixed.table")"
grep -q "^  1 | .* | ramp 98.00 %: n/m | fixed ceil: rows missed$" "$out/fixed.table" || fail "the fixed run's row: $(cat "$out/fixed.table")"
grep -q "^fixed ceil, 1 of 1 runs: every late row >= 99 % in 0 " "$out/fixed.table" || fail "the fixed batch's count: $(cat "$out/fixed.table")"
grep -q "^goals over" "$out/fixed.table" && fail "a fixed batch judged on the controller's goals: $(cat "$out/fixed.table")"
echo "PASS: a run at a fixed ceil is judged on its rows only"

# A sweep after the run: 94 Mbit/s per node twice at 200 req/s, one row of the
# second cell at 98 %; 85 twice, every row met; 65 once at 1500 req/s.
cp -r "$out/batch/run-1" "$out/swept"
python3 - "$out/swept" <<'PY' || fail "could not write the sweep"
import sys
d = sys.argv[1]
last = max(int(l.split()[0]) for l in open(d + "/all.txt"))
t, sweep = last + 10, []
cells = [(94, 200, None), (94, 200, 98.0), (85, 200, None), (85, 200, None), (65, 1500, None)]
with open(d + "/good.txt", "a") as g, open(d + "/all.txt", "a") as a:
    for ceil, rate, miss in cells:
        sweep.append("%d %d %.3f" % (ceil, rate, t + 0.5))
        for i, end in enumerate(range(t + 10, t + 61, 10)):
            a.write("%d 1000\n" % end)
            g.write("%d %g\n" % (end, 10 * (miss if miss and i == 3 else 100.0)))
        t += 60
sweep.append("end end %.3f" % (t + 0.5))
open(d + "/sweep.txt", "w").write("\n".join(sweep) + "\n")
with open(d + "/training-bytes.txt", "a") as f:
    f.write("".join("%d %d\n" % (s, s * 20000000) for s in range(last, t + 1)))
PY
score "$out/swept" "$out/swept.json"
best=$(python3 -c 'import json, sys; print(" ".join("%d@%d" % (c, r) for r, c, t in json.load(open(sys.argv[1]))["best_fixed"]))' "$out/swept.json")
[[ $best == "85@200 65@1500" ]] || fail "best fixed ceils $best, want 85@200 65@1500 (94 missed a row in one of its two cells): $(cat "$out/swept.json.out")"
echo "PASS: a ceil swept twice at one load is judged on the rows of both cells"

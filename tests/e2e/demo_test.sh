#!/usr/bin/env bash
# The README's demo command works: contrib/demo.sh (with this build, short
# phases) runs to the end, prints its result table, shows Lanes cutting the
# inference p99 under training load, and leaves no namespace behind.
set -uo pipefail
if ((EUID != 0)); then
    echo "SKIP: $(basename "$0") needs root (the demo starts Slurm daemons and network namespaces)"
    exit 77
fi
: "${LANES_SRCDIR:?run through make check}" "${LANES_BUILDDIR:?run through make check}"
before=$(ip netns list | awk '{print $1}' | sort)
out=$(DEMO_NO_BUILD=1 LANES_BUILD_DIR=$LANES_BUILDDIR DEMO_SECONDS=6 timeout 300 bash "$LANES_SRCDIR/contrib/demo.sh" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -25
status=0
check() { if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; status=1; fi; }
check "demo exits 0 (rc=$rc)" test "$rc" -eq 0
check "dry-run shows the peak deferral" grep -q 'peak: messages: *lanes: training job deferred' <<<"$out"
check "lanesctl status on train1 shows the training job" grep -qE '^ +[0-9]+ +training +fab0' <<<"$out"
row() { grep -E "^ +$1 " <<<"$out" | awk '{print $(NF-3)}'; }  # p99 column
p99_without=$(row "training without Lanes")
p99_with=$(row "training with Lanes")
check "result table has both p99 figures ($p99_without / $p99_with ms)" test -n "$p99_without" -a -n "$p99_with"
check "with Lanes the inference p99 is at least 3x lower than without" \
    python3 -c "import sys; sys.exit(0 if float('$p99_with') * 3 < float('$p99_without') else 1)"
check "torn down: no namespace left" test "$(ip netns list | awk '{print $1}' | sort)" = "$before"
exit $status

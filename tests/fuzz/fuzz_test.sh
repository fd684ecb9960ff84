#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Each libFuzzer target (one per parser of admin or user input) runs for a
# bounded time from its seed corpus in tests/fuzz/corpus/<target>/, under ASan
# and UBSan, in the sanitizer build tree (tests/build/sanitized_tree.sh). A
# crash, a sanitizer report, a failed invariant or a hang (-timeout) fails the
# test and prints the reproducer (file and bytes) and how to re-run it.
#   LANES_FUZZ_SECONDS   time per target (default 6)
set -uo pipefail
. "${LANES_SRCDIR:?run through make check}/tests/build/sanitized_tree.sh"

targets=(lanes_toml units dscp hostlist time_spec job_env spank_args text)
seconds=${LANES_FUZZ_SECONDS:-6}
programs=()
for t in "${targets[@]}"; do programs+=("tests/fuzz/${t}_fuzz"); done
sanitized_tree "${programs[@]}"
work=$(mktemp -d "${TMPDIR:-/tmp}/lanes-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0
for t in "${targets[@]}"; do
    # libFuzzer adds what it finds to the first corpus directory: a scratch copy,
    # so the repository's seeds stay as committed.
    mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
    cp "$src/tests/fuzz/corpus/$t/"* "$work/$t/corpus/" 2>/dev/null
    t0=$SECONDS
    (cd "$work/$t" && ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$TREE/tests/fuzz/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$work/$t/artifacts/" corpus >"$work/$t/log" 2>&1)
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t/log")
    if ((rc == 0)); then
        echo "ok: ${t}_fuzz: ${execs:-?} runs in $((SECONDS - t0)) s, corpus $(ls "$work/$t/corpus" | wc -l) inputs"
        continue
    fi
    status=1
    echo "FAIL: ${t}_fuzz (exit $rc)"
    grep -E '^(==[0-9]+==|SUMMARY|.*runtime error|.*invariant failed|    #[0-9]+ )' "$work/$t/log" | head -40
    for a in "$work/$t/artifacts/"*; do
        [[ -f $a ]] || continue
        echo "reproducer $(basename "$a") ($(stat -c %s "$a") bytes), as C string:"
        python3 -c 'import sys; print(repr(open(sys.argv[1], "rb").read()[:2000]))' "$a"
        echo "re-run: $TREE/tests/fuzz/${t}_fuzz <file with those bytes>"
    done
done
exit $status

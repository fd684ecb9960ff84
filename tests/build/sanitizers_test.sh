#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The unit tests and the privileged network tests run under AddressSanitizer and
# UndefinedBehaviorSanitizer: a second build tree (clang, --enable-sanitizers,
# see tests/build/sanitized_tree.sh) builds lanes_unit, shaper_tool and
# lanes-agent (tests/net/agent_repair_test.sh runs it), then
# runs them. Any sanitizer report, even from a command whose exit status a test
# ignores (cleanup), fails this test and is printed.
set -uo pipefail
. "${LANES_SRCDIR:?run through make check}/tests/build/sanitized_tree.sh"

sanitized_tree tests/unit/lanes_unit tests/net/shaper_tool agent/lanes-agent lanesctl/lanesctl
reports=$(mktemp -d "${TMPDIR:-/tmp}/lanes-san.XXXXXX")
trap 'rm -rf "$reports"' EXIT
sanitizer_env "$reports"
status=0

t0=$SECONDS
rm -f "$TREE/unit-failed.out"  # an earlier run's, not this one's
if (cd "$TREE" && tests/unit/lanes_unit --gtest_brief=1 >"$reports/unit.out" 2>&1); then
    echo "ok: unit tests under ASan/UBSan ($(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$reports/unit.out" | head -1), $((SECONDS - t0)) s)"
else
    # The whole output stays in the tree (the reports dir is removed on exit);
    # the failed tests' names after its tail, which may hold only the last.
    cp "$reports/unit.out" "$TREE/unit-failed.out"
    tail -40 "$reports/unit.out"
    grep -E '^\[  FAILED  \]' "$reports/unit.out" | sort -u
    echo "FAIL: unit tests under ASan/UBSan (whole output: $TREE/unit-failed.out)"
    status=1
fi

if [[ $(id -u) -ne 0 ]]; then
    no_sanitizer_reports "$reports" || status=1
    ((status)) && exit 1
    echo "SKIP: the network tests under ASan need root"
    exit 77
fi
for test in "$src"/tests/net/*_test.sh; do
    t=$(basename "$test" .sh)
    t0=$SECONDS
    if LANES_BUILDDIR=$TREE bash "$test" >"$reports/$t.out" 2>&1; then
        echo "ok: tests/net/$t.sh under ASan/UBSan ($((SECONDS - t0)) s)"
    else
        tail -20 "$reports/$t.out"
        echo "FAIL: tests/net/$t.sh under ASan/UBSan"
        status=1
    fi
done
no_sanitizer_reports "$reports" || { echo "FAIL: sanitizer reports above"; status=1; }
exit $status

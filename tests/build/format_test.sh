#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every C/C++ source Lanes owns is formatted as .clang-format says (issue #9):
# contrib/format.sh --check on the source tree must report nothing. First the
# checker itself is checked on a scratch tree: a misformatted file is named and
# fails the check, and passes once contrib/format.sh has rewritten it.
# Until the one reformat commit (listed in .git-blame-ignore-revs) lands, the
# last step fails: that is the point of the test.
set -uo pipefail
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
status=0
fail() { echo "FAIL: $*"; status=1; }
command -v "${CLANG_FORMAT:-clang-format}" >/dev/null ||
    { echo "FAIL: clang-format is missing (contrib/install-deps.sh installs it)"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lanes-format.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/contrib" "$tmp/lib/core" "$tmp/tests/unit/build"
cp "$src/contrib/format.sh" "$tmp/contrib/" && cp "$src/.clang-format" "$tmp/"
printf 'int  f( int x ){return x*2;}\n' >"$tmp/lib/core/bad.cpp"
printf 'int   generated ( ) ;\n' >"$tmp/tests/unit/build/left_by_make.hpp"  # a build tree: not ours
out=$(cd "$tmp" && GIT_DIR=/nonexistent bash contrib/format.sh --check 2>&1)
rc=$?
[[ $rc == 1 ]] || fail "a misformatted file passed the check (exit $rc): $out"
grep -q 'not formatted: lib/core/bad.cpp' <<<"$out" || fail "the check did not name lib/core/bad.cpp: $out"
grep -q 'left_by_make' <<<"$out" && fail "the check looked inside a build tree: $out"
(cd "$tmp" && GIT_DIR=/nonexistent bash contrib/format.sh >/dev/null 2>&1) || fail "contrib/format.sh failed"
grep -q 'int f(int x) { return x \* 2; }' "$tmp/lib/core/bad.cpp" ||
    fail "contrib/format.sh did not rewrite bad.cpp: $(cat "$tmp/lib/core/bad.cpp")"
out=$(cd "$tmp" && GIT_DIR=/nonexistent bash contrib/format.sh --check 2>&1) || fail "still unformatted after formatting: $out"
((status == 0)) && echo "ok: contrib/format.sh --check names a misformatted file and passes a formatted one"

# The project's own sources.
if out=$(cd "$src" && bash contrib/format.sh --check 2>&1); then
    echo "ok: $out"
else
    printf '%s\n' "$out" | tail -15
    fail "sources differ from .clang-format: run contrib/format.sh (one commit, then list it in .git-blame-ignore-revs)"
fi
exit $status

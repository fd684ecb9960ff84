#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Format every C/C++ source Lanes owns with clang-format and .clang-format.
#   contrib/format.sh           rewrite the files in place
#   contrib/format.sh --check   change nothing; list the files clang-format would
#                               change and exit 1 if there is one (the test
#                               tests/build/format_test.sh, and CI)
#   contrib/format.sh --list    print the files it formats, one a line
# Owned: the *.c, *.h, *.cpp, *.hpp under the project's own folders. Not
# formatted: what configure or make generate (config.h, build trees) and
# anything vendored (none today; add its folder to `vendored` below).
# $CLANG_FORMAT names the binary (default clang-format; CI: Debian 12's, 14).
# The reformat itself is one commit, listed in .git-blame-ignore-revs.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=format
case ${1:-} in
    "") ;;
    --check) mode=check ;;
    --list) mode=list ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "format.sh: unknown option '$1' (--check, --list)" >&2; exit 2 ;;
esac

# The project's own source folders; a new top-level folder with C++ goes here.
owned=(lib glue job_submit spank lanesctl policy_worker agent bench tests)
# Vendored or generated paths (shell patterns) inside them: never formatted.
vendored=('*/build/*' '*/.libs/*' '*/.deps/*' 'tests/fuzz/corpus/*')

list_sources() {
    local -a files
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Tracked files only: nothing generated, nothing a build left behind.
        mapfile -t files < <(git ls-files -- "${owned[@]/%//*.c}" "${owned[@]/%//*.h}" \
            "${owned[@]/%//*.cpp}" "${owned[@]/%//*.hpp}")
    else
        # A release tarball: the same folders, minus any build tree inside.
        mapfile -t files < <(find "${owned[@]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \
            -o -name '*.hpp' \) 2>/dev/null)
    fi
    local f p
    for f in "${files[@]}"; do
        for p in "${vendored[@]}"; do
            # shellcheck disable=SC2053  # the pattern is meant to match
            [[ $f == $p || ./$f == $p ]] && continue 2
        done
        printf '%s\n' "$f"
    done | LC_ALL=C sort -u
}

mapfile -t sources < <(list_sources)
((${#sources[@]})) || { echo "format.sh: found no sources (run it from a Lanes tree)" >&2; exit 1; }
if [[ $mode == list ]]; then
    printf '%s\n' "${sources[@]}"
    exit 0
fi

cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null || { echo "format.sh: $cf not found (Debian: apt-get install clang-format)" >&2; exit 1; }

if [[ $mode == format ]]; then
    "$cf" -i --style=file "${sources[@]}"
    echo "format.sh: formatted ${#sources[@]} files with $("$cf" --version)"
    exit 0
fi

# --check: one clang-format run per file, so the report names each file.
unformatted=()
for f in "${sources[@]}"; do
    "$cf" --dry-run -Werror --style=file "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if ((${#unformatted[@]})); then
    printf 'format.sh: not formatted: %s\n' "${unformatted[@]}"
    echo "format.sh: ${#unformatted[@]} of ${#sources[@]} files differ from .clang-format ($("$cf" --version));" \
        "run contrib/format.sh"
    exit 1
fi
echo "format.sh: all ${#sources[@]} files formatted ($("$cf" --version))"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# configure refuses a Slurm outside the supported range (22.05 to 26.05) with a
# message that names the range and the way out, and --with-unsupported-slurm
# builds anyway with a warning. The Slurm is this machine's headers with
# slurm_version.h rewritten to another release. (That this machine's own Slurm
# is accepted, every build shows.)
set -uo pipefail
src=${LANES_SRCDIR:?run through make check}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lanes-slurm-range.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
real=/usr/include/slurm
[[ -f $real/slurm_version.h ]] || { echo "FAIL: no Slurm headers in $real"; exit 1; }

# fake_slurm MAJOR MINOR MICRO: a --with-slurm prefix claiming that release.
fake_slurm() {
    local dir=$tmp/slurm-$1.$2.$3 f
    mkdir -p "$dir/include/slurm"
    for f in "$real"/*.h; do ln -sf "$f" "$dir/include/slurm/"; done
    rm "$dir/include/slurm/slurm_version.h"
    sed -E -e "s/^#define SLURM_VERSION_NUMBER .*/#define SLURM_VERSION_NUMBER $(printf '0x%02x%02x%02x' "$1" "$2" "$3")/" \
        -e "s/^#define SLURM_VERSION_MAJOR .*/#define SLURM_VERSION_MAJOR $1/" \
        -e "s/^#define SLURM_VERSION_MINOR .*/#define SLURM_VERSION_MINOR $2/" \
        -e "s/^#define SLURM_VERSION_MICRO .*/#define SLURM_VERSION_MICRO $3/" \
        "$real/slurm_version.h" >"$dir/include/slurm/slurm_version.h"
    printf '%s\n' "$dir"
}

run_configure() {  # NAME ARGS...: configure's output; its status is the function's
    local build=$tmp/build-$1
    shift
    mkdir -p "$build"
    (cd "$build" && "$src/configure" -q "$@" 2>&1)
}

for v in "21 8 8" "27 5 0"; do
    read -r major minor micro <<<"$v"
    shown=$(printf '%d.%02d.%d' "$major" "$minor" "$micro")
    prefix=$(fake_slurm "$major" "$minor" "$micro")
    if out=$(run_configure "$shown" --with-slurm="$prefix"); then
        echo "FAIL: configure accepted Slurm $shown"
        status=1
    elif grep -q "Slurm $shown is outside the range Lanes supports, 22.05 to 26.05" <<<"$out" &&
        grep -q -- "--with-unsupported-slurm" <<<"$out"; then
        echo "ok: Slurm $shown refused: $(grep -m1 'error:' <<<"$out")"
    else
        echo "FAIL: Slurm $shown refused without naming the range and --with-unsupported-slurm:"
        tail -3 <<<"$out"
        status=1
    fi
done

prefix=$(fake_slurm 27 5 0)
if out=$(run_configure escape --with-slurm="$prefix" --with-unsupported-slurm); then
    if grep -q "WARNING: Slurm 27.05.0 is outside the supported range" <<<"$out"; then
        echo "ok: --with-unsupported-slurm builds against 27.05.0 with a warning"
    else
        echo "FAIL: --with-unsupported-slurm gave no warning:"
        printf '%s\n' "$out" | tail -3
        status=1
    fi
else
    echo "FAIL: configure --with-unsupported-slurm failed:"
    tail -3 <<<"$out"
    status=1
fi
exit $status

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every man page the build makes renders without a groff warning, both as
# man(1) shows it on a terminal (-Tutf8) and typeset (the default device):
# `groff -ww -man -z`. Warnings such as "cannot adjust line" mark text that
# renders badly (an unbreakable field list; .BR arguments glued together).
set -uo pipefail
: "${LANES_SRCDIR:?run through make check}" "${LANES_BUILDDIR:?run through make check}"
command -v groff >/dev/null || { echo "FAIL: groff missing (apt-get install groff-base)"; exit 1; }
# Nested in `make -jN check`: without the parent's MAKEFLAGS, so that no
# "jobserver unavailable" warning lands among the page names.
pages=$(printf 'lanes-print-man-pages:\n\t@echo $(man_MANS)\n' |
    env -u MAKEFLAGS -u MFLAGS make -s --no-print-directory -C "$LANES_BUILDDIR" -f Makefile -f - lanes-print-man-pages)
[[ -n $pages ]] || { echo "FAIL: no man_MANS in $LANES_BUILDDIR/Makefile"; exit 1; }
# shellcheck disable=SC2086
env -u MAKEFLAGS -u MFLAGS make -C "$LANES_BUILDDIR" -s $pages >/dev/null || { echo "FAIL: cannot build the man pages"; exit 1; }
failed=0 n=0
for page in $pages; do
    for dev in utf8 ps; do
        out=$(cd "$LANES_BUILDDIR" && LC_ALL=C.UTF-8 groff -ww -man -T"$dev" -z "$page" 2>&1)
        if [[ -n $out ]]; then
            printf '%s\n' "$out"
            echo "FAIL: groff -ww -man -T$dev -z $page warns"
            failed=1
        fi
    done
    ((n++))
done
((failed)) && exit 1
echo "ok: $n man pages render without groff warnings (-Tutf8 and -Tps)"

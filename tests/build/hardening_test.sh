#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The objects that run as root (both plugins, lanesctl, lanes-agent) carry the hardening
# configure turned on: full RELRO (GNU_RELRO + BIND_NOW), stack protector,
# _FORTIFY_SOURCE (fortified libc calls), and on x86-64 the CET property note.
# Reads the ELF files with readelf/nm (binutils), so it checks what was built,
# not what configure printed.
set -uo pipefail
build=${LANES_BUILDDIR:?run through make check}
mk=$build/Makefile
if grep -q '^HARDEN_LDFLAGS *= *$' "$mk"; then
    echo "SKIP: configured with --disable-hardening"
    exit 77
fi
fortify=yes
grep -q '^HARDEN_CPPFLAGS *=.*_FORTIFY_SOURCE' "$mk" || fortify=no   # -O0 or sanitizer build
cet=no
grep -q '^HARDEN_CXXFLAGS *=.*-fcf-protection' "$mk" && cet=yes
status=0
fortified=
fail() { echo "FAIL: $*"; status=$((status + 1)); }

check() {  # FILE OBJECT (its own main object file)
    local f=$1 obj=$2 name before=$status
    name=${f#"$build"/}
    [[ -f $f ]] || { fail "$name not built"; return; }
    readelf -lW "$f" | grep -q GNU_RELRO || fail "$name: no GNU_RELRO segment"
    readelf -dW "$f" | grep -Eq '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' || fail "$name: not linked with -z now"
    local undef
    undef=$(nm -D --undefined-only "$f")
    grep -q '__stack_chk_fail' <<<"$undef" || fail "$name: no stack protector (__stack_chk_fail not referenced)"
    # Fortify only rewrites calls whose buffer size is known, so a file may
    # have none: it must show in at least one of the files (checked below).
    grep -E '__[a-z0-9_]+_chk(@|$)' <<<"$undef" | grep -vq __stack_chk_fail && fortified+=" $name"
    if [[ $cet == yes ]]; then
        # The linker keeps the IBT/SHSTK note only when every input has it, and
        # Debian 12's crti.o has none; so check the file's own main object.
        readelf -nW "$obj" 2>/dev/null | grep -Eq 'x86 feature:.*IBT' \
            || fail "$name: ${obj#"$build"/} has no IBT note (-fcf-protection)"
    fi
    ((status != before)) || echo "ok: $name"
}

check "$build/job_submit/.libs/job_submit_lanes.so" "$build/job_submit/.libs/job_submit_lanes.o"
# (The unity build compiles spank_lanes and lanesctl as one file each.)
main_object() {  # the first of OBJECTS that exists
    local o
    for o in "$@"; do [[ -f $o ]] && { echo "$o"; return; }; done
    echo "$1"
}
check "$build/spank/.libs/spank_lanes.so" "$(main_object "$build/spank/.libs/spank_lanes.o" "$build/spank/.libs/spank_lanes_unity.o")"
check "$build/lanesctl/lanesctl" "$(main_object "$build/lanesctl/lanesctl-main.o" "$build/lanesctl/lanesctl-lanesctl_unity.o")"
check "$build/policy_worker/lanes-policy-worker" "$build/policy_worker/lanes_policy_worker.o"
check "$build/agent/lanes-agent" "$build/agent/main.o"
if [[ $fortify == yes ]]; then
    if [[ -n $fortified ]]; then
        echo "ok: fortified libc calls in$fortified"
    else
        fail "no fortified libc call (__*_chk) in any file: _FORTIFY_SOURCE missing?"
    fi
fi
((status == 0))

#!/usr/bin/env bash
# The objects that run as root (both plugins and lanesctl) carry the hardening
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
fail() { echo "FAIL: $*"; status=$((status + 1)); }

check() {  # FILE
    local f=$1 name before=$status
    name=${f#"$build"/}
    [[ -f $f ]] || { fail "$name not built"; return; }
    readelf -lW "$f" | grep -q GNU_RELRO || fail "$name: no GNU_RELRO segment"
    readelf -dW "$f" | grep -Eq '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' || fail "$name: not linked with -z now"
    local undef
    undef=$(nm -D --undefined-only "$f")
    grep -q '__stack_chk_fail' <<<"$undef" || fail "$name: no stack protector (__stack_chk_fail not referenced)"
    if [[ $fortify == yes ]]; then
        grep -E '__[a-z0-9_]+_chk(@|$)' <<<"$undef" | grep -vq __stack_chk_fail \
            || fail "$name: no fortified libc call (_FORTIFY_SOURCE missing?)"
    fi
    if [[ $cet == yes ]]; then
        readelf -nW "$f" | grep -Eq 'x86 feature:.*IBT' || fail "$name: no IBT property note (-fcf-protection)"
    fi
    ((status != before)) || echo "ok: $name"
}

check "$build/job_submit/.libs/job_submit_lanes.so"
check "$build/spank/.libs/spank_lanes.so"
check "$build/lanesctl/lanesctl"
((status == 0))

# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by tests/build/sanitizers_test.sh and tests/fuzz/fuzz_test.sh: a second
# build tree, configured with clang, --enable-fuzzers and so ASan + UBSan, next to
# the main one ($LANES_BUILDDIR/sanitize, or $LANES_SANITIZE_BUILDDIR). Both tests
# share it: the second one to run only relinks. Builds only the targets asked for
# (the plugins are not built there: they are never loaded from a sanitizer tree).
#
#   sanitized_tree TARGET...   configure if needed, build TARGETs; sets $TREE
#   sanitizer_env DIR          ASan/UBSan options: abort on the first report and
#                              also write it to DIR/report.<pid>
set -u
src=${LANES_SRCDIR:?run through make check}
main_build=${LANES_BUILDDIR:?run through make check}
TREE=${LANES_SANITIZE_BUILDDIR:-$main_build/sanitize}
SAN_CXX=${LANES_SANITIZE_CXX:-clang++-16}
SAN_CC=${LANES_SANITIZE_CC:-clang-16}

fail() { echo "FAIL: $*"; exit 1; }

sanitized_tree() {
    command -v "$SAN_CXX" >/dev/null \
        || fail "$SAN_CXX not found (Debian: apt-get install clang-16 libclang-rt-16-dev; see contrib/install-deps.sh)"
    local ccache=
    command -v ccache >/dev/null && ccache="ccache "
    mkdir -p "$TREE" || fail "mkdir $TREE"
    exec 9>"$TREE/.lock"
    flock 9
    local t0=$SECONDS
    if [[ ! -f $TREE/Makefile ]]; then
        # -O1 as ASan's docs advise, line tables for the reports' file:line:
        # a fifth less compile time than -O2 -g on the heavy files. File by
        # file but for the unit tests (--enable-unity-build=tests): every
        # other tree is a unity build, so this one keeps each file of the
        # libraries and programs compiling on its own (its own includes, no
        # name it takes from a file before it) and runs the tests on objects
        # built that way; the unit tests' 52 files compile as one.
        (cd "$TREE" && "$src/configure" -q CXX="$ccache$SAN_CXX" CC="$ccache$SAN_CC" --enable-fuzzers --enable-unity-build=tests \
            CXXFLAGS="-O1 -gline-tables-only" CFLAGS="-O1 -gline-tables-only") \
            >"$TREE/configure.out" 2>&1 || { tail -20 "$TREE/configure.out"; rm -f "$TREE/Makefile"; fail "configure of the sanitizer tree"; }
    fi
    make -C "$TREE" -j"$(nproc)" "$@" >"$TREE/make.out" 2>&1 \
        || { grep -E 'error|Error' "$TREE/make.out" | head -30; fail "build in the sanitizer tree ($TREE/make.out)"; }
    flock -u 9
    echo "sanitizer tree: built $* in $((SECONDS - t0)) s"
}

sanitizer_env() {
    local dir=$1
    mkdir -p "$dir"
    export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1:log_path=$dir/report"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$dir/report"
    export LSAN_OPTIONS="log_path=$dir/report"
}

# Print every report the sanitizers wrote under DIR; true if there was none.
no_sanitizer_reports() {
    local dir=$1 f found=0
    for f in "$dir"/report*; do
        [[ -s $f ]] || continue
        echo "==== sanitizer report $f"
        head -60 "$f"
        found=1
    done
    ((found == 0))
}

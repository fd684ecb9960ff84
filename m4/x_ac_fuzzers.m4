# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_FUZZERS: --enable-fuzzers builds one libFuzzer target per parser of admin or
# user input (tests/fuzz/). Needs clang with libFuzzer (Debian 12: clang-16 and
# libclang-rt-16-dev; clang 14's C++ front end cannot use libstdc++ 12's
# std::expected). Implies --enable-sanitizers unless that was given as no
# (X_AC_SANITIZERS defaults to $enable_fuzzers, so call X_AC_FUZZERS first).
#
# Every object gets -fsanitize=fuzzer-no-link (coverage feedback inside lib/);
# only the fuzz targets link libFuzzer's main (FUZZ_LDFLAGS).
# Sets FUZZ_CXXFLAGS, FUZZ_LDFLAGS (AC_SUBST), AM_CONDITIONAL FUZZERS.
AC_DEFUN([X_AC_FUZZERS], [
  AC_ARG_ENABLE([fuzzers],
    [AS_HELP_STRING([--enable-fuzzers],
      [build the libFuzzer targets (needs clang, e.g. CXX=clang++-16; implies --enable-sanitizers)])],
    [], [enable_fuzzers=no])
  FUZZ_CXXFLAGS=
  FUZZ_LDFLAGS=
  AS_IF([test "x$enable_fuzzers" = xyes], [
    AC_CACHE_CHECK([whether $CXX links libFuzzer targets], [x_ac_cv_libfuzzer], [
      x_ac_save_CXXFLAGS=$CXXFLAGS
      CXXFLAGS="$CXXFLAGS -fsanitize=fuzzer"
      AC_LINK_IFELSE([AC_LANG_SOURCE([[#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t n) { return n && d[0] == 'x' ? 0 : 0; }]])],
        [x_ac_cv_libfuzzer=yes], [x_ac_cv_libfuzzer=no])
      CXXFLAGS=$x_ac_save_CXXFLAGS])
    AS_IF([test "x$x_ac_cv_libfuzzer" != xyes],
      [AC_MSG_ERROR([--enable-fuzzers needs a compiler with libFuzzer: configure CXX=clang++-16 (Debian: apt-get install clang-16 libclang-rt-16-dev)])])
    X_AC_CXXFLAG_IFELSE([-fsanitize=fuzzer-no-link], [],
      [AC_MSG_ERROR([$CXX does not accept -fsanitize=fuzzer-no-link])])
    FUZZ_CXXFLAGS="-fsanitize=fuzzer-no-link"
    FUZZ_LDFLAGS="-fsanitize=fuzzer"
  ])
  AM_CONDITIONAL([FUZZERS], [test "x$enable_fuzzers" = xyes])
  AC_SUBST([FUZZ_CXXFLAGS])
  AC_SUBST([FUZZ_LDFLAGS])
])

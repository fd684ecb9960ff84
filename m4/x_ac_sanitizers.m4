# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_SANITIZERS: --enable-sanitizers builds everything with AddressSanitizer and
# UndefinedBehaviorSanitizer, for the unit tests and the network tests' tools.
#
# Undefined behaviour aborts (-fno-sanitize-recover) so a test cannot pass over it.
# A tree built this way is for tests only: its plugins would need libasan loaded
# into slurmctld/slurmd, so `make install` refuses to run (see Makefile.am).
#
# Sets SANITIZER_CXXFLAGS, SANITIZER_LDFLAGS (AC_SUBST), AM_CONDITIONAL SANITIZERS.
AC_DEFUN([X_AC_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers],
      [build with ASan and UBSan for testing; the plugins built are not installable (default: disabled, or enabled by --enable-fuzzers)])],
    [], [enable_sanitizers=${enable_fuzzers:-no}])
  SANITIZER_CXXFLAGS=
  SANITIZER_LDFLAGS=
  AS_IF([test "x$enable_sanitizers" = xyes], [
    x_ac_san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    X_AC_CXXFLAG_IFELSE([$x_ac_san], [],
      [AC_MSG_ERROR([$CXX cannot build with $x_ac_san (Debian: apt-get install libasan8 libubsan1, or clang with libclang-rt-16-dev)])])
    SANITIZER_CXXFLAGS="$x_ac_san"
    SANITIZER_LDFLAGS="-fsanitize=address,undefined"
  ])
  AM_CONDITIONAL([SANITIZERS], [test "x$enable_sanitizers" = xyes])
  AC_SUBST([SANITIZER_CXXFLAGS])
  AC_SUBST([SANITIZER_LDFLAGS])
])

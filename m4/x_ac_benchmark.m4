# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_BENCHMARK: Google Benchmark, optional; benchmarks are built when present.
AC_DEFUN([X_AC_BENCHMARK], [
  PKG_CHECK_MODULES([BENCHMARK], [benchmark], [have_benchmark=yes], [have_benchmark=no
    AC_MSG_WARN([Google Benchmark not found; benchmarks disabled (Debian: apt-get install libbenchmark-dev)])])
  AM_CONDITIONAL([HAVE_BENCHMARK], [test "x$have_benchmark" = xyes])
])

# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_GTEST: GoogleTest for `make check` (no test uses GoogleMock).
AC_DEFUN([X_AC_GTEST], [
  PKG_CHECK_MODULES([GTEST], [gtest_main], [have_gtest=yes],
    [AC_MSG_ERROR([GoogleTest not found (Debian: apt-get install libgtest-dev)])])
])

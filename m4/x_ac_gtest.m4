# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_GTEST: GoogleTest and GoogleMock for `make check`.
AC_DEFUN([X_AC_GTEST], [
  PKG_CHECK_MODULES([GTEST], [gtest_main gmock], [have_gtest=yes],
    [AC_MSG_ERROR([GoogleTest not found (Debian: apt-get install libgtest-dev libgmock-dev)])])
])

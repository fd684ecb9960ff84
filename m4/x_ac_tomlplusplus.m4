# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_TOMLPLUSPLUS: toml++ 3.x (header-only).
AC_DEFUN([X_AC_TOMLPLUSPLUS], [
  PKG_CHECK_MODULES([TOMLPP], [tomlplusplus >= 3.0], [],
    [AC_MSG_ERROR([toml++ not found (Debian: apt-get install libtomlplusplus-dev)])])
])

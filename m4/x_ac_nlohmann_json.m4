# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_NLOHMANN_JSON: nlohmann-json (header-only) for lanesctl's JSON: --json
# output, policy fixtures and job files. Only lanesctl and its tests use it.
AC_DEFUN([X_AC_NLOHMANN_JSON], [
  PKG_CHECK_MODULES([NLOHMANN_JSON], [nlohmann_json >= 3.10], [],
    [AC_MSG_ERROR([nlohmann-json 3.10 or newer not found (Debian: apt-get install nlohmann-json3-dev)])])
])

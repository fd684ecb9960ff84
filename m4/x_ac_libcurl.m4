# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_LIBCURL: libcurl (7.85+ for CURLOPT_PROTOCOLS_STR) fetches signals from a
# Prometheus-compatible API. Only job_submit/lanes and lanesctl link it.
AC_DEFUN([X_AC_LIBCURL], [
  PKG_CHECK_MODULES([LIBCURL], [libcurl >= 7.85], [],
    [AC_MSG_ERROR([libcurl >= 7.85 not found (Debian: apt-get install libcurl4-openssl-dev)])])
])

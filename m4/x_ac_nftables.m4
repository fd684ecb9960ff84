# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_NFTABLES: libnftables for the DSCP / priority marking ruleset.
AC_DEFUN([X_AC_NFTABLES], [
  PKG_CHECK_MODULES([NFTABLES], [libnftables >= 1.0], [],
    [AC_MSG_ERROR([libnftables not found (Debian: apt-get install libnftables-dev)])])
])

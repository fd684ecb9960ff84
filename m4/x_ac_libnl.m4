# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_LIBNL: libnl-3 (nl_msg/nla helpers) for the netlink messages Lanes builds
# itself; libnl-route-3 is not needed (tc messages are built iproute2-style and
# sent through lib/node/netlink_socket.cpp).
AC_DEFUN([X_AC_LIBNL], [
  PKG_CHECK_MODULES([LIBNL], [libnl-3.0 >= 3.2], [],
    [AC_MSG_ERROR([libnl-3 not found (Debian: apt-get install libnl-3-dev)])])
])

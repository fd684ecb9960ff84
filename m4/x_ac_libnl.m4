# X_AC_LIBNL: libnl-3 and libnl-route-3 for tc over netlink.
AC_DEFUN([X_AC_LIBNL], [
  PKG_CHECK_MODULES([LIBNL], [libnl-3.0 >= 3.2 libnl-route-3.0 >= 3.2], [],
    [AC_MSG_ERROR([libnl-route-3 not found (Debian: apt-get install libnl-route-3-dev)])])
])

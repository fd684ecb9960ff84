# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_HARDENING: compiler and linker hardening, on by default.
#
# The plugins run as root inside slurmctld and slurmstepd, so every object is
# built with a stack protector, stack-clash probes, control-flow protection,
# _FORTIFY_SOURCE (only when optimising: glibc ignores it at -O0, with a warning)
# and a read-only GOT bound at load time (RELRO + BIND_NOW). Each flag is tried
# with -Werror so a compiler that does not know it (clang and gcc differ, and
# -fcf-protection exists only on x86) drops that one flag, not the build.
# --disable-hardening opts out (e.g. to compare code generation).
#
# Sets HARDEN_CPPFLAGS, HARDEN_CXXFLAGS, HARDEN_LDFLAGS (AC_SUBST).

# X_AC_CXXFLAG_IFELSE(FLAG, [IF-OK], [IF-NOT]): does $CXX accept FLAG (compile and link)?
AC_DEFUN([X_AC_CXXFLAG_IFELSE], [
  AS_VAR_PUSHDEF([x_ac_var], [x_ac_cv_cxxflag_$1])
  AC_CACHE_CHECK([whether $CXX accepts $1], [x_ac_var], [
    x_ac_save_CXXFLAGS=$CXXFLAGS
    CXXFLAGS="$CXXFLAGS -Werror $1"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cstdio>]], [[char b[64]; std::snprintf(b, sizeof b, "%d", 1); return b[0] == 'x';]])],
      [AS_VAR_SET([x_ac_var], [yes])], [AS_VAR_SET([x_ac_var], [no])])
    CXXFLAGS=$x_ac_save_CXXFLAGS])
  AS_VAR_IF([x_ac_var], [yes], [$2], [$3])
  AS_VAR_POPDEF([x_ac_var])
])

# X_AC_LDFLAG_IFELSE(FLAG, [IF-OK], [IF-NOT]): does the link accept FLAG?
AC_DEFUN([X_AC_LDFLAG_IFELSE], [
  AS_VAR_PUSHDEF([x_ac_var], [x_ac_cv_ldflag_$1])
  AC_CACHE_CHECK([whether the linker accepts $1], [x_ac_var], [
    x_ac_save_LDFLAGS=$LDFLAGS
    LDFLAGS="$LDFLAGS -Werror $1"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[]], [[return 0;]])],
      [AS_VAR_SET([x_ac_var], [yes])], [AS_VAR_SET([x_ac_var], [no])])
    LDFLAGS=$x_ac_save_LDFLAGS])
  AS_VAR_IF([x_ac_var], [yes], [$2], [$3])
  AS_VAR_POPDEF([x_ac_var])
])

AC_DEFUN([X_AC_HARDENING], [
  AC_ARG_ENABLE([hardening],
    [AS_HELP_STRING([--disable-hardening],
      [build without stack protector, fortify, CET and RELRO/BIND_NOW (default: enabled)])],
    [], [enable_hardening=yes])
  HARDEN_CPPFLAGS=
  HARDEN_CXXFLAGS=
  HARDEN_LDFLAGS=
  AS_IF([test "x$enable_hardening" != xno], [
    for x_ac_flag in -fstack-protector-strong -fstack-clash-protection -fcf-protection; do
      X_AC_CXXFLAG_IFELSE([$x_ac_flag], [HARDEN_CXXFLAGS="$HARDEN_CXXFLAGS $x_ac_flag"])
    done
    X_AC_LDFLAG_IFELSE([-Wl,-z,relro,-z,now], [HARDEN_LDFLAGS="-Wl,-z,relro,-z,now"])
    # _FORTIFY_SOURCE needs optimisation; ASan replaces the same checks and
    # does not mix well with the _chk variants, so the sanitizer build drops it.
    x_ac_optimising=no
    for x_ac_flag in $CXXFLAGS; do
      case $x_ac_flag in -O0) x_ac_optimising=no ;; -O*) x_ac_optimising=yes ;; esac
    done
    AC_MSG_CHECKING([whether to define _FORTIFY_SOURCE=2])
    AS_IF([test "x$x_ac_optimising" = xyes && test "x$enable_sanitizers" != xyes],
      [HARDEN_CPPFLAGS="-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2"; AC_MSG_RESULT([yes])],
      [AS_IF([test "x$x_ac_optimising" != xyes],
        [AC_MSG_RESULT([no (CXXFLAGS do not optimise)])],
        [AC_MSG_RESULT([no (sanitizers)])])])
  ])
  AC_SUBST([HARDEN_CPPFLAGS])
  AC_SUBST([HARDEN_CXXFLAGS])
  AC_SUBST([HARDEN_LDFLAGS])
])

# X_AC_SLURM: Slurm headers, version and plugin directory.
AC_DEFUN([X_AC_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm=PREFIX], [Slurm installation prefix (default: /usr)])],
    [slurm_prefix="$withval"], [slurm_prefix=/usr])
  SLURM_CPPFLAGS="-I$slurm_prefix/include"
  AS_IF([test ! -f "$slurm_prefix/include/slurm/slurm.h"],
    [AC_MSG_ERROR([Slurm headers not found in $slurm_prefix/include/slurm (Debian: apt-get install libslurm-dev)])])
  save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
  AC_CHECK_HEADERS([slurm/slurm.h slurm/spank.h], [],
    [AC_MSG_ERROR([Slurm headers not found (Debian: apt-get install libslurm-dev)])])
  AC_CACHE_CHECK([Slurm version], [lanes_cv_slurm_version], [
    AC_COMPUTE_INT([slurm_vnum], [SLURM_VERSION_NUMBER], [#include <slurm/slurm_version.h>],
      [AC_MSG_ERROR([cannot read SLURM_VERSION_NUMBER from slurm/slurm_version.h])])
    lanes_cv_slurm_version=$(printf "%d.%02d.%d" $(( (slurm_vnum >> 16) & 255 )) $(( (slurm_vnum >> 8) & 255 )) $(( slurm_vnum & 255 )))])
  # Slurm 26.05 moved job_desc_msg_t.job_id into job_desc_msg_t.step_id.job_id.
  AC_CHECK_MEMBERS([job_desc_msg_t.step_id], [], [], [[#include <slurm/slurm.h>]])
  CPPFLAGS="$save_CPPFLAGS"
  SLURM_VERSION_STRING="$lanes_cv_slurm_version"
  AS_CASE([$SLURM_VERSION_STRING],
    [22.05.*|23.*|24.*|25.*], [],
    [AC_MSG_WARN([Slurm $SLURM_VERSION_STRING is untested; Lanes targets 22.05 to 25.x])])
  save_LIBS="$LIBS"
  LIBS="-L$slurm_prefix/lib $LIBS"
  AC_CHECK_LIB([slurm], [slurm_load_jobs], [SLURM_LIBS="-lslurm"],
    [AC_MSG_ERROR([libslurm not found (Debian: apt-get install libslurm-dev)])])
  LIBS="$save_LIBS"

  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR], [where slurmctld/slurmd load plugins from (default: the installed Slurm's plugin directory)])],
    [SLURM_PLUGINDIR="$withval"], [
      SLURM_PLUGINDIR=""
      for d in "$slurm_prefix/lib/$($CC -print-multiarch 2>/dev/null)/slurm-wlm" \
               "$slurm_prefix/lib/$($CXX -print-multiarch 2>/dev/null)/slurm-wlm" \
               "$slurm_prefix/lib64/slurm" "$slurm_prefix/lib/slurm"; do
        AS_IF([test -d "$d"], [SLURM_PLUGINDIR="$d"; break])
      done
      AS_IF([test -z "$SLURM_PLUGINDIR"], [SLURM_PLUGINDIR='${libdir}/slurm'])])
  AC_ARG_WITH([slurm-sysconfdir],
    [AS_HELP_STRING([--with-slurm-sysconfdir=DIR], [where slurm.conf and lanes.toml live (default: /etc/slurm)])],
    [SLURM_SYSCONFDIR="$withval"], [SLURM_SYSCONFDIR=/etc/slurm])
  AC_SUBST([SLURM_CPPFLAGS])
  AC_SUBST([SLURM_LIBS])
  AC_SUBST([SLURM_VERSION_STRING])
  AC_SUBST([SLURM_PLUGINDIR])
  AC_SUBST([SLURM_SYSCONFDIR])
  AC_DEFINE_UNQUOTED([LANES_SLURM_VERSION_STRING], ["$SLURM_VERSION_STRING"], [Slurm version the plugins are built for])
  AC_DEFINE_UNQUOTED([LANES_DEFAULT_CONFIG], ["$SLURM_SYSCONFDIR/lanes.toml"], [default lanes.toml path])
])

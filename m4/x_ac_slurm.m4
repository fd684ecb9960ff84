# SPDX-License-Identifier: GPL-2.0-or-later
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
  # ... and slurm_load_job() takes a slurm_step_id_t instead of a job id.
  AC_CACHE_CHECK([whether slurm_load_job takes a slurm_step_id_t], [lanes_cv_slurm_load_job_step_id], [
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[extern "C" {
#include <slurm/slurm.h>
}]], [[job_info_msg_t* m = nullptr; slurm_step_id_t id{}; return slurm_load_job(&m, id, 0);]])],
      [lanes_cv_slurm_load_job_step_id=yes], [lanes_cv_slurm_load_job_step_id=no])])
  AS_IF([test "x$lanes_cv_slurm_load_job_step_id" = xyes],
    [AC_DEFINE([HAVE_SLURM_LOAD_JOB_STEP_ID], [1], [slurm_load_job() names the job by a slurm_step_id_t (Slurm 26.05)])])
  CPPFLAGS="$save_CPPFLAGS"
  SLURM_VERSION_STRING="$lanes_cv_slurm_version"
  # The supported range: the plugin APIs Lanes is written against (job_submit's
  # job_modify without err_msg before 23.02, spank.h declaring the callbacks
  # from 23.02, job_desc_msg_t.step_id from 26.05). Built and tested against
  # 22.05 (Debian 12), 24.11 (Debian 13) and 26.05 (Debian unstable).
  m4_define([LANES_SLURM_MIN], [22.05])
  m4_define([LANES_SLURM_MAX], [26.05])
  lanes_slurm_min=LANES_SLURM_MIN lanes_slurm_max=LANES_SLURM_MAX
  AC_ARG_WITH([unsupported-slurm],
    [AS_HELP_STRING([--with-unsupported-slurm],
      [build against a Slurm release outside the supported range (]LANES_SLURM_MIN[ to ]LANES_SLURM_MAX[); untested])],
    [], [with_unsupported_slurm=no])
  AC_MSG_CHECKING([whether Slurm $SLURM_VERSION_STRING is in the supported range $lanes_slurm_min to $lanes_slurm_max])
  lanes_slurm_key=$(echo "$SLURM_VERSION_STRING" | awk -F. '{ printf "%d", $[]1 * 100 + $[]2 }')
  lanes_slurm_min_key=$(echo "$lanes_slurm_min" | awk -F. '{ printf "%d", $[]1 * 100 + $[]2 }')
  lanes_slurm_max_key=$(echo "$lanes_slurm_max" | awk -F. '{ printf "%d", $[]1 * 100 + $[]2 }')
  AS_IF([test "$lanes_slurm_key" -ge "$lanes_slurm_min_key" && test "$lanes_slurm_key" -le "$lanes_slurm_max_key"],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AS_IF([test "x$with_unsupported_slurm" != xno],
       [AC_MSG_WARN([Slurm $SLURM_VERSION_STRING is outside the supported range $lanes_slurm_min to $lanes_slurm_max; building anyway (--with-unsupported-slurm): untested, the plugin APIs may differ])],
       [AC_MSG_ERROR([Slurm $SLURM_VERSION_STRING is outside the range Lanes supports, $lanes_slurm_min to $lanes_slurm_max: its plugin APIs may differ. Use a supported Slurm, or configure --with-unsupported-slurm to build anyway (untested).])])])
  SLURM_SUPPORTED_RANGE="$lanes_slurm_min to $lanes_slurm_max"
  AC_SUBST([SLURM_SUPPORTED_RANGE])
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

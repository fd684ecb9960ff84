# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_LUA: Lua 5.4, the C build (liblua5.4), not lua5.4-c++.
# Why C Lua: it is the Lua every Debian tool and the lua5.4 interpreter use, its
# symbols are versioned so it coexists with the Lua 5.1 that Slurm's job_submit/lua
# loads, and errors stay longjmps inside Lua frames, which our C functions handle by
# never raising a Lua error while a C++ object with a destructor is alive.
AC_DEFUN([X_AC_LUA], [
  PKG_CHECK_MODULES([LUA], [lua5.4 >= 5.4], [LUA_MODULE=lua5.4],
    [AC_MSG_ERROR([Lua 5.4 not found (Debian: apt-get install liblua5.4-dev)])])
  AC_SUBST([LUA_MODULE])
])

# SPDX-License-Identifier: GPL-2.0-or-later
# AX_LANES_CXX_STD: require a C++ compiler that accepts -std=c++23 with <expected>.
#
# clang 16 accepts the code but calls the standard c++2b, and libstdc++ 12 hides
# std::expected from it because clang 16 still reports __cpp_concepts as
# 201907L although it implements what <expected> needs (P0848, conditionally
# trivial special members). For clang only, configure then retries with
# -std=c++2b and the feature macro raised; clang 14 fails that check too.
AC_DEFUN([AX_LANES_CXX_STD], [
  AM_CXXFLAGS_STD=
  for lanes_std in "-std=c++23" "-std=c++2b -U__cpp_concepts -D__cpp_concepts=202002L"; do
    save_CXXFLAGS="$CXXFLAGS"
    CXXFLAGS="$CXXFLAGS $lanes_std"
    AC_MSG_CHECKING([whether $CXX supports C++23 std::expected with $lanes_std])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <expected>
#include <string>
struct E { std::string s; };]],
        [[std::expected<std::string, E> e = std::string("x"); std::expected<std::string, E> f = e; return (*f)[0] == 'y';]])],
      [lanes_std_ok=yes], [lanes_std_ok=no])
    AC_MSG_RESULT([$lanes_std_ok])
    CXXFLAGS="$save_CXXFLAGS"
    AS_IF([test "x$lanes_std_ok" = xyes], [AM_CXXFLAGS_STD="$lanes_std"; break])
  done
  AS_IF([test "x$AM_CXXFLAGS_STD" = x],
    [AC_MSG_ERROR([a C++ compiler with C++23 std::expected is required (Debian: apt-get install g++ (12 or newer), or clang-16)])])
  AC_SUBST([AM_CXXFLAGS_STD])
])

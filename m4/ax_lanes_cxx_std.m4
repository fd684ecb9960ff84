# AX_LANES_CXX_STD: require a C++ compiler that accepts -std=c++23 with <expected>.
AC_DEFUN([AX_LANES_CXX_STD], [
  save_CXXFLAGS="$CXXFLAGS"
  CXXFLAGS="$CXXFLAGS -std=c++23"
  AC_CACHE_CHECK([whether $CXX supports C++23 std::expected], [lanes_cv_cxx23_expected], [
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <expected>]],
        [[std::expected<int, int> e = 1; return *e - 1;]])],
      [lanes_cv_cxx23_expected=yes], [lanes_cv_cxx23_expected=no])])
  CXXFLAGS="$save_CXXFLAGS"
  AS_IF([test "x$lanes_cv_cxx23_expected" != xyes],
    [AC_MSG_ERROR([a C++ compiler with C++23 std::expected is required (Debian: apt-get install g++ (12 or newer))])])
  AM_CXXFLAGS_STD="-std=c++23"
  AC_SUBST([AM_CXXFLAGS_STD])
])

// SPDX-License-Identifier: GPL-2.0-or-later
// Slurm-style hostlist expressions and globs, for NicSelector.nodes.
//   "train[1-4,7]"        train1 train2 train3 train4 train7
//   "gpu[01-03]-ib"        gpu01-ib gpu02-ib gpu03-ib (zero padding kept)
//   "rack[1-2]n[1-2]"      rack1n1 rack1n2 rack2n1 rack2n2
//   "a1,b[2-3],gpu*"       a comma list; each item may also be a glob (fnmatch)
// Pure functions; no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace lanes {

// Expand an expression into names (globs are kept as they are). Fails on a syntax
// error (unbalanced bracket, bad range, descending range) or beyond `max_names`.
Result<std::vector<std::string>> expand_hostlist(std::string_view expression, std::size_t max_names = 65536);

// Does `hostname` match `expression` ("*" and "" match everything)? Each expanded
// name is an fnmatch pattern. Errors as expand_hostlist().
Result<bool> hostlist_matches(std::string_view expression, std::string_view hostname);

}  // namespace lanes

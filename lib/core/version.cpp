// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/version.hpp"

#include "config.h"

namespace lanes {
const char* version_string() noexcept {
    return PACKAGE_NAME " " PACKAGE_VERSION " (Slurm " LANES_SLURM_VERSION_STRING ")";
}
}  // namespace lanes

// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once
namespace lanes {
// "lanes 0.1.0 (Slurm 22.05.8)"
const char* version_string() noexcept;
}  // namespace lanes

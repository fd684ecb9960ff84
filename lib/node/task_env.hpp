// SPDX-License-Identifier: GPL-2.0-or-later
// Environment variables Lanes sets in a job's tasks: the class, and the RDMA
// traffic class / service level that NCCL and UCX put on RoCE/IB traffic (RDMA
// bypasses the kernel's qdiscs, so the NIC and the switches must act on these).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/job.hpp"

namespace lanes {

// Ordered (name, value) pairs. Empty values are never produced.
std::vector<std::pair<std::string, std::string>> task_environment(const std::string& class_name,
                                                                  const NetworkDecision& net);

}  // namespace lanes

// SPDX-License-Identifier: GPL-2.0-or-later
// Environment variables Lanes sets in a job's tasks: the class, and the RDMA
// traffic class / service level that NCCL and UCX put on RoCE/IB traffic (RDMA
// bypasses the kernel's qdiscs, so the NIC and the switches must act on these).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/job.hpp"
#include "core/lanes_toml.hpp"

namespace lanes {

// Ordered (name, value) pairs. Empty values are never produced.
std::vector<std::pair<std::string, std::string>> task_environment(const std::string& class_name,
                                                                  const NetworkDecision& net);

// A class with a path (lanes.toml route_table / egress_device / vlan): RDMA and
// NCCL follow it. `device` is the interface the class's packets leave on ("" for
// a route_table path), `hca` its RDMA device ("" when it has none). Each value
// given in the class (nccl_socket_ifname, ...) wins:
//   NCCL_SOCKET_IFNAME  "=<device>" (exact name, not a prefix)
//   NCCL_IB_HCA         "=<hca>"
//   UCX_NET_DEVICES     "<hca>:1", else "<device>"
//   NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX   rdma_gid_index, when set
std::vector<std::pair<std::string, std::string>> path_task_environment(const ClassPath& path, const std::string& device,
                                                                       const std::string& hca);

// The RDMA device of a network interface from sysfs (its own, else its lower
// device's for a VLAN "<nic>.<id>"); "" when none. `sysfs` is for tests.
std::string rdma_device_of(const std::string& device, const std::string& sysfs = "/sys/class/net");

}  // namespace lanes

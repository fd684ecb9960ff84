// SPDX-License-Identifier: GPL-2.0-or-later
// An owned libnl-3 message (nlmsg_free at scope end), for the files that build
// netlink requests (traffic_control.cpp, policy_routing.cpp,
// ingress_control.cpp). Needs $(LIBNL_CFLAGS).
#pragma once

#include <netlink/msg.h>

#include <memory>

namespace lanes {

struct MsgFree {
    void operator()(nl_msg* m) const { nlmsg_free(m); }
};
using MsgPtr = std::unique_ptr<nl_msg, MsgFree>;

}  // namespace lanes

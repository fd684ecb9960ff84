// SPDX-License-Identifier: GPL-2.0-or-later
// Per-job ingress caps: the kernel side of ingress_plan.hpp. IFB devices over
// rtnetlink (RTM_NEWLINK/RTM_DELLINK on one socket owned here), their HTB root
// and classes through the node's TrafficControl, the netdev table through one
// libnftables context (a few small commands per change: the table has no
// per-job chain, a job is one element of @jobs).
//
// converge_ingress() is the whole cycle: observe, plan_ingress(), execute. The
// node shaper runs it after a prolog, after an epilog, in converge() and in gc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "core/result.hpp"
#include "node/ingress_plan.hpp"
#include "node/traffic_control.hpp"

namespace lanes {

class IngressControl {
public:
    virtual ~IngressControl() = default;
    // The IFB's state (absent: exists = false) and the lanes-ifb* devices there are.
    virtual Result<IfbObserved> observe_ifb(const std::string& ifb) = 0;
    virtual Result<std::vector<std::string>> ifb_devices() = 0;
    // The netdev table, checked against the chains `nics` should have.
    virtual Result<IngressNftObserved> observe_nft(const std::vector<std::string>& nics) = 0;
    virtual Result<void> execute(const IngressOp& op) = 0;
    // An IFB class's counters (lanesctl status); ifindex looked up by name.
    virtual Result<ClassCounters> class_counters(const std::string& ifb, uint32_t classid) = 0;
};

// The real one, over `tc` (not owned; it outlives this).
Result<std::unique_ptr<IngressControl>> make_ingress_control(TrafficControl& tc);

// Whether this node can take ingress caps, tried without leaving anything behind:
// a throwaway IFB made and deleted over rtnetlink (the ifb module, loaded on
// demand), and one nft transaction that adds a netdev table with an egress chain
// on `nic` and deletes it again (the kernel validates the hook and commits
// nothing). Fails with what is missing ("the kernel cannot create IFB devices
// ...", "no nftables netdev egress hook ..."); lanesctl check --node and a
// failed prolog say it.
Result<void> check_ingress_support(const std::string& nic);

struct IngressReport {
    std::vector<Repair> repairs;
    std::vector<std::string> problems;
};
// Observe, plan, execute (unless `dry_run`). Fails only when the kernel cannot be
// read; an operation that fails is a problem, and the rest of the plan still runs.
Result<IngressReport> converge_ingress(IngressControl& control, const std::vector<JobState>& jobs,
                                       const std::vector<NicFacts>& nics, const std::string& leaf_kind, bool dry_run,
                                       const LogSink& log = {});

}  // namespace lanes

// SPDX-License-Identifier: GPL-2.0-or-later
// `lanesctl policy test`: printing of classifier runs on job files, fixtures and
// real jobs. The job/fixture JSON format, decision JSON and the comparison with a
// fixture's "expect" are lanesctl/policy_fixture.hpp's, shared with the golden tests,
// so a site's fixtures and ours are one format. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/job.hpp"
#include "ctld/windows.hpp"
#include "lanesctl/json.hpp"

namespace lanes::ctl {

// One run of the classifier on a job, as printed.
struct PolicyTestResult {
    std::string source;       // file name or "job 1234"
    std::string description;  // the fixture's
    std::string job_summary;  // "job 'train' of alice (account ml, partition gpu, gpus 8)"
    SysSeconds at{};
    std::optional<Decision> decision;
    std::string error;               // the file could not be read / the job could not be loaded
    bool checked = false;            // there was an "expect"
    std::vector<std::string> diffs;  // check_fixture()'s lines
    bool ok() const { return error.empty() && diffs.empty(); }
};

std::string job_summary(const JobView& job);

// Human. Single jobs: a block per job (class, partition, QOS, features, nice,
// begin time, time limit, rate/ceil, DSCP, RDMA, messages, why), times in `zone`.
// fixture_mode: "PASS file" / "FAIL file" with the differing fields, then a total.
std::string format_policy_human(const std::vector<PolicyTestResult>& results, const TimeZone* zone, bool fixture_mode);
// {"passed": N, "failed": N, "results": [{"source", "description", "job", "at",
//   "decision" (decision_to_json), "checked", "ok", "diffs": [...], "error"}]}
json::Value policy_json(const std::vector<PolicyTestResult>& results, const TimeZone* zone);

}  // namespace lanes::ctl

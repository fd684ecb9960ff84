// SPDX-License-Identifier: GPL-2.0-or-later
// `lanesctl status` and `lanesctl gc`: what Lanes shapes on a node and what gc
// removed, as text, JSON and Prometheus textfile metrics. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lanesctl/json.hpp"
#include "node/path_plan.hpp"
#include "node/shaping_plan.hpp"
#include "node/traffic_control.hpp"

namespace lanes::ctl {

struct JobStatus {
    JobState state;
    std::map<std::string, ClassCounters> counters;  // by device; empty with `error`
    std::string error;                              // counters could not be read
    // The job's ingress class on each NIC's IFB (JobState.ingress_devices), by NIC.
    std::map<std::string, ClassCounters> ingress_counters;
    std::optional<PathJob> path;  // the class's own path here (path_plan.hpp), if any
};

struct StatusReport {
    std::string node;
    std::string leaf_qdisc;  // "fq_codel" / "pfifo"
    std::vector<NicFacts> nics;
    std::vector<JobStatus> jobs;      // by job id
    std::vector<ParkedClass> parked;  // classes of ended jobs kept for the next ones
};

// How a table is printed: `header` false drops the node line and the column
// names (squeue --noheader); `parsable` joins fields with '|' and no padding,
// one line per job and device, JOBID|CLASS|DEVICE|RATE|CEIL|DSCP|BYTES|PACKETS|
// DROPS|OVERLIMITS|BACKLOG|ERROR (as sacct --parsable2).
struct TableStyle {
    bool header = true;
    bool parsable = false;
};
std::string format_status_human(const StatusReport& report, TableStyle style = {});
// {"node", "leaf_qdisc", "nics": [{"device","link_speed_bits","lanes_root"}],
//  "jobs": [{"job_id","class","minor","dscp","dscp_value","cgroup","error",
//            "devices": [{"device","rate_bits","ceil_bits","bytes","packets","drops",
//                         "overlimits","backlog_bytes"}],
//            "ingress": [{"device","ifb","rate_bits","ceil_bits","bytes","packets","drops",
//                         "overlimits","backlog_bytes"}]}],
//  "parked": [{"class": "1a4e:41", "devices": ["eth0"]}]}
// A job on a path of its class also has "path": {"device", "table", "mark",
// "owned_table", "src4", "src6"} (device "" for a route_table path).
json::Value status_json(const StatusReport& report);
// node_exporter textfile collector format: HELP/TYPE once per metric, then samples
// lanes_job_bytes_total{hpc_job="7",class="training",device="eth0",host="gpu1",direction="egress"} 123
// direction="egress": the job's class on the NIC (what it sends); "ingress": its
// class on the NIC's IFB (what it receives; only for jobs with an ingress cap).
// Base units (bytes, bytes per second); the job label is hpc_job (DCGM's name),
// never job/instance, which Prometheus attaches to every scraped sample; host is
// the node name (StatusReport::node), for multi-node jobs and the join with DCGM.
std::string prometheus_text(const StatusReport& report);
// A label value of the exposition format: core/text.hpp prometheus_label_value().
std::string prometheus_label(std::string_view value);

struct GcJob {
    JobState state;
    std::string why;  // kept: "slurmstepd pid 812"; removed: "no slurmstepd, cgroup empty"
};

struct GcReport {
    std::string node;
    bool dry_run = false;
    bool all = false;
    std::vector<GcJob> removed;  // (dry run: would be removed)
    std::vector<GcJob> kept;
    std::vector<std::string> devices_reset;  // --all: the selected NICs (our root qdisc goes)
    std::vector<std::string> errors;
};

std::string format_gc_human(const GcReport& report);
// {"node","dry_run","all","removed":[{"job_id","class","why"}],"kept":[...],
//  "devices_reset":[...],"errors":[...]}
json::Value gc_json(const GcReport& report);

}  // namespace lanes::ctl

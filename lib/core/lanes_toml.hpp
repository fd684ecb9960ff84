// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml: the one configuration file, as validated data.
//
// load_config() parses and validates; every error names file:line:col and the
// key. Everything here is plain data: no Slurm types, no I/O beyond reading the
// file. Time zones and window occurrences are the controller side's
// (lib/ctld/windows_config.hpp adds them to a Config).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/window_spec.hpp"

namespace lanes {

class WindowSet;  // lib/ctld/windows.hpp

// A bandwidth: absolute bits per second, or a percentage of the NIC's link speed.
struct Rate {
    uint64_t bits_per_second = 0;  // used when percent == 0
    double percent = 0;            // 0 < percent <= 100 when relative
    bool is_relative() const { return percent > 0; }
    // Resolve against a link speed (bits/s); absolute rates ignore it.
    uint64_t resolve(uint64_t link_bits_per_second) const;
    bool operator==(const Rate&) const = default;
};

// What happens to a job of a deferred class whose time limit would run into the
// next window it must avoid.
enum class OverrunAction { Defer, Shorten, Warn, Reject };

// What the controller does when the Lua policy errors or exceeds its budget.
enum class PolicyFailureMode { AcceptDefault, Reject };

// What spank_lanes does when a NIC already has a root qdisc that is not ours.
enum class ForeignQdiscAction { Refuse, Adopt };

// A path of its own for a class's traffic ([classes.NAME] route_table, or
// egress_device with an optional vlan): the job's nft element marks its packets
// (path_plan.hpp) and an `ip rule fwmark` sends them to the path's routing table.
struct ClassPath {
    std::optional<uint32_t> table;  // route_table as a number (1..4294967295, not 253..255)
    std::string table_name;         // route_table as a name of rt_tables(5), resolved on the node
    std::string device;             // egress_device: Lanes' own table, the device's subnets via it
    std::optional<uint16_t> vlan;   // with device: the 802.1Q interface "<device>.<vlan>"
    // With device: further destinations (CIDRs, canonical "10.20.0.0/16",
    // "fd00:20::/48") routed via it; all others take the main table.
    std::vector<std::string> egress_prefixes;
    // The task environment (task_env.hpp); empty: derived from the path's device.
    std::string nccl_socket_ifname;
    std::string nccl_ib_hca;
    std::string ucx_net_devices;
    std::optional<uint8_t> rdma_gid_index;  // NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX
    int line = 0;                           // the [classes.NAME] table
    // The interface packets leave on ("" for a table Lanes does not fill).
    std::string link() const { return vlan ? device + "." + std::to_string(*vlan) : device; }
    bool operator==(const ClassPath&) const = default;
};

// [classes.NAME.control]: the node agent moves the ceil of the class's running
// jobs between `floor` and the class's ceil, following an SLO signal (see
// agent/ceil_controller.hpp for the design, lanes.toml(5) for the keys).
struct CeilControlConfig {
    std::string signal;     // [signals.NAME] whose value is held under slo
    double slo = 0;         // the value not to exceed
    double margin = 0.2;    // increase only while value <= slo * (1 - margin)
    Rate floor;             // the lowest ceil it sets
    double decrease = 0.5;  // ceil *= decrease when value > slo; in (0, 1)
    // A break with value at or over full_decrease_at * slo takes the whole
    // decrease; one nearer the SLO a part in proportion. 1: every break the whole.
    double full_decrease_at = 1;
    Rate increase;                    // the largest step up while the SLO holds with margin
    std::optional<Rate> min_gap;      // no probe between a held and a broken ceil closer; unset: increase
    std::chrono::seconds dwell{60};   // decisions only at multiples of this (wall clock)
    std::chrono::seconds backoff{0};  // holding below a ceil that broke the SLO; 0: 4 dwells
    std::string load_signal;          // optional: a ceil that broke the SLO is tried again once the load fell
    // Optional: a signal of the network's own queueing (a switch queue's delay,
    // ECN marks). An SLO break while it is known and at or under
    // congestion_above is not the network's: the ceil is held, not cut.
    std::string congestion_signal;
    double congestion_above = 0;
    // Optional, with a congestion signal: a ceil whose congestion value was over
    // congestion_above at strain_count of the last strain_window decisions
    // (the SLO met) is strained whatever the SLO signal's margin, and steps
    // down by strain_decrease. 0: only a strain without margin (one decision).
    int strain_count = 0;
    int strain_window = 0;
    std::optional<double> strain_decrease;  // unset: 1 - margin
    // The ceil never rests within this fraction under the lowest ceil known
    // to be too much at its load (a break, a strain, or else the class's
    // ceil): a ceil that held once can sit inside the knee. 0: off.
    double rest_below = 0;
    // Optional, with a congestion signal and rest_below: a decision whose
    // congestion value is at or under this (the queue quiet) raises the ceil
    // past where the search stopped, by at most rest_below times the bound,
    // up to rest_below / 2 under it (ceil_controller.hpp).
    std::optional<double> quiet_below;
    int line = 0;
    bool operator==(const CeilControlConfig&) const = default;
};

struct ClassConfig {
    std::string name;
    int rank = 0;  // priority among classes: higher is served first (HTB prio)
    // Routing.
    std::vector<std::string> partitions;
    std::string qos;
    std::vector<std::string> features;
    std::optional<int32_t> nice;
    // Time windows: jobs of this class do not start inside these windows.
    std::vector<std::string> avoid_windows;
    OverrunAction window_overrun = OverrunAction::Defer;
    // Partitions this class may borrow outside avoid_windows, when the job's time
    // limit ends before the next avoided window starts.
    std::vector<std::string> borrow_partitions;
    std::vector<std::string> exempt_users;
    std::vector<std::string> exempt_accounts;
    // Who may ask for this class explicitly (--lanes-class). Empty: nobody; "*": everyone.
    std::vector<std::string> allowed_users;
    std::vector<std::string> allowed_accounts;
    // Which routing fields a policy may override per job.
    std::vector<std::string> policy_overrides;
    // Network.
    std::optional<uint8_t> dscp;                // 0..63
    std::optional<Rate> rate;                   // guaranteed (HTB rate)
    std::optional<Rate> ceil;                   // maximum (HTB ceil); defaults to rate
    bool user_may_lower_cap = false;            // --lanes-cap=RATE below the class cap
    std::optional<uint8_t> rdma_traffic_class;  // defaults to dscp << 2
    std::optional<uint8_t> rdma_service_level;  // 0..15
    // Dynamic shifting (the node agent): while the signal window `busy_window`
    // holds, running jobs of this class get `busy_ceil` instead of `ceil`.
    std::string busy_window;
    std::optional<Rate> busy_ceil;
    // A path of its own (route_table / egress_device / vlan); nullopt: the main table.
    std::optional<ClassPath> path;
    // Or a controller instead of the two-level switch (busy_window excluded).
    std::optional<CeilControlConfig> control;
    bool has_network_settings() const { return dscp || rate || ingress_rate; }
    uint8_t effective_rdma_traffic_class() const {
        return rdma_traffic_class ? *rdma_traffic_class : static_cast<uint8_t>(dscp.value_or(0) << 2);
    }
    // Ingress (what arrives at the node for the job, shaped on the NIC's IFB
    // device): the same rules as rate/ceil. --lanes-cap=in=RATE lowers the ceil.
    std::optional<Rate> ingress_rate;
    std::optional<Rate> ingress_ceil;  // defaults to ingress_rate
};

// Built-in classification rule, used when no Lua policy is configured (and as
// `lanes.rules` inside policies). All given matchers must match; first rule wins.
struct ClassRule {
    std::string class_name;
    std::vector<std::string> partitions;     // requested partition is one of these
    std::vector<std::string> name_patterns;  // glob on the job name
    std::vector<std::string> accounts;
    std::vector<std::string> users;
    std::optional<std::string> gres;  // requested TRES/GRES contains this (e.g. "gpu")
    std::optional<uint32_t> min_gpus;
    std::optional<bool> interactive;  // no batch script (srun/salloc)
    int line = 0;                     // where the rule is in lanes.toml
};

struct PolicyConfig {
    std::string script;                       // empty: built-in rules only
    uint64_t instruction_budget = 1000000;    // Lua VM instructions per call
    uint64_t memory_limit_bytes = 16u << 20;  // Lua heap cap
    std::chrono::microseconds time_budget{20000};
    PolicyFailureMode on_error = PolicyFailureMode::AcceptDefault;
    // The policy runs in worker processes (lanes-policy-worker) that are killed
    // when a call overruns time_budget. Empty (a Config built in memory): the
    // policy runs in the calling process, under the Lua hook's budgets only.
    std::string worker;
    uint32_t workers = 0;  // worker processes; 0: by CPU count (2..8)
    uint32_t queue = 64;   // callers waiting for a free worker; past it a job is refused
    // After a job of a user overran time_budget, that user's jobs get on_error
    // without running the policy for this long (0: off).
    std::chrono::milliseconds overrun_cooldown{60000};
    std::string metrics_file;  // slurmctld writes its policy counters here (Prometheus text); empty: none
};

// The node agent, lanes-agent(8) ([agent]).
struct AgentConfig {
    // node_exporter's textfile collector directory: lanes_agent.prom goes there.
    std::string textfile_dir = "/var/lib/prometheus/node-exporter";
    // A full converge this often even when no netlink event came (what no event
    // reports: a lost notification, a socket overrun).
    std::chrono::milliseconds resync_interval{10000};
    // After a netlink event, how long the agent waits for the burst to end
    // before it looks (one converge per burst).
    std::chrono::milliseconds debounce{5};
};

// Which interfaces to shape on which nodes.
struct NicSelector {
    std::string nodes = "*";                  // hostlist expression or glob: "train[1-4]", "gpu*"
    std::string device;                       // interface name or glob ("ens*")
    std::string route_to;                     // or: the interface that routes to this prefix
    std::optional<uint64_t> link_speed_bits;  // override when sysfs has none (veth)
    int line = 0;
};

struct NodeConfig {
    std::vector<NicSelector> nics;
    ForeignQdiscAction foreign_qdisc = ForeignQdiscAction::Refuse;
    uint16_t root_handle_major = 0x1a4e;  // HTB root handle owned by Lanes
    std::string state_dir = "/run/lanes";
    std::string cgroup_root = "auto";  // auto: Slurm's cgroup v2 job dir, else own dir
    std::optional<uint64_t> default_link_speed_bits;
    // Traffic not in any job's cgroup: its DSCP (nullopt = "keep", leave it as the
    // sender set it) and its HTB class M:fffe (rate guaranteed, ceil its cap).
    std::optional<uint8_t> unclassified_dscp = 0;  // CS0
    Rate unclassified_rate{0, 5};                  // 5% of the link
    Rate unclassified_ceil{0, 25};                 // 25% of the link
    // Bound the burst a capped NIC puts on the wire: GSO/TSO packets at most what
    // the lowest ceil of a job on that NIC sends in this time (nullopt = "off").
    std::optional<uint32_t> gso_burst_us = 250;
    // How many HTB classes of ended jobs a node keeps per root, parked, for the
    // next jobs to take over (0 = delete every class at job end).
    uint32_t parked_classes = 16;
    // A task Lanes should classify and cannot: "fail" its launch (default), or
    // "warn" and let it run unclassified.
    bool classify_failure_warns = false;
};

// A live value from a Prometheus-compatible HTTP API ([signals.NAME]): the
// instant query `query` against `url` + /api/v1/query, every `interval`.
struct SignalConfig {
    std::string name;
    std::string url;    // "http://127.0.0.1:9090" (the API's base)
    std::string query;  // PromQL, one series or a scalar
    std::chrono::milliseconds interval{15000};
    std::chrono::milliseconds timeout{2000};       // the whole request, connect included
    std::chrono::milliseconds stale_after{60000};  // a value older than this is not used
    std::optional<double> fallback;                // used while stale or missing
    std::string ca_file;                           // https: the CA bundle to trust
    std::string client_cert;                       // https: client certificate (PEM) ...
    std::string client_key;                        // ... and its key
    std::string bearer_token_file;                 // "Authorization: Bearer <file's content>"
    uint64_t max_body_bytes = 1u << 20;            // a larger answer is an error
    int line = 0;
    bool operator==(const SignalConfig&) const = default;
};

// The longest range ("[5m]", "[1h:30s]") in a PromQL query: how far back its
// value looks; 0 when it has none.
std::chrono::seconds promql_query_range(std::string_view query);
// How long a change takes to show in the signal at worst: its fetch interval
// plus its query's range (lib/core/toml_control.cpp).
std::chrono::seconds signal_delay(const SignalConfig& signal);

// What a signal window does while its signal has no usable value (the API is
// down, its answers are garbage, or its last value is older than stale_after).
// Busy by default: the side that protects inference.
enum class UnknownSignalAction { Idle, Busy, Hold };
std::string_view unknown_signal_action_name(UnknownSignalAction action);

// A window that follows a signal with hysteresis ([windows.NAME] with `signal`):
// it begins once the value has been above `above` for `hold_for`, and ends once it
// has been below `until_below` for `release_after`.
struct SignalWindowConfig {
    std::string name;
    std::string signal;
    double above = 0;
    double until_below = 0;                 // <= above
    std::chrono::seconds hold_for{0};       // key "for"
    std::chrono::seconds release_after{0};  // defaults to hold_for
    UnknownSignalAction when_unknown = UnknownSignalAction::Busy;
    bool when_unknown_set = false;    // written in lanes.toml (else the default)
    std::chrono::seconds retry{300};  // deferred jobs start this much later
    int line = 0;
    bool operator==(const SignalWindowConfig&) const = default;
};

struct Config {
    std::string path;           // file it came from
    std::string text;           // the text it was parsed from (policy workers parse it again)
    std::string default_class;  // when nothing else decides
    std::map<std::string, ClassConfig> classes;
    std::vector<ClassRule> rules;
    // [windows.NAME] that follow the clock, as written (every program).
    WindowSpecs window_specs;
    // The same with their time zones loaded: set by lib/ctld's
    // parse_controller_config / load_controller_config, null otherwise.
    std::shared_ptr<const WindowSet> windows;
    std::map<std::string, SignalConfig> signals;
    std::map<std::string, SignalWindowConfig> signal_windows;
    PolicyConfig policy;
    NodeConfig node;
    AgentConfig agent;

    const ClassConfig* find_class(const std::string& name) const {
        auto it = classes.find(name);
        return it == classes.end() ? nullptr : &it->second;
    }
    const SignalWindowConfig* find_signal_window(const std::string& name) const {
        auto it = signal_windows.find(name);
        return it == signal_windows.end() ? nullptr : &it->second;
    }
};

// The node's view: "%n" in state_dir and cgroup_root becomes the node name, so
// several slurmd on one host (multiple-slurmd setups, test clusters) keep apart.
// Fails for a node name that is not a plain host name.
Result<NodeConfig> node_config_for(const NodeConfig& config, const std::string& node_name);

// A check some programs add to the parse (lib/ctld's time zones and windows):
// it completes `config` and appends its problems to `errors`, which are then
// reported together with the parser's, sorted by position.
using ConfigPass = void (*)(Config& config, std::vector<Diagnostic>& errors);

// Parse and validate lanes.toml. Errors read "path:line:col: key: what is wrong".
Result<Config> load_config(const std::string& path, ConfigPass pass = nullptr);
// Same, from text already in memory (path is used in messages and to resolve
// a relative policy script path).
Result<Config> parse_config(std::string_view text, const std::string& path, ConfigPass pass = nullptr);

// The lanes.toml to read when none is given. With honour_environment:
// $LANES_CONFIG if set, else lanes.toml in the directory of $SLURM_CONF if set;
// then LANES_DEFAULT_CONFIG from config.h (SLURM_SYSCONFDIR/lanes.toml). Code
// running in a user's environment (srun, sbatch) must pass false.
std::string default_config_path(bool honour_environment);

// Units shared by config, user options and lanesctl.
// Rates: bit/Kbit/Mbit/Gbit/Tbit (1000-based, case-insensitive) or a percentage;
// "bps" spellings are refused as ambiguous (tc reads them as bytes per second).
Result<Rate> parse_rate(std::string_view text);     // "25Gbit", "800Mbit", "40%", "1.5Gbit"
Result<uint8_t> parse_dscp(std::string_view text);  // "CS1", "AF41", "EF", "46"
std::string dscp_name(uint8_t dscp);                // 46 -> "EF", 13 -> "13"
// Rate -> text: the one formatter (lanesctl, logs, the job environment, state
// files and bench/ through `lanesctl rate` all use it). Both styles are exact.
//   Units (for people): "25Gbit", "1.5Mbit", "40%" (parse_rate reads it back);
//   Bits (for programs): "25000000000", "40%" (decode_rate in job_env.hpp reads
//   it; older nodes read only this form, so the job environment keeps it).
// Percentages: at most 6 significant digits, independent of the C locale.
enum class RateStyle { Units, Bits };
std::string format_rate(uint64_t bits_per_second);  // 25000000000 -> "25Gbit"
std::string format_rate(const Rate& rate, RateStyle style = RateStyle::Units);
Result<uint64_t> parse_bytes(std::string_view text);  // "16MiB", "512KiB", "1048576"
// "20ms", "500us", "1.5s", "2min", "1h" (a unit is required).
Result<std::chrono::microseconds> parse_duration(std::string_view text);

}  // namespace lanes

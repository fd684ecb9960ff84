// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl check: load lanes.toml and the policy with Classifier::create, the very
// call job_submit/lanes makes at init, so "check passes" means "the plugin loads".
// With --node NAME (as root, on that node): also open the node's shaper as the
// prolog does and report what is wrong with its [[nodes.nic]] setup (no matching
// interface, link down, link speed unknown), as slurmd's start does, and that
// each class's path (route_table, egress_device, vlan) exists there, and that
// the node can take the ingress caps a class asks for (IFB, netdev egress hook).
#include <unistd.h>

#include <cstdio>

#include "ctld/classifier.hpp"
#include "lanesctl/check_report.hpp"
#include "lanesctl/commands.hpp"
#include "node/ingress_control.hpp"
#include "node/node_shaper.hpp"
#include "node/policy_routing.hpp"

namespace lanes::ctl {

namespace {

void node_error(CheckReport& report, const std::string& text) {
    report.ok = false;
    Diagnostic d;
    d.message = d.text = text.rfind("lanes: ", 0) == 0 ? text.substr(7) : text;
    report.errors.push_back(std::move(d));
}

// A path per class: each class's table, device or VLAN exists here (what the
// prolog checks before it shapes a job of the class).
void check_paths(const Config& config, const NodeConfig& node, const std::string& name, CheckReport& report) {
    if (!config_has_paths(config)) return;
    if (auto marks = path_marks(config); !marks) return node_error(report, marks.error().message);
    auto router = PathRouter::open(node);
    if (!router) return node_error(report, "node " + name + ": " + router.error().message);
    for (const auto& [class_name, c] : config.classes) {
        if (!c.path || (!c.path->table && c.path->table_name.empty() && c.path->device.empty())) continue;
        auto here = path_declared_on(node, *c.path, name);
        if (!here) return node_error(report, "node " + name + ": " + here.error().message);
        if (!*here) continue;  // [[nodes.nic]] puts the class's device on other nodes
        auto path = (*router)->resolve(c);
        if (!path) node_error(report, "node " + name + ": " + path.error().message);
    }
}

// Ingress caps: a class with ingress_rate/ingress_ceil needs IFB devices and the
// nftables netdev egress hook here (what the prolog makes for its jobs).
void check_ingress(const Config& config, const NodeShaper& shaper, const std::string& name, CheckReport& report) {
    std::string keys;
    for (const auto& [class_name, c] : config.classes)
        if (c.ingress_rate || c.ingress_ceil)
            keys += (keys.empty() ? "" : ", ") + std::string("classes.") + class_name +
                    (c.ingress_rate ? ".ingress_rate" : ".ingress_ceil");
    if (keys.empty() || shaper.nics().empty()) return;
    if (auto support = check_ingress_support(shaper.nics().front().device); !support)
        node_error(report,
                   "node " + name + ": " + keys + ": ingress caps cannot work here: " + support.error().message);
}

void check_node(const Config& config, const std::string& name, CheckReport& report) {
    auto node = node_config_for(config.node, name);
    if (!node) return node_error(report, node.error().message);
    if (!NodeShaper::selects_nics(*node, name)) {
        report.log_errors.push_back("node " + name + ": no [[nodes.nic]] applies; its jobs run unshaped");
        return;
    }
    if (geteuid() != 0) return node_error(report, "--node: must run as root on node " + name);
    auto shaper = NodeShaper::open(*node, name);
    if (!shaper) return node_error(report, "node " + name + ": " + shaper.error().message);
    for (const auto& p : (*shaper)->problems()) node_error(report, "node " + name + ": " + p);
    check_paths(config, *node, name, report);
    check_ingress(config, **shaper, name, report);
}

}  // namespace

int run_check(const Options& options, const Context& context) {
    CheckReport report;
    report.config_path = context.config_path;
    LogSink log = [&report](LogLevel level, const std::string& line) {
        if (level == LogLevel::Error) report.log_errors.push_back(line);
    };
    auto classifier = Classifier::create(context.config_path, log);
    if (classifier) {
        report.ok = true;
        summarize(*(*classifier)->config(), report);
    } else {
        report.errors = diagnostics_of(classifier.error());
    }
    if (report.ok && !options.node.empty()) check_node(*(*classifier)->config(), options.node, report);
    if (options.json) {
        print_json(check_json(report));
    } else {
        std::string text = format_check_human(report);
        print_human(text, report.ok ? stdout : stderr);
    }
    return report.ok ? kExitOk : kExitFailed;
}

}  // namespace lanes::ctl

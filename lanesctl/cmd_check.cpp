// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl check: load lanes.toml and the policy with Classifier::create, the very
// call job_submit/lanes makes at init, so "check passes" means "the plugin loads".
#include <cstdio>

#include "lanesctl/check_report.hpp"
#include "ctld/classifier.hpp"
#include "lanesctl/commands.hpp"

namespace lanes::ctl {

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
    if (options.json) {
        print_json(check_json(report));
    } else {
        std::string text = format_check_human(report);
        std::fputs(text.c_str(), report.ok ? stdout : stderr);
    }
    return report.ok ? kExitOk : kExitFailed;
}

}  // namespace lanes::ctl

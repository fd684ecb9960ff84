// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl policy test: run the classifier (the same Classifier::create the
// plugin uses) on job files, fixtures or real jobs loaded from slurmctld.
extern "C" {
#include <slurm/slurm.h>
}

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ctld/classifier.hpp"
#include "ctld/user_names.hpp"
#include "glue/slurm_job_fields.hpp"
#include "glue/slurm_load_job.hpp"
#include "lanesctl/commands.hpp"
#include "lanesctl/policy_fixture.hpp"
#include "lanesctl/policy_report.hpp"
#include "lanesctl/time_spec.hpp"

namespace lanes::ctl {

namespace {

Result<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(path + ": cannot read: " + std::error_code(errno, std::generic_category()).message());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// A whole fixture ({"job": ..., "at": ..., "expect": ...}) or a bare job object.
struct Input {
    PolicyFixture fixture;
    bool is_fixture = false;
};

Result<Input> load_input(const std::string& path) {
    auto text = read_file(path);
    if (!text) return std::unexpected(text.error());
    auto value = json::parse(*text);
    if (!value) return fail(path + ":" + value.error().message);
    Input input;
    const json::Value* job = value->is_object() ? json::find(*value, "job") : nullptr;
    if (job && job->is_object()) {
        auto fixture = parse_fixture(*text, path);
        if (!fixture) return std::unexpected(fixture.error());
        input.fixture = std::move(*fixture);
        input.is_fixture = true;
        return input;
    }
    auto view = job_from_json(*value);
    if (!view) return fail(path + ": " + view.error().message);
    input.fixture.path = path;
    input.fixture.job = std::move(*view);
    return input;
}

// One job from slurmctld: Ok, or a runtime error message.
// The same translator as job_submit/lanes (core/job_fields.hpp); job_info_t
// is the job after Lanes routed it, without its SPANK or batch environment.
Result<JobView> load_slurm_job(uint32_t job_id, UserNames& names, SysSeconds now) {
    static const glue::SlurmJobApi kLinkedSlurm{&slurm_load_job, &slurm_free_job_info_msg, &slurm_strerror};
    auto loaded = glue::load_job(kLinkedSlurm, job_id, SHOW_DETAIL);
    if (!loaded)
        return fail("job " + std::to_string(job_id) + ": cannot load it from slurmctld: " + loaded.error().text);
    if (loaded->records().empty()) return fail("job " + std::to_string(job_id) + ": slurmctld does not know it");
    return job_view_from_fields(glue::fields_from_info(loaded->records().front()), now,
                                [&names](uint32_t uid) { return names.name(uid); });
}

}  // namespace

int run_policy_test(const Options& options, const Context& context) {
    auto at_option = time_option("--at", options.at, context, context.now);
    if (!at_option) return kExitUsage;
    const SysSeconds at = *at_option;
    LogSink log = [](LogLevel level, const std::string& line) {
        if (level == LogLevel::Error) print_error(line);
    };
    auto classifier = Classifier::create(context.config_path, log);
    if (!classifier) {
        print_error(classifier.error().message);
        print_error("run 'lanesctl check' for the full diagnosis");
        return kExitRuntime;
    }

    // Inputs: file names (whole fixtures or job objects), --fixtures DIR/*.json, --job IDs.
    std::vector<std::string> files = options.job_files;
    const bool fixture_mode = !options.fixtures_dir.empty();
    if (fixture_mode) {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(options.fixtures_dir, ec))
            if (entry.path().extension() == ".json") files.push_back(entry.path().string());
        if (ec) {
            print_error(options.fixtures_dir + ": " + ec.message());
            return kExitRuntime;
        }
        std::sort(files.begin(), files.end());
        if (files.empty()) {
            print_error(options.fixtures_dir + ": no *.json fixtures");
            return kExitRuntime;
        }
    }

    std::vector<PolicyTestResult> results;
    bool runtime_error = false;
    auto run_one = [&](PolicyTestResult result, const PolicyFixture& fixture, SysSeconds when, bool admin, bool check) {
        result.job_summary = job_summary(fixture.job);
        result.at = when;
        result.decision = (*classifier)->classify(fixture.job, when, admin);
        if (check) {
            result.checked = true;
            result.diffs = check_fixture(fixture, *result.decision);
        }
        results.push_back(std::move(result));
    };
    for (const auto& file : files) {
        PolicyTestResult result;
        result.source = file;
        auto input = load_input(file);
        if (!input) {
            result.error = input.error().message;
            results.push_back(std::move(result));
            continue;
        }
        if (fixture_mode && !input->is_fixture) {
            result.error = file + ": not a fixture (no \"job\" object with \"at\" and \"expect\")";
            results.push_back(std::move(result));
            continue;
        }
        PolicyFixture& fixture = input->fixture;
        result.description = fixture.description;
        // A fixture runs at its "at"; --at (single files only) tries another time.
        SysSeconds when = input->is_fixture && options.at.empty() ? fixture.at : at;
        if (fixture.job.submit_time == SysSeconds{}) fixture.job.submit_time = when;
        run_one(std::move(result), fixture, when, fixture.admin || options.as_admin, input->is_fixture);
    }
    if (!options.job_ids.empty()) {
        SlurmSession slurm;
        UserNames names;
        for (uint32_t id : options.job_ids) {
            PolicyTestResult result;
            result.source = "job " + std::to_string(id);
            auto job = load_slurm_job(id, names, at);
            if (!job) {
                result.error = job.error().message;
                runtime_error = true;
                results.push_back(std::move(result));
                continue;
            }
            PolicyFixture fixture;
            fixture.job = std::move(*job);
            run_one(std::move(result), fixture, at, options.as_admin, false);
        }
    }

    if (options.json) {
        print_json(policy_json(results, context.local_zone.get()));
    } else {
        std::string text = format_policy_human(results, context.local_zone.get(), fixture_mode);
        print_human(text);
    }
    if (runtime_error) return kExitRuntime;
    for (const auto& r : results)
        if (!r.ok()) return kExitFailed;
    return kExitOk;
}

}  // namespace lanes::ctl

// SPDX-License-Identifier: GPL-2.0-or-later
// Cost of Classifier::classify() per job: the shipped policy
// (policies/default.lua with tests/golden/default/lanes.toml) run in a
// lanes-policy-worker process (as slurmctld does) and in-process (the old
// engine), against the built-in rules alone (tests/golden/rules/lanes.toml),
// in the same run.
//
//   bench/bench_classify [--benchmark_min_time=2]      (srcdir from LANES_SRCDIR,
//                                                        the worker from LANES_POLICY_WORKER)
//
// Besides Google Benchmark's mean, every call is timed on its own and the
// summary prints p50/p99/p99.9 per job and the policy/rules ratio. Goal: p99 < 50 us.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ctld/classifier.hpp"
#include "ctld/windows_config.hpp"
#include "lanesctl/policy_fixture.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::string srcdir() {
    const char* env = std::getenv("LANES_SRCDIR");
    return env && *env ? env : LANES_BENCH_SRCDIR;
}

// A mix of what a cluster submits: training at peak (deferred), off peak
// (borrowing), inference, interactive, an explicit class request with a cap.
std::vector<lanes::JobView> job_mix() {
    std::vector<lanes::JobView> jobs;
    lanes::JobView train;
    train.name = "train-llm";
    train.user = "bob";
    train.account = "ml";
    train.partition = "train";
    train.tres_per_node = "gres:gpu:8";
    train.gpus = 16;
    train.min_nodes = train.max_nodes = 2;
    train.num_tasks = 16;
    train.time_limit_minutes = 120;
    train.batch = true;
    train.environment = {{"HOME", "/home/bob"}, {"PATH", "/usr/bin:/bin"}};
    jobs.push_back(train);
    lanes::JobView serve = train;
    serve.name = "serve-llama";
    serve.partition = "infer";
    serve.gpus = 1;
    serve.min_nodes = serve.max_nodes = 1;
    jobs.push_back(serve);
    lanes::JobView shell;
    shell.name = "bash";
    shell.user = "carol";
    shell.account = "physics";
    shell.partition = "debug";
    shell.gpus = 1;
    shell.time_limit_minutes = 60;
    jobs.push_back(shell);
    lanes::JobView asked = train;
    asked.gpus = 1;
    asked.requested_class = "training";
    asked.requested_cap = "5Gbit";
    jobs.push_back(asked);
    return jobs;
}

struct Samples {
    std::vector<int64_t> ns;
};
std::map<std::string, Samples> g_samples;

const lanes::SysSeconds kPeak = *lanes::parse_timestamp("2026-12-01T09:00:00+01:00");
const lanes::SysSeconds kOffPeak = *lanes::parse_timestamp("2026-12-01T21:00:00+01:00");

void run(benchmark::State& state, const std::string& set, const std::string& label, bool in_process = false) {
    auto config = lanes::load_controller_config(srcdir() + "/tests/golden/" + set + "/lanes.toml");
    if (!config) {
        state.SkipWithError(config.error().message.c_str());
        return;
    }
    if (in_process) config->policy.worker.clear();  // the engine in this process, as before the workers
    auto made = lanes::Classifier::from_config(std::move(*config), nullptr);
    if (!made) {
        state.SkipWithError(made.error().message.c_str());
        return;
    }
    auto& classifier = *made;
    auto jobs = job_mix();
    for (auto& j : jobs) j.submit_time = kPeak;
    auto& samples = g_samples[label].ns;
    samples.clear();
    samples.reserve(1 << 20);
    size_t i = 0;
    for (auto _ : state) {
        const lanes::JobView& job = jobs[i % jobs.size()];
        auto now = (i / jobs.size()) % 2 ? kOffPeak : kPeak;
        auto start = Clock::now();
        lanes::Decision d = classifier->classify(job, now);
        auto end = Clock::now();
        benchmark::DoNotOptimize(d);
        if (samples.size() < samples.capacity()) samples.push_back((end - start).count());
        ++i;
    }
    state.SetItemsProcessed(static_cast<int64_t>(i));
}

void BM_ClassifyDefaultPolicyWorker(benchmark::State& state) { run(state, "default", "worker"); }
void BM_ClassifyDefaultPolicyInProcess(benchmark::State& state) { run(state, "default", "in-process", true); }
void BM_ClassifyBuiltinRules(benchmark::State& state) { run(state, "rules", "rules"); }
BENCHMARK(BM_ClassifyDefaultPolicyWorker);
BENCHMARK(BM_ClassifyDefaultPolicyInProcess);
BENCHMARK(BM_ClassifyBuiltinRules);

int64_t percentile(std::vector<int64_t> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t idx = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(idx, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    auto& worker = g_samples["worker"].ns;
    auto& local = g_samples["in-process"].ns;
    auto& rules = g_samples["rules"].ns;
    std::printf("\nper job (us)               %10s %10s %10s %10s\n", "p50", "p99", "p99.9", "samples");
    auto line = [](const char* name, const std::vector<int64_t>& v) {
        std::printf("%-25s  %10.2f %10.2f %10.2f %10zu\n", name, percentile(v, 50) / 1e3, percentile(v, 99) / 1e3,
                    percentile(v, 99.9) / 1e3, v.size());
    };
    line("default.lua, worker", worker);
    line("default.lua, in-process", local);
    line("built-in rules only", rules);
    auto ratio = [](const char* name, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
        if (a.empty() || b.empty()) return;
        std::printf("%-25s  %9.1fx %9.1fx %9.1fx\n", name,
                    static_cast<double>(percentile(a, 50)) / std::max<int64_t>(1, percentile(b, 50)),
                    static_cast<double>(percentile(a, 99)) / std::max<int64_t>(1, percentile(b, 99)),
                    static_cast<double>(percentile(a, 99.9)) / std::max<int64_t>(1, percentile(b, 99.9)));
    };
    ratio("worker / in-process", worker, local);
    ratio("worker / rules", worker, rules);
    if (!worker.empty()) {
        double p99_us = percentile(worker, 99) / 1e3;
        std::printf("goal p99 <= 50 us through the worker: %s (%.2f us)\n", p99_us <= 50 ? "met" : "NOT met", p99_us);
    }
    return 0;
}

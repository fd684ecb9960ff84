// SPDX-License-Identifier: GPL-2.0-or-later
// slurm_load_job() for one job, the same on every Slurm release Lanes builds
// against: since 26.05 it names the job by a slurm_step_id_t (before, by its
// uint32_t id), and since 23.x its error is only in errno (slurm_get_errno() is
// gone). The one place that knows both: `lanesctl policy test --job` (which
// links libslurm) and glue/slurm_jobs.cpp (which finds the same functions at
// run time: spank_lanes must not link libslurm, slurmd brings its own).
#pragma once

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include <cstdint>
#include <expected>
#include <span>
#include <string>

namespace lanes::glue {

// The libslurm functions a load needs: libslurm's own (a program that links
// it) or the same found with dlsym (slurm_job_api_in_process).
struct SlurmJobApi {
    decltype(&slurm_load_job) load_job = nullptr;
    decltype(&slurm_free_job_info_msg) free_job_info_msg = nullptr;
    decltype(&slurm_strerror) strerror = nullptr;
};

// libslurm's functions in this process (dlsym, RTLD_DEFAULT); false when one is
// missing.
bool slurm_job_api_in_process(SlurmJobApi& api);

// What slurmctld answered for one job id, freed with the answer's own API.
class LoadedJob {
public:
    LoadedJob(const SlurmJobApi& api, job_info_msg_t* msg) : api_(api), msg_(msg) {}
    LoadedJob(LoadedJob&& other) noexcept : api_(other.api_), msg_(other.msg_) { other.msg_ = nullptr; }
    LoadedJob(const LoadedJob&) = delete;
    LoadedJob& operator=(const LoadedJob&) = delete;
    LoadedJob& operator=(LoadedJob&&) = delete;
    ~LoadedJob() {
        if (msg_) api_.free_job_info_msg(msg_);
    }

    // Every record of the answer: an array job's or a heterogeneous job's id
    // brings its other records along (slurmctld sends the job's own first).
    std::span<const slurm_job_info_t> records() const;
    // The record of `job_id` itself; null when the answer has none.
    const slurm_job_info_t* record_of(uint32_t job_id) const;

private:
    SlurmJobApi api_;
    job_info_msg_t* msg_;
};

// Why a load failed: Slurm's error code (errno) and its text.
struct LoadJobError {
    int code = 0;
    std::string text;
};

// Loads one job with `show_flags` (SHOW_ALL, SHOW_DETAIL) through `api`.
std::expected<LoadedJob, LoadJobError> load_job(const SlurmJobApi& api, uint32_t job_id, uint16_t show_flags);

}  // namespace lanes::glue

// SPDX-License-Identifier: GPL-2.0-or-later
// Job state files in state_dir (root-only: dir 0700, files 0600):
//   job_<id>        key=value text, one JobState (format_job_state)
//   minor_<hex>     symlink -> "<job id>": who holds an HTB minor (atomic claim)
//   lock            flock'ed by every prolog/epilog/gc for its whole duration
//   parked/<hex>    one ParkedClass per file (dir 0700, files 0600)
//   shaped_jobs     how many jobs with HTB classes the node has (the pool drains at 0)
// Written tmp + rename, without fsync (FileSync::PageCacheOnly): they describe
// tc classes, nft elements and cgroups, which do not outlive the boot either
// (slurmd's start-up reconcile drops an earlier boot's records), and every
// write is made under the node's lock, where an fsync on a disk-backed
// state_dir made the prologs of a launch storm wait for the disk one by one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "node/shaping_plan.hpp"

namespace lanes {

std::string format_job_state(const JobState& state);
// `origin` names the file in messages.
Result<JobState> parse_job_state(std::string_view text, const std::string& origin);
std::string format_parked_class(const ParkedClass& parked);
Result<ParkedClass> parse_parked_class(std::string_view text, const std::string& origin);

class JobStateStore {
public:
    explicit JobStateStore(std::string dir) : dir_(std::move(dir)) {}
    ~JobStateStore();
    JobStateStore(const JobStateStore&) = delete;
    JobStateStore& operator=(const JobStateStore&) = delete;

    // Create the dir (0700; tightened if it exists), open the lock file.
    Result<void> prepare();

    // Held while alive.
    class Lock {
    public:
        explicit Lock(int fd) : fd_(fd) {}
        Lock(Lock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
        Lock& operator=(Lock&&) = delete;
        ~Lock();

    private:
        int fd_;
    };
    Result<Lock> lock();

    Result<std::optional<JobState>> load(uint32_t job_id) const;
    // Every job file; unreadable ones are reported in `errors` and skipped.
    std::vector<JobState> load_all(std::vector<std::string>* errors = nullptr) const;
    Result<void> save(const JobState& state);  // tmp + rename
    Result<void> erase(uint32_t job_id);       // absent = success

    // Minor claims. owner: the job id holding `minor`, if any.
    std::optional<uint32_t> minor_owner(uint16_t minor) const;
    Result<void> claim_minor(uint16_t minor, uint32_t job_id);    // fails if held by another
    Result<void> release_minor(uint16_t minor, uint32_t job_id);  // only if held by job_id

    // The parked pool. load_parked: every record, by minor; unreadable ones are
    // reported in `errors` and skipped.
    Result<void> save_parked(const ParkedClass& parked);  // tmp + rename
    std::vector<ParkedClass> load_parked(std::vector<std::string>* errors = nullptr) const;
    Result<void> erase_parked(uint16_t minor);  // absent = success
    bool is_parked(uint16_t minor) const;
    std::size_t parked_count() const;  // records, unparsed (cheap: the pool's bound)

    // Jobs with HTB classes on this node (0 when the file is missing or bad).
    uint32_t shaped_jobs() const;
    Result<void> set_shaped_jobs(uint32_t count);

    const std::string& dir() const { return dir_; }
    std::string job_path(uint32_t job_id) const;

private:
    std::string dir_;
    int lock_fd_ = -1;
};

}  // namespace lanes

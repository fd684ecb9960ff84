// SPDX-License-Identifier: GPL-2.0-or-later
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include "glue/slurm_jobs.hpp"
#include "glue/slurm_load_job.hpp"

namespace lanes::glue {
namespace {

constexpr const char* kStateNames[] = {"PENDING", "RUNNING",   "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED",
                                       "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY"};

void write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

// The child: one answer line per job on stdout (a pipe to the parent).
[[noreturn]] void answer_in_child(const std::vector<uint32_t>& job_ids, void (*prepare)()) {
    if (prepare) prepare();
    SlurmJobApi api;
    if (!slurm_job_api_in_process(api)) {
        write_all(2, "libslurm's slurm_load_job is not available in this process\n");
        ::_exit(3);
    }
    for (uint32_t id : job_ids) {
        ControllerAnswer answer;
        auto loaded = load_job(api, id, SHOW_ALL);
        if (!loaded) {
            answer.kind = loaded.error().code == ESLURM_INVALID_JOB_ID ? ControllerAnswer::Kind::Unknown
                                                                       : ControllerAnswer::Kind::Unreachable;
            answer.detail = loaded.error().text;
        } else if (const auto* record = loaded->record_of(id)) {
            // An array job's id can bring its other tasks along: take the job's own.
            answer = controller_answer_of_state(record->job_state);
        } else {
            answer = {ControllerAnswer::Kind::Unknown, "no record"};
        }
        write_all(1, format_controller_answer(id, answer));
    }
    ::_exit(0);
}

std::string last_line_of(const std::vector<std::string>& lines) {
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
        if (it->find_first_not_of(" \t") != std::string::npos) return *it;
    return "";
}

}  // namespace

ControllerAnswer controller_answer_of_state(uint32_t job_state) {
    const uint32_t base = job_state & JOB_STATE_BASE;
    std::string name =
        base < sizeof kStateNames / sizeof *kStateNames ? kStateNames[base] : "state " + std::to_string(base);
    if (base == JOB_PENDING || base == JOB_RUNNING || base == JOB_SUSPENDED || base >= JOB_END)
        return {ControllerAnswer::Kind::Active, name};
    if (job_state & JOB_COMPLETING) return {ControllerAnswer::Kind::Completing, name + "+COMPLETING"};
    return {ControllerAnswer::Kind::Ended, name};
}

std::map<uint32_t, ControllerAnswer> ask_slurmctld(const std::vector<uint32_t>& job_ids,
                                                   std::chrono::milliseconds timeout, void (*prepare)()) {
    using namespace std::chrono;
    std::map<uint32_t, ControllerAnswer> answers;
    auto give_up = [&](const std::string& why) {
        for (uint32_t id : job_ids) answers.try_emplace(id, ControllerAnswer{ControllerAnswer::Kind::Unreachable, why});
        return answers;
    };
    if (job_ids.empty()) return answers;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return give_up(std::string("pipe: ") + std::strerror(errno));
    std::fflush(nullptr);  // nothing buffered is written twice (the child may exit())
    pid_t child = ::fork();
    if (child < 0) {
        int err = errno;
        ::close(fds[0]);
        ::close(fds[1]);
        return give_up(std::string("fork: ") + std::strerror(err));
    }
    if (child == 0) {
        // Answers and whatever libslurm prints (its fatal() on a missing
        // slurm.conf) go to the parent.
        ::dup2(fds[1], 1);
        ::dup2(fds[1], 2);
        ::signal(SIGALRM, SIG_DFL);
        ::alarm(static_cast<unsigned>(duration_cast<seconds>(timeout).count()) + 2);  // a backstop only
        answer_in_child(job_ids, prepare);
    }
    ::close(fds[1]);
    std::string text;
    bool timed_out = false;
    const auto deadline = steady_clock::now() + timeout;
    for (;;) {
        auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        int ready = ::poll(&p, 1, static_cast<int>(left));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        char buf[4096];
        ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > (1u << 20)) break;
    }
    ::close(fds[0]);
    if (timed_out) ::kill(child, SIGKILL);
    int status = 0;
    pid_t reaped;
    do reaped = ::waitpid(child, &status, 0);
    while (reaped < 0 && errno == EINTR);
    std::vector<std::string> other;
    answers = parse_controller_answers(text, &other);
    std::string why;
    if (timed_out) {
        why = "no answer within " + std::to_string(duration_cast<seconds>(timeout).count()) + "s";
    } else if (reaped == child && WIFSIGNALED(status)) {
        why = std::string("the query died of ") + ::strsignal(WTERMSIG(status));
    } else if (reaped == child && WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        why = "cannot use Slurm here (exit " + std::to_string(WEXITSTATUS(status)) + ")";
    } else {
        why = "no answer";
    }
    if (auto said = last_line_of(other); !said.empty()) why += ": " + said;
    return give_up(why);
}

}  // namespace lanes::glue

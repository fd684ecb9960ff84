// SPDX-License-Identifier: GPL-2.0-or-later
// The policy worker protocol: what slurmctld (or lanesctl) and a
// lanes-policy-worker process say over their socket. Each frame is a 4-byte
// little-endian length (of what follows), a 1-byte type and a payload of
// fixed-width little-endian integers and length-prefixed strings, each
// message's fields in the order of its table in policy_wire.cpp (Fields<T>,
// which encode and decode both walk). Decoding never trusts the peer: a
// truncated, oversized or malformed frame is an error, never a crash or an
// allocation larger than the frame.
//
//   parent -> worker   Init      config text and path, policy source and name
//   worker -> parent   Ready     the policy loaded, or why not
//   parent -> worker   Classify  the job and `now`
//   worker -> parent   Query     a window or signal question (lanes.in_window ...)
//   parent -> worker   Answer    its answer, from the caller's WindowOracle
//   worker -> parent   Log       a line for the caller's log (lanes.log)
//   worker -> parent   Outcome   the PolicyOutcome; ends a Classify
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/job.hpp"
#include "core/log.hpp"
#include "core/result.hpp"
#include "ctld/policy.hpp"
#include "signals/signals.hpp"

namespace lanes::wire {

// Larger frames are refused (a policy source or a job's environment beyond it).
constexpr uint32_t kMaxFrameBytes = 64u << 20;
constexpr size_t kHeaderBytes = 5;

enum class Type : uint8_t { Init = 1, Ready, Classify, Query, Answer, Log, Outcome };

struct Init {
    std::string config_text;
    std::string config_path;
    std::string chunk_name;
    std::string source;
};

struct Ready {
    bool ok = false;
    std::string error;
};

struct Classify {
    JobView job;
    SysSeconds now{};
};

struct Query {
    enum class Op : uint8_t { Known = 1, InWindow, NextStart, NextEnd, Describe, Signal };
    Op op = Op::Known;
    std::string name;
    SysSeconds at{};
};

struct Answer {
    bool flag = false;                  // Known, InWindow
    std::optional<SysSeconds> time;     // NextStart, NextEnd
    std::string text;                   // Describe
    std::optional<SignalValue> signal;  // Signal
};

struct LogLine {
    LogLevel level = LogLevel::Info;
    std::string text;
};

struct Outcome {
    PolicyOutcome outcome;
    // The worker's Lua state hit a budget (or the worker aged): it exits after
    // this answer and the caller starts another one, off the job's path.
    bool retire = false;
};

// A whole frame (header + payload).
std::string encode(const Init& m);
std::string encode(const Ready& m);
std::string encode(const Classify& m);
std::string encode(const Query& m);
std::string encode(const Answer& m);
std::string encode(const LogLine& m);
std::string encode(const Outcome& m);

// The header: the payload's length and type. Fails for an unknown type or a
// length over kMaxFrameBytes.
struct Header {
    Type type;
    uint32_t payload_bytes;
};
Result<Header> decode_header(std::string_view five_bytes);

// Payloads (what follows the header). Trailing bytes are an error.
Result<Init> decode_init(std::string_view payload);
Result<Ready> decode_ready(std::string_view payload);
Result<Classify> decode_classify(std::string_view payload);
Result<Query> decode_query(std::string_view payload);
Result<Answer> decode_answer(std::string_view payload);
Result<LogLine> decode_log(std::string_view payload);
Result<Outcome> decode_outcome(std::string_view payload);

}  // namespace lanes::wire

// SPDX-License-Identifier: GPL-2.0-or-later
// Frames of the policy worker protocol over a socket, with a deadline (the
// caller's side: a non-blocking socket) or without one (the worker's side).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "ctld/policy_wire.hpp"

namespace lanes::wire {

enum class IoStatus { Ok, Timeout, Closed, Garbage };

struct Frame {
    Type type = Type::Init;
    std::string payload;
};

// Writes all of `frame`; with a deadline the socket must be non-blocking.
IoStatus write_frame(int fd, std::string_view frame,
                     std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
// Waits until `fd` has something to read (or hung up): Ok, or Timeout at the deadline.
IoStatus wait_readable(int fd, std::chrono::steady_clock::time_point deadline);
// Reads one frame; Garbage for a bad header (the stream cannot be trusted after it).
IoStatus read_frame(int fd, Frame& out, std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt,
                    std::string* error = nullptr);

}  // namespace lanes::wire

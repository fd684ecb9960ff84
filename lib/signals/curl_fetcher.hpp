// SPDX-License-Identifier: GPL-2.0-or-later
// The real SignalFetcher: one HTTP GET of <url>/api/v1/query?query=<PromQL>
// (&time=<instant> when the caller names one) with libcurl, bounded in time
// (the signal's timeout, connect included) and in size (max_body), TLS CA /
// client certificate / bearer token as configured. No redirects, http and
// https only, no signals (safe in threads).
#pragma once

#include <atomic>
#include <memory>

#include "signals/signals.hpp"

namespace lanes {

// `cancel`, when given, aborts a transfer in flight as soon as it becomes true
// (shutdown must not wait for a hung server).
std::unique_ptr<SignalFetcher> make_curl_fetcher(const std::atomic<bool>* cancel = nullptr);

// The URL fetched for a signal (lanesctl signals prints it): with &time= when
// an evaluation instant is given.
std::string signal_query_url(const SignalConfig& signal, std::optional<SignalClock::time_point> instant = std::nullopt);

}  // namespace lanes

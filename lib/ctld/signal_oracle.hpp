// SPDX-License-Identifier: GPL-2.0-or-later
// Signal windows for the router and the policy: a WindowOracle that answers for
// [windows.NAME] tables with a `signal` from the latest SignalSnapshot, and passes
// every clock window on to the oracle it wraps.
//
// A signal window has no future: while it holds, it is taken to last `retry`
// from the snapshot's time (so a job of a class that avoids it is deferred by
// `retry`, and may not borrow), and it never has a next start (nobody knows when
// demand will rise again). Without a snapshot, its when_unknown setting decides.
#pragma once

#include <memory>

#include "core/lanes_toml.hpp"
#include "ctld/router.hpp"
#include "signals/signals.hpp"

namespace lanes {

// `base` when `config` has no signals nor signal windows; else the wrapper.
std::shared_ptr<const WindowOracle> with_signals(std::shared_ptr<const WindowOracle> base,
                                                 std::shared_ptr<const Config> config,
                                                 std::shared_ptr<const SignalSource> source);

}  // namespace lanes

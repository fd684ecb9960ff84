// SPDX-License-Identifier: GPL-2.0-or-later
// See signal_oracle.hpp.
#include "ctld/signal_oracle.hpp"

#include <cstdio>

namespace lanes {

namespace {

class SignalWindowOracle final : public WindowOracle {
public:
    SignalWindowOracle(std::shared_ptr<const WindowOracle> base, std::shared_ptr<const Config> config,
                       std::shared_ptr<const SignalSource> source)
        : base_(std::move(base)), config_(std::move(config)), source_(std::move(source)) {}

    bool known(const std::string& name) const override {
        return config_->signal_windows.count(name) || base_->known(name);
    }

    bool in_window(const std::string& name, SysSeconds at) const override {
        const SignalWindowConfig* w = config_->find_signal_window(name);
        if (!w) return base_->in_window(name, at);
        auto held = holds(*w);
        return held && at < *held;
    }

    std::optional<SysSeconds> next_start(const std::string& name, SysSeconds at) const override {
        if (!config_->find_signal_window(name)) return base_->next_start(name, at);
        return std::nullopt;
    }

    std::optional<SysSeconds> next_end(const std::string& name, SysSeconds at) const override {
        const SignalWindowConfig* w = config_->find_signal_window(name);
        if (!w) return base_->next_end(name, at);
        auto held = holds(*w);
        if (held && at < *held) return *held;
        return std::nullopt;
    }

    std::string describe(const std::string& name, SysSeconds at) const override {
        if (!config_->find_signal_window(name)) return base_->describe(name, at);
        static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
        auto day = std::chrono::floor<std::chrono::days>(at);
        std::chrono::weekday wd{std::chrono::sys_days{day}};
        auto tod = std::chrono::duration_cast<std::chrono::minutes>(at - day).count();
        char buf[48];
        std::snprintf(buf, sizeof buf, "%s %02d:%02d UTC", kDays[wd.c_encoding()], static_cast<int>(tod / 60),
                      static_cast<int>(tod % 60));
        return buf;
    }

    std::optional<SignalValue> signal(const std::string& name) const override {
        auto it = config_->signals.find(name);
        if (it == config_->signals.end()) return std::nullopt;
        auto snap = source_ ? source_->snapshot() : nullptr;
        if (snap) {
            if (auto s = snap->signals.find(name); s != snap->signals.end()) return s->second.value;
        }
        return effective_value(it->second, SignalState{}, SignalClock::now());
    }

private:
    // While the window holds: until when it is taken to last.
    std::optional<SysSeconds> holds(const SignalWindowConfig& w) const {
        auto snap = source_ ? source_->snapshot() : nullptr;
        if (snap) {
            auto it = snap->windows.find(w.name);
            if (it == snap->windows.end() || !it->second.busy) return std::nullopt;
            return std::chrono::floor<std::chrono::seconds>(snap->taken) + it->second.retry;
        }
        if (w.when_unknown != UnknownSignalAction::Busy) return std::nullopt;
        return std::chrono::floor<std::chrono::seconds>(SignalClock::now()) + w.retry;
    }

    std::shared_ptr<const WindowOracle> base_;
    std::shared_ptr<const Config> config_;
    std::shared_ptr<const SignalSource> source_;
};

}  // namespace

std::shared_ptr<const WindowOracle> with_signals(std::shared_ptr<const WindowOracle> base,
                                                 std::shared_ptr<const Config> config,
                                                 std::shared_ptr<const SignalSource> source) {
    if (!config || (config->signals.empty() && config->signal_windows.empty())) return base;
    return std::make_shared<SignalWindowOracle>(std::move(base), std::move(config), std::move(source));
}

}  // namespace lanes

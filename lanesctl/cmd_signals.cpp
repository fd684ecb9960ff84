// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl signals: fetch every [signals.NAME] once now (libcurl, the same fetcher
// and parser the controller and the agent use) and show value, age, last error,
// and the windows that follow the signals: busy or idle and why, including which
// when_unknown setting applies while a signal has no usable value.
#include <cstdio>

#include "core/lanes_toml.hpp"
#include "ctld/windows_config.hpp"
#include "lanesctl/commands.hpp"
#include "signals/curl_fetcher.hpp"
#include "signals/signal_monitor.hpp"

namespace lanes::ctl {

namespace {

std::string age_text(const SignalValue& v) {
    if (!v.age) return "-";
    return std::to_string(v.age->count()) + "s";
}

}  // namespace

int run_signals(const Options& options, const Context& context) {
    auto config = load_controller_config(context.config_path);
    if (!config) {
        print_error(config.error().message);
        return kExitFailed;
    }
    SignalMonitor monitor([](LogLevel, const std::string&) {});
    monitor.configure(config->signals, config->signal_windows, /*start_threads=*/false);
    auto snap = monitor.refresh_all_now();
    bool all_fresh = true;
    json::Value signals = json::Value::array(), windows = json::Value::array();
    std::string text;
    if (config->signals.empty()) text += "no [signals.NAME] in " + context.config_path + "\n";
    for (const auto& [name, cfg] : config->signals) {
        const auto& s = snap->signals.at(name);
        all_fresh = all_fresh && s.value.fresh;
        std::string value = s.value.value ? format_signal_value(*s.value.value) : "-";
        std::string source = s.value.fresh ? "fresh" : s.value.from_fallback ? "fallback" : "none";
        char line[512];
        std::snprintf(line, sizeof line, "%-16s %-12s %-6s %-8s %s\n", name.c_str(), value.c_str(),
                      age_text(s.value).c_str(), source.c_str(),
                      s.state.last_error.empty() ? "" : ("error: " + s.state.last_error).c_str());
        text += line;
        json::Value o = json::Value::object();
        o["name"] = name;
        o["url"] = signal_query_url(cfg);
        o["source"] = source;
        o["value"] = s.value.value ? json::Value(*s.value.value) : json::Value();
        o["age_seconds"] = s.value.age ? json::Value(static_cast<int64_t>(s.value.age->count())) : json::Value();
        o["last_error"] = s.state.last_error;
        o["last_success_unix"] = s.state.successes
                                     ? json::Value(static_cast<int64_t>(SignalClock::to_time_t(s.state.last_success)))
                                     : json::Value();
        if (!s.value.fresh) o["why_unusable"] = s.value.why_unusable;
        signals.push_back(std::move(o));
    }
    for (const auto& [name, w] : snap->windows) {
        text += "window " + name + ": " + (w.busy ? "busy" : "idle") + " (" + w.reason + ")\n";
        json::Value o = json::Value::object();
        o["name"] = name;
        o["busy"] = w.busy;
        o["reason"] = w.reason;
        if (auto cfg = config->signal_windows.find(name); cfg != config->signal_windows.end()) {
            o["when_unknown"] = std::string(unknown_signal_action_name(cfg->second.when_unknown));
            o["when_unknown_default"] = !cfg->second.when_unknown_set;
        }
        windows.push_back(std::move(o));
    }
    if (options.json) {
        json::Value doc = json::Value::object();
        doc["signals"] = std::move(signals);
        doc["windows"] = std::move(windows);
        print_json(doc);
    } else {
        print_human(text);
    }
    return all_fresh ? kExitOk : kExitFailed;
}

}  // namespace lanes::ctl

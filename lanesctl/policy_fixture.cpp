// SPDX-License-Identifier: GPL-2.0-or-later
#include "lanesctl/policy_fixture.hpp"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/job_env.hpp"
#include "ctld/router.hpp"

namespace lanes {

namespace {

bool digits(std::string_view s, size_t pos, size_t n, int& out) {
    if (pos + n > s.size()) return false;
    out = 0;
    for (size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

const char* verdict_name(Decision::Verdict v) { return v == Decision::Verdict::Accept ? "accept" : "reject"; }

const char* reject_kind_name(Decision::RejectKind k) {
    switch (k) {
        case Decision::RejectKind::Policy: return "policy";
        case Decision::RejectKind::ClassNotAllowed: return "class-not-allowed";
        case Decision::RejectKind::InvalidOption: return "invalid-option";
        case Decision::RejectKind::TimeWindow: return "time-window";
    }
    return "policy";
}

Result<std::string> string_of(const json::Value& v, const std::string& key) {
    if (!v.is_string()) return fail(key + ": expected a string, got " + v.type_name());
    return v.get_ref<const std::string&>();
}

Result<uint32_t> u32_of(const json::Value& v, const std::string& key) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > UINT32_MAX)
        return fail(key + ": expected a non-negative integer, got " + v.type_name());
    return static_cast<uint32_t>(v.get<int64_t>());
}

Result<SysSeconds> time_of(const json::Value& v, const std::string& key) {
    if (v.is_number_integer()) return SysSeconds{std::chrono::seconds{v.get<int64_t>()}};
    if (!v.is_string()) return fail(key + ": expected a timestamp, got " + v.type_name());
    auto t = parse_timestamp(v.get_ref<const std::string&>());
    if (!t) return fail(key + ": " + t.error().message);
    return *t;
}

}  // namespace

Result<SysSeconds> parse_timestamp(std::string_view s) {
    std::string bad = "invalid timestamp '" + std::string(s) + "' (want 2026-12-01T09:00:00+01:00 or ...Z)";
    int y, mo, d, h, mi, sec = 0;
    if (s.size() < 17 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
        !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != ' ') || !digits(s, 11, 2, h) || s[13] != ':' ||
        !digits(s, 14, 2, mi))
        return fail(bad);
    size_t pos = 16;
    if (pos < s.size() && s[pos] == ':') {
        if (!digits(s, 17, 2, sec)) return fail(bad);
        pos = 19;
    }
    int offset = 0;
    if (pos < s.size() && s[pos] == 'Z' && pos + 1 == s.size()) {
        offset = 0;
    } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-') && s.size() == pos + 6 && s[pos + 3] == ':') {
        int oh, om;
        if (!digits(s, pos + 1, 2, oh) || !digits(s, pos + 4, 2, om) || oh > 23 || om > 59) return fail(bad);
        offset = (oh * 60 + om) * 60 * (s[pos] == '-' ? -1 : 1);
    } else {
        return fail(bad);
    }
    std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                    std::chrono::day{static_cast<unsigned>(d)}};
    if (!ymd.ok() || h > 23 || mi > 59 || sec > 59) return fail(bad);
    return SysSeconds{std::chrono::sys_days{ymd}} + std::chrono::hours{h} + std::chrono::minutes{mi} +
           std::chrono::seconds{sec} - std::chrono::seconds{offset};
}

std::string format_timestamp_utc(SysSeconds t) {
    auto day = std::chrono::floor<std::chrono::days>(t);
    std::chrono::year_month_day ymd{day};
    std::chrono::hh_mm_ss hms{t - day};
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                  static_cast<int>(hms.seconds().count()));
    return buf;
}

Result<SlurmJobFields> job_fields_from_json(const json::Value& v, std::optional<uint32_t>& gpus) {
    if (!v.is_object()) return fail("job: expected an object");
    SlurmJobFields f;
    gpus.reset();
    for (const auto& [key, val] : v.get_ref<const json::Object&>()) {
        const std::string k = "job." + key;
        auto str = [&](std::string& dst) -> Result<void> {
            auto s = string_of(val, k);
            if (!s) return fail(s.error());
            dst = *s;
            return {};
        };
        auto num = [&](std::optional<uint32_t>& dst) -> Result<void> {
            auto n = u32_of(val, k);
            if (!n) return fail(n.error());
            dst = *n;
            return {};
        };
        Result<void> r;
        if (key == "name") r = str(f.name);
        else if (key == "comment") r = str(f.comment);
        else if (key == "user") r = str(f.user_name);
        else if (key == "account") r = str(f.account);
        else if (key == "partition") r = str(f.partition);
        else if (key == "qos") r = str(f.qos);
        else if (key == "tres_per_node") r = str(f.tres_per_node);
        else if (key == "tres_per_job") r = str(f.tres_per_job);
        else if (key == "tres_per_task") r = str(f.tres_per_task);
        else if (key == "tres_per_socket") r = str(f.tres_per_socket);
        else if (key == "gres") r = str(f.gres);
        else if (key == "features") r = str(f.features);
        else if (key == "uid") r = num(f.user_id);
        else if (key == "gpus") r = num(gpus);
        else if (key == "min_nodes") r = num(f.min_nodes);
        else if (key == "max_nodes") r = num(f.max_nodes);
        else if (key == "num_tasks") r = num(f.num_tasks);
        else if (key == "ntasks_per_node") r = num(f.ntasks_per_node);
        else if (key == "time_limit") {
            if (val.is_null()) {
                f.time_limit_minutes.reset();
            } else if (val.is_string()) {
                auto d = parse_slurm_duration(val.get_ref<const std::string&>());
                if (!d) return fail(k + ": " + d.error().message);
                f.time_limit_minutes = *d;
            } else {
                r = num(f.time_limit_minutes);
            }
        } else if (key == "batch") {
            if (!val.is_boolean()) return fail(k + ": expected true or false");
            f.has_script = val.get<bool>();
        } else if (key == "env") {
            if (!val.is_object()) return fail(k + ": expected an object of strings");
            for (const auto& [ek, ev] : val.get_ref<const json::Object&>()) {
                if (!ev.is_string()) return fail(k + "." + ek + ": expected a string");
                f.environment.push_back(ek + "=" + ev.get_ref<const std::string&>());
            }
        } else if (key == "lanes_class" || key == "lanes_cap") {
            // As srun/sbatch pass --lanes-class/--lanes-cap to slurmctld.
            std::string s;
            r = str(s);
            f.spank_env.push_back(std::string(key == "lanes_class" ? kEnvRequestClass : kEnvRequestCap) + "=" + s);
        } else if (key == "submit_time" || key == "begin_time") {
            auto t = time_of(val, k);
            if (!t) return fail(t.error());
            (key == "submit_time" ? f.submit_time : f.begin_time) = t->time_since_epoch().count();
        } else {
            return fail(k + ": unknown key");
        }
        if (!r) return fail(r.error());
    }
    return f;
}

Result<JobView> job_from_json(const json::Value& v) {
    std::optional<uint32_t> gpus;
    auto fields = job_fields_from_json(v, gpus);
    if (!fields) return fail(fields.error());
    // The same translator as job_submit/lanes; "user" names the owner as job_info_t does.
    JobView j = job_view_from_fields(*fields, SysSeconds{}, {});
    if (fields->user_name.empty()) j.user.clear();
    if (!fields->submit_time) j.submit_time = SysSeconds{};  // the fixture's "at", set by the caller
    if (gpus) j.gpus = *gpus;                                // given outright, not counted from TRES
    return j;
}

json::Value decision_to_json(const Decision& d) {
    json::Object o;
    o.emplace_back("verdict", verdict_name(d.verdict));
    if (d.verdict == Decision::Verdict::Reject) o.emplace_back("reject_kind", reject_kind_name(d.reject_kind));
    o.emplace_back("class", d.class_name.empty() ? json::Value() : json::Value(d.class_name));
    o.emplace_back("reason", d.reason);
    json::Array messages;
    for (const auto& m : d.user_messages) messages.emplace_back(m);
    o.emplace_back("messages", std::move(messages));
    auto opt_str = [](const std::optional<std::string>& s) { return s ? json::Value(*s) : json::Value(); };
    o.emplace_back("partition", opt_str(d.partition));
    o.emplace_back("qos", opt_str(d.qos));
    o.emplace_back("features", opt_str(d.features));
    o.emplace_back("nice", d.nice ? json::Value(static_cast<int64_t>(*d.nice)) : json::Value());
    o.emplace_back("begin_time", d.begin_time ? json::Value(format_timestamp_utc(*d.begin_time)) : json::Value());
    o.emplace_back("time_limit",
                   d.time_limit_minutes ? json::Value(static_cast<int64_t>(*d.time_limit_minutes)) : json::Value());
    json::Object net;
    const NetworkDecision& n = d.network;
    net.emplace_back("dscp", n.dscp ? json::Value(static_cast<int64_t>(*n.dscp)) : json::Value());
    net.emplace_back("rate", n.rate ? json::Value(format_rate(*n.rate)) : json::Value());
    net.emplace_back("ceil", n.ceil ? json::Value(format_rate(*n.ceil)) : json::Value());
    net.emplace_back("rdma_traffic_class",
                     n.rdma_traffic_class ? json::Value(static_cast<int64_t>(*n.rdma_traffic_class)) : json::Value());
    net.emplace_back("rdma_service_level",
                     n.rdma_service_level ? json::Value(static_cast<int64_t>(*n.rdma_service_level)) : json::Value());
    net.emplace_back("rank", static_cast<int64_t>(n.rank));
    o.emplace_back("network", std::move(net));
    return json::Value(std::move(o));
}

Result<PolicyFixture> parse_fixture(std::string_view text, const std::string& path) {
    auto doc = json::parse(text);
    if (!doc) return fail(path + ":" + doc.error().message);
    if (!doc->is_object()) return fail(path + ": expected a JSON object");
    PolicyFixture f;
    f.path = path;
    bool has_job = false, has_at = false, has_expect = false;
    for (const auto& [key, val] : doc->get_ref<const json::Object&>()) {
        if (key == "description") {
            if (!val.is_string()) return fail(path + ": description: expected a string");
            f.description = val.get_ref<const std::string&>();
        } else if (key == "job") {
            auto j = job_from_json(val);
            if (!j) return fail(path + ": " + j.error().message);
            f.job = std::move(*j);
            has_job = true;
        } else if (key == "at") {
            auto t = time_of(val, "at");
            if (!t) return fail(path + ": " + t.error().message);
            f.at = *t;
            has_at = true;
        } else if (key == "admin") {
            if (!val.is_boolean()) return fail(path + ": admin: expected true or false");
            f.admin = val.get<bool>();
        } else if (key == "expect") {
            if (!val.is_object()) return fail(path + ": expect: expected an object");
            f.expect = val;
            has_expect = true;
        } else {
            return fail(path + ": unknown key \"" + key + "\" (known: description, job, at, admin, expect)");
        }
    }
    if (!has_job || !has_at || !has_expect) return fail(path + ": \"job\", \"at\" and \"expect\" are required");
    if (f.job.submit_time == SysSeconds{}) f.job.submit_time = f.at;
    return f;
}

Result<PolicyFixture> load_fixture(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(path + ": cannot read");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_fixture(text.str(), path);
}

std::vector<std::string> check_fixture(const PolicyFixture& f, const Decision& d) {
    std::vector<std::string> bad;
    json::Value actual = decision_to_json(d);
    auto show = [](const json::Value* v) { return v ? json::write(*v) : std::string("(absent)"); };
    auto contains_each = [&](const json::Value& want, const std::string& key, const std::vector<std::string>& texts) {
        std::vector<std::string> needles;
        if (want.is_string()) {
            needles.push_back(want.get_ref<const std::string&>());
        } else if (want.is_array()) {
            for (const auto& n : want.get_ref<const json::Array&>())
                if (n.is_string()) needles.push_back(n.get_ref<const std::string&>());
        } else {
            bad.push_back(key + ": expected a string or a list of strings");
            return;
        }
        for (const auto& needle : needles) {
            bool found = false;
            for (const auto& t : texts)
                if (t.find(needle) != std::string::npos) found = true;
            if (!found) {
                std::string all;
                for (const auto& t : texts) all += (all.empty() ? "" : " | ") + t;
                bad.push_back(key + ": \"" + needle + "\" not found in: " + (all.empty() ? "(nothing)" : all));
            }
        }
    };
    for (const auto& [key, want] : f.expect.get_ref<const json::Object&>()) {
        if (key == "reason_contains") {
            contains_each(want, key, {d.reason});
        } else if (key == "message_contains") {
            contains_each(want, key, d.user_messages);
        } else if (key == "messages") {
            const json::Value* got = json::find(actual, "messages");
            if (json::write(*got) != json::write(want))
                bad.push_back("messages: want " + json::write(want) + ", got " + show(got));
        } else if (key == "begin_time") {
            if (want.is_null()) {
                if (d.begin_time) bad.push_back("begin_time: want unset, got " + format_timestamp_utc(*d.begin_time));
            } else {
                auto t = time_of(want, "expect.begin_time");
                if (!t) bad.push_back(t.error().message);
                else if (!d.begin_time || *d.begin_time != *t)
                    bad.push_back("begin_time: want " + format_timestamp_utc(*t) + ", got " +
                                  (d.begin_time ? format_timestamp_utc(*d.begin_time) : "unset"));
            }
        } else if (key == "network") {
            const json::Value* got_net = json::find(actual, "network");
            if (!want.is_object()) {
                bad.push_back("network: expected an object");
                continue;
            }
            for (const auto& [nk, nv] : want.get_ref<const json::Object&>()) {
                const json::Value* got = json::find(*got_net, nk);
                if (!got) bad.push_back("network." + nk + ": unknown key");
                else if (json::write(*got) != json::write(nv))
                    bad.push_back("network." + nk + ": want " + json::write(nv) + ", got " + json::write(*got));
            }
        } else {
            static const char* const plain[] = {"verdict", "reject_kind", "class", "reason",    "partition",
                                                "qos",     "features",    "nice",  "time_limit"};
            bool known = false;
            for (const char* p : plain) known = known || key == p;
            if (!known) {
                bad.push_back("expect." + key + ": unknown key");
                continue;
            }
            const json::Value* got = json::find(actual, key);
            if (!got || json::write(*got) != json::write(want))
                bad.push_back(key + ": want " + json::write(want) + ", got " + show(got));
        }
    }
    return bad;
}

}  // namespace lanes

// SPDX-License-Identifier: GPL-2.0-or-later
// The policy worker protocol (policy_wire.hpp): encoding and checked decoding.
#include "ctld/policy_wire.hpp"

#include <bit>
#include <cstring>

namespace lanes::wire {

namespace {

class Writer {
public:
    explicit Writer(Type type) {
        buf_.resize(kHeaderBytes);
        buf_[4] = static_cast<char>(type);
    }
    void u8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
    void boolean(bool v) { u8(v ? 1 : 0); }
    void u32(uint32_t v) {
        for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    void u64(uint64_t v) {
        for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
    void f64(double v) { u64(std::bit_cast<uint64_t>(v)); }
    void str(std::string_view s) {
        u32(static_cast<uint32_t>(s.size()));
        buf_.append(s);
    }
    void seconds(SysSeconds t) { i64(t.time_since_epoch().count()); }
    void opt_seconds(const std::optional<SysSeconds>& t) {
        boolean(t.has_value());
        if (t) seconds(*t);
    }
    void opt_str(const std::optional<std::string>& s) {
        boolean(s.has_value());
        if (s) str(*s);
    }
    void opt_u32(const std::optional<uint32_t>& v) {
        boolean(v.has_value());
        if (v) u32(*v);
    }
    std::string finish() {
        uint32_t n = static_cast<uint32_t>(buf_.size() - 4);
        for (int i = 0; i < 4; ++i) buf_[i] = static_cast<char>((n >> (8 * i)) & 0xff);
        return std::move(buf_);
    }

private:
    std::string buf_;
};

class Reader {
public:
    explicit Reader(std::string_view in) : in_(in) {}
    bool ok() const { return ok_; }
    bool done() const { return ok_ && in_.empty(); }
    uint8_t u8() {
        if (!need(1)) return 0;
        uint8_t v = static_cast<uint8_t>(in_[0]);
        in_.remove_prefix(1);
        return v;
    }
    bool boolean() {
        uint8_t v = u8();
        if (v > 1) ok_ = false;
        return v == 1;
    }
    uint32_t u32() {
        if (!need(4)) return 0;
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(in_[i])) << (8 * i);
        in_.remove_prefix(4);
        return v;
    }
    uint64_t u64() {
        if (!need(8)) return 0;
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[i])) << (8 * i);
        in_.remove_prefix(8);
        return v;
    }
    int64_t i64() { return static_cast<int64_t>(u64()); }
    double f64() { return std::bit_cast<double>(u64()); }
    std::string str() {
        uint32_t n = u32();
        if (!need(n)) return {};
        std::string s(in_.substr(0, n));
        in_.remove_prefix(n);
        return s;
    }
    SysSeconds seconds() { return SysSeconds{std::chrono::seconds{i64()}}; }
    std::optional<SysSeconds> opt_seconds() {
        if (!boolean()) return std::nullopt;
        return seconds();
    }
    std::optional<std::string> opt_str() {
        if (!boolean()) return std::nullopt;
        return str();
    }
    std::optional<uint32_t> opt_u32() {
        if (!boolean()) return std::nullopt;
        return u32();
    }

private:
    bool need(size_t n) {
        if (!ok_ || in_.size() < n) {
            ok_ = false;
            return false;
        }
        return true;
    }
    std::string_view in_;
    bool ok_ = true;
};

template <typename T>
Result<T> finish(const Reader& r, T value, const char* what) {
    if (!r.done()) return fail(std::string("policy worker protocol: malformed ") + what + " message");
    return value;
}

void put_job(Writer& w, const JobView& j) {
    w.str(j.name);
    w.str(j.comment);
    w.str(j.user);
    w.u32(j.uid);
    w.str(j.account);
    w.str(j.partition);
    w.str(j.qos);
    w.str(j.tres_per_node);
    w.str(j.tres_per_job);
    w.u32(j.gpus);
    w.u32(j.min_nodes);
    w.u32(j.max_nodes);
    w.u32(j.num_tasks);
    w.opt_u32(j.time_limit_minutes);
    w.str(j.features);
    w.boolean(j.batch);
    w.u32(static_cast<uint32_t>(j.environment.size()));
    for (const auto& [k, v] : j.environment) {
        w.str(k);
        w.str(v);
    }
    w.opt_str(j.requested_class);
    w.opt_str(j.requested_cap);
    w.seconds(j.submit_time);
    w.opt_seconds(j.begin_time);
}

JobView get_job(Reader& r) {
    JobView j;
    j.name = r.str();
    j.comment = r.str();
    j.user = r.str();
    j.uid = r.u32();
    j.account = r.str();
    j.partition = r.str();
    j.qos = r.str();
    j.tres_per_node = r.str();
    j.tres_per_job = r.str();
    j.gpus = r.u32();
    j.min_nodes = r.u32();
    j.max_nodes = r.u32();
    j.num_tasks = r.u32();
    j.time_limit_minutes = r.opt_u32();
    j.features = r.str();
    j.batch = r.boolean();
    uint32_t n = r.u32();
    // Each entry takes at least 8 bytes, so a bogus count ends at the frame's end.
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
        std::string k = r.str();
        std::string v = r.str();
        if (r.ok()) j.environment.emplace(std::move(k), std::move(v));
    }
    j.requested_class = r.opt_str();
    j.requested_cap = r.opt_str();
    j.submit_time = r.seconds();
    j.begin_time = r.opt_seconds();
    return j;
}

}  // namespace

std::string encode(const Init& m) {
    Writer w(Type::Init);
    w.str(m.config_text);
    w.str(m.config_path);
    w.str(m.chunk_name);
    w.str(m.source);
    return w.finish();
}

std::string encode(const Ready& m) {
    Writer w(Type::Ready);
    w.boolean(m.ok);
    w.str(m.error);
    return w.finish();
}

std::string encode(const Classify& m) {
    Writer w(Type::Classify);
    put_job(w, m.job);
    w.seconds(m.now);
    return w.finish();
}

std::string encode(const Query& m) {
    Writer w(Type::Query);
    w.u8(static_cast<uint8_t>(m.op));
    w.str(m.name);
    w.seconds(m.at);
    return w.finish();
}

std::string encode(const Answer& m) {
    Writer w(Type::Answer);
    w.boolean(m.flag);
    w.opt_seconds(m.time);
    w.str(m.text);
    w.boolean(m.signal.has_value());
    if (m.signal) {
        const SignalValue& s = *m.signal;
        w.boolean(s.value.has_value());
        if (s.value) w.f64(*s.value);
        w.boolean(s.fresh);
        w.boolean(s.from_fallback);
        w.boolean(s.age.has_value());
        if (s.age) w.i64(s.age->count());
        w.str(s.why_unusable);
    }
    return w.finish();
}

std::string encode(const LogLine& m) {
    Writer w(Type::Log);
    w.u8(static_cast<uint8_t>(m.level));
    w.str(m.text);
    return w.finish();
}

std::string encode(const Outcome& m) {
    Writer w(Type::Outcome);
    const PolicyOutcome& o = m.outcome;
    w.u8(static_cast<uint8_t>(o.kind));
    w.str(o.class_name);
    w.str(o.reason);
    w.str(o.location);
    w.str(o.reject_message);
    w.str(o.error);
    w.u32(static_cast<uint32_t>(o.user_messages.size()));
    for (const auto& line : o.user_messages) w.str(line);
    w.opt_str(o.partition);
    w.opt_str(o.qos);
    w.opt_str(o.features);
    w.boolean(o.nice.has_value());
    if (o.nice) w.u32(static_cast<uint32_t>(*o.nice));
    w.opt_seconds(o.begin_time);
    w.opt_u32(o.time_limit_minutes);
    w.boolean(m.retire);
    return w.finish();
}

Result<Header> decode_header(std::string_view five_bytes) {
    if (five_bytes.size() != kHeaderBytes) return fail("policy worker protocol: truncated frame header");
    Reader r(five_bytes.substr(0, 4));
    uint32_t n = r.u32();
    uint8_t type = static_cast<uint8_t>(five_bytes[4]);
    if (n < 1 || n - 1 > kMaxFrameBytes)
        return fail("policy worker protocol: frame of " + std::to_string(n) + " bytes refused");
    if (type < static_cast<uint8_t>(Type::Init) || type > static_cast<uint8_t>(Type::Outcome))
        return fail("policy worker protocol: unknown frame type " + std::to_string(type));
    return Header{static_cast<Type>(type), n - 1};
}

Result<Init> decode_init(std::string_view payload) {
    Reader r(payload);
    Init m;
    m.config_text = r.str();
    m.config_path = r.str();
    m.chunk_name = r.str();
    m.source = r.str();
    return finish(r, std::move(m), "Init");
}

Result<Ready> decode_ready(std::string_view payload) {
    Reader r(payload);
    Ready m;
    m.ok = r.boolean();
    m.error = r.str();
    return finish(r, std::move(m), "Ready");
}

Result<Classify> decode_classify(std::string_view payload) {
    Reader r(payload);
    Classify m;
    m.job = get_job(r);
    m.now = r.seconds();
    return finish(r, std::move(m), "Classify");
}

Result<Query> decode_query(std::string_view payload) {
    Reader r(payload);
    Query m;
    uint8_t op = r.u8();
    if (op < static_cast<uint8_t>(Query::Op::Known) || op > static_cast<uint8_t>(Query::Op::Signal))
        return fail("policy worker protocol: unknown query " + std::to_string(op));
    m.op = static_cast<Query::Op>(op);
    m.name = r.str();
    m.at = r.seconds();
    return finish(r, std::move(m), "Query");
}

Result<Answer> decode_answer(std::string_view payload) {
    Reader r(payload);
    Answer m;
    m.flag = r.boolean();
    m.time = r.opt_seconds();
    m.text = r.str();
    if (r.boolean()) {
        SignalValue s;
        if (r.boolean()) s.value = r.f64();
        s.fresh = r.boolean();
        s.from_fallback = r.boolean();
        if (r.boolean()) s.age = std::chrono::seconds{r.i64()};
        s.why_unusable = r.str();
        m.signal = std::move(s);
    }
    return finish(r, std::move(m), "Answer");
}

Result<LogLine> decode_log(std::string_view payload) {
    Reader r(payload);
    LogLine m;
    uint8_t level = r.u8();
    if (level > static_cast<uint8_t>(LogLevel::Error)) return fail("policy worker protocol: unknown log level");
    m.level = static_cast<LogLevel>(level);
    m.text = r.str();
    return finish(r, std::move(m), "Log");
}

Result<Outcome> decode_outcome(std::string_view payload) {
    Reader r(payload);
    Outcome m;
    PolicyOutcome& o = m.outcome;
    uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(PolicyOutcome::Kind::Error))
        return fail("policy worker protocol: unknown outcome kind " + std::to_string(kind));
    o.kind = static_cast<PolicyOutcome::Kind>(kind);
    o.class_name = r.str();
    o.reason = r.str();
    o.location = r.str();
    o.reject_message = r.str();
    o.error = r.str();
    uint32_t n = r.u32();
    for (uint32_t i = 0; i < n && r.ok(); ++i) o.user_messages.push_back(r.str());
    o.partition = r.opt_str();
    o.qos = r.opt_str();
    o.features = r.opt_str();
    if (r.boolean()) o.nice = static_cast<int32_t>(r.u32());
    o.begin_time = r.opt_seconds();
    o.time_limit_minutes = r.opt_u32();
    m.retire = r.boolean();
    return finish(r, std::move(m), "Outcome");
}

}  // namespace lanes::wire

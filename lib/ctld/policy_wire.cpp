// SPDX-License-Identifier: GPL-2.0-or-later
// The policy worker protocol (policy_wire.hpp): encoding and checked decoding.
// Each message is one table of its fields (Fields<T> below), in wire order;
// encode and decode both walk that table, so the two cannot disagree.
#include "ctld/policy_wire.hpp"

#include <bit>
#include <map>
#include <tuple>
#include <type_traits>
#include <vector>

namespace lanes::wire {

namespace {

class Writer {
public:
    explicit Writer(Type type) {
        buf_.resize(kHeaderBytes);
        buf_[4] = static_cast<char>(type);
    }
    void u8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
    void u32(uint32_t v) {
        for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    void u64(uint64_t v) {
        for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    void bytes(std::string_view s) { buf_.append(s); }
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
    void fail() { ok_ = false; }
    uint8_t u8() {
        if (!need(1)) return 0;
        uint8_t v = static_cast<uint8_t>(in_[0]);
        in_.remove_prefix(1);
        return v;
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
    std::string bytes(uint32_t n) {
        if (!need(n)) return {};
        std::string s(in_.substr(0, n));
        in_.remove_prefix(n);
        return s;
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

// ---- the tables: every message's fields (and nested structs'), in wire order

template <typename T>
struct Fields {};

template <>
struct Fields<Init> {
    static constexpr auto list = std::tuple{&Init::config_text, &Init::config_path, &Init::chunk_name, &Init::source};
};
template <>
struct Fields<Ready> {
    static constexpr auto list = std::tuple{&Ready::ok, &Ready::error};
};
template <>
struct Fields<JobView> {
    static constexpr auto list = std::tuple{&JobView::name,          &JobView::comment,
                                            &JobView::user,          &JobView::uid,
                                            &JobView::account,       &JobView::partition,
                                            &JobView::qos,           &JobView::tres_per_node,
                                            &JobView::tres_per_job,  &JobView::gpus,
                                            &JobView::min_nodes,     &JobView::max_nodes,
                                            &JobView::num_tasks,     &JobView::time_limit_minutes,
                                            &JobView::features,      &JobView::batch,
                                            &JobView::environment,   &JobView::requested_class,
                                            &JobView::requested_cap, &JobView::submit_time,
                                            &JobView::begin_time};
};
template <>
struct Fields<Classify> {
    static constexpr auto list = std::tuple{&Classify::job, &Classify::now};
};
template <>
struct Fields<Query> {
    static constexpr auto list = std::tuple{&Query::op, &Query::name, &Query::at};
};
template <>
struct Fields<SignalValue> {
    static constexpr auto list = std::tuple{&SignalValue::value, &SignalValue::fresh, &SignalValue::from_fallback,
                                            &SignalValue::age, &SignalValue::why_unusable};
};
template <>
struct Fields<Answer> {
    static constexpr auto list = std::tuple{&Answer::flag, &Answer::time, &Answer::text, &Answer::signal};
};
template <>
struct Fields<LogLine> {
    static constexpr auto list = std::tuple{&LogLine::level, &LogLine::text};
};
template <>
struct Fields<PolicyOutcome> {
    static constexpr auto list = std::tuple{&PolicyOutcome::kind,
                                            &PolicyOutcome::class_name,
                                            &PolicyOutcome::reason,
                                            &PolicyOutcome::location,
                                            &PolicyOutcome::reject_message,
                                            &PolicyOutcome::error,
                                            &PolicyOutcome::user_messages,
                                            &PolicyOutcome::partition,
                                            &PolicyOutcome::qos,
                                            &PolicyOutcome::features,
                                            &PolicyOutcome::nice,
                                            &PolicyOutcome::begin_time,
                                            &PolicyOutcome::time_limit_minutes};
};
template <>
struct Fields<Outcome> {
    static constexpr auto list = std::tuple{&Outcome::outcome, &Outcome::retire};
};

template <typename T>
constexpr bool kIsOptional = false;
template <typename T>
constexpr bool kIsOptional<std::optional<T>> = true;
template <typename T>
constexpr bool kIsVector = false;
template <typename T>
constexpr bool kIsVector<std::vector<T>> = true;
template <typename T>
constexpr bool kIsMap = false;
template <typename K, typename V>
constexpr bool kIsMap<std::map<K, V>> = true;

// ---- how each type of field goes on the wire: put() writes it, get() reads it
//   bool                 one byte, 0 or 1 (any other value is malformed)
//   uint32_t, int32_t    4 bytes, little-endian (int32_t: its two's complement)
//   SysSeconds, seconds  8 bytes, little-endian, two's complement
//   double               its IEEE 754 bits, 8 bytes, little-endian
//   string               its length (uint32_t), then its bytes
//   enum                 one byte (decode_* check the range)
//   optional<T>          a bool, then T when it holds one
//   vector<T>, map<K,V>  the count (uint32_t), then each element (key, value)
//   anything else        its Fields<T> table, in order

template <typename T>
void put(Writer& w, const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
        w.u8(v ? 1 : 0);
    } else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, int32_t>) {
        w.u32(static_cast<uint32_t>(v));
    } else if constexpr (std::is_same_v<T, double>) {
        w.u64(std::bit_cast<uint64_t>(v));
    } else if constexpr (std::is_same_v<T, std::chrono::seconds>) {
        w.u64(static_cast<uint64_t>(v.count()));
    } else if constexpr (std::is_same_v<T, SysSeconds>) {
        put(w, v.time_since_epoch());
    } else if constexpr (std::is_same_v<T, std::string>) {
        w.u32(static_cast<uint32_t>(v.size()));
        w.bytes(v);
    } else if constexpr (std::is_enum_v<T>) {
        w.u8(static_cast<uint8_t>(v));
    } else if constexpr (kIsOptional<T>) {
        put(w, v.has_value());
        if (v) put(w, *v);
    } else if constexpr (kIsVector<T>) {
        w.u32(static_cast<uint32_t>(v.size()));
        for (const auto& item : v) put(w, item);
    } else if constexpr (kIsMap<T>) {
        w.u32(static_cast<uint32_t>(v.size()));
        for (const auto& [key, value] : v) {
            put(w, key);
            put(w, value);
        }
    } else {
        std::apply([&](auto... field) { (put(w, v.*field), ...); }, Fields<T>::list);
    }
}

template <typename T>
void get(Reader& r, T& v) {
    if constexpr (std::is_same_v<T, bool>) {
        uint8_t b = r.u8();
        if (b > 1) r.fail();
        v = b == 1;
    } else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, int32_t>) {
        v = static_cast<T>(r.u32());
    } else if constexpr (std::is_same_v<T, double>) {
        v = std::bit_cast<double>(r.u64());
    } else if constexpr (std::is_same_v<T, std::chrono::seconds>) {
        v = std::chrono::seconds{static_cast<int64_t>(r.u64())};
    } else if constexpr (std::is_same_v<T, SysSeconds>) {
        std::chrono::seconds since_epoch;
        get(r, since_epoch);
        v = SysSeconds{since_epoch};
    } else if constexpr (std::is_same_v<T, std::string>) {
        v = r.bytes(r.u32());
    } else if constexpr (std::is_enum_v<T>) {
        v = static_cast<T>(r.u8());
    } else if constexpr (kIsOptional<T>) {
        bool present = false;
        get(r, present);
        v.reset();
        if (!present) return;
        typename T::value_type value{};
        get(r, value);
        v = std::move(value);
    } else if constexpr (kIsVector<T> || kIsMap<T>) {
        // Each element takes at least a byte, so a bogus count ends at the frame's end.
        uint32_t n = r.u32();
        for (uint32_t i = 0; i < n && r.ok(); ++i) {
            if constexpr (kIsVector<T>) {
                typename T::value_type item{};
                get(r, item);
                if (r.ok()) v.push_back(std::move(item));
            } else {
                typename T::key_type key{};
                typename T::mapped_type value{};
                get(r, key);
                get(r, value);
                if (r.ok()) v.emplace(std::move(key), std::move(value));
            }
        }
    } else {
        std::apply([&](auto... field) { (get(r, v.*field), ...); }, Fields<T>::list);
    }
}

template <typename T>
std::string encode_as(Type type, const T& m) {
    Writer w(type);
    put(w, m);
    return w.finish();
}

// The payload as a T; `valid` (the enums' ranges) is checked before the
// frame's length, so an unknown value is named even in a malformed frame.
template <typename T, typename Valid>
Result<T> decode_as(std::string_view payload, const char* what, Valid&& valid) {
    Reader r(payload);
    T m{};
    get(r, m);
    if (auto error = valid(m); !error.empty()) return fail("policy worker protocol: " + error);
    if (!r.done()) return fail(std::string("policy worker protocol: malformed ") + what + " message");
    return m;
}
template <typename T>
Result<T> decode_as(std::string_view payload, const char* what) {
    return decode_as<T>(payload, what, [](const T&) { return std::string(); });
}

}  // namespace

std::string encode(const Init& m) { return encode_as(Type::Init, m); }
std::string encode(const Ready& m) { return encode_as(Type::Ready, m); }
std::string encode(const Classify& m) { return encode_as(Type::Classify, m); }
std::string encode(const Query& m) { return encode_as(Type::Query, m); }
std::string encode(const Answer& m) { return encode_as(Type::Answer, m); }
std::string encode(const LogLine& m) { return encode_as(Type::Log, m); }
std::string encode(const Outcome& m) { return encode_as(Type::Outcome, m); }

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

Result<Init> decode_init(std::string_view payload) { return decode_as<Init>(payload, "Init"); }
Result<Ready> decode_ready(std::string_view payload) { return decode_as<Ready>(payload, "Ready"); }
Result<Classify> decode_classify(std::string_view payload) { return decode_as<Classify>(payload, "Classify"); }
Result<Answer> decode_answer(std::string_view payload) { return decode_as<Answer>(payload, "Answer"); }

Result<Query> decode_query(std::string_view payload) {
    return decode_as<Query>(payload, "Query", [](const Query& m) {
        auto op = static_cast<uint8_t>(m.op);
        bool known = op >= static_cast<uint8_t>(Query::Op::Known) && op <= static_cast<uint8_t>(Query::Op::Signal);
        return known ? std::string() : "unknown query " + std::to_string(op);
    });
}

Result<LogLine> decode_log(std::string_view payload) {
    return decode_as<LogLine>(payload, "Log", [](const LogLine& m) {
        return static_cast<uint8_t>(m.level) > static_cast<uint8_t>(LogLevel::Error) ? "unknown log level"
                                                                                     : std::string();
    });
}

Result<Outcome> decode_outcome(std::string_view payload) {
    return decode_as<Outcome>(payload, "Outcome", [](const Outcome& m) {
        auto kind = static_cast<uint8_t>(m.outcome.kind);
        return kind > static_cast<uint8_t>(PolicyOutcome::Kind::Error) ? "unknown outcome kind " + std::to_string(kind)
                                                                       : std::string();
    });
}

}  // namespace lanes::wire

// SPDX-License-Identifier: GPL-2.0-or-later
// Value-or-error for internal APIs: no exception leaves lib/ through these.
#pragma once
#include <expected>
#include <string>
#include <utility>
#include <vector>

namespace lanes {

// Where bad input is and what is wrong with it, kept apart so lanesctl can render
// text and JSON without parsing "file:line:col:" back out of a message.
struct Diagnostic {
    std::string file;     // empty: not about a file
    int line = 0;         // 1-based; 0: unknown
    int column = 0;       // 1-based; 0: unknown
    std::string key;      // "classes.training.rate"; empty: none
    std::string message;  // what is wrong ("'25Gbps' is ambiguous ...")

    // "file:line:col: key: message", leaving out the parts that are unknown.
    std::string text() const {
        std::string out;
        if (!file.empty()) {
            out = file;
            if (line > 0) out += ":" + std::to_string(line);
            if (line > 0 && column > 0) out += ":" + std::to_string(column);
            out += ": ";
        }
        if (!key.empty()) out += key + ": ";
        return out + message;
    }
};

// One error: a human message, already precise ("lanes.toml:12:3: classes.training.rate: ..."),
// and, when the error is about input at a known place, the same as structured diagnostics
// (message is then their text() joined by newlines).
struct Error {
    std::string message;
    std::vector<Diagnostic> diagnostics;
};

// std::expected whose result cannot be ignored silently: a dropped Result is a
// dropped error (compile with -Wunused-result, on by default).
template <typename T>
class [[nodiscard]] Result : public std::expected<T, Error> {
public:
    using Base = std::expected<T, Error>;
    using Base::Base;
    Result() = default;
    Result(const Base& b) : Base(b) {}
    Result(Base&& b) : Base(std::move(b)) {}
};

inline std::unexpected<Error> fail(std::string message) {
    return std::unexpected<Error>(Error{std::move(message), {}});
}

// Pass an error on unchanged, diagnostics included.
inline std::unexpected<Error> fail(Error error) { return std::unexpected<Error>(std::move(error)); }

inline std::unexpected<Error> fail(std::vector<Diagnostic> diagnostics) {
    Error e;
    for (const auto& d : diagnostics) e.message += (e.message.empty() ? "" : "\n") + d.text();
    e.diagnostics = std::move(diagnostics);
    return std::unexpected<Error>(std::move(e));
}

}  // namespace lanes

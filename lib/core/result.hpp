// Value-or-error for internal APIs: no exception leaves lib/ through these.
#pragma once
#include <expected>
#include <string>
#include <utility>

namespace lanes {

// One error: a human message, already precise ("lanes.toml:12:3: classes.training.rate: ...").
struct Error {
    std::string message;
};

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(std::string message) {
    return std::unexpected<Error>(Error{std::move(message)});
}

}  // namespace lanes

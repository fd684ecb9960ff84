// SPDX-License-Identifier: GPL-2.0-or-later
// libcurl fetcher for signals. See curl_fetcher.hpp.
#include "signals/curl_fetcher.hpp"

#include <curl/curl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

namespace lanes {

namespace {

constexpr size_t kMaxTokenBytes = 16 * 1024;

struct Transfer {
    std::string body;
    uint64_t max_body = 0;
    bool too_large = false;
    const std::atomic<bool>* cancel = nullptr;
};

size_t on_body(char* data, size_t size, size_t count, void* user) noexcept {
    auto* t = static_cast<Transfer*>(user);
    const size_t n = size * count;
    if (t->body.size() + n > t->max_body) {
        t->too_large = true;
        return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    }
    try {
        t->body.append(data, n);
    } catch (...) {
        return 0;
    }
    return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) noexcept {
    auto* t = static_cast<Transfer*>(user);
    return t->cancel && t->cancel->load() ? 1 : 0;
}

std::string size_text(uint64_t bytes) {
    if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    if (bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " bytes";
}

Result<std::string> read_token(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail("bearer_token_file " + path + ": cannot open: " + std::strerror(errno));
    std::string token;
    char buf[4096];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        token.append(buf, static_cast<size_t>(in.gcount()));
        if (token.size() > kMaxTokenBytes) return fail("bearer_token_file " + path + ": too large for a token");
    }
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (token.empty()) return fail("bearer_token_file " + path + ": empty");
    if (token.find_first_of("\r\n") != std::string::npos)
        return fail("bearer_token_file " + path + ": more than one line");
    return token;
}

class CurlFetcher final : public SignalFetcher {
public:
    explicit CurlFetcher(const std::atomic<bool>* cancel) : cancel_(cancel) {}
    ~CurlFetcher() override {
        if (handle_) curl_easy_cleanup(handle_);
    }

    FetchResult fetch(const SignalConfig& signal, std::optional<SignalClock::time_point> instant) noexcept override {
        FetchResult out;
        try {
            out = do_fetch(signal, instant);
        } catch (const std::exception& e) {
            out.transport_error = std::string("internal error: ") + e.what();
        } catch (...) {
            out.transport_error = "internal error";
        }
        return out;
    }

private:
    FetchResult do_fetch(const SignalConfig& signal, std::optional<SignalClock::time_point> instant) {
        FetchResult out;
        if (!handle_) handle_ = curl_easy_init();
        if (!handle_) {
            out.transport_error = "cannot initialise libcurl";
            return out;
        }
        CURL* h = handle_;
        curl_easy_reset(h);  // keeps the connection cache, drops the options
        const std::string url = signal_query_url(signal, instant);
        Transfer t;
        t.max_body = signal.max_body_bytes;
        t.cancel = cancel_;
        char errbuf[CURL_ERROR_SIZE] = {};
        curl_slist* headers = nullptr;
        std::string auth;
        if (!signal.bearer_token_file.empty()) {
            auto token = read_token(signal.bearer_token_file);
            if (!token) {
                out.transport_error = token.error().message;
                return out;
            }
            auth = "Authorization: Bearer " + *token;
            headers = curl_slist_append(headers, auth.c_str());
        }
        headers = curl_slist_append(headers, "Accept: application/json");
        curl_easy_setopt(h, CURLOPT_URL, url.c_str());
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(signal.timeout.count()));
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(signal.timeout.count()));
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(signal.max_body_bytes));
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "lanes-signals/1");
        if (!signal.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, signal.ca_file.c_str());
        if (!signal.client_cert.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, signal.client_cert.c_str());
        if (!signal.client_key.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, signal.client_key.c_str());
        const CURLcode rc = curl_easy_perform(h);
        curl_slist_free_all(headers);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
        if (rc != CURLE_OK) {
            if (t.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
                out.transport_error = "answer larger than max_body (" + size_text(signal.max_body_bytes) + "); refused";
            } else if (rc == CURLE_OPERATION_TIMEDOUT) {
                out.transport_error =
                    "no answer within the timeout of " + std::to_string(signal.timeout.count()) + " ms";
            } else if (rc == CURLE_ABORTED_BY_CALLBACK) {
                out.transport_error = "cancelled (shutting down)";
            } else if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                       rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CONNECT_ERROR) {
                out.transport_error = std::string("TLS: ") + (errbuf[0] ? errbuf : curl_easy_strerror(rc)) +
                                      (signal.ca_file.empty() ? "" : " (ca_file " + signal.ca_file + ")");
            } else {
                out.transport_error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
            }
            return out;
        }
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        out.http_status = status;
        out.body = std::move(t.body);
        return out;
    }

    const std::atomic<bool>* cancel_;
    CURL* handle_ = nullptr;
};

}  // namespace

std::string signal_query_url(const SignalConfig& signal, std::optional<SignalClock::time_point> instant) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    std::string url = signal.url + "/api/v1/query?query=";
    if (char* escaped = curl_easy_escape(nullptr, signal.query.c_str(), static_cast<int>(signal.query.size()))) {
        url += escaped;
        curl_free(escaped);
    }
    if (instant) {
        // Unix seconds with milliseconds, as Prometheus' time= takes them.
        const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(instant->time_since_epoch()).count();
        char text[32];
        std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(ms / 1000),
                      static_cast<long long>(ms % 1000));
        url += "&time=";
        url += text;
    }
    return url;
}

std::unique_ptr<SignalFetcher> make_curl_fetcher(const std::atomic<bool>* cancel) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    return std::make_unique<CurlFetcher>(cancel);
}

}  // namespace lanes

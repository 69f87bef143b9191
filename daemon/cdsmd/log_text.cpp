// SPDX-License-Identifier: GPL-2.0
#include "log_text.hpp"

#include <spdlog/pattern_formatter.h>

#include <memory>

namespace cdsm::cdsmd {

namespace {

// The length of the well-formed UTF-8 sequence of 2 to 4 bytes at the start of `s`, 0 if none
// (overlong forms, surrogates and code points beyond U+10FFFF are not well-formed).
std::size_t utf8_sequence(std::string_view s) {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xc0) == 0x80; };
    const unsigned char c = b(0);
    if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        if (!cont(1) || !cont(2)) return 0;
        if ((c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) >= 0xa0)) return 0;
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (!cont(1) || !cont(2) || !cont(3)) return 0;
        if ((c == 0xf0 && b(1) < 0x90) || (c == 0xf4 && b(1) >= 0x90)) return 0;
        return 4;
    }
    return 0;
}

void escape_into(std::string_view text, spdlog::memory_buf_t& out) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out.push_back(char(c));
            ++i;
            continue;
        }
        if (c >= 0x80) {
            if (const std::size_t n = utf8_sequence(text.substr(i))) {
                out.append(text.data() + i, text.data() + i + n);
                i += n;
                continue;
            }
        }
        const char esc[] = {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
        out.append(esc, esc + 4);
        ++i;
    }
}

// %V: the message, escaped.
class EscapedMessage final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        escape_into(std::string_view(msg.payload.data(), msg.payload.size()), dest);
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<EscapedMessage>();
    }
};

// "<N>": the syslog priority of a level, a prefix the journal reads from a stderr stream.
class SyslogPriority final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        static constexpr char kPriority[] = {'7', '7', '6', '4', '3', '2', '6'};
        const char text[] = {'<', kPriority[msg.level], '>'};
        dest.append(text, text + 3);
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<SyslogPriority>();
    }
};

}  // namespace

std::string escape_for_log(std::string_view text) {
    spdlog::memory_buf_t buf;
    escape_into(text, buf);
    return std::string(buf.data(), buf.size());
}

void set_log_format(spdlog::logger& logger, bool journal) {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<EscapedMessage>('V');
    if (journal) {
        formatter->add_flag<SyslogPriority>('*').set_pattern("%*%V");
    } else {
        formatter->set_pattern("%Y-%m-%d %H:%M:%S.%e cdsmd %^%l%$: %V");
    }
    logger.set_formatter(std::move(formatter));
}

}  // namespace cdsm::cdsmd

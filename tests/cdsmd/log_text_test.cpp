// SPDX-License-Identifier: GPL-2.0
// cdsmd's log lines carry no string a user controls unescaped (docs/security.md).
#include "log_text.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

namespace cdsm::cdsmd {
namespace {

TEST(LogText, ControlBytesBackslashesAndBadUtf8AreEscaped) {
    EXPECT_EQ(escape_for_log("application 7 (lmp)"), "application 7 (lmp)");
    EXPECT_EQ(escape_for_log("a\n<0>b\r\t\x7f"), "a\\x0a<0>b\\x0d\\x09\\x7f");
    EXPECT_EQ(escape_for_log(std::string_view("x\0y", 3)), "x\\x00y");
    EXPECT_EQ(escape_for_log("back\\x0a"), "back\\x5cx0a");  // no look-alike of an escape
    EXPECT_EQ(escape_for_log("\xff"), "\\xff");
    EXPECT_EQ(escape_for_log("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
              "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");  // well-formed UTF-8 stays
    // A truncated sequence, an overlong '/', a surrogate, beyond U+10FFFF.
    EXPECT_EQ(escape_for_log("\xc3"), "\\xc3");
    EXPECT_EQ(escape_for_log("\xc0\xaf"), "\\xc0\\xaf");
    EXPECT_EQ(escape_for_log("\xed\xa0\x80"), "\\xed\\xa0\\x80");
    EXPECT_EQ(escape_for_log("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
}

TEST(LogText, EveryLineOfTheLogIsEscapedInBothFormats) {
    for (const bool journal : {true, false}) {
        std::ostringstream out;
        auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(out);
        spdlog::logger logger("test", sink);
        set_log_format(logger, journal);
        // A thread named so, as the issue found it: under the journal format its second line
        // would have been read as an emergency.
        logger.info("application 3 ({}): task 7 ({}) placed", "x\n<0>panic", "\xff\xfe");
        const std::string text = out.str();
        EXPECT_EQ(text.find('\n'), text.size() - 1) << text;
        EXPECT_NE(text.find("(x\\x0a<0>panic): task 7 (\\xff\\xfe) placed"), std::string::npos)
            << text;
        if (journal) {
            EXPECT_EQ(text.rfind("<6>", 0), 0u) << text;
        }
    }
}

}  // namespace
}  // namespace cdsm::cdsmd

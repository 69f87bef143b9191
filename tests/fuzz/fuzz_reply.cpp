// SPDX-License-Identifier: GPL-2.0
// cdsmctl's readers of cdsmd's replies: a `matrix` reply labelled by index, tid and rank and
// shown in every text format, a `map` reply and a `topology` reply printed. A reply is JSON from
// a daemon that may be older, newer or not cdsmd at all: cdsmctl must report an error
// (std::exception, printed by its main) and never crash.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "commands.hpp"
#include "output.hpp"
#include "terminal_heatmap.hpp"

namespace {

void show(const nlohmann::json& reply, cdsm::cdsmctl::Axis by) {
    try {
        const cdsm::cdsmctl::LabelledMatrix m = cdsm::cdsmctl::from_cdsmd_matrix(reply, by, "fuzz");
        std::ostringstream out;
        cdsm::cdsmctl::print_matrix_table(m, out);
        cdsm::cdsmctl::print_json(out, cdsm::cdsmctl::matrix_json(m));
        out << cdsm::cdsmctl::matrix_csv(m);
        // Shades at full size, and colours in blocks of tasks when the matrix is wider.
        out << cdsm::cdsmctl::render_terminal_heatmap(m, {true, false, 0})
            << cdsm::cdsmctl::render_terminal_heatmap(m, {false, true, 24});
    } catch (const std::exception&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto reply = nlohmann::json::parse(data, data + size, nullptr, false);
    if (reply.is_discarded()) return 0;
    for (const auto by :
         {cdsm::cdsmctl::Axis::kIndex, cdsm::cdsmctl::Axis::kTid, cdsm::cdsmctl::Axis::kRank})
        show(reply, by);
    std::ostringstream out;
    try {
        cdsm::cdsmctl::print_mapping(reply, out);
    } catch (const std::exception&) {
    }
    try {
        cdsm::cdsmctl::print_topology(reply, out);
    } catch (const std::exception&) {
    }
    return 0;
}

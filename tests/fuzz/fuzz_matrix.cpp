// SPDX-License-Identifier: GPL-2.0
// Matrix files as cdsmctl reads them (`show --matrix`, `map --matrix`): CSV and JSON through
// libcdsm's parsers, each accepted matrix labelled and written back out as cdsmctl shows it.
// The parsers must throw cdsm::Error and nothing else on bad input, and what they accept must
// read back equal once written (format_matrix_csv/json, then parse again).
#include <cdsm/error.hpp>
#include <cdsm/matrix_io.hpp>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>

#include "labelled_matrix.hpp"
#include "output.hpp"

namespace {

void show(const cdsm::TaskMatrix& file) {
    for (const auto by : {cdsm::cdsmctl::Axis::kIndex, cdsm::cdsmctl::Axis::kTid}) {
        if (by == cdsm::cdsmctl::Axis::kTid && file.tasks.empty()) continue;
        const cdsm::cdsmctl::LabelledMatrix m = cdsm::cdsmctl::from_task_matrix(file, by, "fuzz");
        std::ostringstream out;
        cdsm::cdsmctl::print_matrix_table(m, out);
        cdsm::cdsmctl::print_json(out, cdsm::cdsmctl::matrix_json(m));
        out << cdsm::cdsmctl::matrix_csv(m);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const cdsm::CommMatrix m = cdsm::parse_matrix_csv(text, "fuzz.csv");
        if (!(cdsm::parse_matrix_csv(cdsm::format_matrix_csv(m), "again.csv") == m))
            __builtin_trap();
        show({{}, m});
    } catch (const cdsm::Error&) {
    }
    try {
        const cdsm::TaskMatrix t = cdsm::parse_matrix_json(text, "fuzz.json");
        const cdsm::TaskMatrix again =
            cdsm::parse_matrix_json(cdsm::format_matrix_json(t.matrix, t.tasks), "again.json");
        if (!(again.matrix == t.matrix) || again.tasks != t.tasks) __builtin_trap();
        show(t);
    } catch (const cdsm::Error&) {
    }
    return 0;
}

// SPDX-License-Identifier: GPL-2.0
// Machines as cdsmctl reads them (`--topology SYNTHETIC|FILE.xml`): fuzz_topology reads the input
// as a synthetic description, fuzz_topology_xml (this file with CDSM_FUZZ_XML) as an hwloc XML
// document, through libcdsm's hwloc reader; then what cdsmctl does with a machine: its
// distances, its description and a Scotch mapping of a ring of up to 8 tasks, which must be a
// valid, balanced placement. hwloc 2.9.0 itself crashes on some XML (known/README.md), so
// fuzz_topology_xml is run by hand, not in CI.
#include <cdsm/comm_matrix.hpp>
#include <cdsm/distances.hpp>
#include <cdsm/error.hpp>
#include <cdsm/mapper.hpp>
#include <cdsm/topology.hpp>
#include <cdsm/topology_json.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "commands.hpp"
#include "output.hpp"

namespace {

// The distance table has pu_count² cells, and hwloc inserts a level's objects one by one among
// their siblings (8152 PUs in one level take it 12 s under the sanitizers): larger machines
// would only measure hwloc and the allocator. Synthetic ones are refused before hwloc builds
// them (from_synthetic's limit, whose counting is fuzzed the same).
constexpr std::size_t kMaxPus = 1024;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    ::setenv("HWLOC_HIDE_ERRORS", "1", 1);  // hwloc's own complaints about bad XML
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const cdsm::Topology t = CDSM_FUZZ_XML ? cdsm::Topology::from_xml_string(text, "fuzz.xml")
                                               : cdsm::Topology::from_synthetic(text, kMaxPus);
        (void)t.describe();
        if (t.pu_count() == 0 || t.pu_count() > kMaxPus) return 0;
        const cdsm::Distances d(t);
        std::ostringstream out;
        cdsm::cdsmctl::print_json(out, cdsm::topology_json(t, d));  // as `topology --json` prints
        const std::size_t n = std::min<std::size_t>(t.pu_count(), 8);
        cdsm::CommMatrix m(n);
        for (std::size_t i = 0; i + 1 < n; ++i) m.set(i, i + 1, 100 + i);
        const cdsm::Placement p = cdsm::make_mapper("scotch")->map({m, t, d});
        p.check(t.pu_count(), "fuzz placement");
        if (!p.is_balanced(t.pu_count())) __builtin_trap();
    } catch (const cdsm::Error&) {
    }
    return 0;
}

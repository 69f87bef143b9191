// SPDX-License-Identifier: GPL-2.0
// Mapping time (N = 32..1024, dense and sparse matrices) and mapping quality (a pattern suite on
// the hwloc test machines and synthetic ones up to 256 PUs) of the Scotch mapper.
//
//   cdsm_mapping_bench --benchmark_filter=Time    medians of 5 repetitions
//   cdsm_mapping_bench --benchmark_filter=Quality cost ratios in the counters:
//     vs_best    scotch / best known (the exhaustive optimum when N <= 8, else the cheapest of
//                scotch, unpruned scotch, multilevel scotch, compact, scatter and random)
//     compact, scatter, random   that baseline's cost / scotch's (> 1: scotch is better)
//                (every ratio is inf when its divisor is 0 and the other cost is not)
//     unpruned   scotch without pruning / scotch (> 1: pruning helped; < 1: it hurt)
//     kept       share of the communication that the pruned graph keeps (1: nothing pruned)
//     multilevel scotch with Scotch's default multilevel strategy at every size (no flat
//                bipartitioning of small problems) / scotch (< 1: the flat strategy lost)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "cdsm/baseline_mappers.hpp"
#include "cdsm/cost.hpp"
#include "cdsm/exhaustive_mapper.hpp"
#include "cdsm/patterns.hpp"
#include "cdsm/scotch_mapper.hpp"

namespace {

using namespace cdsm;

// 2 packages x 32 cores x 2 PUs: room for N up to 128 without over-subscription; larger N
// over-subscribe it, as a daemon mapping many threads would.
const Topology& time_machine() {
    static const Topology t = Topology::from_synthetic("pack:2 l3:1 core:32 pu:2");
    return t;
}

// Dense: every pair communicates (noise 1..10) on top of a 2-D stencil; sparse: the stencil.
CommMatrix time_matrix(std::size_t n, bool dense) {
    CommMatrix m = patterns::stencil_2d(n);
    if (dense) {
        const CommMatrix noise = patterns::random_sparse(n, n, 5);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = i + 1; j < n; ++j) m.add(i, j, 1 + noise.at(i, j) % 10);
    }
    return m;
}

void Time(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const bool dense = state.range(1) != 0;
    const Topology& t = time_machine();
    const Distances d(t);
    const CommMatrix m = time_matrix(n, dense);
    const ScotchMapper scotch;
    for (auto _ : state) benchmark::DoNotOptimize(scotch.map({m, t, d}));
    state.SetLabel(dense ? "dense" : "sparse");
}
BENCHMARK(Time)
    ->ArgsProduct({{32, 64, 128, 256, 512, 1024}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

void Quality(benchmark::State& state, const Topology& t, const CommMatrix& m) {
    const Distances d(t);
    const MappingProblem problem{m, t, d};
    double scotch = 0;
    for (auto _ : state) scotch = mapping_cost(m, ScotchMapper().map(problem), d);
    auto cost = [&](const Mapper& mapper) { return mapping_cost(m, mapper.map(problem), d); };
    const ScotchOptions defaults;
    ScotchOptions whole = defaults, multilevel = defaults;
    whole.prune.min_tasks = std::size_t{1} << 30;
    multilevel.flat_max_tasks = 0;
    const double unpruned = cost(ScotchMapper(whole));
    const double coarsened = cost(ScotchMapper(multilevel));
    const double compact = cost(CompactMapper()), scatter = cost(ScatterMapper());
    const double random = cost(RandomMapper(1));
    double best = std::min({scotch, unpruned, coarsened, compact, scatter, random});
    if (m.size() <= 8) best = cost(ExhaustiveMapper());
    auto ratio = [](double a, double b) {
        return b == 0 ? (a == 0 ? 1.0 : std::numeric_limits<double>::infinity()) : a / b;
    };
    state.counters["vs_best"] = ratio(scotch, best);
    state.counters["compact"] = ratio(compact, scotch);
    state.counters["scatter"] = ratio(scatter, scotch);
    state.counters["random"] = ratio(random, scotch);
    state.counters["unpruned"] = ratio(unpruned, scotch);
    state.counters["kept"] = CommGraph(m, defaults.prune).kept_fraction();
    state.counters["multilevel"] = ratio(coarsened, scotch);
}

// Machines of the quality suite: the hwloc test XMLs and synthetic ones up to 256 PUs.
const std::vector<std::pair<std::string, Topology>>& machines() {
    static const auto list = [] {
        std::vector<std::pair<std::string, Topology>> out;
        for (const char* xml : {"16amd64-8n2c-cpusets", "16em64t-4s2c2t", "24em64t-2n6c2t-pci",
                                "32em64t-2n8c2t-pci-noio"})
            out.emplace_back(
                xml, Topology::from_xml_file(std::string(CDSM_TOPOLOGY_DIR) + "/" + xml + ".xml"));
        for (const char* synthetic : {"pack:2 core:2 pu:2", "pack:4 l3:2 core:8 pu:2",
                                      "pack:2 l3:1 core:32 pu:2", "pack:4 l3:2 core:16 pu:2"})
            out.emplace_back(synthetic, Topology::from_synthetic(synthetic));
        return out;
    }();
    return list;
}

const int kRegistered = [] {
    for (const auto& [name, topology] : machines()) {
        // As many tasks as PUs, half as many (under-subscribed) and, up to 512 tasks, four
        // times as many (over-subscribed: large N on small machines, where pruning starts).
        std::vector<std::size_t> sizes{topology.pu_count(), topology.pu_count() / 2};
        if (4 * topology.pu_count() <= 512) sizes.push_back(4 * topology.pu_count());
        for (std::size_t n : sizes) {
            for (auto& pattern : patterns::suite(n)) {
                const std::string id =
                    "Quality/" + name + "/" + pattern.name + "/n=" + std::to_string(n);
                benchmark::RegisterBenchmark(id.c_str(),
                                             [&topology, m = pattern.matrix](benchmark::State& s) {
                                                 Quality(s, topology, m);
                                             })
                    ->Iterations(1)
                    ->Unit(benchmark::kMillisecond);
            }
        }
    }
    return 0;
}();

}  // namespace

BENCHMARK_MAIN();

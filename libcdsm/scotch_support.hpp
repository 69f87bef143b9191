// SPDX-License-Identifier: GPL-2.0
// Scotch's objects for libcdsm's two Scotch users (the node-level mapper, scotch_mapper.cpp, and
// the cluster's nodes, cluster_scotch.cpp): owners of its init/exit pairs, its error check, and
// the deterministic context both run in (DESIGN §4). Internal to the library.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "cdsm/error.hpp"
extern "C" {
#include <scotch/scotch.h>
}

namespace cdsm::scotch {

/// Throws Error("Scotch", "CALL failed") unless `status` is 0.
inline void check(int status, const char* call) {
    if (status != 0) throw Error("Scotch", std::string(call) + " failed");
}

/// Owns one Scotch object of type T for the lifetime of a mapping.
template <typename T, int (*Init)(T*), void (*Exit)(T*)>
class Scoped {
  public:
    explicit Scoped(const char* what) {
        if (Init(&object_) != 0) throw Error("Scotch", std::string("cannot initialise ") + what);
    }
    ~Scoped() { Exit(&object_); }
    Scoped(const Scoped&) = delete;
    Scoped& operator=(const Scoped&) = delete;
    T* get() noexcept { return &object_; }

  private:
    T object_;
};
using Graph = Scoped<SCOTCH_Graph, SCOTCH_graphInit, SCOTCH_graphExit>;
using Arch = Scoped<SCOTCH_Arch, SCOTCH_archInit, SCOTCH_archExit>;
using Strat = Scoped<SCOTCH_Strat, SCOTCH_stratInit, SCOTCH_stratExit>;
using Context = Scoped<SCOTCH_Context, SCOTCH_contextInit, SCOTCH_contextExit>;

/// A context for one deterministic run: Scotch's deterministic option, a private generator with
/// a fixed seed (earlier mappings in this process must not change this one: with the options
/// alone, the first mapping of a process differed from the next), one thread (spawning workers
/// cost more than the mapping itself at these sizes); `graph` bound to it as `bound`.
inline void deterministic_context(Context& context, SCOTCH_Graph* graph, Graph& bound,
                                  SCOTCH_Num seed) {
    check(SCOTCH_contextOptionSetNum(context.get(), SCOTCH_OPTIONNUMDETERMINISTIC, 1),
          "SCOTCH_contextOptionSetNum(DETERMINISTIC)");
    check(SCOTCH_contextOptionSetNum(context.get(), SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1),
          "SCOTCH_contextOptionSetNum(RANDOMFIXEDSEED)");
    check(SCOTCH_contextRandomClone(context.get()), "SCOTCH_contextRandomClone");
    SCOTCH_contextRandomSeed(context.get(), seed);
    check(SCOTCH_contextThreadSpawn(context.get(), 1, nullptr), "SCOTCH_contextThreadSpawn");
    check(SCOTCH_contextBindGraph(context.get(), graph, bound.get()), "SCOTCH_contextBindGraph");
}

}  // namespace cdsm::scotch

// SPDX-License-Identifier: GPL-2.0
#include "capabilities.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "cdsm/error.hpp"

namespace cdsm::cdsmd {

namespace {

struct Needed {
    int cap;
    const char* name;
};
constexpr Needed kNeeded[] = {{CAP_SYS_ADMIN, "cap_sys_admin"},
                              {CAP_SYS_NICE, "cap_sys_nice"},
                              {CAP_SYS_PTRACE, "cap_sys_ptrace"},
                              {CAP_DAC_READ_SEARCH, "cap_dac_read_search"}};

bool needed(int cap) {
    for (const Needed& n : kNeeded) {
        if (n.cap == cap) return true;
    }
    return false;
}

int last_cap() {
    std::ifstream in("/proc/sys/kernel/cap_last_cap");
    int last = CAP_LAST_CAP;
    in >> last;
    return last;
}

}  // namespace

std::vector<std::string> drop_capabilities() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capget, &header, data) < 0) throw_errno("capget");
    // The bounding set first: dropping from it needs CAP_SETPCAP, which goes next. A process
    // without CAP_SETPCAP (not root) has nothing there worth dropping.
    for (int cap = 0; cap <= last_cap(); ++cap) {
        if (!needed(cap) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM &&
            errno != EINVAL) {
            throw_errno("prctl(PR_CAPBSET_DROP)");
        }
    }
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    std::vector<std::string> kept;
    __user_cap_data_struct keep[_LINUX_CAPABILITY_U32S_3] = {};
    for (const Needed& n : kNeeded) {
        const unsigned word = unsigned(n.cap) / 32, bit = 1u << (unsigned(n.cap) % 32);
        if (!(data[word].permitted & bit)) continue;
        keep[word].permitted |= bit;
        keep[word].effective |= bit;
        kept.emplace_back(n.name);
    }
    if (::syscall(SYS_capset, &header, keep) < 0) throw_errno("capset");
    return kept;
}

}  // namespace cdsm::cdsmd

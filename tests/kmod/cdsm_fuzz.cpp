// SPDX-License-Identifier: GPL-2.0
// cdsm-fuzz: random and mutated calls against cdsm.ko's interfaces, for the VM lab
// (tests/kmod/fuzz, bench/kmod/fuzz). Needs root and /dev/cdsm readable and writable by all.
//
//   cdsm-fuzz --calls N [--seed S] [--protect APP] [--json]
//
// Issues N calls in all, from two processes: root with a file it opened (three quarters of the
// calls) and nobody with a file nobody opened (a quarter), each:
//   - an ioctl (80 %): a known command with a struct built from a valid one and mutated (size
//     field, application ids from the live list, capacities, user pointers, paths, parameters),
//     or a random number, direction, size or type; the argument pointer is sometimes NULL,
//     unmapped, a kernel address, non-canonical, read-only or straddling an unmapped page;
//   - a generic-netlink operation (20 %): a random message to the cdsm family, the controller
//     or (nobody only) a random family (random command, flags, attributes, lengths,
//     truncations), or joining or leaving the events group or a random group.
// Application APP (the tracked workload) is never untracked, released or reset. Every 500 calls
// root releases the other applications (random TRACK calls fill the slots) and restores the
// parameters after each accepted SET_PARAMS.
// Output pointers that would make the kernel write into the fuzzer's own other memory (a flipped
// bit can do that) are redirected to a buffer followed by 512 MiB of inaccessible address space.
// Findings (exit 1): a control command that succeeded on nobody's file, nobody joining the events
// group, another user's application in nobody's list, a change in 4 MiB of memory no call
// points at (checked in both processes at the end), or a crash of either process (it prints
// the signal, address and backtrace). The kernel's own findings (oops, WARN, lockup) are the VM
// lab's to see.
#include <execinfo.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/cdsm.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr uid_t kNobody = 65534;

struct Stats {
    uint64_t ioctls = 0, ok = 0, netlink = 0, findings = 0;
    // Calls that succeeded per command number of the cdsm type (0x00 to 0x0f), to see how
    // deep the fuzzing went.
    uint64_t ok_by_nr[16] = {};
};

class Fuzzer {
  public:
    Fuzzer(int fd, bool privileged, uint64_t seed, uint32_t protect)
        : fd_(fd), privileged_(privileged), rng_(seed), protect_(protect) {
        long page = sysconf(_SC_PAGESIZE);
        page_ = static_cast<size_t>(page);
        buf_ = static_cast<uint8_t*>(mmap(nullptr, kBuf + 2 * page_, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        // The page after the buffer is unmapped: a struct at its end straddles it.
        munmap(buf_ + kBuf, page_);
        ro_ = static_cast<uint8_t*>(
            mmap(nullptr, page_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        // data_ is where valid output pointers go. The kernel writes as much as a call's
        // capacity allows (a matrix up to max_tasks^2 cells, 128 MiB): behind data_ lies
        // kGuard of inaccessible address space, so that a large answer ends in EFAULT and
        // never lands in the fuzzer's own memory (it did, in ld.so's data, before).
        data_ = static_cast<uint8_t*>(mmap(nullptr, kData + kGuard, PROT_NONE,
                                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
        mprotect(data_, kData, PROT_READ | PROT_WRITE);
        params_ = sized<cdsm_params>();
        ioctl(fd_, CDSM_IOC_GET_PARAMS, &params_);
        nl_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_GENERIC);
        resolve_family();
    }

    Stats run(uint64_t calls) {
        for (uint64_t i = 0; i < calls; i++) {
            if (i % 200 == 0) refresh_apps();
            if (privileged_ && i % 500 == 499) release_others();
            if (pick(100) < 80)
                one_ioctl();
            else
                one_netlink();
        }
        if (privileged_) release_others();
        return stats_;
    }

  private:
    static constexpr size_t kBuf = 64 * 1024, kData = 1 << 20, kGuard = size_t{512} << 20;

    template <typename T>
    static T sized() {
        T t{};
        t.size = sizeof(T);
        return t;
    }

    uint64_t pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
    uint64_t r64() { return rng_(); }

    // Whether [p, p + n) lies in memory this fuzzer can read.
    bool ours(const uint8_t* p, size_t n) const {
        auto in = [&](const uint8_t* base, size_t len) { return p >= base && p + n <= base + len; };
        return in(buf_, kBuf) || in(ro_, page_) || in(data_, kData);
    }

    // Whether the kernel may write at @v as much as it likes: not a user address (it must
    // refuse), or memory of ours that ends in an unmapped, read-only or inaccessible page.
    bool harmless_output(uint64_t v) const {
        if (v < 4096 || v >= 0x800000000000ull) return true;
        auto* p = reinterpret_cast<const uint8_t*>(v);
        return (p >= buf_ && p < buf_ + kBuf) || (p >= ro_ && p < ro_ + page_) ||
               (p >= data_ && p < data_ + kData + kGuard);
    }

    // A user pointer: mostly valid memory, else every kind of bad one.
    uint64_t any_ptr() {
        switch (pick(10)) {
            case 0:
                return 0;
            case 1:
                return 8;
            case 2:
                return 0xffff888000000000ull + pick(1 << 20) * 8;  // kernel direct map
            case 3:
                return 0x8000000000000000ull;  // non-canonical
            case 4:
                return reinterpret_cast<uintptr_t>(ro_);  // read-only
            case 5:
                return reinterpret_cast<uintptr_t>(buf_ + kBuf - pick(64));  // straddles
            case 6:
                return r64();
            default:
                return reinterpret_cast<uintptr_t>(data_) + pick(kData / 2);
        }
    }

    uint32_t any_app() {
        if (!apps_.empty() && pick(3) != 0) return apps_[pick(apps_.size())];
        switch (pick(4)) {
            case 0:
                return 0;
            case 1:
                return 0xffffffffu;
            case 2:
                return protect_;
            default:
                return static_cast<uint32_t>(r64());
        }
    }

    uint32_t any_count() {
        switch (pick(6)) {
            case 0:
                return 0;
            case 1:
                return 1;
            case 2:
                return static_cast<uint32_t>(pick(300));
            case 3:
                return 0xffffffffu;
            case 4:
                return static_cast<uint32_t>(r64());
            default:
                return static_cast<uint32_t>(pick(8192));
        }
    }

    // A parameter value: small, a limit's edge (max_tasks 5792 and 8192, shifts, 16-bit and 31-bit
    // overflows), or anything.
    uint32_t any_param() {
        static const uint32_t edges[] = {
            0,    1,    2,     3,     4,     6,          7,          12,        16,
            22,   23,   32,    255,   256,   4096,       5792,       5793,      8191,
            8192, 8193, 10000, 65535, 65536, 0x7fffffff, 0x80000000, 0xffffffff};
        switch (pick(3)) {
            case 0:
                return edges[pick(sizeof(edges) / sizeof(edges[0]))];
            case 1:
                return static_cast<uint32_t>(pick(20000));
            default:
                return static_cast<uint32_t>(r64());
        }
    }

    uint32_t any_size(uint32_t real) {
        switch (pick(10)) {
            case 0:
                return 0;
            case 1:
                return 4;
            case 2:
                return real - 4;
            case 3:
                return real + 8;
            case 4:
                return CDSM_ARG_MAX;
            case 5:
                return CDSM_ARG_MAX + 4;
            case 6:
                return static_cast<uint32_t>(r64());
            default:
                return real;
        }
    }

    void refresh_apps() {
        std::vector<cdsm_app_info> infos(256);
        auto l = sized<cdsm_list_apps>();
        l.capacity = static_cast<uint32_t>(infos.size());
        l.apps_ptr = reinterpret_cast<uintptr_t>(infos.data());
        apps_.clear();
        if (ioctl(fd_, CDSM_IOC_LIST_APPS, &l) < 0) return;
        for (uint32_t i = 0; i < l.count && i < infos.size(); i++) apps_.push_back(infos[i].app_id);
        if (!privileged_) {
            // Nobody must see only its own applications (it owns none here).
            for (uint32_t i = 0; i < l.count && i < infos.size(); i++)
                if (infos[i].uid != kNobody) finding("nobody listed another user's application");
        }
    }

    void release_others() {
        refresh_apps();
        for (uint32_t id : apps_) {
            if (id == protect_) continue;
            auto a = sized<cdsm_app_op>();
            a.app_id = id;
            ioctl(fd_, CDSM_IOC_RELEASE, &a);
        }
        ioctl(fd_, CDSM_IOC_SET_PARAMS, &params_);
    }

    void finding(const char* what) {
        stats_.findings++;
        fprintf(stderr, "cdsm-fuzz: FINDING: %s\n", what);
    }

    // The argument of a known command, built valid then mutated, at `arg` in buf_.
    size_t build(unsigned nr, uint8_t* arg) {
        memset(arg, 0, 512);
        size_t real = 0;
        switch (nr) {
            case 0x01: {
                auto a = sized<cdsm_list_apps>();
                a.capacity = any_count();
                a.apps_ptr = any_ptr();
                memcpy(arg, &a, real = sizeof(a));
                break;
            }
            case 0x02: {
                auto a = sized<cdsm_get_tasks>();
                a.app_id = any_app();
                a.capacity = any_count();
                a.tasks_ptr = any_ptr();
                memcpy(arg, &a, real = sizeof(a));
                break;
            }
            case 0x03: {
                auto a = sized<cdsm_get_matrix>();
                a.app_id = any_app();
                a.capacity = any_count();
                a.cells_ptr = any_ptr();
                memcpy(arg, &a, real = sizeof(a));
                break;
            }
            case 0x04:
            case 0x05:
            case 0x06:
            case 0x08: {
                auto a = sized<cdsm_app_op>();
                a.app_id = any_app();
                if (a.app_id == protect_ && nr != 0x04) a.app_id = 0xfffffffeu;
                memcpy(arg, &a, real = sizeof(a));
                break;
            }
            case 0x07: {
                auto a = sized<cdsm_track>();
                a.kind = static_cast<uint32_t>(pick(5));
                a.pid = pick(3) ? static_cast<pid_t>(pick(400)) : static_cast<pid_t>(r64());
                static const char* paths[] = {"/", "/cdsm-fuzz", "/no/such", "//", "/.."};
                if (pick(2)) {
                    const char* p = paths[pick(5)];
                    size_t n = strlen(p);
                    memcpy(data_, p, n);
                    a.path_ptr = reinterpret_cast<uintptr_t>(data_);
                    a.path_len = pick(4) ? static_cast<uint32_t>(n) : any_count();
                } else {
                    a.path_ptr = any_ptr();
                    a.path_len = static_cast<uint32_t>(pick(5000));
                }
                memcpy(arg, &a, real = sizeof(a));
                break;
            }
            case 0x09:
            case 0x0a: {
                cdsm_params p = params_;
                uint32_t* f = &p.block_shift;
                for (uint64_t k = pick(3); k > 0; k--) f[pick(9)] = any_param();
                memcpy(arg, &p, real = sizeof(p));
                break;
            }
            case 0x0b: {
                auto c = sized<cdsm_counters>();
                memcpy(arg, &c, real = sizeof(c));
                break;
            }
            default:
                for (size_t i = 0; i < 64; i++) arg[i] = static_cast<uint8_t>(r64());
                real = 64;
        }
        // Mutations: the size field, a random byte, a random tail.
        uint32_t size =
            pick(3) ? static_cast<uint32_t>(real) : any_size(static_cast<uint32_t>(real));
        memcpy(arg, &size, 4);
        if (pick(8) == 0) arg[pick(real ? real : 1)] ^= static_cast<uint8_t>(1u << pick(8));
        if (pick(8) == 0)
            for (size_t i = real; i < real + 16; i++) arg[i] = static_cast<uint8_t>(r64());
        return real;
    }

    void one_ioctl() {
        unsigned nr = static_cast<unsigned>(pick(12));
        uint8_t* arg = buf_ + pick(kBuf / 2);
        build(nr, arg);
        unsigned long cmd;
        switch (pick(20)) {
            case 0:
                cmd = _IOC(pick(4), CDSM_IOC_MAGIC, pick(32), pick(1 << 14));  // random
                break;
            case 1:
                cmd = _IOC(pick(4), pick(256), nr, pick(1 << 14));  // another type
                break;
            case 2:
                cmd = static_cast<uint32_t>(r64());
                break;
            default: {
                static const unsigned long known[] = {
                    CDSM_IOC_ABI_VERSION, CDSM_IOC_LIST_APPS,  CDSM_IOC_GET_TASKS,
                    CDSM_IOC_GET_MATRIX,  CDSM_IOC_AGE,        CDSM_IOC_RESET,
                    CDSM_IOC_RELEASE,     CDSM_IOC_TRACK,      CDSM_IOC_UNTRACK,
                    CDSM_IOC_GET_PARAMS,  CDSM_IOC_SET_PARAMS, CDSM_IOC_GET_COUNTERS};
                cmd = known[nr];
            }
        }
        void* p = arg;
        if (pick(8) == 0) p = reinterpret_cast<void*>(any_ptr());
        // Whatever the number became, the workload's application is never reset, released or
        // untracked (its id sits after the size in struct cdsm_app_op), also when the pointer
        // went to memory of ours that an earlier call filled (with application ids).
        unsigned dnr = _IOC_NR(cmd);
        if (dnr == 0x05 || dnr == 0x06 || dnr == 0x08) {
            auto* at = static_cast<uint8_t*>(p);
            uint32_t id;
            if (ours(at, 8)) {
                memcpy(&id, at + 4, 4);
                if (id == protect_) return;
            }
        }
        // LIST_APPS, GET_TASKS and GET_MATRIX write where the pointer at offset 16 says. A
        // mutation (a flipped bit) or bytes an earlier call wrote can make it point into this
        // process's own memory (heap, stack, ld.so's data: the fuzzer crashed at exit and its
        // canary changed before this check); such a write is what the caller asked for, not
        // a kernel bug, so it goes to data_ instead.
        if (_IOC_TYPE(cmd) == CDSM_IOC_MAGIC && dnr >= 0x01 && dnr <= 0x03 &&
            ours(static_cast<uint8_t*>(p), 24)) {
            uint64_t out;
            memcpy(&out, static_cast<uint8_t*>(p) + 16, 8);
            if (!harmless_output(out)) {
                out = reinterpret_cast<uintptr_t>(data_) + pick(kData / 2);
                memcpy(static_cast<uint8_t*>(p) + 16, &out, 8);
            }
        }
        stats_.ioctls++;
        errno = 0;
        long ret = ioctl(fd_, cmd, p);
        unsigned cnr = _IOC_NR(cmd);
        bool ours = _IOC_TYPE(cmd) == CDSM_IOC_MAGIC;
        if (ret >= 0) {
            stats_.ok++;
            if (ours && cnr < 16) stats_.ok_by_nr[cnr]++;
        }
        bool control = (cnr >= 0x04 && cnr <= 0x08) || cnr == 0x0a;
        if (!privileged_ && ours && control && ret >= 0)
            finding("a control command succeeded on nobody's file");
        if (privileged_ && ours && cnr == 0x0a && ret >= 0)
            ioctl(fd_, CDSM_IOC_SET_PARAMS, &params_);
    }

    void resolve_family() {
        // CTRL_CMD_GETFAMILY for "cdsm": the family id and the events group id.
        struct {
            nlmsghdr n;
            genlmsghdr g;
            char attrs[64];
        } req{};
        req.n.nlmsg_type = GENL_ID_CTRL;
        req.n.nlmsg_flags = NLM_F_REQUEST;
        req.g.cmd = CTRL_CMD_GETFAMILY;
        req.g.version = 1;
        auto* a = reinterpret_cast<nlattr*>(req.attrs);
        a->nla_type = CTRL_ATTR_FAMILY_NAME;
        a->nla_len = static_cast<uint16_t>(NLA_HDRLEN + sizeof(CDSM_GENL_NAME));
        memcpy(reinterpret_cast<char*>(a) + NLA_HDRLEN, CDSM_GENL_NAME, sizeof(CDSM_GENL_NAME));
        req.n.nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(GENL_HDRLEN + NLA_ALIGN(a->nla_len)));
        sockaddr_nl k{};
        k.nl_family = AF_NETLINK;
        int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
        if (s < 0 ||
            sendto(s, &req, req.n.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&k), sizeof(k)) < 0) {
            if (s >= 0) close(s);
            return;
        }
        std::vector<char> reply(8192);
        ssize_t len = recv(s, reply.data(), reply.size(), 0);
        close(s);
        if (len <= 0) return;
        auto* n = reinterpret_cast<nlmsghdr*>(reply.data());
        if (!NLMSG_OK(n, static_cast<unsigned>(len)) || n->nlmsg_type == NLMSG_ERROR) return;
        char* p = static_cast<char*>(NLMSG_DATA(n)) + GENL_HDRLEN;
        char* end = reinterpret_cast<char*>(n) + n->nlmsg_len;
        for (auto* at = reinterpret_cast<nlattr*>(p);
             reinterpret_cast<char*>(at) + NLA_HDRLEN <= end && at->nla_len >= NLA_HDRLEN;
             at = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(at) + NLA_ALIGN(at->nla_len))) {
            char* v = reinterpret_cast<char*>(at) + NLA_HDRLEN;
            if (at->nla_type == CTRL_ATTR_FAMILY_ID) memcpy(&family_, v, 2);
            if (at->nla_type == CTRL_ATTR_MCAST_GROUPS) {
                // Nested: one group (ours has one): find CTRL_ATTR_MCAST_GRP_ID inside.
                char* gend = reinterpret_cast<char*>(at) + at->nla_len;
                for (char* q = v; q + NLA_HDRLEN <= gend; q += 4) {
                    auto* g = reinterpret_cast<nlattr*>(q);
                    if (g->nla_type == CTRL_ATTR_MCAST_GRP_ID && g->nla_len == NLA_HDRLEN + 4) {
                        memcpy(&group_, q + NLA_HDRLEN, 4);
                        break;
                    }
                }
            }
        }
    }

    void one_netlink() {
        stats_.netlink++;
        if (nl_ < 0) return;
        if (pick(5) == 0) {
            uint32_t g = pick(2) ? group_ : static_cast<uint32_t>(pick(64));
            int opt = pick(2) ? NETLINK_ADD_MEMBERSHIP : NETLINK_DROP_MEMBERSHIP;
            int ret = setsockopt(nl_, SOL_NETLINK, opt, &g, sizeof(g));
            if (ret == 0) stats_.ok++;
            if (!privileged_ && group_ && g == group_ && opt == NETLINK_ADD_MEMBERSHIP && ret == 0)
                finding("nobody joined the events group");
            return;
        }
        uint8_t msg[512];
        for (auto& b : msg) b = static_cast<uint8_t>(r64());
        auto* n = reinterpret_cast<nlmsghdr*>(msg);
        auto* g = reinterpret_cast<genlmsghdr*>(msg + NLMSG_HDRLEN);
        size_t len = NLMSG_HDRLEN + GENL_HDRLEN + pick(400);
        n->nlmsg_len = static_cast<uint32_t>(pick(6) ? len : r64() % 600);
        // Root sends to the cdsm family and the controller only: a random message as root to
        // another family could change the guest (a link, a device) and is not cdsm's to test;
        // nobody also sends to random families (whose privileged operations refuse it).
        switch (pick(4)) {
            case 0:
                n->nlmsg_type = GENL_ID_CTRL;
                break;
            case 1:
                n->nlmsg_type = privileged_ ? family_ : static_cast<uint16_t>(r64());
                break;
            default:
                n->nlmsg_type = family_;
        }
        static const uint16_t flags[] = {NLM_F_REQUEST, NLM_F_REQUEST | NLM_F_DUMP,
                                         NLM_F_REQUEST | NLM_F_ACK, 0};
        n->nlmsg_flags = pick(5) ? flags[pick(4)] : static_cast<uint16_t>(r64());
        n->nlmsg_seq = static_cast<uint32_t>(r64());
        n->nlmsg_pid = 0;
        g->cmd = static_cast<uint8_t>(pick(3) ? pick(8) : r64());
        g->version = static_cast<uint8_t>(pick(3));
        // A few well-formed attributes, sometimes with lying lengths.
        size_t off = NLMSG_HDRLEN + GENL_HDRLEN;
        while (off + 8 <= len && pick(4)) {
            auto* a = reinterpret_cast<nlattr*>(msg + off);
            a->nla_type = static_cast<uint16_t>(pick(3) ? pick(CDSM_A_MAX + 3) : r64());
            a->nla_len = static_cast<uint16_t>(pick(4) ? 8 : r64() % 64);
            off += 8;
        }
        sockaddr_nl k{};
        k.nl_family = AF_NETLINK;
        size_t send_len = std::min<size_t>(pick(8) ? len : pick(sizeof(msg)), sizeof(msg));
        if (sendto(nl_, msg, send_len, 0, reinterpret_cast<sockaddr*>(&k), sizeof(k)) >= 0)
            stats_.ok++;
        // Drain replies and any events.
        uint8_t rbuf[16384];
        while (recv(nl_, rbuf, sizeof(rbuf), MSG_DONTWAIT) > 0) {
        }
    }

    int fd_;
    bool privileged_;
    std::mt19937_64 rng_;
    uint32_t protect_;
    size_t page_ = 4096;
    uint8_t *buf_ = nullptr, *ro_ = nullptr, *data_ = nullptr;
    cdsm_params params_{};
    int nl_ = -1;
    uint16_t family_ = 0;
    uint32_t group_ = 0;
    std::vector<uint32_t> apps_;
    Stats stats_;
};

// Memory no call ever points at, filled with a pattern before the fuzzing and checked after it
// in each process: the kernel must not change a fuzzing process's memory other than where a
// call told it to write (the processes are tracked and re-armed now and then: random TRACK
// calls take them).
constexpr size_t kCanaryWords = size_t{1} << 19;
uint64_t* canary = nullptr;

uint64_t canary_word(size_t i) {
    return (i + 1) * 0x9e3779b97f4a7c15ull;
}

void fill_canary() {
    canary = static_cast<uint64_t*>(mmap(nullptr, kCanaryWords * 8, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    for (size_t i = 0; i < kCanaryWords; i++) canary[i] = canary_word(i);
}

uint64_t check_canary(const char* who) {
    uint64_t bad = 0;
    for (size_t i = 0; i < kCanaryWords; i++) {
        if (canary[i] == canary_word(i)) continue;
        if (bad++ < 4)
            fprintf(stderr, "cdsm-fuzz: FINDING: %s's memory changed at word %zu: %#llx\n", who, i,
                    (unsigned long long)canary[i]);
    }
    if (bad)
        fprintf(stderr, "cdsm-fuzz: FINDING: %s: %llu words changed\n", who,
                (unsigned long long)bad);
    return bad ? 1 : 0;
}

// A crash of the fuzzer itself says where (the kernel may have written where it must not).
void on_crash(int sig, siginfo_t* info, void* ctx) {
    char line[256];
    const auto* uc = static_cast<const ucontext_t*>(ctx);
    int n = snprintf(line, sizeof(line),
                     "cdsm-fuzz: pid %d: signal %d code %d at address %p, rip %#llx rsp %#llx\n",
                     getpid(), sig, info->si_code, info->si_addr,
                     (unsigned long long)uc->uc_mcontext.gregs[REG_RIP],
                     (unsigned long long)uc->uc_mcontext.gregs[REG_RSP]);
    if (write(2, line, static_cast<size_t>(n)) < 0) _exit(5);
    void* frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    _exit(6);
}

int open_dev() {
    int fd = open("/dev/" CDSM_DEVICE_NAME, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "cdsm-fuzz: open /dev/cdsm: %s\n", strerror(errno));
        exit(1);
    }
    return fd;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli{"cdsm-fuzz: random and mutated ioctl and generic-netlink calls against cdsm.ko"};
    uint64_t calls = 10000, seed = 1;
    uint32_t protect = 0;
    bool json = false;
    cli.add_option("--calls", calls, "calls in all (default 10000)")->check(CLI::PositiveNumber);
    cli.add_option("--seed", seed, "random seed (default 1)");
    cli.add_option("--protect", protect, "application never untracked, released or reset");
    cli.add_flag("--json", json, "print the figures as JSON");
    CLI11_PARSE(cli, argc, argv);
    if (geteuid() != 0) {
        fprintf(stderr, "cdsm-fuzz: run as root (it also fuzzes as nobody)\n");
        return 2;
    }
    static char alt_stack[1 << 16];
    stack_t ss{};
    ss.ss_sp = alt_stack;
    ss.ss_size = sizeof(alt_stack);
    sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    int root_fd = open_dev();
    fill_canary();
    uint64_t user_calls = calls / 4;
    int pipefd[2];
    if (pipe(pipefd)) return 1;
    auto t0 = std::chrono::steady_clock::now();
    pid_t child = fork();
    if (child == 0) {
        close(root_fd);
        close(pipefd[0]);
        if (setgroups(0, nullptr) || setresgid(kNobody, kNobody, kNobody) ||
            setresuid(kNobody, kNobody, kNobody))
            _exit(3);
        Fuzzer f(open_dev(), false, seed * 2 + 1, protect);
        Stats s = f.run(user_calls);
        s.findings += check_canary("nobody");
        if (write(pipefd[1], &s, sizeof(s)) != sizeof(s)) _exit(4);
        _exit(0);
    }
    close(pipefd[1]);
    Fuzzer f(root_fd, true, seed * 2, protect);
    Stats s = f.run(calls - user_calls);
    s.findings += check_canary("root");
    Stats u{};
    int status = 0;
    bool child_ok = read(pipefd[0], &u, sizeof(u)) == sizeof(u);
    waitpid(child, &status, 0);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    child_ok = child_ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    uint64_t total = s.ioctls + s.netlink + u.ioctls + u.netlink;
    uint64_t findings = s.findings + u.findings + (child_ok ? 0 : 1);
    std::string by_nr, by_nr_json;
    for (unsigned nr = 0; nr < 16; nr++) {
        uint64_t n = s.ok_by_nr[nr] + u.ok_by_nr[nr];
        if (!n) continue;
        const char* sep = by_nr.empty() ? "" : ",";
        by_nr += sep + std::to_string(nr) + ":" + std::to_string(n);
        by_nr_json += sep + ("\"" + std::to_string(nr) + "\":") + std::to_string(n);
    }
    if (json)
        printf(
            "{\"calls\":%llu,\"ioctls\":%llu,\"netlink\":%llu,\"succeeded\":%llu,"
            "\"seconds\":%.2f,\"calls_per_s\":%.0f,\"findings\":%llu,\"ok_by_cmd\":{%s}}\n",
            (unsigned long long)total, (unsigned long long)(s.ioctls + u.ioctls),
            (unsigned long long)(s.netlink + u.netlink), (unsigned long long)(s.ok + u.ok), secs,
            double(total) / secs, (unsigned long long)findings, by_nr_json.c_str());
    else
        printf(
            "cdsm-fuzz: %llu calls (%llu ioctl, %llu netlink; %llu as nobody), %llu "
            "succeeded (per ioctl number: %s), %.1f s, %.0f calls/s, %llu finding(s)%s\n",
            (unsigned long long)total, (unsigned long long)(s.ioctls + u.ioctls),
            (unsigned long long)(s.netlink + u.netlink), (unsigned long long)(u.ioctls + u.netlink),
            (unsigned long long)(s.ok + u.ok), by_nr.c_str(), secs, double(total) / secs,
            (unsigned long long)findings, child_ok ? "" : " (the nobody process failed)");
    fflush(stdout);
    return findings ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
// User-space unit tests of the module's core logic (kmod/cdsm_core.c): faults resolved into
// records, blocks, sharers, file homes, matrices, aging.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

extern "C" {
#include "cdsm_core.h"
}

namespace {

// A block table that owns its memory.
struct Blocks {
    Blocks(unsigned log2, unsigned sharers)
        : mem(cdsm_blocks_mem_sz(log2, sharers) / sizeof(uint64_t) + 1) {
        cdsm_blocks_init(&b, mem.data(), log2, sharers);
    }
    // An access of @sharer to @block, whose frame holds the data @ident.
    std::vector<uint32_t> record(uint64_t block, uint32_t sharer, uint32_t ident = 0) {
        std::vector<uint32_t> peers(CDSM_MAX_SHARERS);
        unsigned n = cdsm_blocks_record(&b, block, ident, sharer, peers.data());
        peers.resize(n);
        return peers;
    }
    std::vector<uint64_t> mem;
    cdsm_blocks b{};
};

// A table of file homes that owns its memory.
struct Homes {
    explicit Homes(unsigned log2) : mem(cdsm_homes_mem_sz(log2) / sizeof(uint64_t) + 1) {
        cdsm_homes_init(&h, mem.data(), log2);
    }
    std::vector<uint64_t> mem;
    cdsm_homes h{};
    uint64_t now_ns = 0;
};

// A fault recorded as the worker does for a shared file: the block's peers, then the home rule.
std::vector<uint32_t> record_in_file(Blocks& t, Homes& h, uint64_t file, uint64_t block,
                                     uint32_t sharer) {
    auto peers = t.record(block, sharer);
    uint32_t home = cdsm_homes_get(&h.h, file, sharer, ++h.now_ns);
    peers.resize(cdsm_home_filter(sharer, home, peers.data(), static_cast<unsigned>(peers.size())));
    return peers;
}

struct Matrix {
    explicit Matrix(uint32_t dim) : cells(dim * dim) { m = {cells.data(), dim}; }
    uint32_t at(uint32_t i, uint32_t j) const { return cells[i * m.dim + j]; }
    std::vector<uint32_t> cells;
    cdsm_matrix m{};
};

// A fault as the fault path records it at entry: nothing mapped yet unless @entry_paddr.
cdsm_fault_raw raw_fault(uint8_t flags, uint64_t entry_paddr = 0, uint8_t entry_shift = 0) {
    cdsm_fault_raw raw{};
    raw.vaddr = 0x7f0000001234;
    raw.sharer = cdsm_sharer(1, 3);
    raw.entry_paddr = entry_paddr;
    raw.entry_shift = entry_shift;
    raw.flags = flags;
    return raw;
}

// What the worker finds mapped later: an anonymous page held by one process.
cdsm_frame anon_frame(uint64_t paddr, uint8_t shift = 12) {
    cdsm_frame f{};
    f.paddr = paddr;
    f.shift = shift;
    f.anon = true;
    f.ident = 0x2abcd;
    return f;
}

TEST(Resolve, AFirstTouchOfPrivateMemoryIsAFreshFrame) {
    const cdsm_fault_raw raw = raw_fault(CDSM_RAW_PRIVATE);
    const cdsm_frame now = anon_frame(0x5234);
    cdsm_fault_rec rec{};
    ASSERT_EQ(cdsm_fault_resolve(&raw, &now, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_EQ(rec.paddr, 0x5234u);
    EXPECT_EQ(rec.old_paddr, 0u);
    EXPECT_EQ(rec.sharer, raw.sharer);
    EXPECT_EQ(rec.ident, now.ident);
    EXPECT_EQ(rec.page_shift, 12u);
    EXPECT_TRUE(rec.fresh) << "what the table knew of the frame came from its previous user";
}

TEST(Resolve, ACopyOnWriteIsFreshAndAWriteInPlaceIsNot) {
    const cdsm_fault_raw raw = raw_fault(CDSM_RAW_PRIVATE, 0x9234, 12);
    cdsm_fault_rec rec{};
    const cdsm_frame copied = anon_frame(0x5234);
    ASSERT_EQ(cdsm_fault_resolve(&raw, &copied, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_TRUE(rec.fresh);
    const cdsm_frame same = anon_frame(0x9234);
    ASSERT_EQ(cdsm_fault_resolve(&raw, &same, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_FALSE(rec.fresh);
}

TEST(Resolve, AHintingFaultThatMigratedCarriesTheOldFrame) {
    const cdsm_fault_raw raw = raw_fault(CDSM_RAW_PRIVATE | CDSM_RAW_HINT, 0x9234, 12);
    cdsm_fault_rec rec{};
    const cdsm_frame moved = anon_frame(0x5234);
    ASSERT_EQ(cdsm_fault_resolve(&raw, &moved, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_EQ(rec.old_paddr, 0x9234u) << "the blocks move to the new frame";
    EXPECT_FALSE(rec.fresh) << "the same data in a new frame";
    const cdsm_frame stayed = anon_frame(0x9234);
    ASSERT_EQ(cdsm_fault_resolve(&raw, &stayed, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_EQ(rec.old_paddr, 0u);
    EXPECT_FALSE(rec.fresh);
}

TEST(Resolve, AFaultThatWaitedForAMigrationIsNotFresh) {
    const cdsm_fault_raw raw = raw_fault(CDSM_RAW_PRIVATE | CDSM_RAW_MIGRATING);
    const cdsm_frame now = anon_frame(0x5234);
    cdsm_fault_rec rec{};
    ASSERT_EQ(cdsm_fault_resolve(&raw, &now, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_FALSE(rec.fresh) << "the migrating fault carried the blocks over";
}

TEST(Resolve, SharedMemoryKeepsItsFileAndIsNeverFresh) {
    cdsm_fault_raw raw = raw_fault(0);
    raw.file = 77;
    raw.file_ns = 1234;
    cdsm_frame now = anon_frame(0x5234);
    now.anon = false;
    cdsm_fault_rec rec{};
    ASSERT_EQ(cdsm_fault_resolve(&raw, &now, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_EQ(rec.file, 77u);
    EXPECT_EQ(rec.file_ns, 1234u);
    EXPECT_FALSE(rec.fresh);
}

TEST(Resolve, NothingMappedAnyMoreIsGone) {
    const cdsm_fault_raw raw = raw_fault(CDSM_RAW_PRIVATE);
    const cdsm_frame now{};
    cdsm_fault_rec rec{};
    EXPECT_EQ(cdsm_fault_resolve(&raw, &now, &rec), CDSM_RESOLVED_GONE);
}

TEST(Resolve, MemoryNoDataPassesThroughIsSkipped) {
    cdsm_fault_rec rec{};
    const cdsm_fault_raw priv = raw_fault(CDSM_RAW_PRIVATE);
    cdsm_frame zero = anon_frame(0x5234);
    zero.zero = true;
    EXPECT_EQ(cdsm_fault_resolve(&priv, &zero, &rec), CDSM_RESOLVED_SKIP) << "the zero page";
    cdsm_frame cow = anon_frame(0x5234);
    cow.cow_shared = true;
    EXPECT_EQ(cdsm_fault_resolve(&priv, &cow, &rec), CDSM_RESOLVED_SKIP)
        << "shared copy-on-write since a fork";
    const cdsm_fault_raw file_priv = raw_fault(CDSM_RAW_PRIVATE | CDSM_RAW_FILE_PRIVATE);
    cdsm_frame cache = anon_frame(0x5234);
    cache.anon = false;
    EXPECT_EQ(cdsm_fault_resolve(&file_priv, &cache, &rec), CDSM_RESOLVED_SKIP)
        << "a file's page-cache page in a private mapping";
    EXPECT_EQ(cdsm_fault_resolve(&file_priv, &cow, &rec), CDSM_RESOLVED_SKIP);
    const cdsm_frame copied = anon_frame(0x5234);
    EXPECT_EQ(cdsm_fault_resolve(&file_priv, &copied, &rec), CDSM_RESOLVED_RECORD)
        << "its copied-on-write page";
    cdsm_fault_raw shared = raw_fault(0);
    shared.file = 77;
    EXPECT_EQ(cdsm_fault_resolve(&shared, &cow, &rec), CDSM_RESOLVED_RECORD)
        << "the copy-on-write rule is for private memory";
}

TEST(Resolve, AHugePageSplitSinceEntryCountsIn4KiBParts) {
    const cdsm_fault_raw raw = raw_fault(CDSM_RAW_PRIVATE | CDSM_RAW_HINT, 0x200234, 21);
    cdsm_fault_rec rec{};
    const cdsm_frame split = anon_frame(0x200234, 12);
    ASSERT_EQ(cdsm_fault_resolve(&raw, &split, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_EQ(rec.page_shift, 12u);
    const cdsm_frame huge = anon_frame(0x200234, 21);
    ASSERT_EQ(cdsm_fault_resolve(&raw, &huge, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_EQ(rec.page_shift, 21u);
    const cdsm_fault_raw small = raw_fault(CDSM_RAW_PRIVATE, 0x200234, 12);
    ASSERT_EQ(cdsm_fault_resolve(&small, &huge, &rec), CDSM_RESOLVED_RECORD);
    EXPECT_EQ(rec.page_shift, 12u) << "a collapse since entry: the fault touched a 4 KiB page";
}

TEST(Sharer, EncodesAppAndTask) {
    uint32_t s = cdsm_sharer(0x1234, 0);
    EXPECT_NE(s, 0u);
    EXPECT_EQ(cdsm_sharer_app(s), 0x1234u);
    EXPECT_EQ(cdsm_sharer_task(s), 0u);
    EXPECT_EQ(cdsm_sharer_task(cdsm_sharer(7, CDSM_MAX_TASK_INDEX)), uint32_t{CDSM_MAX_TASK_INDEX});
}

// The key holds the slot (8 bits) and a 10-bit generation: the widest key and the largest
// task index (max_tasks 8192) round-trip, and keys differing only in the generation differ.
TEST(Sharer, KeyHasTenGenerationBits) {
    const uint32_t widest = (1u << (32 - CDSM_SHARER_APP_SHIFT)) - 1;
    EXPECT_EQ(widest, 0x3ffffu);
    uint32_t s = cdsm_sharer(widest, 8191);
    EXPECT_EQ(cdsm_sharer_app(s), widest);
    EXPECT_EQ(cdsm_sharer_task(s), 8191u);
    EXPECT_NE(cdsm_sharer(5 | 1u << 8, 0), cdsm_sharer(5 | 257u << 8, 0))
        << "generations 1 and 257 of a slot alias with 8 bits only";
    EXPECT_GE(CDSM_MAX_TASK_INDEX + 1, 8192u);
}

TEST(Blocks, FirstAccessHasNoPeers) {
    Blocks t(10, 4);
    EXPECT_TRUE(t.record(42, cdsm_sharer(1, 0)).empty());
    EXPECT_TRUE(t.record(42, cdsm_sharer(1, 0)).empty()) << "a task is not its own peer";
}

TEST(Blocks, SameApplicationTasksArePeers) {
    Blocks t(10, 4);
    t.record(42, cdsm_sharer(1, 0));
    t.record(42, cdsm_sharer(1, 1));
    auto peers = t.record(42, cdsm_sharer(1, 2));
    ASSERT_EQ(peers.size(), 2u);
    EXPECT_EQ(peers[0], cdsm_sharer(1, 1)) << "most recent first";
    EXPECT_EQ(peers[1], cdsm_sharer(1, 0));
}

TEST(Blocks, OtherApplicationsAreNotPeers) {
    Blocks t(10, 4);
    t.record(42, cdsm_sharer(2, 0));
    t.record(42, cdsm_sharer(1, 0));
    EXPECT_TRUE(t.record(42, cdsm_sharer(3, 0)).empty());
    EXPECT_EQ(t.record(42, cdsm_sharer(1, 1)).size(), 1u);
}

TEST(Blocks, OldestSharerIsReplaced) {
    Blocks t(10, 4);
    for (uint32_t i = 0; i < 4; i++) t.record(7, cdsm_sharer(1, i));
    // Task 4 pushes out task 0, the oldest, but task 0 still counts at this access.
    EXPECT_EQ(t.record(7, cdsm_sharer(1, 4)).size(), 4u);
    auto peers = t.record(7, cdsm_sharer(1, 5));
    ASSERT_EQ(peers.size(), 4u);
    for (uint32_t p : peers) EXPECT_NE(p, cdsm_sharer(1, 0)) << "task 0 fell off";
}

TEST(Blocks, RepeatedAccessMovesToFrontWithoutDuplicate) {
    Blocks t(10, 2);
    t.record(7, cdsm_sharer(1, 0));
    t.record(7, cdsm_sharer(1, 1));
    t.record(7, cdsm_sharer(1, 0));               // list: 0, 1
    auto peers = t.record(7, cdsm_sharer(1, 2));  // 1 falls off after this
    ASSERT_EQ(peers.size(), 2u);
    peers = t.record(7, cdsm_sharer(1, 3));
    ASSERT_EQ(peers.size(), 2u);
    EXPECT_EQ(peers[0], cdsm_sharer(1, 2));
    EXPECT_EQ(peers[1], cdsm_sharer(1, 0));
}

TEST(Blocks, OneSharerKeepsOnlyTheLastAccessor) {
    Blocks t(4, 1);
    t.record(9, cdsm_sharer(1, 0));
    t.record(9, cdsm_sharer(1, 1));
    auto peers = t.record(9, cdsm_sharer(1, 2));
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_EQ(peers[0], cdsm_sharer(1, 1));
}

TEST(Blocks, CollisionEvictsAndCounts) {
    Blocks t(1, 4);  // two entries: three blocks must collide
    for (uint64_t b = 0; b < 3; b++) t.record(b, cdsm_sharer(1, 0));
    EXPECT_GE(t.b.evictions, 1u);
    // An evicted block starts empty again: no stale peers from another block.
    uint64_t evicted_before = t.b.evictions;
    for (uint64_t b = 0; b < 64; b++) {
        t.record(b, cdsm_sharer(1, 0));
        EXPECT_TRUE(t.record(b, cdsm_sharer(1, 0)).empty());
    }
    EXPECT_GT(t.b.evictions, evicted_before);
}

TEST(Blocks, ClearForgetsEverything) {
    Blocks t(8, 4);
    t.record(5, cdsm_sharer(1, 0));
    cdsm_blocks_clear(&t.b);
    EXPECT_TRUE(t.record(5, cdsm_sharer(1, 1)).empty());
    EXPECT_EQ(t.b.evictions, 0u);
}

TEST(Blocks, MoveCarriesSharersAndFreesTheOldBlock) {
    Blocks t(10, 4);
    t.record(5, cdsm_sharer(1, 0));
    cdsm_blocks_move(&t.b, 5, 900);
    EXPECT_TRUE(t.record(5, cdsm_sharer(1, 1)).empty()) << "old block forgotten";
    auto peers = t.record(900, cdsm_sharer(1, 2));
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_EQ(peers[0], cdsm_sharer(1, 0));
    cdsm_blocks_move(&t.b, 77, 78);  // unknown block: nothing happens
    EXPECT_TRUE(t.record(78, cdsm_sharer(1, 3)).empty());
}

TEST(Blocks, MoveOfAnUnknownBlockClearsTheStaleTarget) {
    Blocks t(10, 4);
    t.record(900, cdsm_sharer(1, 0));  // the new frame's previous use
    cdsm_blocks_move(&t.b, 5, 900);
    EXPECT_TRUE(t.record(900, cdsm_sharer(1, 1)).empty()) << "stale sharer kept";
}

TEST(Blocks, SharersOfTheDataAFrameHeldBeforeAreDropped) {
    // A frame freed by one process and used again by another (or as another file's page)
    // holds other data: its previous users share nothing with the new one.
    Blocks t(10, 4);
    const uint32_t before = cdsm_frame_ident(0xffff888012345001, 7);
    const uint32_t after = cdsm_frame_ident(0xffff888054321000, 7);
    ASSERT_NE(before, after);
    t.record(5, cdsm_sharer(1, 0), before);
    EXPECT_EQ(t.record(5, cdsm_sharer(1, 1), before).size(), 1u) << "the same data: a pair";
    EXPECT_TRUE(t.record(5, cdsm_sharer(1, 2), after).empty()) << "other data: no pair";
    EXPECT_EQ(t.b.reused, 1u);
    EXPECT_EQ(t.b.evictions, 0u);
    auto peers = t.record(5, cdsm_sharer(1, 3), after);
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_EQ(peers[0], cdsm_sharer(1, 2));
}

TEST(Blocks, FrameIdentsDifferByMappingAndByIndex) {
    EXPECT_NE(cdsm_frame_ident(0xffff888012345001, 7), cdsm_frame_ident(0xffff888012345001, 8));
    EXPECT_NE(cdsm_frame_ident(0xffff888012345001, 7), cdsm_frame_ident(0xffff888012346001, 7));
    EXPECT_LT(cdsm_frame_ident(~0ull, ~0ull), 1u << CDSM_TAG_IDENT_BITS);
}

// Two pages migrate on hinting faults in two CPUs' rings: P (rank 0's) from frame A to B, then
// Q (rank 5's) from C to the freed A. The worker may apply Q's record first: Q's sharers go
// to A, then P's move carries them on to B, where rank 0 would pair with rank 5 at every
// re-arming (off-ring pairs of an 8-rank ring on 6.1 grew to the ring's own). The data's
// ident tells them apart.
TEST(Blocks, MigrationsAppliedOutOfOrderPairNoTasksOfOtherData) {
    Blocks t(12, 4);
    const uint64_t a = 100, b = 200, c = 300;
    const uint32_t p = cdsm_frame_ident(0x1001, 1), q = cdsm_frame_ident(0x2001, 1);
    t.record(a, cdsm_sharer(1, 0), p);
    t.record(c, cdsm_sharer(1, 5), q);
    cdsm_blocks_move(&t.b, c, a);  // Q's fault, applied first
    cdsm_blocks_move(&t.b, a, b);  // P's fault: what A holds now goes to B
    EXPECT_TRUE(t.record(b, cdsm_sharer(1, 0), p).empty()) << "rank 0 paired with rank 5";
    // Moves in their order carry each page's sharers to its new frame.
    Blocks u(12, 4);
    u.record(a, cdsm_sharer(1, 0), p);
    u.record(c, cdsm_sharer(1, 5), q);
    cdsm_blocks_move(&u.b, a, b);
    cdsm_blocks_move(&u.b, c, a);
    EXPECT_EQ(u.record(b, cdsm_sharer(1, 1), p), std::vector<uint32_t>{cdsm_sharer(1, 0)});
    EXPECT_EQ(u.record(a, cdsm_sharer(1, 4), q), std::vector<uint32_t>{cdsm_sharer(1, 5)});
}

TEST(Blocks, ForgetDropsOnlyThatBlock) {
    Blocks t(10, 4);
    t.record(5, cdsm_sharer(1, 0));
    t.record(6, cdsm_sharer(1, 0));
    cdsm_blocks_forget(&t.b, 5);
    cdsm_blocks_forget(&t.b, 7);  // not in the table: nothing happens
    EXPECT_TRUE(t.record(5, cdsm_sharer(1, 1)).empty());
    EXPECT_EQ(t.record(6, cdsm_sharer(1, 1)).size(), 1u);
    EXPECT_EQ(t.b.evictions, 0u);
}

TEST(Blocks, MemorySizeMatchesLayout) {
    EXPECT_EQ(cdsm_blocks_mem_sz(22, 4), (size_t{1} << 22) * (8 + 16));
}

TEST(Homes, FirstTaskIsTheHomeAndStaysIt) {
    Homes h(4);
    EXPECT_EQ(cdsm_homes_get(&h.h, 77, cdsm_sharer(1, 2), 100), cdsm_sharer(1, 2));
    EXPECT_EQ(cdsm_homes_get(&h.h, 77, cdsm_sharer(1, 0), 100), cdsm_sharer(1, 2));
    EXPECT_EQ(cdsm_homes_get(&h.h, 78, cdsm_sharer(1, 0), 100), cdsm_sharer(1, 0)) << "files apart";
    EXPECT_EQ(h.h.nr_used, 2u);
}

// The worker drains the CPUs' rings one after the other: a fault recorded later may have
// happened first, and its task is the home.
TEST(Homes, AnEarlierFaultRecordedLaterTakesTheHome) {
    Homes h(4);
    EXPECT_EQ(cdsm_homes_get(&h.h, 77, cdsm_sharer(1, 1), 500), cdsm_sharer(1, 1));
    EXPECT_EQ(cdsm_homes_get(&h.h, 77, cdsm_sharer(1, 0), 400), cdsm_sharer(1, 0));
    EXPECT_EQ(cdsm_homes_get(&h.h, 77, cdsm_sharer(1, 1), 600), cdsm_sharer(1, 0));
    EXPECT_EQ(h.h.nr_used, 1u);
}

TEST(Homes, AFullTableLeavesNewFilesWithoutHome) {
    Homes h(2);  // 4 entries, 3 usable
    for (uint64_t f = 1; f <= 3; f++)
        EXPECT_NE(cdsm_homes_get(&h.h, f, cdsm_sharer(1, 0), 100), 0u);
    EXPECT_EQ(cdsm_homes_get(&h.h, 4, cdsm_sharer(1, 1), 100), 0u);
    EXPECT_EQ(h.h.nr_unhomed, 1u);
    EXPECT_EQ(cdsm_homes_get(&h.h, 2, cdsm_sharer(1, 1), 100), cdsm_sharer(1, 0))
        << "known files keep theirs";
}

TEST(Homes, CollidingFilesAreAllFound) {
    Homes h(6);  // 64 entries: 48 files probe past each other
    for (uint32_t f = 1; f <= 48; f++)
        cdsm_homes_get(&h.h, uint64_t{f} << 40, cdsm_sharer(1, f % 7), 100);
    for (uint32_t f = 1; f <= 48; f++)
        EXPECT_EQ(cdsm_homes_get(&h.h, uint64_t{f} << 40, cdsm_sharer(1, 9), 100),
                  cdsm_sharer(1, f % 7));
    EXPECT_EQ(h.h.nr_unhomed, 0u);
}

TEST(Homes, MemorySize) {
    EXPECT_EQ(cdsm_homes_mem_sz(10), size_t{1024} * 20);
}

TEST(HomeFilter, WithoutHomeEveryPeerCounts) {
    uint32_t peers[] = {cdsm_sharer(1, 1), cdsm_sharer(1, 2)};
    EXPECT_EQ(cdsm_home_filter(cdsm_sharer(1, 0), 0, peers, 2), 2u);
}

TEST(HomeFilter, TheHomePairsWithEveryPeer) {
    uint32_t peers[] = {cdsm_sharer(1, 1), cdsm_sharer(1, 2)};
    EXPECT_EQ(cdsm_home_filter(cdsm_sharer(1, 0), cdsm_sharer(1, 0), peers, 2), 2u);
    EXPECT_EQ(peers[1], cdsm_sharer(1, 2));
}

TEST(HomeFilter, AnotherTaskPairsOnlyWithTheListedHome) {
    uint32_t peers[] = {cdsm_sharer(1, 2), cdsm_sharer(1, 0), cdsm_sharer(1, 3)};
    ASSERT_EQ(cdsm_home_filter(cdsm_sharer(1, 1), cdsm_sharer(1, 0), peers, 3), 1u);
    EXPECT_EQ(peers[0], cdsm_sharer(1, 0));
    uint32_t others[] = {cdsm_sharer(1, 2), cdsm_sharer(1, 3)};
    EXPECT_EQ(cdsm_home_filter(cdsm_sharer(1, 1), cdsm_sharer(1, 0), others, 2), 0u)
        << "the home is not among the block's recent sharers: no event";
}

// The vader pattern (issue 12): in a ring of 4, each rank's segment holds its receive queue
// and the fragments it sends from; its two neighbours write the queue and read the fragments.
// Under all pairs, ranks 0 and 2 (a common neighbour, 1) pair in rank 1's segment; with homes
// only owner-neighbour pairs count.
TEST(HomeFilter, VaderSegmentsPairOnlyNeighbours) {
    for (bool homes : {false, true}) {
        Blocks t(12, 4);
        Homes h(4);
        Matrix x(4);
        const uint64_t block_base = 1000;
        for (uint32_t r = 0; r < 4; r++)
            record_in_file(t, h, 10 + r, block_base * (r + 1), cdsm_sharer(1, r));
        for (int round = 0; round < 10; round++) {
            for (uint32_t owner = 0; owner < 4; owner++) {
                const uint64_t file = 10 + owner;
                for (uint64_t b = 0; b < 4; b++) {
                    const uint64_t block = block_base * (owner + 1) + b;
                    for (uint32_t who : {owner, (owner + 1) % 4, (owner + 3) % 4}) {
                        auto peers = homes ? record_in_file(t, h, file, block, cdsm_sharer(1, who))
                                           : t.record(block, cdsm_sharer(1, who));
                        for (uint32_t p : peers)
                            cdsm_matrix_add_pair(&x.m, who, cdsm_sharer_task(p));
                    }
                }
            }
        }
        for (uint32_t r = 0; r < 4; r++) {
            EXPECT_GT(x.at(r, (r + 1) % 4), 0u);
            if (homes)
                EXPECT_EQ(x.at(r, (r + 2) % 4), 0u) << "rank " << r << " and its diagonal";
            else
                EXPECT_GT(x.at(r, (r + 2) % 4), 0u) << "all pairs: the common partner pairs them";
        }
    }
}

TEST(Matrix, AddPairIsSymmetric) {
    Matrix x(4);
    EXPECT_TRUE(cdsm_matrix_add_pair(&x.m, 1, 3));
    EXPECT_TRUE(cdsm_matrix_add_pair(&x.m, 3, 1));
    EXPECT_EQ(x.at(1, 3), 2u);
    EXPECT_EQ(x.at(3, 1), 2u);
    EXPECT_EQ(x.at(1, 1), 0u);
}

TEST(Matrix, RejectsOutOfRangeAndDiagonal) {
    Matrix x(4);
    EXPECT_FALSE(cdsm_matrix_add_pair(&x.m, 4, 0));
    EXPECT_FALSE(cdsm_matrix_add_pair(&x.m, 0, 4));
    EXPECT_FALSE(cdsm_matrix_add_pair(&x.m, 2, 2));
    for (uint32_t c : x.cells) EXPECT_EQ(c, 0u);
}

TEST(Matrix, Saturates) {
    Matrix x(2);
    x.cells[1] = x.cells[2] = UINT32_MAX;
    cdsm_matrix_add_pair(&x.m, 0, 1);
    EXPECT_EQ(x.at(0, 1), UINT32_MAX);
    EXPECT_EQ(x.at(1, 0), UINT32_MAX);
}

TEST(Matrix, AgingRemovesAQuarter) {
    Matrix x(2);
    x.cells = {0, 100, 3, 4};
    cdsm_matrix_age(&x.m);
    EXPECT_EQ(x.cells, (std::vector<uint32_t>{0, 75, 3, 3}));
    for (int i = 0; i < 40; i++) cdsm_matrix_age(&x.m);
    EXPECT_EQ(x.at(0, 1), 3u) << "M - (M >> 2) stops at 3";
}

TEST(Matrix, AgingLetsANewPatternDominate) {
    Matrix x(3);
    for (int i = 0; i < 1000; i++) cdsm_matrix_add_pair(&x.m, 0, 1);
    for (int i = 0; i < 8; i++) cdsm_matrix_age(&x.m);
    for (int i = 0; i < 200; i++) cdsm_matrix_add_pair(&x.m, 0, 2);
    EXPECT_GT(x.at(0, 2), x.at(0, 1));
}

TEST(Matrix, GrowKeepsCells) {
    Matrix small(2), big(4);
    cdsm_matrix_add_pair(&small.m, 0, 1);
    big.cells.assign(16, 9);
    cdsm_matrix_copy(&big.m, &small.m);
    EXPECT_EQ(big.at(0, 1), 1u);
    EXPECT_EQ(big.at(1, 0), 1u);
    EXPECT_EQ(big.at(3, 3), 0u);
    EXPECT_EQ(big.at(2, 0), 0u);
}

TEST(Matrix, DimForGrowsByPowersOfTwoUpToMax) {
    EXPECT_EQ(cdsm_matrix_dim_for(1, 16, 4096), 16u);
    EXPECT_EQ(cdsm_matrix_dim_for(17, 16, 4096), 32u);
    EXPECT_EQ(cdsm_matrix_dim_for(513, 16, 4096), 1024u);
    EXPECT_EQ(cdsm_matrix_dim_for(5000, 16, 4096), 4096u);
    EXPECT_EQ(cdsm_matrix_dim_for(100, 16, 100), 100u);
}

TEST(Matrix, MemorySize) {
    EXPECT_EQ(cdsm_matrix_mem_sz(512), size_t{1} << 20) << "the paper's 1 MB for 512 tasks";
}

}  // namespace

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm core: memory blocks, their recent sharers, the homes of shared files,
 * communication matrices and aging. Pure logic on caller-provided memory: no locks, no allocation,
 * no probes, so that it is also compiled and unit-tested in user space
 * (tests/kcore/). Callers serialise access (in the module: the worker).
 */
#ifndef _CDSM_CORE_H
#define _CDSM_CORE_H

#include <linux/types.h>

/* Upper bound of the number of recent sharers kept per block. */
#define CDSM_MAX_SHARERS 8

/*
 * A sharer is a 32-bit id: the application key in the upper 18 bits and
 * the task index + 1 in the lower 14 bits, so that 0 means "empty". The key
 * is the application's slot (8 bits) and the slot's generation (10 bits):
 * stale table entries of an application alias a new one only after 1024
 * reuses of its slot, and the module clears the table when a generation
 * wraps (see cdsm_app.c). 14 bits hold the largest max_tasks (cdsm_params.h).
 */
#define CDSM_SHARER_APP_SHIFT 14
#define CDSM_MAX_TASK_INDEX 0x3ffe

/**
 * cdsm_sharer() - encode a sharer id.
 * @app_key:	18-bit application key (slot and generation).
 * @task_idx:	dense task index in the application, <= CDSM_MAX_TASK_INDEX.
 *
 * Return: the non-zero sharer id.
 */
static inline u32 cdsm_sharer(u32 app_key, u32 task_idx)
{
	return (app_key << CDSM_SHARER_APP_SHIFT) | (task_idx + 1);
}

/**
 * cdsm_sharer_app() - application key of a sharer id.
 * @sharer:	a non-zero sharer id.
 *
 * Return: the application key.
 */
static inline u32 cdsm_sharer_app(u32 sharer)
{
	return sharer >> CDSM_SHARER_APP_SHIFT;
}

/**
 * cdsm_sharer_task() - task index of a sharer id.
 * @sharer:	a non-zero sharer id.
 *
 * Return: the task index.
 */
static inline u32 cdsm_sharer_task(u32 sharer)
{
	return (sharer & ((1U << CDSM_SHARER_APP_SHIFT) - 1)) - 1;
}

/**
 * struct cdsm_fault_raw - a fault of a tracked task as the fault path saw
 * it, at the entry of handle_mm_fault(): what the fault maps is not known
 * yet; the worker looks it up later (cdsm_fault_resolve()).
 * @vaddr:	the faulting user address.
 * @mm:		the task's mm at the fault, as a key only (never
 *		dereferenced): the worker looks @vaddr up in the same mm.
 * @entry_paddr: physical address of the faulting byte at entry, if a frame
 *		was mapped (@entry_shift), else 0.
 * @file:	id of the file of a shared mapping (cdsm_file_id()), whose
 *		home rule applies; 0 for private memory.
 * @file_ns:	with @file, when the fault started (ktime_get_mono_fast_ns():
 *		orders faults recorded on different CPUs); else 0.
 * @sharer:	cdsm_sharer() of the faulting task.
 * @entry_shift: log2 of the size of the page mapped at entry, 0 if none.
 * @flags:	CDSM_RAW_*.
 * @pad:	unused.
 */
struct cdsm_fault_raw {
	u64 vaddr;
	u64 mm;
	u64 entry_paddr;
	u64 file;
	u64 file_ns;
	u32 sharer;
	u8 entry_shift;
	u8 flags;
	u16 pad;
};

/* A hinting fault: the entry was PROT_NONE (re-armed) and mapped @entry_paddr. */
#define CDSM_RAW_HINT		0x1
/* A migration entry stood there: the fault waited for the page, same data in a new frame. */
#define CDSM_RAW_MIGRATING	0x2
/* A private mapping: a frame it gets at this fault is new to it. */
#define CDSM_RAW_PRIVATE	0x4
/* A private file mapping: only its copied-on-write (anonymous) pages are recorded. */
#define CDSM_RAW_FILE_PRIVATE	0x8

/**
 * struct cdsm_frame - what the worker found mapped at a fault's address.
 * @paddr:	physical address of the faulting byte.
 * @shift:	log2 of the size of the page mapped there, 0 if nothing is.
 * @zero:	it is the zero page (a read of untouched memory).
 * @anon:	it is an anonymous page.
 * @cow_shared:	an anonymous page not exclusive to one process: shared
 *		copy-on-write since a fork (or merged by KSM).
 * @ident:	what the frame holds: cdsm_frame_ident() of its folio's mapping
 *		and index, which a migration keeps and a reuse changes.
 */
struct cdsm_frame {
	u64 paddr;
	u8 shift;
	bool zero;
	bool anon;
	bool cow_shared;
	u32 ident;
};

/* Bits of a block table tag: the block number + 1, then the frame's ident. */
#define CDSM_TAG_BLOCK_BITS 46
#define CDSM_TAG_IDENT_BITS (64 - CDSM_TAG_BLOCK_BITS)

u32 cdsm_frame_ident(u64 mapping, u64 index);

/**
 * struct cdsm_fault_rec - one fault, as the worker applies it.
 * @paddr:	physical address of the faulting byte.
 * @old_paddr:	its address before the fault if the kernel migrated the page
 *		on a hinting fault, else 0.
 * @file:	as cdsm_fault_raw.file.
 * @file_ns:	as cdsm_fault_raw.file_ns.
 * @sharer:	cdsm_sharer() of the faulting task.
 * @page_shift:	log2 of the size of the page mapped at @paddr (PAGE_SHIFT,
 *		or PMD_SHIFT for a huge page): the range whose blocks move with
 *		@old_paddr or are forgotten with @fresh.
 * @fresh:	the fault gave private memory a new frame (first touch or copy
 *		on write): what the table knows of that frame is stale.
 * @pad:	unused.
 * @ident:	as cdsm_frame.ident.
 */
struct cdsm_fault_rec {
	u64 paddr;
	u64 old_paddr;
	u64 file;
	u64 file_ns;
	u32 sharer;
	u8 page_shift;
	u8 fresh;
	u16 pad;
	u32 ident;
};

/**
 * enum cdsm_resolved - what cdsm_fault_resolve() made of a fault.
 * @CDSM_RESOLVED_RECORD:	a record to apply.
 * @CDSM_RESOLVED_SKIP:		memory through which no data passes (the zero
 *				page, a file's page-cache page in a private
 *				mapping, a page shared copy-on-write).
 * @CDSM_RESOLVED_GONE:		nothing is mapped there any more.
 */
enum cdsm_resolved {
	CDSM_RESOLVED_RECORD,
	CDSM_RESOLVED_SKIP,
	CDSM_RESOLVED_GONE,
};

enum cdsm_resolved cdsm_fault_resolve(const struct cdsm_fault_raw *raw,
				      const struct cdsm_frame *now,
				      struct cdsm_fault_rec *rec);

/**
 * struct cdsm_blocks - direct-mapped table of memory blocks.
 * @tags:		block number + 1 stored in each entry (0 when empty), and in
 *			the upper CDSM_TAG_IDENT_BITS the ident of the frame's data
 *			when its sharers were listed.
 * @sharers:		@nr_sharers sharer ids per entry, most recent first.
 * @nr_entries_log2:	log2 of the number of entries.
 * @nr_sharers:		sharers kept per entry, 1..CDSM_MAX_SHARERS.
 * @evictions:		entries that held another block when it was recorded.
 * @reused:		entries whose frame held other data when it was recorded
 *			than when its sharers were listed (their sharers dropped).
 */
struct cdsm_blocks {
	u64 *tags;
	u32 *sharers;
	unsigned int nr_entries_log2;
	unsigned int nr_sharers;
	u64 evictions;
	u64 reused;
};

size_t cdsm_blocks_mem_sz(unsigned int nr_entries_log2, unsigned int nr_sharers);
void cdsm_blocks_init(struct cdsm_blocks *b, void *mem,
		      unsigned int nr_entries_log2, unsigned int nr_sharers);
void cdsm_blocks_clear(struct cdsm_blocks *b);
void cdsm_blocks_forget(struct cdsm_blocks *b, u64 block);
void cdsm_blocks_move(struct cdsm_blocks *b, u64 from, u64 to);
unsigned int cdsm_blocks_record(struct cdsm_blocks *b, u64 block, u32 ident,
				u32 sharer, u32 *peers);

/**
 * struct cdsm_homes - the home of each shared file an application faulted
 * on: the first of its tasks that faulted on the file, by the faults' times
 * (the worker drains CPUs one after the other, so an earlier fault can be
 * recorded later). Open addressing with linear probing; at most 3/4 of the
 * entries are used.
 * @files:		file id (cdsm_fault_rec.file) per entry, 0 when empty.
 * @first_ns:		time of the home's fault, per entry.
 * @homes:		sharer id of the file's home, per entry.
 * @nr_entries_log2:	log2 of the number of entries.
 * @nr_used:		entries in use.
 * @nr_unhomed:		lookups of a new file that found the table full.
 */
struct cdsm_homes {
	u64 *files;
	u64 *first_ns;
	u32 *homes;
	unsigned int nr_entries_log2;
	unsigned int nr_used;
	u64 nr_unhomed;
};

size_t cdsm_homes_mem_sz(unsigned int nr_entries_log2);
void cdsm_homes_init(struct cdsm_homes *h, void *mem, unsigned int nr_entries_log2);
u32 cdsm_homes_get(struct cdsm_homes *h, u64 file, u32 sharer, u64 time_ns);
unsigned int cdsm_home_filter(u32 sharer, u32 home, u32 *peers, unsigned int n);

/**
 * struct cdsm_matrix - square matrix of communication events.
 * @cells:	@dim * @dim counters, row-major; (i, j) and (j, i) are equal.
 * @dim:	number of rows (task indices 0..dim-1).
 */
struct cdsm_matrix {
	u32 *cells;
	u32 dim;
};

/**
 * cdsm_matrix_mem_sz() - bytes needed by a matrix.
 * @dim:	number of rows.
 *
 * Return: @dim * @dim cells of 4 bytes.
 */
static inline size_t cdsm_matrix_mem_sz(u32 dim)
{
	return (size_t)dim * dim * sizeof(u32);
}

u32 cdsm_matrix_dim_for(u32 nr_tasks, u32 min_dim, u32 max_dim);
bool cdsm_matrix_add_pair(struct cdsm_matrix *m, u32 i, u32 j);
void cdsm_matrix_age(struct cdsm_matrix *m);
void cdsm_matrix_copy(struct cdsm_matrix *dst, const struct cdsm_matrix *src);

#endif /* _CDSM_CORE_H */

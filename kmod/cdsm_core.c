// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm core: faults resolved into records, blocks, sharers, matrices and
 * aging (see cdsm_core.h).
 *
 * A fault by task T on block B is recorded by putting T at the head of
 * B's list of recent sharers (the oldest falls off, as in the CDSM paper);
 * every other task of T's application found in the list is one
 * communication event for the pair.
 *
 * In a shared file (a shared-memory segment), only pairs with the file's
 * home count (cdsm_home_filter()): a transport whose segment belongs to
 * its receiver (Open MPI's vader: the receive queue and the sender's
 * reusable fragments live in one rank's segment) has every block there
 * touched by the owner and all of the owner's partners, and counting all
 * pairs of those would pair two ranks that only share a partner.
 */
#include <linux/hash.h>
#include <linux/string.h>

#include "cdsm_core.h"

/**
 * cdsm_fault_resolve() - turn a fault seen at entry and the frame found at
 * its address afterwards into a record.
 * @raw:	the fault at entry.
 * @now:	what is mapped at @raw->vaddr in @raw->mm now.
 * @rec:	the record, filled when the result is CDSM_RESOLVED_RECORD.
 *
 * The worker looks the frame up some milliseconds after the fault: if the
 * page was unmapped, migrated or copied meanwhile, @now is what the
 * process maps there then, not what the fault mapped.
 *
 * Return: what to do with the fault.
 */
enum cdsm_resolved cdsm_fault_resolve(const struct cdsm_fault_raw *raw,
				      const struct cdsm_frame *now,
				      struct cdsm_fault_rec *rec)
{
	bool hint = raw->flags & CDSM_RAW_HINT;
	bool private = raw->flags & CDSM_RAW_PRIVATE;

	if (!now->shift)
		return CDSM_RESOLVED_GONE;
	if (now->zero)
		return CDSM_RESOLVED_SKIP;
	/*
	 * A private file mapping maps the file's page-cache pages until
	 * written: every process that maps the file (a library's data, a
	 * program's read-only data) reads those; no task of the process can
	 * write them.
	 */
	if ((raw->flags & CDSM_RAW_FILE_PRIVATE) && !now->anon)
		return CDSM_RESOLVED_SKIP;
	/*
	 * Private memory shared copy-on-write with other processes (a fork's
	 * children before exec fault on their parent's re-armed pages): no
	 * process can write it without getting its own copy, so no data
	 * passes between processes there.
	 */
	if (private && now->cow_shared)
		return CDSM_RESOLVED_SKIP;
	rec->paddr = now->paddr;
	/* do_numa_page() may have migrated the page: its blocks move too. */
	rec->old_paddr = hint && raw->entry_paddr != now->paddr ? raw->entry_paddr : 0;
	rec->file = raw->file;
	rec->file_ns = raw->file_ns;
	rec->sharer = raw->sharer;
	rec->ident = now->ident;
	/* A huge page split since entry moved (or was allocated) in 4 KiB parts. */
	rec->page_shift = raw->entry_shift && raw->entry_shift < now->shift ?
			  raw->entry_shift : now->shift;
	/*
	 * Private memory got a new frame (first touch, or a copy on write):
	 * what the table knew of that frame came from its previous user. A
	 * fault that waited for a migration (as when a partner's hinting
	 * fault moves the page) maps the same data: the migrating fault
	 * carries its blocks over (@old_paddr).
	 */
	rec->fresh = private && !hint && !(raw->flags & CDSM_RAW_MIGRATING) &&
		     (!raw->entry_shift || raw->entry_paddr != now->paddr);
	rec->pad = 0;
	return CDSM_RESOLVED_RECORD;
}

/**
 * cdsm_blocks_mem_sz() - bytes needed by a block table.
 * @nr_entries_log2:	log2 of the number of entries.
 * @nr_sharers:		sharers kept per entry.
 *
 * Return: the size of the memory to pass to cdsm_blocks_init().
 */
size_t cdsm_blocks_mem_sz(unsigned int nr_entries_log2, unsigned int nr_sharers)
{
	size_t n = (size_t)1 << nr_entries_log2;

	return n * sizeof(u64) + n * nr_sharers * sizeof(u32);
}

/**
 * cdsm_blocks_init() - set up an empty block table in @mem.
 * @b:			the table.
 * @mem:		cdsm_blocks_mem_sz() bytes, 8-byte aligned.
 * @nr_entries_log2:	log2 of the number of entries.
 * @nr_sharers:		sharers kept per entry, 1..CDSM_MAX_SHARERS.
 */
void cdsm_blocks_init(struct cdsm_blocks *b, void *mem,
		      unsigned int nr_entries_log2, unsigned int nr_sharers)
{
	size_t n = (size_t)1 << nr_entries_log2;

	b->tags = mem;
	b->sharers = (u32 *)(b->tags + n);
	b->nr_entries_log2 = nr_entries_log2;
	b->nr_sharers = nr_sharers;
	cdsm_blocks_clear(b);
}

/**
 * cdsm_blocks_clear() - forget every block.
 * @b:	the table.
 */
void cdsm_blocks_clear(struct cdsm_blocks *b)
{
	memset(b->tags, 0, cdsm_blocks_mem_sz(b->nr_entries_log2, b->nr_sharers));
	b->evictions = 0;
	b->reused = 0;
}

/**
 * cdsm_frame_ident() - the identity of the data in a frame, as a tag keeps it.
 * @mapping:	its folio's mapping (an anon_vma or an address_space).
 * @index:	its folio's index there.
 *
 * A frame freed and used again (by another process, as another file's page,
 * as the target of another page's migration) holds other data, whatever the
 * order in which the worker learns of it: its sharers are not the new data's.
 *
 * Return: a hash of both, CDSM_TAG_IDENT_BITS bits wide.
 */
u32 cdsm_frame_ident(u64 mapping, u64 index)
{
	return hash_64(mapping ^ hash_64(index, 64 - CDSM_TAG_IDENT_BITS),
		       CDSM_TAG_IDENT_BITS);
}

/* The tag of @block, holding data @ident. */
static u64 cdsm_block_tag(u64 block, u32 ident)
{
	return (block + 1) | (u64)ident << CDSM_TAG_BLOCK_BITS;
}

/* Whether @tag is @block's, whatever data it held. */
static bool cdsm_tag_is(u64 tag, u64 block)
{
	return (tag & ((1ULL << CDSM_TAG_BLOCK_BITS) - 1)) == block + 1;
}

/**
 * cdsm_blocks_forget() - drop a block's sharers: its memory now holds other
 * data (a fresh page), so they no longer share anything there.
 * @b:		the table.
 * @block:	block number.
 */
void cdsm_blocks_forget(struct cdsm_blocks *b, u64 block)
{
	size_t e = hash_64(block, b->nr_entries_log2);

	if (cdsm_tag_is(b->tags[e], block))
		b->tags[e] = 0;
}

/**
 * cdsm_blocks_move() - carry a block's sharers to its new number, after the
 * kernel migrated its page: the old number may soon hold another page.
 * @b:		the table.
 * @from:	old block number.
 * @to:		new block number.
 */
void cdsm_blocks_move(struct cdsm_blocks *b, u64 from, u64 to)
{
	size_t e = hash_64(from, b->nr_entries_log2);
	size_t f = hash_64(to, b->nr_entries_log2);
	size_t sz = b->nr_sharers * sizeof(u32);

	u64 tag = b->tags[e];

	if (!cdsm_tag_is(tag, from)) {
		/* Nothing to carry, but what the new frame's blocks held is stale. */
		cdsm_blocks_forget(b, to);
		return;
	}
	if (b->tags[f] && !cdsm_tag_is(b->tags[f], to))
		b->evictions++;
	memmove(b->sharers + f * b->nr_sharers, b->sharers + e * b->nr_sharers, sz);
	b->tags[e] = 0;
	/* The data keeps its ident in its new frame. */
	b->tags[f] = cdsm_block_tag(to, tag >> CDSM_TAG_BLOCK_BITS);
}

/**
 * cdsm_blocks_record() - record an access of @sharer to @block.
 * @b:		the table.
 * @block:	block number (physical address >> block shift).
 * @ident:	cdsm_frame_ident() of the data in @block's frame now: sharers
 *		listed while the frame held other data are dropped.
 * @sharer:	the accessing task, from cdsm_sharer().
 * @peers:	room for @b->nr_sharers - 1 ids: the other tasks of the same
 *		application that accessed @block recently.
 *
 * Return: the number of ids stored in @peers.
 */
unsigned int cdsm_blocks_record(struct cdsm_blocks *b, u64 block, u32 ident,
				u32 sharer, u32 *peers)
{
	size_t e = hash_64(block, b->nr_entries_log2);
	u32 *list = b->sharers + e * b->nr_sharers;
	u64 tag = cdsm_block_tag(block, ident);
	unsigned int i, last, n = 0;

	if (b->tags[e] != tag) {
		if (!cdsm_tag_is(b->tags[e], block))
			b->evictions += !!b->tags[e];
		else
			b->reused++;
		b->tags[e] = tag;
		memset(list, 0, b->nr_sharers * sizeof(u32));
	}
	/* Find @sharer, or the oldest slot, which it then replaces. */
	last = b->nr_sharers - 1;
	for (i = 0; i < b->nr_sharers; i++) {
		if (list[i] == sharer) {
			last = i;
			continue;
		}
		if (list[i] && cdsm_sharer_app(list[i]) == cdsm_sharer_app(sharer))
			peers[n++] = list[i];
	}
	/*
	 * Every listed peer counts, the oldest too: it is a recent sharer at
	 * this access even though @sharer now pushes it out.
	 */
	memmove(list + 1, list, last * sizeof(u32));
	list[0] = sharer;
	return n;
}

/**
 * cdsm_homes_mem_sz() - bytes needed by a table of file homes.
 * @nr_entries_log2:	log2 of the number of entries.
 *
 * Return: the size of the memory to pass to cdsm_homes_init().
 */
size_t cdsm_homes_mem_sz(unsigned int nr_entries_log2)
{
	return ((size_t)1 << nr_entries_log2) * (2 * sizeof(u64) + sizeof(u32));
}

/**
 * cdsm_homes_init() - set up an empty table of file homes in @mem.
 * @h:			the table.
 * @mem:		cdsm_homes_mem_sz() bytes, 8-byte aligned.
 * @nr_entries_log2:	log2 of the number of entries, at least 2.
 */
void cdsm_homes_init(struct cdsm_homes *h, void *mem, unsigned int nr_entries_log2)
{
	size_t n = (size_t)1 << nr_entries_log2;

	h->files = mem;
	h->first_ns = h->files + n;
	h->homes = (u32 *)(h->first_ns + n);
	h->nr_entries_log2 = nr_entries_log2;
	h->nr_used = 0;
	h->nr_unhomed = 0;
	memset(mem, 0, cdsm_homes_mem_sz(nr_entries_log2));
}

/**
 * cdsm_homes_get() - the home of a file; @sharer becomes it if the file has
 * none yet, or if its fault came before the home's.
 * @h:		the table.
 * @file:	the file id, not 0.
 * @sharer:	the task whose fault on @file is being recorded.
 * @time_ns:	when that fault happened.
 *
 * Return: the home's sharer id, or 0 if @file is new and the table is full
 * (the file then has no home: all pairs count there).
 */
u32 cdsm_homes_get(struct cdsm_homes *h, u64 file, u32 sharer, u64 time_ns)
{
	size_t mask = ((size_t)1 << h->nr_entries_log2) - 1;
	size_t e = hash_64(file, h->nr_entries_log2);

	for (; h->files[e]; e = (e + 1) & mask) {
		if (h->files[e] != file)
			continue;
		if (time_ns < h->first_ns[e]) {
			h->homes[e] = sharer;
			h->first_ns[e] = time_ns;
		}
		return h->homes[e];
	}
	/* Keep a quarter free, so that probes stay short and end. */
	if (h->nr_used >= mask + 1 - ((mask + 1) >> 2)) {
		h->nr_unhomed++;
		return 0;
	}
	h->files[e] = file;
	h->first_ns[e] = time_ns;
	h->homes[e] = sharer;
	h->nr_used++;
	return sharer;
}

/**
 * cdsm_home_filter() - keep the pairs that count in a file with a home.
 * @sharer:	the faulting task.
 * @home:	the file's home (cdsm_homes_get()), 0 if none.
 * @peers:	the peers cdsm_blocks_record() found; filtered in place.
 * @n:		their number.
 *
 * The home pairs with every listed peer; another task pairs only with the
 * home, when the home is listed. Without a home every peer counts.
 *
 * Return: the number of peers left in @peers.
 */
unsigned int cdsm_home_filter(u32 sharer, u32 home, u32 *peers, unsigned int n)
{
	unsigned int i;

	if (!home || sharer == home)
		return n;
	for (i = 0; i < n; i++) {
		if (peers[i] == home) {
			peers[0] = home;
			return 1;
		}
	}
	return 0;
}

/**
 * cdsm_matrix_dim_for() - matrix size for a number of tasks.
 * @nr_tasks:	tasks the matrix must hold.
 * @min_dim:	smallest size (a power of two).
 * @max_dim:	largest size.
 *
 * Return: the smallest power of two >= @nr_tasks and @min_dim, at most
 * @max_dim.
 */
u32 cdsm_matrix_dim_for(u32 nr_tasks, u32 min_dim, u32 max_dim)
{
	u32 dim = min_dim;

	while (dim < nr_tasks && dim < max_dim)
		dim *= 2;
	return dim < max_dim ? dim : max_dim;
}

/**
 * cdsm_matrix_add_pair() - count one communication event of tasks @i and @j.
 * @m:	the matrix.
 * @i:	a task index.
 * @j:	another task index.
 *
 * Cells saturate at U32_MAX instead of wrapping.
 *
 * Return: false if an index is outside the matrix (nothing counted).
 */
bool cdsm_matrix_add_pair(struct cdsm_matrix *m, u32 i, u32 j)
{
	u32 *ij, *ji;

	if (i >= m->dim || j >= m->dim || i == j)
		return false;
	ij = &m->cells[(size_t)i * m->dim + j];
	ji = &m->cells[(size_t)j * m->dim + i];
	if (*ij != U32_MAX) {
		(*ij)++;
		(*ji)++;
	}
	return true;
}

/**
 * cdsm_matrix_age() - age every cell: M = M - (M >> 2).
 * @m:	the matrix.
 */
void cdsm_matrix_age(struct cdsm_matrix *m)
{
	size_t i, n = (size_t)m->dim * m->dim;

	for (i = 0; i < n; i++)
		m->cells[i] -= m->cells[i] >> 2;
}

/**
 * cdsm_matrix_copy() - copy @src into the top-left corner of @dst.
 * @dst:	a matrix at least as large as @src; the rest is zeroed.
 * @src:	the matrix to copy.
 */
void cdsm_matrix_copy(struct cdsm_matrix *dst, const struct cdsm_matrix *src)
{
	u32 i;

	memset(dst->cells, 0, cdsm_matrix_mem_sz(dst->dim));
	for (i = 0; i < src->dim && i < dst->dim; i++)
		memcpy(dst->cells + (size_t)i * dst->dim,
		       src->cells + (size_t)i * src->dim,
		       (src->dim < dst->dim ? src->dim : dst->dim) * sizeof(u32));
}

/* count_alloc.h - an allocator that counts, for the tests of memory
 * bounds and of allocations once warm.
 *
 *     counting                 the allocator (struct ipt_allocator)
 *     nalloc                   allocations made
 *     live, peak               bytes allocated and not freed; the most
 *                              of them at once
 *
 * A test sets the counts to zero where it starts to count. */
#ifndef COUNT_ALLOC_H
#define COUNT_ALLOC_H

#include "ipt.h"

#include <stdlib.h>

static unsigned long nalloc;
static size_t live, peak;

static void *count_alloc(void *context, size_t size)
{
	(void) context;
	nalloc += 1;
	live += size;
	if (live > peak)
		peak = live;
	return malloc(size);
}

static void count_free(void *context, void *ptr, size_t size)
{
	(void) context;
	live -= size;
	free(ptr);
}

static const struct ipt_allocator counting = {
	count_alloc, count_free, NULL, NULL
};

#endif

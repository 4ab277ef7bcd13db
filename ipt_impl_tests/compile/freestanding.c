/* freestanding.c - ipt.h as a hypervisor or firmware would build it.
 *
 * No libc: IPT_NO_STDIO, and every hook ipt.h has is the caller's.  Built
 * with -ffreestanding -nostdlib -fno-builtin (ipt.h tells Zydis' headers,
 * with ZYAN_NO_LIBC) into an object whose undefined symbols the embed-check
 * script compares with what is allowed: these hooks and Zydis. */
#include <stddef.h>

void *hv_malloc(size_t size);
void *hv_realloc(void *ptr, size_t size);
void hv_free(void *ptr);
void *hv_memcpy(void *dst, const void *src, size_t size);
void *hv_memset(void *dst, int c, size_t size);
int hv_memcmp(const void *a, const void *b, size_t size);

#define IPT_MALLOC(n) hv_malloc(n)
#define IPT_REALLOC(p, n) hv_realloc(p, n)
#define IPT_FREE(p) hv_free(p)
#define IPT_MEMCPY(d, s, n) hv_memcpy(d, s, n)
#define IPT_MEMSET(d, c, n) hv_memset(d, c, n)
#define IPT_MEMCMP(a, b, n) hv_memcmp(a, b, n)
#define IPT_NO_STDIO
#define IPT_IMPLEMENTATION
#include "ipt.h"

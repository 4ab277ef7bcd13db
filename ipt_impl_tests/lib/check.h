/* check.h - the unit tests' checks.
 *
 *     CHECK(cond)              counts a pass or prints the failure
 *     CHECK_EQ(a, b)           integers, printed on failure
 *     bytes_are(p, from, to, b) whether bytes [from, to) of p are all b
 *     check_rand()             a pseudo-random number, 24 bits: the same
 *                              sequence everywhere from check_seed
 *     return check_done();     prints "N passed, N failed"; exit status
 */
#ifndef IPT_CHECK_H
#define IPT_CHECK_H

#include <inttypes.h>
#include <stdio.h>

static unsigned long check_passed, check_failed;

static int check_report(int ok, const char *file, int line, const char *what)
{
	if (ok) {
		check_passed++;
		return 1;
	}
	check_failed++;
	fprintf(stdout, "FAIL %s:%d: %s\n", file, line, what);
	return 0;
}

#define CHECK(cond) check_report(!!(cond), __FILE__, __LINE__, #cond)

#define CHECK_EQ(a, b)                                                       \
	do {                                                                 \
		long long check_a_ = (long long) (a);                        \
		long long check_b_ = (long long) (b);                        \
		if (!check_report(check_a_ == check_b_, __FILE__, __LINE__,  \
				  #a " == " #b))                             \
			fprintf(stdout, "     %lld (0x%llx) != %lld (0x%llx)\n", \
				check_a_, (unsigned long long) check_a_,     \
				check_b_, (unsigned long long) check_b_);    \
	} while (0)

#if defined(__GNUC__)
__attribute__((unused))
#endif
static int bytes_are(const void *p, size_t from, size_t to, int byte)
{
	const unsigned char *bytes = (const unsigned char *) p;

	for (; from < to; ++from)
		if (bytes[from] != (unsigned char) byte)
			return 0;
	return 1;
}

/* A linear congruential generator: a test sets check_seed once and gets
 * the same inputs on every machine and in every build. */
static uint32_t check_seed = 1;

#if defined(__GNUC__)
__attribute__((unused))
#endif
static uint32_t check_rand(void)
{
	check_seed = check_seed * 1103515245u + 12345u;
	return check_seed >> 8;
}

static int check_done(void)
{
	printf("%lu passed, %lu failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif

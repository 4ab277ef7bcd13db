/* static_main.c - IPT_STATIC in two translation units, and libipt, in one
 * program.
 *
 * static_tu.c is compiled twice (TU=a, TU=b), each a private copy of ipt.h,
 * and once more on Debian's libipt 2.0.5 (TU=libipt).  All three decode the same
 * traces, packets and instructions: the two ipt.h copies must agree
 * exactly, and with libipt on these cases, which use nothing libipt 2.0.5
 * lacks.
 *
 *     static CONFORMANCE
 */
#include "static_api.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>

#include "cases.h"

enum { max_items = 1 << 16 };

static const char *const names[] = {
	"loop-tnt",
	"call_direct-ret_compressed",
	"int-iret",
	"loop-tnt-64",
	"fup-tip",
	"call_indirect-ret_compressed",
};

static int same(const uint64_t *x, int nx, const uint64_t *y, int ny)
{
	return nx == ny && nx >= 0 && !memcmp(x, y, (size_t) nx * sizeof(*x));
}

int main(int argc, char **argv)
{
	const char *conf = argc > 1 ? argv[1] : "ipt_impl_tests/conformance/corpus";
	uint64_t *a = (uint64_t *) malloc(max_items * sizeof(*a));
	uint64_t *b = (uint64_t *) malloc(max_items * sizeof(*b));
	uint64_t *l = (uint64_t *) malloc(max_items * sizeof(*l));
	size_t i;

	if (!a || !b || !l)
		return 2;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
		struct static_code code;
		struct hcase c;
		int na, nb, nl;

		if (!CHECK(hcase_load(&c, conf, names[i]) == 0))
			continue;
		na = a_packets(c.trace, c.tsize, a, max_items);
		nb = b_packets(c.trace, c.tsize, b, max_items);
		nl = libipt_packets(c.trace, c.tsize, l, max_items);
		printf("%s: %d, %d and %d packets\n", c.name, na, nb, nl);
		CHECK(na > 0);
		CHECK(same(a, na, b, nb));
		CHECK(same(a, na, l, nl));

		code.bytes = c.image;
		code.size = c.isize;
		code.base = c.base;
		na = a_insns(c.trace, c.tsize, &code, a, max_items);
		nb = b_insns(c.trace, c.tsize, &code, b, max_items);
		nl = libipt_insns(c.trace, c.tsize, &code, l, max_items);
		printf("%s: %d, %d and %d instructions\n", c.name, na, nb, nl);
		CHECK(na > 0);
		CHECK(same(a, na, b, nb));
		CHECK(same(a, na, l, nl));
		hcase_free(&c);
	}
	free(a);
	free(b);
	free(l);
	return check_done();
}

/* t_hv_fault [CORPUS_DIR|--synth DIR]...: a missing page is a pause.
 *
 * Every ptxed case of each conformance corpus (its MANIFEST) and each
 * ptsynth directory (image.txt, trace.pt, trace.cfg) is decoded with the
 * block and with the instruction decoder over a read-memory callback: once
 * with all code present, then several times with a random part of the
 * pages missing at first.  Each time a decoder stops at a missing page,
 * the page is made readable and decoding goes on; the output must be that
 * of the decode with all code present, item for item. */
#include "hv_cases.h"

#include <stdint.h>

static unsigned long total_faults;

static void decode(struct hv_out *o, struct hcase *c, int blk,
		   unsigned pct, uint64_t seed)
{
	struct pt_image *image = pt_image_alloc(NULL);

	c->mem.pct = pct;
	c->mem.seed = seed;
	c->mem.nreleased = 0;
	c->mem.faults = 0;
	c->mem.image = image;
	pt_image_set_callback(image, gmem_read, &c->mem);
	memset(o, 0, sizeof(*o));
	if (blk)
		hv_run_blk(o, &c->config, image, &c->mem);
	else
		hv_run_insn(o, &c->config, image, &c->mem);
	total_faults += c->mem.faults;
	pt_image_free(image);
}

static void run_case(struct hcase *c)
{
	static const unsigned pcts[] = { 10, 50, 100 };
	int blk;

	for (blk = 0; blk < 2; ++blk) {
		struct hv_out whole;
		size_t k;

		decode(&whole, c, blk, 0, 0);
		for (k = 0; k < sizeof(pcts) / sizeof(pcts[0]); ++k) {
			uint64_t seed;

			for (seed = 1; seed <= 2; ++seed) {
				struct hv_out parts;
				long at;

				decode(&parts, c, blk, pcts[k], seed);
				at = hv_out_diff(&whole, &parts);
				if (!CHECK(at < 0))
					printf("     %s %s, %u%% missing, "
					       "seed %llu: item %ld of %zu\n",
					       c->name, blk ? "blk" : "insn",
					       pcts[k],
					       (unsigned long long) seed, at,
					       whole.n);
				free(parts.h);
			}
		}
		free(whole.h);
	}
}

int main(int argc, char **argv)
{
	hv_cases(argc, argv, run_case);
	/* The pages withheld must have made the decoders stop. */
	CHECK(total_faults > 0);
	printf("%lu faults resumed\n", total_faults);
	return check_done();
}

/* t_hv_fault [CORPUS_DIR|--synth DIR]...: a missing page is a pause.
 *
 * Every ptxed case of each conformance corpus (its MANIFEST) and each
 * ptsynth directory (image.txt, trace.pt, trace.cfg) is decoded with the
 * block and with the instruction decoder over a read-memory callback: once
 * with all code present, then several times with a random part of the
 * pages missing at first.  Each time a decoder stops at a missing page,
 * the page is made readable and decoding goes on; the output must be that
 * of the decode with all code present, item for item.  After an error the
 * decoders synchronize forward, and again resynchronize (pt_*_resync) as
 * ptxed does, which must wait for missing code as well.
 *
 * pt_*_resync reads code itself where the SKD022 workaround asks whether
 * an asynchronous disable points at a VMLAUNCH: a small trace makes it
 * do so with that code missing at first. */
#include "hv_cases.h"
#include "blk_util.h"

#include <stdint.h>

static unsigned long total_faults, resync_faults;

static void decode(struct hv_out *o, struct hcase *c, int blk, int resync,
		   unsigned pct, uint64_t seed)
{
	struct pt_image *image = pt_image_alloc(NULL);

	c->mem.pct = pct;
	c->mem.seed = seed;
	c->mem.nreleased = 0;
	c->mem.faults = 0;
	c->mem.resync_faults = 0;
	c->mem.image = image;
	pt_image_set_callback(image, gmem_read, &c->mem);
	memset(o, 0, sizeof(*o));
	o->resync = resync;
	if (blk)
		hv_run_blk(o, &c->config, image, &c->mem);
	else
		hv_run_insn(o, &c->config, image, &c->mem);
	total_faults += c->mem.faults;
	resync_faults += c->mem.resync_faults;
	pt_image_free(image);
}

static void run_case(struct hcase *c)
{
	static const unsigned pcts[] = { 10, 50, 100 };
	int blk, resync;

	for (blk = 0; blk < 2; ++blk)
		for (resync = 0; resync < 2; ++resync) {
			struct hv_out whole;
			size_t k;

			decode(&whole, c, blk, resync, 0, 0);
			for (k = 0; k < sizeof(pcts) / sizeof(pcts[0]); ++k) {
				uint64_t seed;

				for (seed = 1; seed <= 2; ++seed) {
					struct hv_out parts;
					long at;

					decode(&parts, c, blk, resync,
					       pcts[k], seed);
					at = hv_out_diff(&whole, &parts);
					if (!CHECK(at < 0))
						printf("     %s %s%s, %u%% "
						       "missing, seed %llu: "
						       "item %ld of %zu\n",
						       c->name,
						       blk ? "blk" : "insn",
						       resync ? " resync" : "",
						       pcts[k],
						       (unsigned long long)
							       seed,
						       at, whole.n);
					free(parts.h);
				}
			}
			free(whole.h);
		}
}

/* PSB+ enabled at 0x1000 (jmp *%rax), a TNT where it wants a TIP: an
 * error; resynchronizing meets FUP 0x5000, TIP.PGD with a VMLAUNCH at
 * 0x5000, which SKD022 makes a synchronous disable. */
static void resync_skd022(void)
{
	static const uint8_t jmp_rax[] = { 0xff, 0xe0 };
	static const uint8_t vmlaunch[] = { 0x0f, 0x01, 0xc2 };
	static struct tb t;
	struct pt_config *config;
	int blk, pct;

	tb_init(&t);
	t.config.errata.skd022 = 1;
	tb_start64(&t, 0x1000);
	tb_tnt(&t, 1, 1);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x5000);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	config = tb_done(&t);
	if (!CHECK(t.errors == 0))
		return;

	for (blk = 0; blk < 2; ++blk) {
		struct hv_out out[2];

		for (pct = 0; pct < 2; ++pct) {
			struct pt_image *image = pt_image_alloc(NULL);
			struct gmem m;

			memset(&m, 0, sizeof(m));
			gmem_add(&m, 0x1000, jmp_rax, sizeof(jmp_rax));
			gmem_add(&m, 0x5000, vmlaunch, sizeof(vmlaunch));
			/* Every page is missing at first. */
			m.pct = pct ? 100 : 0;
			m.image = image;
			pt_image_set_callback(image, gmem_read, &m);
			memset(&out[pct], 0, sizeof(out[pct]));
			out[pct].resync = 1;
			if (blk)
				hv_run_blk(&out[pct], config, image, &m);
			else
				hv_run_insn(&out[pct], config, image, &m);
			if (pct)
				CHECK_EQ(m.resync_faults, 1);
			pt_image_free(image);
			free(m.released);
		}
		CHECK(out[0].n >= 2);
		CHECK(hv_out_diff(&out[0], &out[1]) < 0);
		free(out[0].h);
		free(out[1].h);
	}
}

int main(int argc, char **argv)
{
	resync_skd022();
	hv_cases(argc, argv, run_case);
	/* The pages withheld must have made the decoders stop. */
	CHECK(total_faults > 0);
	printf("%lu faults resumed, %lu of them in pt_*_resync\n",
	       total_faults, resync_faults);
	return check_done();
}

/* Coverage decoder harness: the block harness's input (fuzz_blk.c: the
 * common header, a code image, the trace), decoded by ipt_cov_* and, as
 * the reference, by a block decoder whose blocks and events give the edges
 * (../unit/cov/cov_oracle.h).  The two edge lists must be the same, on the
 * first pass and again on the same, warm decoder, and a third time with
 * the TNT memo switched (off, or down to 16 entries), the bitmap must
 * be the documented function of the edges, and the errors counted must
 * be the reference's (giving up on code that runs without trace, as
 * IPT_COV_IDLE_MAX says, among them).
 *
 * The read callback must not fail at random here (both decoders must see
 * the same memory): fz_flaky_reads is ignored.  Header bits pick the
 * bitmap options: fz_unknown_cb's neighbour dflags bit 0 saturates, bit 1
 * selects libxdc's mode, bit 2 starts without the TNT memo; bit 3 filters
 * both decoders to one address space (ipt_cov_set_cr3_filter,
 * ipt_blk_set_cr3_filter; fz_pip_cr3 picks it). */
#include "fuzz.h"
#include "../unit/cov/cov_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t map[1 << 12], expect[1 << 12];
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 }, part = { 0, 0, 0 };
	struct ipt_cov_decoder *cov = NULL;
	struct ipt_cov_config cc;
	struct pt_image *image = NULL;
	struct pt_config config;
	struct fz_header h;
	struct fz_image img;
	struct fz in;
	uint8_t *trace;
	size_t tsize;
	uint64_t cr3;
	unsigned stuck = 0;
	uint64_t before = 0;
	int pass, errors;

	fz_init(&in, data, size);
	fz_header(&in, &h);
	pt_config_init(&config);
	fz_image_read(&in, &h, &img, &config);
	img.flags &= (uint8_t) ~fz_flaky_reads;
	trace = fz_copy(&in, in.n, &tsize);
	{
		struct pt_conf_addr_filter filter = config.addr_filter;

		fz_config(&h, &config, trace, tsize);
		config.addr_filter = filter;
	}
	cr3 = (h.dflags & 8) ? fz_pip_cr3(&config, h.sync_offset) :
			       pt_asid_no_cr3;

	image = ipt_image_alloc_with("fuzz", fz_allocator());
	if (!image || pt_image_set_callback(image, fz_read_memory, &img) < 0)
		goto out;

	memset(&cc, 0, sizeof(cc));
	cc.edge = olist_on_edge;
	cc.context = &got;
	if (h.dflags & 1)
		cc.flags |= ipt_cov_saturate;
	if (h.dflags & 2)
		cc.flags |= ipt_cov_libxdc;
	cov = ipt_cov_alloc_decoder_with(&config, &cc, fz_allocator());
	if (!cov)
		goto out;
	if (ipt_cov_set_image(cov, image) < 0 ||
	    ipt_cov_set_bitmap(cov, map, sizeof(map)) < 0 ||
	    ((h.dflags & 4) && ipt_cov_set_memo_limit(cov, 0) < 0))
		fz_fail("cannot set up the coverage decoder", 0, 0);

	if ((h.dflags & 8) && ipt_cov_set_cr3_filter(cov, cr3) < 0)
		fz_fail("cannot set the CR3 filter", 0, 0);
	errors = oracle_edges_stuck(&want, &config, image, fz_read_memory,
				    &img, cr3, &stuck);
	if (errors < 0)
		goto out;
	olist_filter(&part, &want, (cc.flags & ipt_cov_libxdc) ?
		     (uint32_t) (ipt_cov_taken | ipt_cov_not_taken) :
		     (uint32_t) ipt_cov_all);
	memset(expect, 0, sizeof(expect));
	olist_bitmap(expect, sizeof(expect), &part,
		     (cc.flags & ipt_cov_saturate) &&
		     !(cc.flags & ipt_cov_libxdc));

	for (pass = 0; pass < 3; ++pass) {
		long at;

		if (pass == 2 &&
		    ipt_cov_set_memo_limit(cov, (h.dflags & 4) ? 16 << 10 : 0) < 0)
			fz_fail("cannot switch the TNT memo", pass, 0);
		got.n = 0;
		if (ipt_cov_set_trace(cov, trace, trace + tsize, 1) < 0 ||
		    ipt_cov_decode(cov) < 0)
			fz_fail("coverage decode failed", pass, 0);
		at = olist_diff(&got, &part);
		if (at >= 0) {
			long i;

			for (i = 0; i <= at + 2; ++i)
				fprintf(stderr, "%ld: got %llx->%llx %x, "
					"want %llx->%llx %x\n", i,
					(size_t) i < got.n ? (unsigned long long) got.e[i].from : 0ull,
					(size_t) i < got.n ? (unsigned long long) got.e[i].to : 0ull,
					(size_t) i < got.n ? got.e[i].kind : 0u,
					(size_t) i < part.n ? (unsigned long long) part.e[i].from : 0ull,
					(size_t) i < part.n ? (unsigned long long) part.e[i].to : 0ull,
					(size_t) i < part.n ? part.e[i].kind : 0u);
		}
		if (at >= 0)
			fz_fail("edge differs from the block decoder's", pass,
				at);
		if (memcmp(map, expect, sizeof(map)))
			fz_fail("bitmap differs", pass, 0);

		/* Code that ran without trace until the decoder gave up
		 * (-pte_bad_query; the oracle counts where) costs the most;
		 * once is enough. */
		{
			struct ipt_cov_status st;

			if (ipt_cov_get_status(cov, &st) < 0)
				fz_fail("no status", 0, 0);
			if (st.errors - before != (uint64_t) errors)
				fz_fail("errors differ from the block "
					"decoder's",
					pass, (long) (st.errors - before));
			before = st.errors;
			if (stuck || st.first_error == -pte_bad_query ||
			    st.last_error == -pte_bad_query)
				break;
		}
	}

out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	free(img.code);
	free(trace);
	free(want.e);
	free(got.e);
	free(part.e);
	return 0;
}

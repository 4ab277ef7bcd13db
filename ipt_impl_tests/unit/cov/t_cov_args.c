/* t_cov_args - the coverage decoder with bad arguments, as its
 * declaration says: ipt_cov_alloc_decoder* return NULL for a missing or
 * invalid configuration, too many ranges, an allocator without alloc or
 * free, and memory that runs out at either allocation; set_bitmap
 * -pte_invalid for a size that is not a power of two; the others
 * -pte_invalid (NULL for ipt_cov_get_image) without a decoder.  The
 * image set is the image got; a decoder that has not paused has no
 * fault (0). */

#include "ipt.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static int allocs, fail_at;

static void *fail_alloc(void *context, size_t size)
{
	(void) context;
	return allocs++ == fail_at ? NULL : malloc(size);
}

static void plain_free(void *context, void *ptr, size_t size)
{
	(void) context;
	(void) size;
	free(ptr);
}

int main(void)
{
	static uint8_t trace[] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				   0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				   0x02, 0x23 };
	struct ipt_cov_decoder *cov;
	struct ipt_cov_config cc;
	struct ipt_cov_status status;
	struct ipt_allocator a;
	struct pt_config config;
	struct ipt_fault fault;
	struct pt_image *image;
	uint8_t bitmap[64];
	int n;

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + sizeof(trace);
	memset(&cc, 0, sizeof(cc));

	CHECK(ipt_cov_alloc_decoder(NULL, &cc) == NULL);
	CHECK(ipt_cov_alloc_decoder(&config, NULL) == NULL);
	cc.nranges = ipt_cov_max_ranges + 1;
	CHECK(ipt_cov_alloc_decoder(&config, &cc) == NULL);
	cc.nranges = 0;
	config.begin = NULL;
	CHECK(ipt_cov_alloc_decoder(&config, &cc) == NULL);
	config.begin = trace;
	memset(&a, 0, sizeof(a));
	a.free = plain_free;
	CHECK(ipt_cov_alloc_decoder_with(&config, &cc, &a) == NULL);

	/* Every allocation of making a decoder fails in turn. */
	a.alloc = fail_alloc;
	for (n = 0;; ++n) {
		allocs = 0;
		fail_at = n;
		cov = ipt_cov_alloc_decoder_with(&config, &cc, &a);
		if (cov)
			break;
		CHECK(n < 16);
		if (n >= 16)
			break;
	}
	CHECK(n >= 1);
	ipt_cov_free_decoder(cov);
	ipt_cov_free_decoder(NULL);

	CHECK_EQ(ipt_cov_set_image(NULL, NULL), -pte_invalid);
	CHECK(ipt_cov_get_image(NULL) == NULL);
	CHECK_EQ(ipt_cov_set_bitmap(NULL, bitmap, sizeof(bitmap)),
		 -pte_invalid);
	CHECK_EQ(ipt_cov_set_trace(NULL, trace, trace + sizeof(trace), 1),
		 -pte_invalid);
	CHECK_EQ(ipt_cov_decode(NULL), -pte_invalid);
	CHECK_EQ(ipt_cov_get_status(NULL, &status), -pte_invalid);
	CHECK_EQ(ipt_cov_set_cache_limit(NULL, 0), -pte_invalid);
	CHECK_EQ(ipt_cov_get_fault(NULL, &fault, sizeof(fault)),
		 -pte_invalid);

	cov = ipt_cov_alloc_decoder(&config, &cc);
	CHECK(cov != NULL);
	if (!cov)
		return check_done();
	CHECK_EQ(ipt_cov_get_status(cov, NULL), -pte_invalid);
	CHECK_EQ(ipt_cov_get_fault(cov, NULL, sizeof(fault)), -pte_invalid);
	CHECK_EQ(ipt_cov_get_fault(cov, &fault, sizeof(fault)), 0);
	CHECK_EQ(ipt_cov_set_bitmap(cov, NULL, sizeof(bitmap)), -pte_invalid);
	CHECK_EQ(ipt_cov_set_bitmap(cov, bitmap, 0), -pte_invalid);
	CHECK_EQ(ipt_cov_set_bitmap(cov, bitmap, 48), -pte_invalid);
	CHECK_EQ(ipt_cov_set_bitmap(cov, bitmap, sizeof(bitmap)), 0);
	image = pt_image_alloc("cov");
	CHECK_EQ(ipt_cov_set_image(cov, image), 0);
	CHECK(ipt_cov_get_image(cov) == image);
	CHECK_EQ(ipt_cov_set_cache_limit(cov, 4096), 0);
	CHECK_EQ(ipt_cov_set_trace(cov, trace, trace + sizeof(trace), 1), 0);
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	return check_done();
}

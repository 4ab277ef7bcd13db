/* The block decoder over one trace with its code in file sections, compiled
 * twice: with -DUSE_LIBIPT against Debian's libipt (<intel-pt.h>, -lipt),
 * otherwise against ipt.h.  Prints every block (start, last instruction,
 * instruction count) and every error, resynchronizing
 * at the next PSB after an error; blk_diff.sh compares the two outputs.
 * Where libipt's block decoder ends its blocks depends on its block cache
 * (it ends a block after a near direct call the first time through, and
 * where the code leaves a section): this is what the comparison checks.
 *
 * Usage: blk_diff TRACE FILE:ADDR [call|jump] (FILE's bytes loaded at ADDR
 * through an image section cache, as ptxed --raw does; end blocks on near
 * calls or jumps). */
#ifdef USE_LIBIPT
#include <intel-pt.h>
#else
#include "ipt.h"
#endif

#include "cases.h"

#include <inttypes.h>

/* Events until none is pending; returns the last status.  Which events
 * there are differs between libipt versions; the blocks do not. */
static int events(struct pt_block_decoder *decoder, int status)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;

		status = pt_blk_event(decoder, &ev, sizeof(ev));
	}
	return status;
}

int main(int argc, char **argv)
{
	struct pt_image_section_cache *iscache;
	struct pt_block_decoder *decoder;
	struct pt_config config;
	uint64_t addr, blocks = 0;
	char file[4096], *colon;
	uint8_t *trace;
	size_t size;
	int status, isid;

	if (argc < 3 || !(trace = hcase_file(argv[1], &size))) {
		fprintf(stderr, "usage: blk_diff TRACE FILE:ADDR [call|jump]\n");
		return 2;
	}
	snprintf(file, sizeof(file), "%s", argv[2]);
	colon = strrchr(file, ':');
	if (!colon)
		return 2;
	*colon = 0;
	addr = strtoull(colon + 1, NULL, 0);

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + size;
	if (argc > 3 && !strcmp(argv[3], "call"))
		config.flags.variant.block.end_on_call = 1;
	if (argc > 3 && !strcmp(argv[3], "jump"))
		config.flags.variant.block.end_on_jump = 1;

	decoder = pt_blk_alloc_decoder(&config);
	iscache = pt_iscache_alloc(NULL);
	if (!decoder || !iscache)
		return 1;
	isid = pt_iscache_add_file(iscache, file, 0, UINT64_MAX, addr);
	if (isid < 0 || pt_image_add_cached(pt_blk_get_image(decoder), iscache,
					    isid, NULL) < 0) {
		fprintf(stderr, "blk_diff: cannot load %s\n", file);
		return 1;
	}

	for (;;) {
		status = pt_blk_sync_forward(decoder);
		if (status < 0) {
			printf("sync %d\n", status);
			break;
		}
		for (;;) {
			struct pt_block block;

			status = events(decoder, status);
			if (status < 0)
				break;
			status = pt_blk_next(decoder, &block, sizeof(block));
			if (block.ninsn || status < 0) {
				blocks += 1;
				printf("block %" PRIx64 " %" PRIx64 " %u\n",
				       block.ip, block.end_ip, block.ninsn);
			}
			if (status < 0)
				break;
		}
		printf("error %d\n", status);
		if (status == -pte_eos)
			break;
	}
	printf("%" PRIu64 " blocks\n", blocks);

	pt_blk_free_decoder(decoder);
	pt_iscache_free(iscache);
	free(trace);
	return 0;
}

/* More address spaces than the block decoder keeps cache contexts for
 * (8): twelve CR3s, each with code of its own at the same address, each
 * visited twice.  Every block must be the code of its own address space,
 * never one cached for another that reused its context slot; the same
 * with the caches limited to nothing. */
#include "blk_util.h"
#include "check.h"

enum { nspaces = 12 };

/* Even CR3 pages: 0x1000 nop; 0x1001 jmp rax.
 * Odd ones:       0x1000 nop; 0x1001 nop; 0x1002 jmp rax. */
static int read_code(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	static const uint8_t even[] = { 0x90, 0xff, 0xe0 };
	static const uint8_t odd[] = { 0x90, 0x90, 0xff, 0xe0 };
	const uint8_t *code = ((asid->cr3 >> 12) & 1) ? odd : even;
	size_t len = ((asid->cr3 >> 12) & 1) ? sizeof(odd) : sizeof(even);

	(void) context;
	if (ip < 0x1000 || ip >= 0x1000 + len)
		return -pte_nomap;
	if (size > len - (size_t) (ip - 0x1000))
		size = len - (size_t) (ip - 0x1000);
	memcpy(buffer, code + (ip - 0x1000), size);
	return (int) size;
}

/* The blocks of @l, one line each, without the events. */
static void blocks_of(char *out, size_t size, const struct log *l)
{
	const char *p = l->text;
	size_t n = 0;

	out[0] = 0;
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t) (eol - p) + 1 : strlen(p);

		if ((p[0] == 'b' || p[0] == 'x') && n + len < size) {
			memcpy(out + n, p, len);
			n += len;
			out[n] = 0;
		}
		p += len;
	}
}

int main(void)
{
	static char want[2048], got[2048];
	struct pt_block_decoder *d;
	struct pt_config *config;
	struct pt_image *image;
	struct log l;
	struct tb t;
	int round, k, limited;

	image = pt_image_alloc("spaces");
	CHECK(image != NULL);
	if (!image)
		return check_done();
	pt_image_set_callback(image, read_code, NULL);

	/* Tracing starts off; each time, a PIP sets the address space and
	 * TIP.PGE enables at 0x1000, where jmp rax disables again. */
	tb_init(&t);
	tb_simple(&t, ppt_psb);
	tb_simple(&t, ppt_psbend);
	want[0] = 0;
	for (round = 0; round < 2; ++round)
		for (k = 0; k < nspaces; ++k) {
			tb_pip(&t, (uint64_t) (k + 1) << 12);
			tb_mode_exec(&t, ptem_64bit);
			tb_ip(&t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
			tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
			strcat(want, ((k + 1) & 1) ? "b 1000 1002 3\n"
						   : "b 1000 1001 2\n");
		}
	config = tb_done(&t);
	CHECK_EQ(t.errors, 0);

	for (limited = 0; limited < 2; ++limited) {
		d = pt_blk_alloc_decoder(config);
		CHECK(d != NULL);
		if (!d)
			break;
		pt_blk_set_image(d, image);
		if (limited)
			CHECK_EQ(ipt_blk_set_cache_limit(d, 0), 0);
		run_blk_on(&l, d);
		pt_blk_free_decoder(d);
		blocks_of(got, sizeof(got), &l);
		if (!CHECK(!strcmp(got, want)))
			printf("---- got (cache limit %d):\n%s---- want:\n%s",
			       !limited, got, want);
	}

	pt_image_free(image);
	return check_done();
}

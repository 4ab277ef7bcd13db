/* Block boundaries as libipt's block decoder draws them over code in file
 * sections: its block cache ends a block after a near direct call the
 * first time through but not later, and after 0x400 instructions cached in
 * a row (here inside a straight line of nops, so that the block ends on an
 * ordinary instruction); over the read-memory callback blocks run on.  The instructions
 * are the same either way, and so are an instruction decoder's.  Built
 * with -DUSE_LIBIPT against libipt 2.3, this test passes as well. */
#include "blk_util.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

enum { BASE = 0x1000, SIZE = 0x1600, LONG = 0x2000, NNOPS = 0x500 };

/* 0x1000  call 0x1010
 * 0x1005  jmp rax
 * 0x1010  nop
 * 0x1011  ret
 * 0x1ff0  nop
 * 0x1ff1  nop
 * 0x1ff2  jmp 0x2000
 * 0x2000  0x500 nops
 * 0x2500  jmp rax */
static void make_code(uint8_t *code)
{
	static const uint8_t head[] = {
		0xe8, 0x0b, 0x00, 0x00, 0x00, 0xff, 0xe0
	};

	memset(code, 0xcc, SIZE);
	memcpy(code, head, sizeof(head));
	code[0x10] = 0x90;
	code[0x11] = 0xc3;
	code[LONG - 0x10 - BASE] = 0x90;
	code[LONG - 0xf - BASE] = 0x90;
	code[LONG - 0xe - BASE] = 0xeb;
	code[LONG - 0xd - BASE] = 0x0c;
	memset(code + (LONG - BASE), 0x90, NNOPS);
	code[LONG - BASE + NNOPS] = 0xff;
	code[LONG - BASE + NNOPS + 1] = 0xe0;
}

/* Twice through the call and its return, then twice through the nops. */
static struct pt_config *make_trace(struct tb *t)
{
	tb_init(t);
	tb_start64(t, BASE);
	tb_tnt(t, 1, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, BASE);
	tb_tnt(t, 1, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, LONG - 0x10);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, LONG - 0x10);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	return tb_done(t);
}

static const char *const events = "e enabled 1000\ne exec_mode 1000\n";

/* libipt's blocks over a file section: the first time through, the call
 * and the 0x400th instruction (the 0x3fdth nop) end blocks; the second
 * time they do not. */
static const char *const file_blocks =
	"b 1000 1000 1\n"
	"b 1010 1011 2\n"
	"b 1005 1005 1\n"
	"b 1000 1011 3\n"
	"b 1005 1005 1\n"
	"b 1ff0 23fc 1024\n"
	"b 23fd 2500 260\n"
	"b 1ff0 2500 1284\n"
	"e disabled 0\n";

/* Over the callback, blocks end only where trace is needed. */
static const char *const callback_blocks =
	"b 1000 1011 3\n"
	"b 1005 1005 1\n"
	"b 1000 1011 3\n"
	"b 1005 1005 1\n"
	"b 1ff0 2500 1284\n"
	"b 1ff0 2500 1284\n"
	"e disabled 0\n";

static int read_code(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	const uint8_t *code = (const uint8_t *) context;

	(void) asid;
	if (ip < BASE || ip >= BASE + SIZE)
		return -pte_nomap;
	if (size > BASE + SIZE - ip)
		size = (size_t) (BASE + SIZE - ip);
	memcpy(buffer, code + (ip - BASE), size);
	return (int) size;
}

/* The class of the first block over @image that ends at @end_ip; -1 if
 * none does. */
static int class_of_block(const struct pt_config *config,
			  struct pt_image *image, uint64_t end_ip)
{
	struct pt_block_decoder *d = pt_blk_alloc_decoder(config);
	int status, iclass = -1;

	if (!d)
		return -1;
	pt_blk_set_image(d, image);
	status = pt_blk_sync_set(d, 0);
	while (status >= 0 && iclass < 0) {
		struct pt_block b;

		while (status >= 0 && (status & pts_event_pending)) {
			struct pt_event ev;

			status = pt_blk_event(d, &ev, sizeof(ev));
		}
		if (status < 0)
			break;
		status = pt_blk_next(d, &b, sizeof(b));
		if (b.ninsn && b.end_ip == end_ip)
			iclass = b.iclass;
	}
	pt_blk_free_decoder(d);
	return iclass;
}

static void expect(struct log *l, const char *blocks, const char *name)
{
	char want[1024];

	snprintf(want, sizeof(want), "%s%s", events, blocks);
	CHECK(log_is(l, want, name));
}

int main(void)
{
	char path[] = "/tmp/t_blk_libipt.XXXXXX";
	struct pt_image_section_cache *iscache;
	struct pt_image *file_image, *cb_image;
	struct log lb, li, lc, lci;
	static uint8_t code[SIZE];
	struct pt_config *config;
	struct tb t;
	FILE *file;
	int fd, isid;

	make_code(code);
	fd = mkstemp(path);
	file = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!CHECK(file && fwrite(code, 1, SIZE, file) == SIZE))
		return check_done();
	fclose(file);

	config = make_trace(&t);
	CHECK_EQ(t.errors, 0);

	iscache = pt_iscache_alloc(NULL);
	file_image = pt_image_alloc("file");
	cb_image = pt_image_alloc("callback");
	isid = pt_iscache_add_file(iscache, path, 0, SIZE, BASE);
	CHECK(isid > 0);
	CHECK_EQ(pt_image_add_cached(file_image, iscache, isid, NULL), 0);
	CHECK_EQ(pt_image_set_callback(cb_image, read_code, code), 0);

	run_blk(&lb, config, file_image);
	expect(&lb, file_blocks, "blocks, file section");
	run_blk(&lc, config, cb_image);
	expect(&lc, callback_blocks, "blocks, callback");
	/* The block the fill ended on a nop ends on an ordinary
	 * instruction.  (A section cache of its own: libipt's block cache
	 * lives with the section, and the first decode filled it.) */
	{
		struct pt_image_section_cache *own = pt_iscache_alloc(NULL);
		struct pt_image *image = pt_image_alloc("own");
		int own_isid = pt_iscache_add_file(own, path, 0, SIZE, BASE);

		CHECK(own_isid > 0);
		CHECK_EQ(pt_image_add_cached(image, own, own_isid, NULL), 0);
		CHECK_EQ(class_of_block(config, image, LONG + 0x3fc),
			 ptic_other);
		pt_image_free(image);
		pt_iscache_free(own);
	}

#ifndef USE_LIBIPT
	/* The same with the trace's end at each of its bytes at first, more
	 * to come: a call that needs more is undone, with what it added to
	 * the record of libipt's cache, and made again. */
	CHECK_EQ(blk_stream_bad(config, file_image, "blocks, file section"),
		 0);
#endif

	/* An instruction decoder sees the same instructions either way. */
	run_insn(&li, config, file_image);
	run_insn(&lci, config, cb_image);
	CHECK(log_is(&li, lci.text, "instructions, file section"));
	CHECK(strstr(li.text, "i 2500 2\n") != NULL);

	pt_image_free(file_image);
	pt_image_free(cb_image);
	pt_iscache_free(iscache);
	unlink(path);
	return check_done();
}

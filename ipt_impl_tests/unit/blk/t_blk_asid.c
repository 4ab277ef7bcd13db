/* Address spaces and sections: code that differs by CR3 at the same
 * address is decoded from the right image section (and never from the
 * cache of another address space), an instruction split between two
 * sections comes out truncated, its bytes in the block, and instructions
 * carry the section they lie in. */
#include "blk_util.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

/* Write @size bytes to a new temporary file; its name goes to @name. */
static int write_temp(char *name, size_t max, const uint8_t *bytes,
		      size_t size)
{
	int fd;

	snprintf(name, max, "/tmp/t_blk_asid.XXXXXX");
	fd = mkstemp(name);
	if (fd < 0)
		return -1;
	if (write(fd, bytes, size) != (ssize_t) size) {
		close(fd);
		unlink(name);
		return -1;
	}
	close(fd);
	return 0;
}

static void test_asid(void)
{
	/* cr3 0x1000: nop; nop; jmp rax    cr3 0x2000: nop; jmp rax */
	static const uint8_t code_a[] = { 0x90, 0x90, 0xff, 0xe0 };
	static const uint8_t code_b[] = { 0x90, 0xff, 0xe0 };
	char file_a[64], file_b[64];
	struct pt_asid asid;
	struct pt_image *image;
	struct pt_config *config;
	struct log l;
	struct tb t;

	CHECK_EQ(write_temp(file_a, sizeof(file_a), code_a, sizeof(code_a)),
		 0);
	CHECK_EQ(write_temp(file_b, sizeof(file_b), code_b, sizeof(code_b)),
		 0);

	image = pt_image_alloc("asid");
	pt_asid_init(&asid);
	asid.cr3 = 0x1000;
	CHECK(pt_image_add_file(image, file_a, 0, sizeof(code_a), &asid,
				0x1000) >= 0);
	asid.cr3 = 0x2000;
	CHECK(pt_image_add_file(image, file_b, 0, sizeof(code_b), &asid,
				0x1000) >= 0);

	/* Run in cr3 0x1000, disable, switch to cr3 0x2000, run the same
	 * addresses again. */
	tb_init(&t);
	tb_simple(&t, ppt_psb);
	tb_pip(&t, 0x1000);
	tb_mode_exec(&t, ptem_64bit);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x1000);
	tb_simple(&t, ppt_psbend);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	tb_pip(&t, 0x2000);
	tb_ip(&t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	config = tb_done(&t);
	CHECK_EQ(t.errors, 0);

	run_blk(&l, config, image);
	CHECK(log_is(&l,
		     "e enabled 1000\n"
		     "e async_paging 1000\n"
		     "e exec_mode 1000\n"
		     "b 1000 1002 3\n"
		     "e disabled 0\n"
		     "e paging 0\n"
		     "e enabled 1000\n"
		     "b 1000 1001 2\n"
		     "e disabled 0\n", "asid blocks"));

	run_insn(&l, config, image);
	CHECK(log_is(&l,
		     "e enabled 1000\n"
		     "e async_paging 1000\n"
		     "e exec_mode 1000\n"
		     "i 1000 1\ni 1001 1\ni 1002 2\n"
		     "e disabled 0\n"
		     "e paging 0\n"
		     "e enabled 1000\n"
		     "i 1000 1\ni 1001 2\n"
		     "e disabled 0\n", "asid instructions"));

	pt_image_free(image);
	unlink(file_a);
	unlink(file_b);
}

/* 0x1000 nop; 0x1001 mov rbx, rax (48 89 c3); 0x1004 jmp rax, with the
 * first section ending after 48 89. */
static void test_truncated(void)
{
	static const uint8_t part_a[] = { 0x90, 0x48, 0x89 };
	static const uint8_t part_b[] = { 0xc3, 0xff, 0xe0 };
	char file_a[64], file_b[64];
	struct pt_block_decoder *bd;
	struct pt_insn_decoder *id;
	struct pt_image *image;
	struct pt_config *config;
	struct pt_block b;
	struct pt_insn insn;
	struct pt_event ev;
	struct log l;
	struct tb t;
	int status, isid_a, isid_b;

	CHECK_EQ(write_temp(file_a, sizeof(file_a), part_a, sizeof(part_a)),
		 0);
	CHECK_EQ(write_temp(file_b, sizeof(file_b), part_b, sizeof(part_b)),
		 0);

	image = pt_image_alloc("truncated");
	isid_a = pt_image_add_file(image, file_a, 0, sizeof(part_a), NULL,
				   0x1000);
	isid_b = pt_image_add_file(image, file_b, 0, sizeof(part_b), NULL,
				   0x1003);
	CHECK(isid_a >= 0 && isid_b >= 0);

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	config = tb_done(&t);
	CHECK_EQ(t.errors, 0);

	run_blk(&l, config, image);
	CHECK(log_is(&l,
		     "e enabled 1000\n"
		     "e exec_mode 1000\n"
		     "b 1000 1001 2 t\n"
		     "b 1004 1004 1\n"
		     "e disabled 0\n", "truncated blocks"));

	run_insn(&l, config, image);
	CHECK(log_is(&l,
		     "e enabled 1000\n"
		     "e exec_mode 1000\n"
		     "i 1000 1\ni 1001 3\ni 1004 2\n"
		     "e disabled 0\n", "truncated instructions"));

	/* The block's fields. */
	bd = pt_blk_alloc_decoder(config);
	CHECK(bd != NULL);
	if (bd) {
		pt_blk_set_image(bd, image);
		status = pt_blk_sync_forward(bd);
		while (status >= 0 && (status & pts_event_pending))
			status = pt_blk_event(bd, &ev, sizeof(ev));
		status = pt_blk_next(bd, &b, sizeof(b));
		CHECK_EQ(status, 0);
		CHECK_EQ(b.truncated, 1);
		CHECK_EQ(b.size, 3);
		CHECK(memcmp(b.raw, "\x48\x89\xc3", 3) == 0);
		CHECK_EQ(b.isid, isid_a);
		CHECK_EQ(b.iclass, ptic_other);
		CHECK_EQ(b.mode, ptem_64bit);

		status = pt_blk_next(bd, &b, sizeof(b));
		CHECK_EQ(b.truncated, 0);
		CHECK_EQ(b.isid, isid_b);
		CHECK_EQ(b.ninsn, 1);
		pt_blk_free_decoder(bd);
	}

	/* The instruction's fields. */
	id = pt_insn_alloc_decoder(config);
	CHECK(id != NULL);
	if (id) {
		pt_insn_set_image(id, image);
		status = pt_insn_sync_forward(id);
		while (status >= 0 && (status & pts_event_pending))
			status = pt_insn_event(id, &ev, sizeof(ev));
		status = pt_insn_next(id, &insn, sizeof(insn));
		CHECK_EQ(insn.isid, isid_a);
		/* Events come between blocks only. */
		CHECK_EQ(pt_insn_event(id, &ev, sizeof(ev)), -pte_bad_query);
		status = pt_insn_next(id, &insn, sizeof(insn));
		CHECK_EQ(status, 0);
		CHECK_EQ(insn.ip, 0x1001);
		CHECK_EQ(insn.size, 3);
		CHECK(memcmp(insn.raw, "\x48\x89\xc3", 3) == 0);
		CHECK_EQ(insn.isid, isid_a);
		CHECK_EQ(insn.iclass, ptic_other);
		status = pt_insn_next(id, &insn, sizeof(insn));
		CHECK_EQ(insn.isid, isid_b);
		CHECK_EQ(insn.iclass, ptic_jump);
		pt_insn_free_decoder(id);
	}

	pt_image_free(image);
	unlink(file_a);
	unlink(file_b);
}

/* 0x1000 nop; 0x1001 jmp 0x2000 in one section, 0x2000 nop; 0x2001 nop;
 * 0x2002 jmp rax in another: each instruction the instruction decoder
 * hands out from its runs has the section it lies in, the runs of both
 * sections being in the same mode. */
static void test_sections(void)
{
	static const uint8_t part_a[] = { 0x90, 0xe9, 0xfa, 0x0f, 0x00, 0x00 };
	static const uint8_t part_b[] = { 0x90, 0x90, 0xff, 0xe0 };
	static const uint64_t ips[] = { 0x1000, 0x1001, 0x2000, 0x2001,
					0x2002 };
	char file_a[64], file_b[64];
	struct pt_image_section_cache *iscache;
	struct pt_insn_decoder *id;
	struct pt_image *image;
	struct pt_config *config;
	struct pt_insn insn;
	struct pt_event ev;
	struct tb t;
	int status, isid_a, isid_b, i;

	CHECK_EQ(write_temp(file_a, sizeof(file_a), part_a, sizeof(part_a)),
		 0);
	CHECK_EQ(write_temp(file_b, sizeof(file_b), part_b, sizeof(part_b)),
		 0);

	/* Sections of a cache have identifiers of their own. */
	iscache = pt_iscache_alloc("sections");
	image = pt_image_alloc("sections");
	CHECK(iscache != NULL && image != NULL);
	isid_a = pt_iscache_add_file(iscache, file_a, 0, sizeof(part_a),
				     0x1000);
	isid_b = pt_iscache_add_file(iscache, file_b, 0, sizeof(part_b),
				     0x2000);
	CHECK(isid_a > 0 && isid_b > 0 && isid_a != isid_b);
	CHECK_EQ(pt_image_add_cached(image, iscache, isid_a, NULL), 0);
	CHECK_EQ(pt_image_add_cached(image, iscache, isid_b, NULL), 0);

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	config = tb_done(&t);
	CHECK_EQ(t.errors, 0);

	/* Twice: the second pass takes the runs the first recorded. */
	id = pt_insn_alloc_decoder(config);
	CHECK(id != NULL);
	if (id) {
		pt_insn_set_image(id, image);
		for (i = 0; i < 10; ++i) {
			if (i % 5 == 0) {
				status = pt_insn_sync_set(id, 0);
				while (status >= 0 &&
				       (status & pts_event_pending))
					status = pt_insn_event(id, &ev,
							       sizeof(ev));
			}
			status = pt_insn_next(id, &insn, sizeof(insn));
			CHECK(status >= 0);
			CHECK_EQ(insn.ip, ips[i % 5]);
			CHECK_EQ(insn.isid, i % 5 < 2 ? isid_a : isid_b);
			CHECK_EQ(insn.mode, ptem_64bit);
		}
		pt_insn_free_decoder(id);
	}

	pt_image_free(image);
	pt_iscache_free(iscache);
	unlink(file_a);
	unlink(file_b);
}

/* Structs of a different size than ours. */
static void test_sizes(void)
{
	static const uint8_t code[] = { 0x90, 0xff, 0xe0 };
	struct pt_block_decoder *bd;
	struct pt_image *image;
	struct pt_config *config;
	struct mem m;
	struct tb t;
	union {
		struct pt_block b;
		uint8_t bytes[sizeof(struct pt_block) + 16];
	} big;
	struct pt_event ev;
	struct pt_asid asid;
	int status;
	size_t i;

	mem_init(&m, 0x1000, code, sizeof(code));
	image = pt_image_alloc(NULL);
	pt_image_set_callback(image, mem_read, &m);

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_ip(&t, ppt_tip, pt_ipc_sext_48, 0x1000);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	config = tb_done(&t);

	bd = pt_blk_alloc_decoder(config);
	CHECK(bd != NULL);
	if (!bd)
		return;
	pt_blk_set_image(bd, image);
	status = pt_blk_sync_forward(bd);
	while (status >= 0 && (status & pts_event_pending))
		status = pt_blk_event(bd, &ev, sizeof(ev));

	/* A larger block: the tail is zeroed. */
	memset(&big, 0xcc, sizeof(big));
	status = pt_blk_next(bd, &big.b, sizeof(big));
	CHECK_EQ(status, 0);
	CHECK_EQ(big.b.ninsn, 2);
	for (i = sizeof(big.b); i < sizeof(big); ++i)
		CHECK_EQ(big.bytes[i], 0);

	/* A smaller one: only its part is written. */
	memset(&big, 0xcc, sizeof(big));
	status = pt_blk_next(bd, &big.b, 16);
	CHECK_EQ(big.b.ip, 0x1000);
	CHECK_EQ(big.bytes[16], 0xcc);

	/* A smaller asid: size says how much. */
	memset(&asid, 0xcc, sizeof(asid));
	CHECK_EQ(pt_blk_asid(bd, &asid, 16), 0);
	CHECK_EQ(asid.size, 16);
	CHECK(asid.vmcs != pt_asid_no_vmcs);

	pt_blk_free_decoder(bd);
	pt_image_free(image);
}

int main(void)
{
	test_asid();
	test_truncated();
	test_sections();
	test_sizes();
	return check_done();
}

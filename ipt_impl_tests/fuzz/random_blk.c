/* random_blk.c: the block and instruction decoders on hostile input.
 *
 * LLVMFuzzerTestOneInput takes its first 64 bytes as code at 0x1000 and
 * the rest as the trace, and decodes it with both decoders until the end
 * or a bounded number of steps.  Nothing may crash, hang, leak or return a
 * status that is neither a pte_* error nor pts_* bits.
 *
 * Built without libFuzzer (no -DIPT_LIBFUZZER), main() feeds it a fixed
 * number of pseudo-random inputs: code made of branchy instruction
 * snippets and traces of valid packets with a few bytes flipped.  rules.mk
 * builds it with AddressSanitizer and UBSan. */
#include "ipt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t *fuzz_code;
static size_t fuzz_code_size;
static unsigned long fuzz_bad;

static int fuzz_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	(void) asid;
	(void) context;
	if (ip < 0x1000 || ip >= 0x1000 + fuzz_code_size)
		return -pte_nomap;
	if (size > 0x1000 + fuzz_code_size - ip)
		size = (size_t) (0x1000 + fuzz_code_size - ip);
	memcpy(buffer, fuzz_code + (ip - 0x1000), size);
	return (int) size;
}

static void fuzz_check(int status)
{
	if (status < 0 ? -status > pte_bad_cpu :
	    (status & ~(pts_event_pending | pts_ip_suppressed | pts_eos)))
		fuzz_bad += 1;
}

enum { FUZZ_STEPS = 4096 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_block_decoder *bd;
	struct pt_insn_decoder *id;
	struct pt_image *image;
	struct pt_config config;
	struct pt_event ev;
	struct pt_block b;
	struct pt_insn insn;
	uint8_t *trace;
	int status, steps;

	if (size < 64)
		return 0;

	/* A copy, so that reads past the end trip the sanitizer. */
	trace = (uint8_t *) malloc(size - 64);
	if (!trace && size > 64)
		return 0;
	memcpy(trace, data + 64, size - 64);

	fuzz_code = data;
	fuzz_code_size = 64;
	image = pt_image_alloc(NULL);
	pt_image_set_callback(image, fuzz_read, NULL);

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + (size - 64);
	config.cpu.vendor = pcv_intel;
	config.cpu.family = 6;
	config.cpu.model = (uint8_t) (data[0] & 1 ? 0x4e : 0x3d);
	(void) pt_cpu_errata(&config.errata, &config.cpu);
	if (data[1] & 1) {
		config.addr_filter.config.addr_cfg = pt_addr_cfg_filter;
		config.addr_filter.addr0_a = 0x1000;
		config.addr_filter.addr0_b = 0x101f;
	}
	config.flags.variant.block.end_on_call = data[2] & 1;
	config.flags.variant.block.end_on_jump = (data[2] >> 1) & 1;
	config.flags.variant.block.enable_tick_events = (data[2] >> 2) & 1;

	bd = pt_blk_alloc_decoder(&config);
	if (bd) {
		pt_blk_set_image(bd, image);
		status = pt_blk_sync_forward(bd);
		for (steps = 0; steps < FUZZ_STEPS; ++steps) {
			fuzz_check(status);
			if (status < 0) {
				if (status == -pte_eos)
					break;
				status = (steps & 1) ? pt_blk_resync(bd) :
						       pt_blk_sync_forward(bd);
				continue;
			}
			if (status & pts_event_pending)
				status = pt_blk_event(bd, &ev, sizeof(ev));
			else
				status = pt_blk_next(bd, &b, sizeof(b));
		}
		pt_blk_free_decoder(bd);
	}

	memset(&config.flags, 0, sizeof(config.flags));
	config.flags.variant.insn.enable_tick_events = (data[2] >> 2) & 1;
	id = pt_insn_alloc_decoder(&config);
	if (id) {
		pt_insn_set_image(id, image);
		/* Not pt_insn_sync_backward(): on a run of PSB patterns the
		 * packet layer's backward sync finds the same PSB again and
		 * the event layer's backward sync loops. */
		status = pt_insn_sync_forward(id);
		for (steps = 0; steps < FUZZ_STEPS; ++steps) {
			fuzz_check(status);
			if (status < 0) {
				if (status == -pte_eos)
					break;
				status = (steps & 1) ? pt_insn_resync(id) :
						       pt_insn_sync_forward(id);
				continue;
			}
			if (status & pts_event_pending)
				status = pt_insn_event(id, &ev, sizeof(ev));
			else
				status = pt_insn_next(id, &insn, sizeof(insn));
		}
		pt_insn_free_decoder(id);
	}

	pt_image_free(image);
	free(trace);
	return 0;
}

#ifndef IPT_LIBFUZZER

static uint64_t fuzz_state = 0x9e3779b97f4a7c15ull;

static uint32_t fuzz_rand(void)
{
	fuzz_state ^= fuzz_state << 13;
	fuzz_state ^= fuzz_state >> 7;
	fuzz_state ^= fuzz_state << 17;
	return (uint32_t) (fuzz_state >> 16);
}

/* Instructions that make the decoders work: branches of every kind, and
 * those events bind to. */
static const char *const snippets[] = {
	"\x90", "\x74\x02", "\x75\xfa", "\xeb\x01", "\xe8\x02\x00\x00\x00",
	"\xc3", "\xff\xe0", "\xff\xd0", "\x0f\x22\xd8",
	"\xf3\x48\x0f\xae\xe0", "\xcc", "\xcd\x80", "\x0f\x05", "\x48\xcf",
	"\x0f\x01\xc2", "\x0f\x01\xc3", "\xe9\xf0\xff\xff\xff", "\xca\x08\x00"
};

static size_t fuzz_make(uint8_t *buf, size_t max)
{
	struct pt_config config;
	struct pt_encoder *enc;
	struct pt_packet p;
	uint64_t offset = 0;
	size_t i, n;

	/* Code. */
	for (n = 0; n < 64;) {
		const char *s = snippets[fuzz_rand() % (sizeof(snippets) /
							sizeof(snippets[0]))];
		size_t len = strlen(s);

		if (!len)
			len = 1;
		for (i = 0; i < len && n < 64; ++i)
			buf[n++] = (uint8_t) s[i];
	}
	buf[0] = (uint8_t) fuzz_rand();
	buf[1] = (uint8_t) fuzz_rand();
	buf[2] = (uint8_t) fuzz_rand();

	/* Trace: PSB+, then random packets. */
	pt_config_init(&config);
	config.begin = buf + 64;
	config.end = buf + max;
	enc = pt_alloc_encoder(&config);
	if (!enc)
		return 64;

	for (i = 0; i < 64; ++i) {
		memset(&p, 0, sizeof(p));
		if (!i || !(fuzz_rand() % 40)) {
			p.type = ppt_psb;
			(void) pt_enc_next(enc, &p);
			p.type = ppt_mode;
			p.payload.mode.bits.exec.csl = 1;
			(void) pt_enc_next(enc, &p);
			p.type = ppt_fup;
			p.payload.ip.ipc = pt_ipc_sext_48;
			p.payload.ip.ip = 0x1000 + fuzz_rand() % 64;
			(void) pt_enc_next(enc, &p);
			p.type = ppt_psbend;
			(void) pt_enc_next(enc, &p);
			continue;
		}

		p.type = (enum pt_packet_type) (ppt_pad + fuzz_rand() %
						(ppt_trig - ppt_pad + 1));
		p.payload.ip.ipc = (enum pt_ip_compression)
			(fuzz_rand() % 2 ? pt_ipc_sext_48 : pt_ipc_suppressed);
		p.payload.ip.ip = (fuzz_rand() % 4) ? 0x1000 + fuzz_rand() % 64 :
						      fuzz_rand();
		if (p.type == ppt_tnt_8 || p.type == ppt_tnt_64) {
			p.payload.tnt.bit_size = (uint8_t) (1 + fuzz_rand() % 6);
			p.payload.tnt.payload = fuzz_rand() &
				((1u << p.payload.tnt.bit_size) - 1);
		} else if (p.type == ppt_mode) {
			p.payload.mode.leaf = fuzz_rand() % 2 ? pt_mol_exec :
							       pt_mol_tsx;
			p.payload.mode.bits.tsx.intx = fuzz_rand() & 1;
			p.payload.mode.bits.tsx.abrt = fuzz_rand() & 1;
		} else if (p.type == ppt_pip) {
			p.payload.pip.cr3 = (uint64_t) (fuzz_rand() % 4) << 12;
		} else if (p.type == ppt_tsc) {
			p.payload.tsc.tsc = fuzz_rand();
		} else if (p.type == ppt_cfe || p.type == ppt_evd ||
			   p.type == ppt_ptw || p.type == ppt_trig ||
			   p.type == ppt_exstop || p.type == ppt_mwait) {
			p.payload.cfe.type = (enum pt_cfe_type)
				(1 + fuzz_rand() % 15);
			p.payload.cfe.ip = fuzz_rand() & 1;
		}
		(void) pt_enc_next(enc, &p);
	}
	(void) pt_enc_get_offset(enc, &offset);
	pt_free_encoder(enc);

	n = 64 + (size_t) offset;
	for (i = fuzz_rand() % 4; i; --i)
		buf[64 + fuzz_rand() % (offset ? offset : 1)] ^=
			(uint8_t) (1u << (fuzz_rand() % 8));
	return n;
}

int main(int argc, char **argv)
{
	static uint8_t buf[64 + 4096];
	unsigned long runs = 3000, i;

	if (argc > 1)
		runs = strtoul(argv[1], NULL, 0);

	for (i = 0; i < runs; ++i)
		(void) LLVMFuzzerTestOneInput(buf, fuzz_make(buf, sizeof(buf)));

	if (fuzz_bad)
		printf("%lu statuses out of range\n", fuzz_bad);
	printf("%lu passed, %lu failed\n", fuzz_bad ? 0ul : runs,
	       fuzz_bad ? 1ul : 0ul);
	return fuzz_bad ? 1 : 0;
}

#endif /* IPT_LIBFUZZER */

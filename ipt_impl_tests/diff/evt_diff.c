/* evt_diff.c - the query decoder against Debian's libipt 2.0.5.
 *
 * One source, built twice: with -DUSE_LIBIPT it includes <intel-pt.h> and
 * links -lipt; otherwise it uses ipt.h.  Each build encodes the same
 * streams with its own encoder (the bytes' checksum is printed, so an
 * encoder difference shows too), optionally mutates them with a fixed
 * seed, and drives its query decoder through the same question loop:
 *
 *     pending event       -> pt_qry_event
 *     end of stream       -> pt_qry_sync_forward (next PSB)
 *     otherwise           -> pt_qry_cond_branch, and on -pte_bad_query
 *                            pt_qry_indirect_branch
 *     an error            -> pt_qry_sync_forward
 *
 * After every answer it prints the answer, the offset, the time and the
 * core:bus ratio as canonical text; evt_diff.sh compares the two outputs
 * stream by stream.
 *
 * Usage: evt_diff [first-stream count]
 */
#ifdef USE_LIBIPT
#include <intel-pt.h>
#else
#include "ipt.h"
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fixed pseudo-random sequence ---- */

static uint64_t rng_state;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t) (rng_state >> 11);
}

static uint32_t rnd(uint32_t n)
{
	return n ? rng() % n : 0;
}

/* ---- building streams ---- */

static uint8_t buf[8192];
/* The execution mode the generator last stated, for PSB+. */
static struct pt_packet_mode_exec cur_exec;
static struct pt_encoder *enc;
static int enc_failed;

static void put(const struct pt_packet *p)
{
	if (pt_enc_next(enc, p) < 0)
		enc_failed++;
}

static struct pt_packet pkt(enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	return p;
}

static void put_type(enum pt_packet_type type)
{
	struct pt_packet p = pkt(type);

	put(&p);
}

static uint64_t rnd_ip(void)
{
	/* Few distinct IPs, so compression kicks in. */
	return 0x400000ull + (uint64_t) rnd(16) * 0x1000 + rnd(4) * 2;
}

static void put_ip(enum pt_packet_type type, int suppressed)
{
	static const enum pt_ip_compression ipcs[] = {
		pt_ipc_update_16, pt_ipc_update_32, pt_ipc_sext_48,
		pt_ipc_update_48, pt_ipc_full
	};
	struct pt_packet p = pkt(type);

	if (suppressed) {
		p.payload.ip.ipc = pt_ipc_suppressed;
	} else {
		p.payload.ip.ipc = ipcs[rnd(5)];
		p.payload.ip.ip = rnd_ip();
		if (p.payload.ip.ipc == pt_ipc_update_16)
			p.payload.ip.ip &= 0xffff;
		else if (p.payload.ip.ipc == pt_ipc_update_32)
			p.payload.ip.ip &= 0xffffffff;
		else if (p.payload.ip.ipc != pt_ipc_full)
			p.payload.ip.ip &= 0xffffffffffffull;
	}
	put(&p);
}

static void put_full(enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet p = pkt(type);

	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = ip;
	put(&p);
}

static void put_tnt(void)
{
	struct pt_packet p;
	int size;

	if (rnd(4)) {
		p = pkt(ppt_tnt_8);
		size = 1 + (int) rnd(6);
	} else {
		p = pkt(ppt_tnt_64);
		size = 1 + (int) rnd(47);
	}
	p.payload.tnt.bit_size = (uint8_t) size;
	p.payload.tnt.payload = (((uint64_t) rng() << 32) | rng()) &
				((1ull << size) - 1);
	put(&p);
}

static void put_mode_exec(void)
{
	struct pt_packet p = pkt(ppt_mode);

	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = rnd(3) ? 1 : 0;
	p.payload.mode.bits.exec.csd = p.payload.mode.bits.exec.csl ? 0
								     : rnd(2);
	cur_exec = p.payload.mode.bits.exec;
	put(&p);
}

/* MODE.TSX binds to a FUP; an abort is a FUP+TIP branch. */
static void put_mode_tsx(void)
{
	struct pt_packet p = pkt(ppt_mode);

	p.payload.mode.leaf = pt_mol_tsx;
	p.payload.mode.bits.tsx.intx = rnd(2);
	p.payload.mode.bits.tsx.abrt = p.payload.mode.bits.tsx.intx ? 0
								    : rnd(2);
	put(&p);
	put_ip(ppt_fup, 0);
	if (p.payload.mode.bits.tsx.abrt)
		put_ip(ppt_tip, 0);
}

static void put_timing(void)
{
	struct pt_packet p;

	switch (rnd(5)) {
	case 0:
		p = pkt(ppt_tsc);
		p.payload.tsc.tsc = 0x100000ull + rnd(0x10000);
		break;
	case 1:
		p = pkt(ppt_cbr);
		p.payload.cbr.ratio = (uint8_t) (1 + rnd(60));
		break;
	case 2:
		/* TMA comes right after a TSC. */
		p = pkt(ppt_tsc);
		p.payload.tsc.tsc = 0x100000ull + rnd(0x10000);
		put(&p);
		p = pkt(ppt_tma);
		p.payload.tma.ctc = (uint16_t) rnd(0x10000);
		p.payload.tma.fc = (uint16_t) rnd(0x200);
		break;
	case 3:
		p = pkt(ppt_mtc);
		p.payload.mtc.ctc = (uint8_t) rnd(256);
		break;
	default:
		p = pkt(ppt_cyc);
		p.payload.cyc.value = rnd(4096);
		break;
	}
	put(&p);
}

static void put_pip(void)
{
	struct pt_packet p = pkt(ppt_pip);

	p.payload.pip.cr3 = (uint64_t) (1 + rnd(8)) << 12;
	p.payload.pip.nr = rnd(2);
	put(&p);
}

static void put_vmcs(void)
{
	struct pt_packet p = pkt(ppt_vmcs);

	p.payload.vmcs.base = (uint64_t) (1 + rnd(8)) << 12;
	put(&p);
}

static void put_exstop(int ip)
{
	struct pt_packet p = pkt(ppt_exstop);

	p.payload.exstop.ip = ip ? 1 : 0;
	put(&p);
}

static void put_pwr(void)
{
	struct pt_packet p = pkt(ppt_pwre);

	p.payload.pwre.state = (uint8_t) rnd(16);
	p.payload.pwre.sub_state = (uint8_t) rnd(16);
	p.payload.pwre.hw = rnd(2);
	put(&p);
	p = pkt(ppt_pwrx);
	p.payload.pwrx.last = (uint8_t) rnd(16);
	p.payload.pwrx.deepest = (uint8_t) rnd(16);
	p.payload.pwrx.interrupt = rnd(2);
	p.payload.pwrx.store = rnd(2);
	p.payload.pwrx.autonomous = rnd(2);
	put(&p);
}

/* Power events as the SDM pairs them: MWAIT, EXSTOP.IP, FUP; EXSTOP.IP,
 * FUP; PWRE ... PWRX; with tracing off EXSTOP has no IP. */
static void put_power(int enabled)
{
	switch (rnd(4)) {
	case 0: {
		if (!enabled)
			break;
		struct pt_packet p = pkt(ppt_mwait);

		p.payload.mwait.hints = rnd(256);
		p.payload.mwait.ext = rnd(2);
		put(&p);
	}
		/* fall through */
	case 1:
		put_exstop(enabled);
		if (enabled)
			put_ip(ppt_fup, 0);
		break;
	default:
		put_pwr();
		break;
	}
}

/* PTWRITE: with IP it binds to the FUP that follows. */
static void put_ptw(int enabled)
{
	struct pt_packet p = pkt(ppt_ptw);

	p.payload.ptw.plc = (uint8_t) rnd(2);
	p.payload.ptw.ip = enabled ? rnd(2) : 0;
	p.payload.ptw.payload = rng();
	put(&p);
	if (p.payload.ptw.ip)
		put_ip(ppt_fup, 0);
}

static void put_mnt(void)
{
	struct pt_packet p = pkt(ppt_mnt);

	p.payload.mnt.payload = ((uint64_t) rng() << 32) | rng();
	put(&p);
}

/* A PSB+ stating the current state; FUP iff tracing is on. */
static void put_psb(int enabled)
{
	put_type(ppt_psb);
	if (rnd(2)) {
		struct pt_packet p = pkt(ppt_tsc);

		p.payload.tsc.tsc = 0x100000ull + rnd(0x10000);
		put(&p);
	}
	if (rnd(2)) {
		struct pt_packet p = pkt(ppt_cbr);

		p.payload.cbr.ratio = (uint8_t) (1 + rnd(60));
		put(&p);
	}
	if (rnd(4)) {
		struct pt_packet p = pkt(ppt_mode);

		p.payload.mode.leaf = pt_mol_exec;
		p.payload.mode.bits.exec = cur_exec;
		put(&p);
	}
	if (rnd(3) == 0)
		put_pip();
	if (rnd(4) == 0)
		put_vmcs();
	if (rnd(4) == 0) {
		struct pt_packet p = pkt(ppt_mode);

		p.payload.mode.leaf = pt_mol_tsx;
		p.payload.mode.bits.tsx.intx = rnd(2);
		put(&p);
	}
	if (enabled)
		put_full(ppt_fup, rnd_ip() & 0xffffffffffffull);
	put_type(ppt_psbend);
}

/* A random, mostly well-formed stream. */
static void gen_random(int npackets)
{
	int enabled = rnd(3) != 0, i;

	put_psb(enabled);
	for (i = 0; i < npackets; ++i) {
		uint32_t r = rnd(100);

		if (!enabled) {
			if (r < 40) {
				put_ip(ppt_tip_pge, 0);
				enabled = 1;
			} else if (r < 50) {
				put_mode_exec();
			} else if (r < 70) {
				put_timing();
			} else if (r < 75) {
				put_pip();
			} else if (r < 80) {
				put_power(0);
			} else if (r < 84) {
				put_ptw(0);
			} else if (r < 88) {
				put_type(ppt_ovf);
			} else if (r < 91) {
				put_psb(0);
			} else if (r < 94) {
				put_type(ppt_stop);
			} else if (r < 97) {
				put_type(ppt_pad);
			} else {
				put_vmcs();
			}
			continue;
		}

		if (r < 30) {
			put_tnt();
		} else if (r < 42) {
			put_ip(ppt_tip, rnd(10) == 0);
		} else if (r < 48) {
			put_ip(ppt_tip_pgd, rnd(2));
			enabled = 0;
		} else if (r < 53) {
			/* Asynchronous branch, maybe with PIP/VMCS/MODE. */
			put_ip(ppt_fup, 0);
			if (rnd(3) == 0)
				put_pip();
			if (rnd(4) == 0)
				put_vmcs();
			if (rnd(4) == 0)
				put_mode_exec();
			if (rnd(4) == 0) {
				put_ip(ppt_tip_pgd, rnd(2));
				enabled = 0;
			} else {
				put_ip(ppt_tip, 0);
			}
		} else if (r < 58) {
			put_mode_exec();
			put_ip(ppt_tip, 0);
		} else if (r < 62) {
			put_mode_tsx();
		} else if (r < 75) {
			put_timing();
		} else if (r < 79) {
			put_power(1);
		} else if (r < 83) {
			put_ptw(1);
		} else if (r < 86) {
			put_type(ppt_ovf);
			if (rnd(3)) {
				put_ip(ppt_fup, 0);
			} else {
				enabled = 0;
			}
		} else if (r < 89) {
			put_psb(1);
		} else if (r < 92) {
			put_pip();
		} else if (r < 94) {
			put_mnt();
		} else if (r < 96) {
			put_type(ppt_pad);
		} else {
			put_vmcs();
		}
	}
}

/* ---- printing ---- */

static void print_event(const struct pt_event *ev)
{
	printf(" ev %d supp %d status %d", ev->type, ev->ip_suppressed,
	       ev->status_update);
	if (ev->has_tsc)
		printf(" tsc %" PRIx64 " %u %u", ev->tsc, ev->lost_mtc,
		       ev->lost_cyc);

#define IP(x) (ev->ip_suppressed ? 0 : (x))
	switch (ev->type) {
	case ptev_enabled:
		printf(" ip %" PRIx64 " resumed %d", IP(ev->variant.enabled.ip),
		       ev->variant.enabled.resumed);
		break;
	case ptev_disabled:
		printf(" ip %" PRIx64, IP(ev->variant.disabled.ip));
		break;
	case ptev_async_disabled:
		printf(" at %" PRIx64 " ip %" PRIx64,
		       ev->variant.async_disabled.at,
		       IP(ev->variant.async_disabled.ip));
		break;
	case ptev_async_branch:
		printf(" from %" PRIx64 " to %" PRIx64,
		       ev->variant.async_branch.from,
		       IP(ev->variant.async_branch.to));
		break;
	case ptev_paging:
		printf(" cr3 %" PRIx64 " nr %d", ev->variant.paging.cr3,
		       ev->variant.paging.non_root);
		break;
	case ptev_async_paging:
		printf(" cr3 %" PRIx64 " nr %d ip %" PRIx64,
		       ev->variant.async_paging.cr3,
		       ev->variant.async_paging.non_root,
		       IP(ev->variant.async_paging.ip));
		break;
	case ptev_overflow:
		printf(" ip %" PRIx64, IP(ev->variant.overflow.ip));
		break;
	case ptev_exec_mode:
		printf(" mode %d ip %" PRIx64, ev->variant.exec_mode.mode,
		       IP(ev->variant.exec_mode.ip));
		break;
	case ptev_tsx:
		printf(" spec %d abrt %d ip %" PRIx64,
		       ev->variant.tsx.speculative, ev->variant.tsx.aborted,
		       IP(ev->variant.tsx.ip));
		break;
	case ptev_stop:
		break;
	case ptev_vmcs:
		printf(" base %" PRIx64, ev->variant.vmcs.base);
		break;
	case ptev_async_vmcs:
		printf(" base %" PRIx64 " ip %" PRIx64,
		       ev->variant.async_vmcs.base,
		       IP(ev->variant.async_vmcs.ip));
		break;
	case ptev_exstop:
		printf(" ip %" PRIx64, IP(ev->variant.exstop.ip));
		break;
	case ptev_mwait:
		printf(" hints %x ext %x ip %" PRIx64, ev->variant.mwait.hints,
		       ev->variant.mwait.ext, IP(ev->variant.mwait.ip));
		break;
	case ptev_pwre:
		printf(" state %d sub %d hw %d", ev->variant.pwre.state,
		       ev->variant.pwre.sub_state, ev->variant.pwre.hw);
		break;
	case ptev_pwrx:
		printf(" last %d deepest %d int %d store %d auto %d",
		       ev->variant.pwrx.last, ev->variant.pwrx.deepest,
		       ev->variant.pwrx.interrupt, ev->variant.pwrx.store,
		       ev->variant.pwrx.autonomous);
		break;
	case ptev_ptwrite:
		printf(" size %d payload %" PRIx64 " ip %" PRIx64,
		       ev->variant.ptwrite.size, ev->variant.ptwrite.payload,
		       IP(ev->variant.ptwrite.ip));
		break;
	case ptev_tick:
		printf(" ip %" PRIx64, IP(ev->variant.tick.ip));
		break;
	case ptev_cbr:
		printf(" ratio %d", ev->variant.cbr.ratio);
		break;
	case ptev_mnt:
		printf(" payload %" PRIx64, ev->variant.mnt.payload);
		break;
	default:
		printf(" (type unknown to libipt 2.0.5)");
		break;
	}
#undef IP
}

static void print_state(struct pt_query_decoder *q)
{
	uint64_t off = 0, tsc = 0;
	uint32_t mtc = 0, cyc = 0, cbr = 0;
	int err;

	err = pt_qry_get_offset(q, &off);
	printf(" | off %d %" PRIx64, err, err < 0 ? 0 : off);
	err = pt_qry_time(q, &tsc, &mtc, &cyc);
	printf(" time %d %" PRIx64 " %u %u", err, err < 0 ? 0 : tsc,
	       err < 0 ? 0 : mtc, err < 0 ? 0 : cyc);
	err = pt_qry_core_bus_ratio(q, &cbr);
	printf(" cbr %d %u\n", err, err < 0 ? 0 : cbr);
}

/* ---- the question loop ---- */

static void drive(const struct pt_config *config)
{
	struct pt_query_decoder *q = pt_qry_alloc_decoder(config);
	int status, steps = 0, syncs = 0;
	uint64_t ip;

	if (!q) {
		printf("alloc failed\n");
		return;
	}

	ip = 0;
	status = pt_qry_sync_forward(q, &ip);
	printf("sync %d ip %" PRIx64, status,
	       (status >= 0 && !(status & pts_ip_suppressed)) ? ip : 0);
	print_state(q);

	while (steps++ < 4000) {
		if (status < 0 || (status & pts_eos)) {
			if (status == -pte_eos || syncs++ > 64)
				break;
			ip = 0;
			status = pt_qry_sync_forward(q, &ip);
			printf("sync %d ip %" PRIx64, status,
			       (status >= 0 && !(status & pts_ip_suppressed))
				       ? ip : 0);
			print_state(q);
			continue;
		}

		if (status & pts_event_pending) {
			struct pt_event ev;

			memset(&ev, 0, sizeof(ev));
			status = pt_qry_event(q, &ev, sizeof(ev));
			printf("event %d", status);
			if (status >= 0)
				print_event(&ev);
			print_state(q);
			continue;
		}

		{
			int taken = -1;

			status = pt_qry_cond_branch(q, &taken);
			if (status != -pte_bad_query) {
				printf("cond %d taken %d", status,
				       status < 0 ? -1 : taken);
				print_state(q);
				continue;
			}
		}

		ip = 0;
		status = pt_qry_indirect_branch(q, &ip);
		printf("indirect %d ip %" PRIx64, status,
		       (status >= 0 && !(status & pts_ip_suppressed)) ? ip : 0);
		print_state(q);
		if (status == -pte_bad_query) {
			printf("stuck\n");
			/* Neither query fits: move on to the next PSB. */
			status = -pte_nosync;
		}
	}
	pt_qry_free_decoder(q);
}

static void set_config(struct pt_config *config, uint8_t *end, int errata)
{
	pt_config_init(config);
	config->begin = buf;
	config->end = end;
	config->cpu.vendor = pcv_intel;
	config->cpu.family = 6;
	config->cpu.model = 0x5e;
	config->mtc_freq = 2;
	config->nom_freq = 24;
	config->cpuid_0x15_eax = 2;
	config->cpuid_0x15_ebx = 168;
	if (errata) {
		config->errata.bdm70 = 1;
		config->errata.bdm64 = 1;
		config->errata.skd007 = 1;
		config->errata.skd022 = 1;
		config->errata.skd010 = 1;
		config->errata.skl014 = 1;
		config->errata.apl12 = 1;
		config->errata.apl11 = 1;
	}
}

/* Stream n: its packets from seed n, then for n % 4 != 0 a mutation. */
static void stream(unsigned int n)
{
	struct pt_config config;
	uint64_t size = 0, sum = 0, i;
	int errata;

	rng_state = 0x9e3779b97f4a7c15ull ^ ((uint64_t) n * 0x100000001b3ull);
	rng();

	memset(buf, 0, sizeof(buf));
	set_config(&config, buf + sizeof(buf) - 64, 0);
	enc = pt_alloc_encoder(&config);
	enc_failed = 0;
	memset(&cur_exec, 0, sizeof(cur_exec));
	cur_exec.csl = 1;
	gen_random(8 + (int) rnd(60));
	pt_enc_get_offset(enc, &size);
	pt_free_encoder(enc);

	switch (n % 4) {
	case 1: {
		/* Flip a few bits. */
		int k, flips = 1 + (int) rnd(3);

		for (k = 0; k < flips && size; ++k)
			buf[rnd((uint32_t) size)] ^= (uint8_t) (1u << rnd(8));
		break;
	}
	case 2:
		/* Overwrite a byte. */
		if (size)
			buf[rnd((uint32_t) size)] = (uint8_t) rng();
		break;
	case 3:
		/* Cut the end off. */
		if (size)
			size = rnd((uint32_t) size) + 1;
		break;
	}

	for (i = 0; i < size; ++i)
		sum = sum * 131 + buf[i];
	if (getenv("EVT_DIFF_DUMP")) {
		FILE *f = fopen(getenv("EVT_DIFF_DUMP"), "wb");

		if (f) {
			fwrite(buf, 1, (size_t) size, f);
			fclose(f);
		}
	}
	printf("== stream %u size %" PRIu64 " sum %" PRIx64 " encfail %d\n", n,
	       size, sum, enc_failed);

	for (errata = 0; errata < 2; ++errata) {
		printf("-- errata %d\n", errata);
		set_config(&config, buf + size, errata);
		drive(&config);
	}
}

int main(int argc, char **argv)
{
	unsigned int first = 0, count = 400, n;

	if (argc > 1)
		first = (unsigned int) strtoul(argv[1], NULL, 0);
	if (argc > 2)
		count = (unsigned int) strtoul(argv[2], NULL, 0);
	for (n = first; n < first + count; ++n)
		stream(n);
	return 0;
}

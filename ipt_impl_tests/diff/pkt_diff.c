/* pkt_diff.c - differential test of the packet layer against libipt.
 *
 * Compiled twice: with -DUSE_LIBIPT against Debian's libipt 2.0.5
 * (<intel-pt.h>, -lipt), and without it against ipt.h.  Both programs
 * build the same byte streams from fixed seeds, encode and decode them
 * with their library, and print what happened as text, each line starting
 * with the stream's number; pkt_diff.sh compares the two outputs.
 *
 * The streams: packet sequences made by the encoder (with some invalid
 * payloads), the same with random mutations and truncation, and random
 * bytes with PSBs sprinkled in.  Each is decoded from the start with
 * resynchronization after errors, synchronized forward and backward
 * through, and entered at random offsets.  libipt 2.0.5 predates CFE, EVD
 * and TRIG and the MODE.Exec IF bit: decoding stops before those opcodes
 * in both programs, and the IF bit is neither set nor printed.  Its PSB
 * search had a quirk fixed later; see model_forward(). */
#ifdef USE_LIBIPT
#include <intel-pt.h>
#else
#include "ipt.h"
#endif

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned int rndn(unsigned int n)
{
	return (unsigned int) (rnd() % n);
}

/* A random value of a random width, often small, sometimes edgy. */
static uint64_t rndval(void)
{
	switch (rndn(4)) {
	case 0:
		return rnd();
	case 1:
		return rnd() & 0xff;
	case 2:
		return rnd() >> rndn(64);
	}
	return (uint64_t) 0 - (rnd() & 3);
}

/* A packet of a type libipt 2.0.5 knows; sometimes with a payload the
 * encoder must refuse. */
static void random_packet(struct pt_packet *packet)
{
	int bad = rndn(8) == 0;

	memset(packet, 0, sizeof(*packet));
	packet->type = (enum pt_packet_type) (ppt_pad + rndn(ppt_ptw - ppt_pad + 1));
	if (rndn(64) == 0)
		packet->type = (enum pt_packet_type) rndn(2);

	switch (packet->type) {
	case ppt_fup:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
		packet->payload.ip.ipc = (enum pt_ip_compression) (bad ? rndn(8)
			: (unsigned int[]) { 0, 1, 2, 3, 4, 6 }[rndn(6)]);
		packet->payload.ip.ip = rndval();
		break;
	case ppt_tnt_8:
		packet->payload.tnt.bit_size = (uint8_t) (bad ? rndn(10) : 1 + rndn(6));
		packet->payload.tnt.payload = rnd() & (bad ? 0xff : ((1ull << packet->payload.tnt.bit_size) - 1));
		/* ipt.h refuses, where libipt writes what its decoder rejects or
		 * reads differently, a TNT without bits and TNT-8 payload bits
		 * above bit_size (t_enc_reject.c): not compared. */
		if (packet->payload.tnt.bit_size == 0)
			packet->payload.tnt.bit_size = 7;
		if (packet->payload.tnt.bit_size < 7)
			packet->payload.tnt.payload &= (1ull << packet->payload.tnt.bit_size) - 1;
		break;
	case ppt_tnt_64:
		packet->payload.tnt.bit_size = (uint8_t) (bad ? rndn(64) : 1 + rndn(47));
		if (packet->payload.tnt.bit_size == 0)
			packet->payload.tnt.bit_size = 48;
		packet->payload.tnt.payload = rnd();
		if (!bad)
			packet->payload.tnt.payload &= (1ull << packet->payload.tnt.bit_size) - 1;
		break;
	case ppt_mode:
		packet->payload.mode.leaf = rndn(2) ? pt_mol_exec : pt_mol_tsx;
		if (bad)
			packet->payload.mode.leaf = (enum pt_mode_leaf) rndn(256);
		if (packet->payload.mode.leaf == pt_mol_exec) {
			packet->payload.mode.bits.exec.csl = rndn(2);
			packet->payload.mode.bits.exec.csd = rndn(2);
		} else {
			packet->payload.mode.bits.tsx.intx = rndn(2);
			packet->payload.mode.bits.tsx.abrt = rndn(2);
		}
		break;
	case ppt_pip:
		packet->payload.pip.cr3 = rndval();
		packet->payload.pip.nr = rndn(2);
		break;
	case ppt_vmcs:
		packet->payload.vmcs.base = rndval();
		break;
	case ppt_cbr:
		packet->payload.cbr.ratio = (uint8_t) rnd();
		break;
	case ppt_tsc:
		packet->payload.tsc.tsc = rndval();
		break;
	case ppt_tma:
		packet->payload.tma.ctc = (uint16_t) rnd();
		packet->payload.tma.fc = (uint16_t) (rnd() & (bad ? 0xffff : 0x1ff));
		break;
	case ppt_mtc:
		packet->payload.mtc.ctc = (uint8_t) rnd();
		break;
	case ppt_cyc:
		/* ipt.h refuses values of 2^61 and more (see above). */
		packet->payload.cyc.value = rndval() & ((1ull << 61) - 1);
		break;
	case ppt_mnt:
		packet->payload.mnt.payload = rndval();
		break;
	case ppt_exstop:
		packet->payload.exstop.ip = rndn(2);
		break;
	case ppt_mwait:
		packet->payload.mwait.hints = (uint32_t) rnd();
		packet->payload.mwait.ext = (uint32_t) rnd();
		break;
	case ppt_pwre:
		packet->payload.pwre.state = (uint8_t) rnd();
		packet->payload.pwre.sub_state = (uint8_t) rnd();
		packet->payload.pwre.hw = rndn(2);
		break;
	case ppt_pwrx:
		packet->payload.pwrx.last = (uint8_t) rnd();
		packet->payload.pwrx.deepest = (uint8_t) rnd();
		packet->payload.pwrx.interrupt = rndn(2);
		packet->payload.pwrx.store = rndn(2);
		packet->payload.pwrx.autonomous = rndn(2);
		break;
	case ppt_ptw:
		packet->payload.ptw.plc = (uint8_t) (bad ? rndn(4) : rndn(2));
		packet->payload.ptw.ip = rndn(2);
		packet->payload.ptw.payload = rndval();
		break;
	default:
		break;
	}
}

static void print_packet(unsigned int s, uint64_t off, const struct pt_packet *p)
{
	printf("%u P %" PRIu64 " t%d s%u", s, off, (int) p->type, p->size);
	switch (p->type) {
	case ppt_fup:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
		printf(" ipc%d %" PRIx64, (int) p->payload.ip.ipc, p->payload.ip.ip);
		break;
	case ppt_tnt_8:
	case ppt_tnt_64:
		printf(" %u %" PRIx64, p->payload.tnt.bit_size, p->payload.tnt.payload);
		break;
	case ppt_mode:
		printf(" leaf%d", (int) p->payload.mode.leaf);
		if (p->payload.mode.leaf == pt_mol_exec)
			printf(" %u%u", p->payload.mode.bits.exec.csl, p->payload.mode.bits.exec.csd);
		else
			printf(" %u%u", p->payload.mode.bits.tsx.intx, p->payload.mode.bits.tsx.abrt);
		break;
	case ppt_pip:
		printf(" %" PRIx64 " %u", p->payload.pip.cr3, p->payload.pip.nr);
		break;
	case ppt_vmcs:
		printf(" %" PRIx64, p->payload.vmcs.base);
		break;
	case ppt_cbr:
		printf(" %u", p->payload.cbr.ratio);
		break;
	case ppt_tsc:
		printf(" %" PRIx64, p->payload.tsc.tsc);
		break;
	case ppt_tma:
		printf(" %x %x", p->payload.tma.ctc, p->payload.tma.fc);
		break;
	case ppt_mtc:
		printf(" %x", p->payload.mtc.ctc);
		break;
	case ppt_cyc:
		printf(" %" PRIx64, p->payload.cyc.value);
		break;
	case ppt_mnt:
		printf(" %" PRIx64, p->payload.mnt.payload);
		break;
	case ppt_exstop:
		printf(" %u", p->payload.exstop.ip);
		break;
	case ppt_mwait:
		printf(" %x %x", p->payload.mwait.hints, p->payload.mwait.ext);
		break;
	case ppt_pwre:
		printf(" %u %u %u", p->payload.pwre.state, p->payload.pwre.sub_state, p->payload.pwre.hw);
		break;
	case ppt_pwrx:
		printf(" %u %u %u%u%u", p->payload.pwrx.last, p->payload.pwrx.deepest,
		       p->payload.pwrx.interrupt, p->payload.pwrx.store, p->payload.pwrx.autonomous);
		break;
	case ppt_ptw:
		printf(" %u %u %" PRIx64, p->payload.ptw.plc, p->payload.ptw.ip, p->payload.ptw.payload);
		break;
	case ppt_unknown:
		printf(" priv%d", p->payload.unknown.priv != NULL);
		break;
	default:
		break;
	}
	printf("\n");
}

/* The unknown-packet callback: sizes and errors chosen by the byte. */
static int unknown_cb(struct pt_packet_unknown *unknown,
		      const struct pt_config *config, const uint8_t *pos,
		      void *context)
{
	(void) config;
	(void) context;
	(void) unknown;
	switch (pos[0] % 6) {
	case 0:
		return 1;
	case 1:
		return 3;
	case 2:
		return -pte_bad_packet;
	case 3:
		return 300;
	case 4:
		return 0;
	}
	return 200;
}

/* Does a packet libipt 2.0.5 does not know start at off? */
static int newer_packet(const struct pt_config *config, uint64_t off)
{
	const uint8_t *pos = config->begin + off;

	if (pos >= config->end)
		return 0;
	if (pos[0] == 0xd9)
		return 1;
	return pos[0] == 0x02 && pos + 1 < config->end &&
	       (pos[1] == 0x13 || pos[1] == 0x53);
}

/* Decode from the current position until an error; print each packet. */
static void decode_run(unsigned int s, struct pt_packet_decoder *dec,
		       const struct pt_config *config, int limit)
{
	struct pt_packet packet;
	uint64_t off;
	int ret, zeros = 0;

	while (limit-- > 0) {
		ret = pt_pkt_get_offset(dec, &off);
		if (ret < 0) {
			printf("%u O %d\n", s, ret);
			return;
		}
		if (newer_packet(config, off)) {
			printf("%u N %" PRIu64 "\n", s, off);
			return;
		}
		ret = pt_pkt_next(dec, &packet, sizeof(packet));
		if (ret < 0) {
			printf("%u X %" PRIu64 " %d\n", s, off, ret);
			return;
		}
		print_packet(s, off, &packet);
		if (ret == 0 && ++zeros > 2)
			return;
	}
}

/* Where a PSB search that reached pos settles: walk to the end of the
 * 02 82 run, step back one PSB, and check it. */
static const uint8_t *settle(const uint8_t *pos, const struct pt_config *config)
{
	int i;

	if (*pos != 0x02)
		pos++;
	while (pos + 1 < config->end && pos[0] == 0x02 && pos[1] == 0x82)
		pos += 2;
	if (pos - config->begin < 16)
		return NULL;
	pos -= 16;
	if (config->end - pos < 16)
		return NULL;
	for (i = 0; i < 16; i += 2)
		if (pos[i] != 0x02 || pos[i + 1] != 0x82)
			return NULL;
	return pos;
}

/* Is the 8-byte word at w all PSB pattern? */
static int psb_word(const uint8_t *w)
{
	uint8_t other = w[0] == 0x02 ? 0x82 : 0x02;
	int i;

	if (w[0] != 0x02 && w[0] != 0x82)
		return 0;
	for (i = 1; i < 8; ++i)
		if (w[i] != ((i & 1) ? other : w[0]))
			return 0;
	return 1;
}

/* A model of libipt's PSB searches over aligned words.  libipt 2.0.5
 * settled from 8 bytes after the word it matched (late = 1; fixed in 2.1:
 * "sync: fix out of bounds read"), so its searches can end elsewhere.
 * Both programs ask the model, with and without that quirk, before each
 * synchronization; where the two answers differ, they print "amb" and
 * leave the comparison of that pass there.  Returns the PSB's offset or
 * a negative pte_* code. */
static long model_forward(const struct pt_config *config,
			  const uint8_t *start, int late)
{
	const uint8_t *w, *found;

	w = start + ((8 - ((uintptr_t) start & 7)) & 7);
	for (; config->end - w >= 8; w += 8) {
		if (!psb_word(w))
			continue;
		found = settle(late ? w + 8 : w, config);
		if (!found || found < start)
			continue;
		return (long) (found - config->begin);
	}
	return -pte_eos;
}

/* late: libipt 2.0.5's quirk.  progress: ipt.h's rule that a backward
 * sync only ever moves backward; libipt may name a PSB at or after pos
 * when the PSB pattern runs longer than one PSB, and then never moves. */
static long model_backward_ex(const struct pt_config *config,
			      const uint8_t *pos, int late, int progress)
{
	long off = (long) (pos - config->begin) - (long) ((uintptr_t) pos & 7);
	const uint8_t *found;

	for (;;) {
		off -= 8;
		if (off < 0)
			return -pte_eos;
		if (!psb_word(config->begin + off))
			continue;
		found = settle(config->begin + off + (late ? 8 : 0), config);
		if (found && progress && found >= pos)
			continue;
		if (found)
			return (long) (found - config->begin);
	}
}

static long model_backward(const struct pt_config *config,
			   const uint8_t *pos, int late)
{
	return model_backward_ex(config, pos, late, 0);
}

/* The model of pt_pkt_sync_forward (backward = 0) or _backward. */
static long model_pkt_sync(struct pt_packet_decoder *dec,
			   const struct pt_config *config, int backward,
			   int late)
{
	uint64_t off, sync;
	long n = (long) (config->end - config->begin), start;
	int synced;

	synced = pt_pkt_get_offset(dec, &off) >= 0;
	if (backward)
		return model_backward(config, synced ? config->begin + off
						     : config->end, late);

	start = synced ? (long) off : 0;
	if (synced && pt_pkt_get_sync_offset(dec, &sync) >= 0 && sync == off)
		start += 16;
	start -= start < 16 ? start : 15;
	if (start > n)
		return -pte_internal;
	return model_forward(config, config->begin + start, late);
}

/* Do libipt 2.0.5 and later agree on the next sync?  If not, print "amb";
 * ipt.h then syncs anyway and prints "amb bad" unless it found what the
 * model without the quirk predicts.  Either way, the caller stops. */
static int sync_agrees(unsigned int s, struct pt_packet_decoder *dec,
		       const struct pt_config *config, int backward)
{
	long expect = model_pkt_sync(dec, config, backward, 0);
	int good = 1;

	if (backward) {
		/* Where libipt would name a PSB at or after the position,
		 * and so never move, ipt.h moves on to an earlier one: print
		 * "stall" and check ipt.h against the model with that rule. */
		uint64_t off;
		const uint8_t *pos = config->end;

		if (pt_pkt_get_offset(dec, &off) >= 0)
			pos = config->begin + off;
		if (expect >= 0 && config->begin + expect >= pos) {
#ifndef USE_LIBIPT
			long want = model_backward_ex(config, pos, 0, 1);
			int ret = pt_pkt_sync_backward(dec);

			off = ~0ull;
			pt_pkt_get_offset(dec, &off);
			good = ret < 0 ? want == ret : want == (long) off;
#endif
			printf("%u stall%s\n", s, good ? "" : " bad");
			return 0;
		}
	}

	if (expect == model_pkt_sync(dec, config, backward, 1))
		return 1;

#ifndef USE_LIBIPT
	{
		uint64_t off = ~0ull;
		int ret = backward ? pt_pkt_sync_backward(dec)
				   : pt_pkt_sync_forward(dec);

		pt_pkt_get_offset(dec, &off);
		good = ret < 0 ? expect == ret : expect == (long) off;
	}
#endif
	printf("%u amb%s\n", s, good ? "" : " bad");
	return 0;
}

static void decode_all(unsigned int s, const struct pt_config *config)
{
	struct pt_packet_decoder *dec;
	uint64_t off, sync;
	int ret, i, n;

	dec = pt_pkt_alloc_decoder(config);
	if (!dec) {
		printf("%u alloc failed\n", s);
		return;
	}

	/* From the start, resynchronizing after errors. */
	ret = pt_pkt_sync_set(dec, 0);
	printf("%u A %d\n", s, ret);
	for (i = 0; i < 64; ++i) {
		decode_run(s, dec, config, 4096);
		if (!sync_agrees(s, dec, config, 0))
			break;
		ret = pt_pkt_sync_forward(dec);
		off = sync = ~0ull;
		pt_pkt_get_offset(dec, &off);
		pt_pkt_get_sync_offset(dec, &sync);
		/* libipt 2.0.5 does not move the sync offset to the PSBs
		 * it decodes; compare it only after a successful sync. */
		if (ret < 0)
			sync = 0;
		printf("%u F %d %" PRIu64 " %" PRIu64 "\n", s, ret, off, sync);
		if (ret < 0)
			break;
	}
	pt_pkt_free_decoder(dec);

	/* Forward from an unsynchronized decoder, then backward. */
	dec = pt_pkt_alloc_decoder(config);
	ret = pt_pkt_get_offset(dec, &off);
	printf("%u U %d\n", s, ret);
	ret = pt_pkt_next(dec, NULL, 0);
	printf("%u U %d\n", s, ret);
	for (i = 0; i < 256 && sync_agrees(s, dec, config, 0); ++i) {
		ret = pt_pkt_sync_forward(dec);
		off = ~0ull;
		pt_pkt_get_offset(dec, &off);
		printf("%u f %d %" PRIu64 "\n", s, ret, off);
		if (ret < 0)
			break;
	}
	pt_pkt_free_decoder(dec);

	dec = pt_pkt_alloc_decoder(config);
	for (i = 0; i < 256 && sync_agrees(s, dec, config, 1); ++i) {
		ret = pt_pkt_sync_backward(dec);
		off = ~0ull;
		pt_pkt_get_offset(dec, &off);
		printf("%u b %d %" PRIu64 "\n", s, ret, off);
		if (ret < 0)
			break;
		if (i == 0) {
			/* Walk some packets from there, then back again. */
			decode_run(s, dec, config, 4);
		}
	}

	/* Random entry points. */
	n = (int) (config->end - config->begin);
	for (i = 0; i < 4; ++i) {
		uint64_t at = rndn((unsigned int) n + 2);

		ret = pt_pkt_sync_set(dec, at);
		printf("%u R %" PRIu64 " %d\n", s, at, ret);
		if (ret < 0)
			continue;
		decode_run(s, dec, config, 3);
		if (!sync_agrees(s, dec, config, 0))
			continue;
		ret = pt_pkt_sync_forward(dec);
		off = sync = ~0ull;
		pt_pkt_get_offset(dec, &off);
		pt_pkt_get_sync_offset(dec, &sync);
		if (ret < 0)
			sync = 0;
		printf("%u r %d %" PRIu64 " %" PRIu64 "\n", s, ret, off, sync);
		if (!sync_agrees(s, dec, config, 1))
			continue;
		ret = pt_pkt_sync_backward(dec);
		off = ~0ull;
		pt_pkt_get_offset(dec, &off);
		printf("%u rb %d %" PRIu64 "\n", s, ret, off);
	}
	pt_pkt_free_decoder(dec);
}

static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
				 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };

/* Bytes that start or continue packets, to make random streams decode a
 * while before they break. */
static const uint8_t interesting[] = {
	0x00, 0x02, 0x03, 0x07, 0x0d, 0x2d, 0x4d, 0x6d, 0x8d, 0xcd, 0x11,
	0x51, 0x01, 0x1d, 0x99, 0x19, 0x59, 0xc9, 0x82, 0x23, 0xa3, 0x43,
	0xf3, 0x03, 0x73, 0x83, 0xc8, 0xc3, 0x88, 0x62, 0xe2, 0xc2, 0x22,
	0xa2, 0x12, 0x32, 0xb2, 0xf2, 0x04, 0x20, 0x40, 0x60, 0xe0, 0xff
};

static uint64_t words[1024 + 8];

int main(int argc, char **argv)
{
	unsigned int s, nstreams = 3000;
	uint8_t *base = (uint8_t *) words;

	if (argc > 1)
		sscanf(argv[1], "%u", &nstreams);

	for (s = 0; s < nstreams; ++s) {
		struct pt_config config;
		unsigned int kind = s % 4, len, i;
		uint8_t *buf = base + (s % 8);

		rng_state = 0x1badb002u + s * 7919ull;
		pt_config_init(&config);
		config.begin = buf;
		if (rndn(3) == 0) {
			config.decode.callback = unknown_cb;
			config.decode.context = NULL;
		}

		memset(base, 0, sizeof(words));
		if (kind <= 1) {
			struct pt_encoder *enc;
			struct pt_packet packet;
			unsigned int npackets = 1 + rndn(48);
			uint64_t off = 0;
			uint64_t hash = 14695981039346656037ull;
			int ret;

			len = 8 + rndn(512);
			config.end = buf + len;
			enc = pt_alloc_encoder(&config);
			if (!enc) {
				printf("%u encoder alloc failed\n", s);
				continue;
			}
			for (i = 0; i < npackets; ++i) {
				if (rndn(6) == 0)
					packet.type = ppt_psb;
				else
					random_packet(&packet);
				ret = pt_enc_next(enc, &packet);
				printf("%u E %d %d\n", s, (int) packet.type, ret);
			}
			ret = pt_enc_get_offset(enc, &off);
			printf("%u EO %d %" PRIu64 "\n", s, ret, off);
			pt_free_encoder(enc);
			for (i = 0; i < off; ++i)
				hash = (hash ^ buf[i]) * 1099511628211ull;
			printf("%u EH %016" PRIx64 "\n", s, hash);
			len = (unsigned int) off;

			if (kind == 1 && len) {
				unsigned int flips = 1 + rndn(4);

				for (i = 0; i < flips; ++i) {
					unsigned int at = rndn(len);

					buf[at] = rndn(2) ? (uint8_t) rnd()
						: interesting[rndn(sizeof(interesting))];
				}
				if (rndn(2))
					len = rndn(len + 1);
			}
		} else {
			len = rndn(1024);
			for (i = 0; i < len; ++i)
				buf[i] = (kind == 2 && rndn(2))
					? interesting[rndn(sizeof(interesting))]
					: (uint8_t) rnd();
			for (i = rndn(6); i > 0 && len > 16; --i)
				memcpy(buf + rndn(len - 15), psb, 16);
		}
		config.end = buf + len;
		printf("%u S %u %u\n", s, kind, len);
		decode_all(s, &config);
	}
	return 0;
}

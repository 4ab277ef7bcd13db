/* t_hv_ring [CORPUS_DIR|--synth DIR]...: wrapped ring buffers.
 *
 * Every ptxed case's trace is copied into a ring buffer of its size as a
 * processor would have left it after wrapping around after N bytes: the
 * newer part (from N on) at the ring's start, the older part (up to N)
 * at its end.  A packet, an event, a query, a block and an instruction
 * decoder and a coverage decoder read the ring as two pieces
 * (ipt_*_set_ring) and must give what they give on the trace in one
 * buffer: packets, events, branches, blocks, instructions, errors,
 * offsets, the bitmap and the edges.  N runs over every packet boundary
 * (packet and event decoders; a sample for the others), every byte of
 * the first PSB and random bytes; the newer part also comes in pieces
 * (ipt_*_extend) at some of them. */
#include "hv_cases.h"
#include "stream_util.h"

enum { NLAYERS = 6 };
static const char *const names[NLAYERS] = { "pkt", "evt", "qry", "blk",
					    "insn", "cov" };
static unsigned long splits[NLAYERS], wrapped_packets;

/* Decode @c with layer @layer, fed by @f. */
static void decode(struct hv_out *o, struct hcase *c, int layer,
		   struct hv_feed *f)
{
	c->mem.pct = 0;
	hv_decode_mem(o, &c->config, &c->mem, (enum hv_layer) layer, f,
		      1u << 22, NULL);
}

/* The offsets of @c's packets (after each synchronization, up to the
 * next error), the first PSB's in *psb; how many. */
static size_t boundaries(struct hcase *c, uint64_t *at, size_t max,
			 uint64_t *psb)
{
	struct pt_packet_decoder *d = pt_pkt_alloc_decoder(&c->config);
	size_t n = 0;
	int status;

	*psb = 0;
	if (!d)
		return 0;
	status = pt_pkt_sync_forward(d);
	if (status >= 0)
		(void) pt_pkt_get_sync_offset(d, psb);
	while (status >= 0 && n < max) {
		struct pt_packet p;

		if (pt_pkt_get_offset(d, &at[n]) < 0)
			break;
		n += 1;
		status = pt_pkt_next(d, &p, sizeof(p));
		if (status < 0 && status != -pte_eos)
			status = pt_pkt_sync_forward(d);
	}
	pt_pkt_free_decoder(d);
	return n;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Split @c at @split for @layer: the ring decode equals @whole. */
static void try_split(struct hcase *c, int layer, const struct hv_out *whole,
		      size_t split, size_t max)
{
	size_t size = (size_t) (c->config.end - c->config.begin);
	uint8_t *ring = (uint8_t *) malloc(size ? size : 1);
	struct hv_out parts;
	struct hv_feed f;
	long at;

	if (!CHECK(ring != NULL))
		return;
	hv_feed_ring(&f, &c->config, split, ring, layer == 5 ? 0 : max,
		     split * 31 + 7);
	decode(&parts, c, layer, &f);
	splits[layer] += 1;
	at = hv_out_diff(whole, &parts);
	if (!CHECK(at < 0 && whole->n == parts.n))
		printf("     %s %s, split at %zu (pieces of %zu): item %ld "
		       "of %zu\n", c->name, names[layer], split, max, at,
		       whole->n);
	free(parts.h);
	free(ring);
}

enum { MAXB = 1 << 16 };
static uint64_t at[MAXB];

static void run_case(struct hcase *c)
{
	size_t size = (size_t) (c->config.end - c->config.begin);
	size_t n, i, k, step;
	uint64_t psb;
	int layer;

	if (!size)
		return;
	n = boundaries(c, at, MAXB, &psb);
	for (i = 0; i + 1 < n; ++i)
		if (at[i + 1] - at[i] > 1)
			wrapped_packets += 1;
	for (layer = 0; layer < NLAYERS; ++layer) {
		struct hv_out whole;
		struct hv_feed f;

		hv_feed_init(&f, &c->config, 0, 0);
		decode(&whole, c, layer, &f);
		/* Every packet boundary for the packet and event decoders
		 * (up to 2048 of them), 8 for the others. */
		step = layer < 2 ? (n + 2047) / 2048 : (n + 7) / 8;
		if (!step)
			step = 1;
		for (i = 0, k = 0; i < n; i += step, ++k)
			try_split(c, layer, &whole, (size_t) at[i],
				  k % 4 == 3 ? 48 : 0);
		/* Inside the first PSB, and anywhere. */
		for (i = 1; i < 16; i += layer < 2 ? 1 : 7)
			if (psb + i <= size)
				try_split(c, layer, &whole,
					  (size_t) (psb + i), i & 1 ? 4 : 0);
		for (i = 0; i < (layer < 2 ? 32u : 4u); ++i)
			try_split(c, layer, &whole,
				  (size_t) (next_rand() % (size + 1)),
				  i & 1 ? 16 : 0);
		try_split(c, layer, &whole, 0, 0);
		try_split(c, layer, &whole, size, 0);
		free(whole.h);
	}
}

int main(int argc, char **argv)
{
	uint8_t buf[64];
	struct pt_config config;
	struct pt_packet_decoder *d;
	int layer;

	hv_cases(argc, argv, run_case);
	for (layer = 0; layer < NLAYERS; ++layer) {
		printf("%s: %lu splits\n", names[layer], splits[layer]);
		CHECK(splits[layer] > 0);
	}
	/* Splits fell inside packets too. */
	CHECK(wrapped_packets > 0);

	/* Arguments. */
	memset(&config, 0, sizeof(config));
	config.size = sizeof(config);
	config.begin = buf;
	config.end = buf + sizeof(buf);
	memset(buf, 0, sizeof(buf));
	d = pt_pkt_alloc_decoder(&config);
	CHECK(d != NULL);
	CHECK_EQ(ipt_pkt_set_ring(NULL, buf, buf + 1, buf + 2, buf + 3),
		 -pte_invalid);
	CHECK_EQ(ipt_pkt_set_ring(d, buf + 1, buf, buf + 2, buf + 3),
		 -pte_invalid);
	CHECK_EQ(ipt_pkt_set_ring(d, buf, buf + 1, buf + 3, buf + 2),
		 -pte_invalid);
	CHECK_EQ(ipt_pkt_set_ring(d, buf, buf + 1, NULL, buf + 2),
		 -pte_invalid);
	CHECK_EQ(ipt_evt_set_ring(NULL, buf, buf, buf, buf), -pte_invalid);
	CHECK_EQ(ipt_qry_set_ring(NULL, buf, buf, buf, buf), -pte_invalid);
	CHECK_EQ(ipt_blk_set_ring(NULL, buf, buf, buf, buf), -pte_invalid);
	CHECK_EQ(ipt_insn_set_ring(NULL, buf, buf, buf, buf), -pte_invalid);
	CHECK_EQ(ipt_cov_set_ring(NULL, buf, buf, buf, buf, 0), -pte_invalid);
	/* Two pieces of PADs: offsets run on over the wrap. */
	CHECK_EQ(ipt_pkt_set_ring(d, buf + 40, buf + 64, buf, buf + 8), 0);
	CHECK_EQ(pt_pkt_sync_set(d, 30), 0);
	{
		struct pt_packet p;
		uint64_t off = 0;
		int i;

		for (i = 0; i < 2; ++i)
			CHECK_EQ(pt_pkt_next(d, &p, sizeof(p)), 1);
		CHECK_EQ(pt_pkt_get_offset(d, &off), 0);
		CHECK_EQ(off, 32);
		CHECK_EQ(pt_pkt_sync_set(d, 33), -pte_eos);
		CHECK_EQ(pt_pkt_sync_set(d, 32), 0);
		CHECK_EQ(pt_pkt_next(d, &p, sizeof(p)), -pte_eos);
	}
	pt_pkt_free_decoder(d);
	return check_done();
}

/* scenarios.h - what the hardening tests decode, allocator by allocator.
 *
 * Each scenario - a full decode with one of the decoders, the image with
 * file sections and the section cache, the encoder - makes every object
 * with the allocator it is given (NULL: the default) and returns a digest
 * of what it decoded.  Decoding goes on after errors as a program would
 * (resynchronizing), for a bounded number of steps, and everything is
 * freed.  Wrap each public call that may allocate in S() (status) or P()
 * (object) to watch it; by default they pass the result through.
 * Include after ipt.h and cases.h. */
#ifndef IPT_HARD_SCENARIOS_H
#define IPT_HARD_SCENARIOS_H

#ifndef S
#define S(call) (call)
#endif
#ifndef P
#define P(type, call) ((type) (call))
#endif

/* Decoding goes on after an error for at most this many steps. */
enum { max_steps = 20000 };

/* ---- the scenarios: each returns a digest of what it decoded ---- */

static uint64_t digest(uint64_t d, uint64_t v)
{
	return (d ^ v) * 0x100000001b3ull;
}

static uint64_t sc_pkt(struct hcase *c, const struct ipt_allocator *a)
{
	struct pt_packet_decoder *decoder;
	struct pt_config config;
	struct pt_packet packet;
	uint64_t d = 0;
	int steps = 0, status;

	hcase_config(&config, c);
	decoder = P(struct pt_packet_decoder *,
		    ipt_pkt_alloc_decoder_with(&config, a));
	if (!decoder)
		return 1;
	while (S(pt_pkt_sync_forward(decoder)) >= 0 && steps < max_steps) {
		while ((status = S(pt_pkt_next(decoder, &packet,
						 sizeof(packet)))) >= 0 &&
		       ++steps < max_steps)
			d = digest(d, packet.type);
		if (status == -pte_eos)
			break;
	}
	pt_pkt_free_decoder(decoder);
	return d;
}

static uint64_t sc_evt(struct hcase *c, const struct ipt_allocator *a)
{
	struct pt_event_decoder *decoder;
	struct pt_config config;
	struct pt_event event;
	uint64_t d = 0;
	int steps = 0, status;

	hcase_config(&config, c);
	decoder = P(struct pt_event_decoder *,
		    ipt_evt_alloc_decoder_with(&config, a));
	if (!decoder)
		return 1;
	while (S(pt_evt_sync_forward(decoder)) >= 0 && steps < max_steps) {
		while ((status = S(pt_evt_next(decoder, &event,
						 sizeof(event)))) >= 0 &&
		       ++steps < max_steps)
			d = digest(d, event.type);
		if (status == -pte_eos)
			break;
	}
	pt_evt_free_decoder(decoder);
	return d;
}

static uint64_t sc_qry(struct hcase *c, const struct ipt_allocator *a)
{
	struct pt_query_decoder *decoder;
	struct pt_config config;
	struct pt_event event;
	uint64_t d = 0, ip;
	int steps = 0, status, taken;

	hcase_config(&config, c);
	decoder = P(struct pt_query_decoder *,
		    ipt_qry_alloc_decoder_with(&config, a));
	if (!decoder)
		return 1;
	while ((status = S(pt_qry_sync_forward(decoder, &ip))) >= 0 &&
	       steps < max_steps) {
		for (; ++steps < max_steps;) {
			if (status & pts_event_pending) {
				status = S(pt_qry_event(decoder, &event,
							sizeof(event)));
				d = digest(d, event.type);
			} else {
				status = S(pt_qry_cond_branch(decoder, &taken));
				if (status == -pte_bad_query)
					status = S(pt_qry_indirect_branch(
						decoder, &ip));
				d = digest(d, (uint64_t) status);
			}
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			break;
	}
	pt_qry_free_decoder(decoder);
	return d;
}

/* The block decoder reads code through a callback on its own image. */
static uint64_t sc_blk(struct hcase *c, const struct ipt_allocator *a)
{
	struct pt_block_decoder *decoder;
	struct pt_config config;
	struct pt_block block;
	struct pt_event event;
	uint64_t d = 0;
	int steps = 0, status;

	hcase_config(&config, c);
	decoder = P(struct pt_block_decoder *,
		    ipt_blk_alloc_decoder_with(&config, a));
	if (!decoder)
		return 1;
	if (S(pt_image_set_callback(pt_blk_get_image(decoder), hcase_read,
				    c)) < 0)
		goto out;
	while ((status = S(pt_blk_sync_forward(decoder))) >= 0 &&
	       steps < max_steps) {
		for (; ++steps < max_steps;) {
			while (status >= 0 && (status & pts_event_pending)) {
				status = S(pt_blk_event(decoder, &event,
							sizeof(event)));
				d = digest(d, event.type);
			}
			if (status < 0)
				break;
			status = S(pt_blk_next(decoder, &block,
					       sizeof(block)));
			if (status < 0)
				break;
			d = digest(d, block.end_ip);
		}
		if (status == -pte_eos)
			break;
	}
out:
	pt_blk_free_decoder(decoder);
	return d;
}

/* The instruction decoder reads code from a file section, through the
 * section cache, in an image copied from another. */
static uint64_t sc_insn(struct hcase *c, const struct ipt_allocator *a)
{
	struct pt_image_section_cache *iscache;
	struct pt_image *image, *copy = NULL;
	struct pt_insn_decoder *decoder = NULL;
	struct pt_config config;
	struct pt_insn insn;
	struct pt_event event;
	uint64_t d = 0;
	int steps = 0, status, isid;

	iscache = P(struct pt_image_section_cache *,
		    ipt_iscache_alloc_with("nomem", a));
	image = P(struct pt_image *, ipt_image_alloc_with("nomem", a));
	copy = P(struct pt_image *, ipt_image_alloc_with(NULL, a));
	if (!iscache || !image || !copy)
		goto out;
	isid = S(pt_iscache_add_file(iscache, c->image_path, 0, c->isize,
				     c->base));
	if (isid < 0)
		goto out;
	if (S(pt_image_add_cached(image, iscache, isid, NULL)) < 0)
		goto out;
	/* A second section, removed again. */
	if (S(pt_image_add_file(image, c->image_path, 0, c->isize, NULL,
				c->base + 0x100000000ull)) >= 0)
		(void) S(pt_image_remove_by_filename(image, c->image_path,
						     NULL));
	if (S(pt_image_copy(copy, image)) < 0)
		goto out;

	hcase_config(&config, c);
	decoder = P(struct pt_insn_decoder *,
		    ipt_insn_alloc_decoder_with(&config, a));
	if (!decoder)
		goto out;
	if (S(pt_insn_set_image(decoder, copy)) < 0)
		goto out;
	while ((status = S(pt_insn_sync_forward(decoder))) >= 0 &&
	       steps < max_steps) {
		for (; ++steps < max_steps;) {
			while (status >= 0 && (status & pts_event_pending)) {
				status = S(pt_insn_event(decoder, &event,
							 sizeof(event)));
				d = digest(d, event.type);
			}
			if (status < 0)
				break;
			status = S(pt_insn_next(decoder, &insn, sizeof(insn)));
			if (status < 0)
				break;
			d = digest(d, insn.ip);
		}
		if (status == -pte_eos)
			break;
	}
out:
	pt_insn_free_decoder(decoder);
	pt_image_free(copy);
	pt_image_free(image);
	pt_iscache_free(iscache);
	return d;
}

static uint64_t sc_enc(struct hcase *c, const struct ipt_allocator *a)
{
	struct pt_encoder *encoder;
	struct pt_config config;
	struct pt_packet packet;
	uint8_t buf[64];
	uint64_t offset = 0;

	(void) c;
	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + sizeof(buf);
	encoder = P(struct pt_encoder *, ipt_alloc_encoder_with(&config, a));
	if (!encoder)
		return 1;
	memset(&packet, 0, sizeof(packet));
	packet.type = ppt_psb;
	(void) S(pt_enc_next(encoder, &packet));
	packet.type = ppt_psbend;
	(void) S(pt_enc_next(encoder, &packet));
	(void) S(pt_enc_get_offset(encoder, &offset));
	pt_free_encoder(encoder);
	return offset;
}

struct scenario {
	const char *name;
	uint64_t (*run)(struct hcase *c, const struct ipt_allocator *a);
};

static const struct scenario scenarios[] = {
	{ "pkt", sc_pkt }, { "evt", sc_evt }, { "qry", sc_qry },
	{ "blk", sc_blk }, { "insn", sc_insn }, { "enc", sc_enc },
};

#endif

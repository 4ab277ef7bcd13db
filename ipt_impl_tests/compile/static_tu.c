/* static_tu.c - ipt.h with IPT_STATIC, compiled once per translation unit
 * (TU=a, TU=b): each holds a private copy of the implementation, so the
 * two link into one program next to Debian's libipt without clashing.  The
 * same functions on libipt 2.0.5 (-lipt) come from this file compiled with
 * TU=libipt and USE_LIBIPT: its pt_* symbols are the only extern ones in
 * the program.  See static_main.c. */
#ifdef USE_LIBIPT
#include <intel-pt.h>
#else
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#endif
#include "static_api.h"

#define STATIC_CAT2(a, b) a##_##b
#define STATIC_CAT(a, b) STATIC_CAT2(a, b)
#define STATIC_FN(name) STATIC_CAT(TU, name)

int STATIC_FN(packets)(uint8_t *trace, size_t size, uint64_t *out, int max)
{
	struct pt_packet_decoder *decoder;
	struct pt_config config;
	struct pt_packet packet;
	uint64_t offset;
	int n = 0;

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + size;
	decoder = pt_pkt_alloc_decoder(&config);
	if (!decoder)
		return -1;
	if (pt_pkt_sync_forward(decoder) >= 0) {
		while (n < max && pt_pkt_get_offset(decoder, &offset) >= 0 &&
		       pt_pkt_next(decoder, &packet, sizeof(packet)) >= 0)
			out[n++] = static_packet_key(packet.type, packet.size,
						     offset);
	}
	pt_pkt_free_decoder(decoder);
	return n;
}

static int STATIC_FN(read)(uint8_t *buffer, size_t size,
			   const struct pt_asid *asid, uint64_t ip,
			   void *context)
{
	(void) asid;
	return static_read_code(buffer, size, ip,
				(const struct static_code *) context);
}

int STATIC_FN(insns)(uint8_t *trace, size_t size,
		     const struct static_code *code, uint64_t *out, int max)
{
	struct pt_insn_decoder *decoder;
	struct pt_config config;
	struct pt_insn insn;
	struct pt_event event;
	int n = 0, status;

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + size;
	decoder = pt_insn_alloc_decoder(&config);
	if (!decoder)
		return -1;
	(void) pt_image_set_callback(pt_insn_get_image(decoder),
				     STATIC_FN(read), (void *) code);
	status = pt_insn_sync_forward(decoder);
	while (status >= 0 && n < max) {
		while (status >= 0 && (status & pts_event_pending))
			status = pt_insn_event(decoder, &event, sizeof(event));
		if (status < 0)
			break;
		status = pt_insn_next(decoder, &insn, sizeof(insn));
		if (status < 0)
			break;
		out[n++] = insn.ip;
	}
	pt_insn_free_decoder(decoder);
	return n;
}

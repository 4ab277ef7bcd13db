/* The time layer under arbitrary packet sequences: bytes choose the
 * configuration, the packets and their payloads.  Checks that only the
 * documented errors come back (never -pte_internal for sane arguments),
 * that a TSC packet always resets the time to its value, and that a known
 * FCR lies within the range calibration has seen.
 *
 * LLVMFuzzerTestOneInput is the libFuzzer entry; without libFuzzer
 * (IPT_LIBFUZZER undefined) main() feeds it pseudo-random inputs. */
#include "ipt.h"
#include "check.h"

#include <stdlib.h>

struct input {
	const uint8_t *pos, *end;
};

static uint64_t take(struct input *in, int bytes)
{
	uint64_t v = 0;

	while (bytes-- > 0 && in->pos < in->end)
		v = (v << 8) | *in->pos++;
	return v;
}

static int documented(int errcode)
{
	return errcode == 0 || errcode == -pte_bad_packet ||
	       errcode == -pte_bad_context || errcode == -pte_bad_config;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in;
	struct pt_config config;
	struct ipt_time time;
	struct ipt_time_cal tcal;
	int in_psb = 0, ok = 1;

	in.pos = data;
	in.end = data + size;

	pt_config_init(&config);
	config.mtc_freq = (uint8_t) (take(&in, 1) & 0xf);
	config.cpuid_0x15_eax = (uint32_t) take(&in, 1);
	config.cpuid_0x15_ebx = (uint32_t) take(&in, 2);
	config.nom_freq = (uint8_t) take(&in, 1);
	config.errata.skl168 = (uint32_t) (take(&in, 1) & 1);

	ipt_time_init(&time);
	ipt_tcal_init(&tcal);

	while (in.pos < in.end) {
		int op = (int) (take(&in, 1) % 9), ecal = 0, etime = 0;
		uint64_t fcr = 0, tsc = 0;

		switch (op) {
		case 0: {
			struct pt_packet_tsc p;

			p.tsc = take(&in, 7);
			ecal = in_psb ? ipt_tcal_header_tsc(&tcal, &p, &config)
				      : ipt_tcal_update_tsc(&tcal, &p, &config);
			etime = ipt_time_update_tsc(&time, &p, &config);
			ok &= ipt_time_query_tsc(&tsc, NULL, NULL, &time) == 0 &&
			      tsc == p.tsc;
			break;
		}
		case 1: {
			struct pt_packet_cbr p;

			p.ratio = (uint8_t) take(&in, 1);
			ecal = in_psb ? ipt_tcal_header_cbr(&tcal, &p, &config)
				      : ipt_tcal_update_cbr(&tcal, &p, &config);
			etime = ipt_time_update_cbr(&time, &p, &config);
			break;
		}
		case 2: {
			struct pt_packet_tma p;

			p.ctc = (uint16_t) take(&in, 2);
			p.fc = (uint16_t) (take(&in, 2) & 0x1ff);
			ecal = ipt_tcal_update_tma(&tcal, &p, &config);
			etime = ipt_time_update_tma(&time, &p, &config);
			break;
		}
		case 3:
		case 4: {
			struct pt_packet_mtc p;

			p.ctc = (uint8_t) take(&in, 1);
			ecal = ipt_tcal_update_mtc(&tcal, &p, &config);
			etime = ipt_time_update_mtc(&time, &p, &config);
			break;
		}
		case 5:
		case 6: {
			struct pt_packet_cyc p;

			p.value = take(&in, 2);
			if (ipt_tcal_fcr(&fcr, &tcal) < 0)
				fcr = 0;
			ecal = ipt_tcal_update_cyc(&tcal, &p, &config);
			etime = ipt_time_update_cyc(&time, &p, &config, fcr);
			break;
		}
		case 7:
			in_psb = !in_psb;
			if (in_psb)
				ecal = ipt_tcal_update_psb(&tcal, &config);
			break;
		case 8:
			ecal = ipt_tcal_update_ovf(&tcal, &config);
			break;
		}

		ok &= documented(ecal) && documented(etime);
		if (ipt_tcal_fcr(&fcr, &tcal) == 0)
			ok &= tcal.min_fcr <= fcr && fcr <= tcal.max_fcr;
	}
	/* One check per input. */
	CHECK(ok);
	return 0;
}

#ifndef IPT_LIBFUZZER
int main(void)
{
	uint8_t buf[512];
	uint64_t state = 0x9e3779b97f4a7c15ull;
	unsigned long before;
	int i;
	size_t j;

	for (i = 0; i < 3000; ++i) {
		for (j = 0; j < sizeof(buf); ++j) {
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			buf[j] = (uint8_t) state;
		}
		/* Keep some configurations sane so that timing proceeds. */
		if (i & 1) {
			buf[1] = 1;
			buf[2] = 0;
			buf[3] = (uint8_t) (1 + (i % 7));
		}
		before = check_failed;
		LLVMFuzzerTestOneInput(buf, 5 + (size_t) (i % (sizeof(buf) - 5)));
		if (check_failed != before) {
			printf("input %d failed\n", i);
			break;
		}
	}
	return check_done();
}
#endif

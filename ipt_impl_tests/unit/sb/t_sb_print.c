/* t_sb_print - the perf_event records ptdump prints that the conformance
 * corpus does not hold: THROTTLE and UNTHROTTLE, MMAP2, and a record of a
 * type the reader does not know (skipped, printed as UNKNOWN with its
 * type and misc, no samples, no time).  Compact, verbose and both at
 * once, as libipt
 * 2.3's sideband library prints them (sideband/src/pt_sb_pevent.c). */

#define _GNU_SOURCE
#include "ipt.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static uint64_t stream_buf[64];

static size_t put(size_t at, uint32_t type, const void *body, uint64_t time)
{
	struct pev_config config;
	struct pev_event ev;
	int size;

	pev_config_init(&config);
	config.sample_type = PERF_SAMPLE_TIME;
	config.time_mult = 1;
	pev_event_init(&ev);
	ev.type = type;
	ev.record.throttle = (const struct pev_record_throttle *) body;
	ev.sample.time = &time;
	size = pev_write(&ev, (uint8_t *) stream_buf + at,
			 (uint8_t *) stream_buf + sizeof(stream_buf), &config);
	CHECK(size > 0);
	return at + (size > 0 ? (size_t) size : 0);
}

/* Prints the whole stream [0, end) with @flags into a string. */
static char *dump(size_t end, uint32_t flags)
{
	struct pt_sb_pevent_config config;
	struct pt_sb_session *session;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	memset(&config, 0, sizeof(config));
	config.size = sizeof(config);
	config.filename = "mem";
	config.sample_type = PERF_SAMPLE_TIME;
	config.time_mult = 1;
	config.primary = 1;
	session = pt_sb_alloc(NULL);
	CHECK(session != NULL);
	if (!session)
		return NULL;
	CHECK_EQ(ipt_sb_alloc_pevent_decoder_mem(
			 session, &config, (const uint8_t *) stream_buf,
			 (const uint8_t *) stream_buf + end), 0);
	CHECK_EQ(pt_sb_init_decoders(session), 0);
	out = open_memstream(&text, &len);
	CHECK_EQ(pt_sb_dump(session, out, flags, UINT64_MAX), 0);
	fclose(out);
	pt_sb_free(session);
	return text;
}

static void expect(const char *got, const char *want)
{
	if (!CHECK(got && !strcmp(got, want)))
		printf("---- got:\n%s---- want:\n%s", got ? got : "(null)",
		       want);
}

int main(void)
{
	struct pev_record_throttle throttle = { 0x70, 0x8, 0x9 };
	struct pev_record_throttle unthrottle = { 0xa0, 0xb, 0xc };
	uint64_t store[16];
	struct pev_record_mmap2 *m2 = (struct pev_record_mmap2 *) store;
	size_t at = 0, unknown;
	uint8_t *u;
	char *text;

	memset(store, 0, sizeof(store));
	m2->pid = 1;
	m2->tid = 2;
	m2->addr = 0x1000;
	m2->len = 0x10;
	m2->pgoff = 0x20;
	m2->maj = 3;
	m2->min = 4;
	m2->ino = 5;
	m2->ino_generation = 6;
	m2->prot = 7;
	m2->flags = 2;
	strcpy(m2->filename, "/bin/true");

	at = put(at, PERF_RECORD_THROTTLE, &throttle, 3);
	at = put(at, PERF_RECORD_UNTHROTTLE, &unthrottle, 4);
	at = put(at, PERF_RECORD_MMAP2, m2, 5);
	/* Type 0x63, misc 1: a header and 8 bytes the reader skips. */
	unknown = at;
	u = (uint8_t *) stream_buf + at;
	memset(u, 0, 16);
	u[0] = 0x63;
	u[4] = 1;
	u[6] = 16;
	at += 16;

	text = dump(at, ptsbp_compact | ptsbp_file_offset);
	expect(text,
	       "0000000000000000  PERF_RECORD_THROTTLE  70, 8, 9  { 3 }\n"
	       "0000000000000028  PERF_RECORD_UNTHROTTLE  a0, b, c  { 4 }\n"
	       "0000000000000050  PERF_RECORD_MMAP2  1/2, 1000, 10, 20, 3, 4, "
	       "5, 6, 7, 2, /bin/true  { 5 }\n"
	       "00000000000000b0  UNKNOWN (63, 1)  { }\n");
	CHECK_EQ(unknown, 0xb0);
	free(text);

	text = dump(at, ptsbp_verbose | ptsbp_tsc);
	expect(text,
	       "0000000000000003  PERF_RECORD_THROTTLE\n"
	       "  time: 70\n  id: 8\n  stream_id: 9\n  time: 3\n"
	       "0000000000000004  PERF_RECORD_UNTHROTTLE\n"
	       "  time: a0\n  id: b\n  stream_id: c\n  time: 4\n"
	       "0000000000000005  PERF_RECORD_MMAP2\n"
	       "  pid: 1\n  tid: 2\n  addr: 1000\n  len: 10\n  pgoff: 20\n"
	       "  maj: 3\n  min: 4\n  ino: 5\n  ino_generation: 6\n"
	       "  prot: 7\n  flags: 2\n  filename: /bin/true\n  time: 5\n"
	       "UNKNOWN\n  type: 63\n  misc: 1\n");
	free(text);

	/* Both forms at once: libipt prints the compact form whole, then the
	 * verbose one, the record first and then its samples; a SWITCH
	 * record's name once. */
	at = put(0, PERF_RECORD_THROTTLE, &throttle, 3);
	at = put(at, PERF_RECORD_SWITCH, NULL, 4);
	text = dump(at, ptsbp_compact | ptsbp_verbose);
	expect(text,
	       "PERF_RECORD_THROTTLE  70, 8, 9PERF_RECORD_THROTTLE\n"
	       "  time: 70\n  id: 8\n  stream_id: 9  { 3 }\n  time: 3\n"
	       "PERF_RECORD_SWITCH.IN  { 4 }\n  time: 4\n");
	free(text);

	return check_done();
}

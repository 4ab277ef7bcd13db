/* t_sb_session - sideband sessions, contexts and the perf_event decoder
 * (>>sb).
 *
 * Contexts count references and may outlive their session; decoders'
 * records are applied in time order across decoders; a perf_event stream
 * maps files into process images, switches the trace decoder's image at
 * the right event, reports lost records, trace and sections as warnings
 * and bad records as errors with their offsets, prints records as
 * libipt does, and reads a stream that mixes sample types with a copy of
 * the caller's sample configuration; [vdso] maps to the vdso file of the
 * process's ABI.  A fault-injecting allocator fails each allocation of a
 * whole run in turn: every failure is a clean error, and nothing leaks. */

#define _GNU_SOURCE
#include "ipt.h"
#include "check.h"
#include "files.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- an allocator that counts, and fails on request ---- */

struct counting {
	long live;
	long calls;
	long fail_at; /* the call that fails, or -1 */
};

static void *count_alloc(void *context, size_t size)
{
	struct counting *c = (struct counting *) context;

	if (c->calls++ == c->fail_at)
		return NULL;
	c->live += (long) size;
	return malloc(size);
}

static void count_free(void *context, void *ptr, size_t size)
{
	struct counting *c = (struct counting *) context;

	c->live -= (long) size;
	free(ptr);
}

static struct ipt_allocator counting_allocator(struct counting *c)
{
	struct ipt_allocator a;

	memset(&a, 0, sizeof(a));
	a.alloc = count_alloc;
	a.free = count_free;
	a.context = c;
	return a;
}

/* ---- contexts ---- */

static void test_contexts(void)
{
	struct counting c = { 0, 0, -1 };
	struct ipt_allocator a = counting_allocator(&c);
	struct pt_sb_session *session;
	struct pt_sb_context *ctx, *found;
	unsigned i;

	session = ipt_sb_alloc_with(NULL, &a);
	CHECK(session != NULL);
	if (!session)
		return;
	CHECK(!strcmp(pt_image_name(pt_sb_kernel_image(session)), "kernel"));
	CHECK(pt_sb_iscache(session) == NULL);

	CHECK_EQ(pt_sb_find_context_by_pid(&found, session, 0x2a), 0);
	CHECK(found == NULL);
	CHECK_EQ(pt_sb_get_context_by_pid(&ctx, session, 0x2a), 0);
	CHECK(!strcmp(pt_image_name(pt_sb_ctx_image(ctx)), "pid-2a"));
	CHECK_EQ(pt_sb_get_context_by_pid(&found, session, 0x2a), 0);
	CHECK(found == ctx);

	/* The session holds one reference; 65534 more fit. */
	for (i = 1; i < 0xffff; ++i)
		if (pt_sb_ctx_get(ctx) < 0)
			break;
	CHECK_EQ(i, 0xffff);
	CHECK_EQ(pt_sb_ctx_get(ctx), -pte_overflow);
	for (i = 1; i < 0xffff; ++i)
		(void) pt_sb_ctx_put(ctx);

	/* A context kept past its removal and its session. */
	CHECK_EQ(pt_sb_ctx_get(ctx), 0);
	CHECK_EQ(pt_sb_remove_context(session, ctx), 0);
	CHECK_EQ(pt_sb_remove_context(session, ctx), -pte_nosync);
	CHECK_EQ(pt_sb_find_context_by_pid(&found, session, 0x2a), 0);
	CHECK(found == NULL);
	pt_sb_free(session);
	CHECK(!strcmp(pt_image_name(pt_sb_ctx_image(ctx)), "pid-2a"));
	CHECK_EQ(pt_sb_ctx_put(ctx), 0);
	CHECK_EQ(c.live, 0);

	CHECK_EQ(pt_sb_ctx_get(NULL), -pte_invalid);
	CHECK_EQ(pt_sb_ctx_put(NULL), -pte_invalid);
	CHECK(pt_sb_ctx_image(NULL) == NULL);
	CHECK_EQ(pt_sb_get_context_by_pid(NULL, NULL, 1), -pte_invalid);
	CHECK_EQ(pt_sb_init_decoders(NULL), -pte_invalid);
	CHECK_EQ(pt_sb_dump(NULL, stdout, 0, 0), -pte_invalid);

	CHECK(!strcmp(pt_sb_errstr(ptse_ok), "OK"));
	CHECK(!strcmp(pt_sb_errstr(ptse_lost), "sideband lost"));
	CHECK(!strcmp(pt_sb_errstr(ptse_trace_lost), "trace lost"));
	CHECK(!strcmp(pt_sb_errstr(ptse_section_lost), "image section lost"));
	CHECK(!strcmp(pt_sb_errstr((enum pt_sb_error_code) 9), "bad errcode"));
}

/* ---- decoders of our own: the order records are applied in ---- */

struct fake {
	const uint64_t *times;
	int n, at;
	char name;
	char *log;
};

static int fake_fetch(struct pt_sb_session *s, uint64_t *tsc, void *priv)
{
	struct fake *f = (struct fake *) priv;

	(void) s;
	if (f->at >= f->n)
		return -pte_eos;
	*tsc = f->times[f->at++];
	return 0;
}

static int fake_apply(struct pt_sb_session *s, struct pt_image **image,
		      const struct pt_event *event, void *priv)
{
	struct fake *f = (struct fake *) priv;
	char entry[16];

	(void) s;
	(void) image;
	snprintf(entry, sizeof(entry), "%c%d@%d ", f->name, f->at,
		 (int) event->tsc);
	strcat(f->log, entry);
	return 0;
}

static int fake_print(struct pt_sb_session *s, FILE *stream, uint32_t flags,
		      void *priv)
{
	(void) s;
	(void) stream;
	(void) flags;
	(void) priv;
	return 0;
}

static void test_order(void)
{
	static const uint64_t ta[] = { 1, 4, 6 }, tb[] = { 2, 3, 7 };
	char log[256] = "";
	struct fake fa = { ta, 3, 0, 'a', log }, fb = { tb, 3, 0, 'b', log };
	struct pt_sb_decoder_config config;
	struct pt_sb_session *session;
	struct pt_event event;

	session = pt_sb_alloc(NULL);
	memset(&config, 0, sizeof(config));
	config.size = sizeof(config);
	config.fetch = fake_fetch;
	config.apply = fake_apply;
	config.print = fake_print;
	config.priv = &fa;
	CHECK_EQ(pt_sb_alloc_decoder(session, &config), 0);
	config.priv = &fb;
	CHECK_EQ(pt_sb_alloc_decoder(session, &config), 0);
	CHECK_EQ(pt_sb_init_decoders(session), 0);

	memset(&event, 0, sizeof(event));
	event.tsc = 5;
	CHECK_EQ(pt_sb_event(session, NULL, &event, sizeof(event), NULL, 0), 0);
	/* Due records in time order (a's at index 1 is time 1, ...), then
	 * the event to everyone. */
	CHECK(!strcmp(log, "a1@5 b1@5 b2@5 a2@5 a3@5 b3@5 "));

	/* Too small an event; no session. */
	CHECK_EQ(pt_sb_event(session, NULL, &event, 8, NULL, 0), -pte_invalid);
	CHECK_EQ(pt_sb_event(NULL, NULL, &event, sizeof(event), NULL, 0),
		 -pte_invalid);
	pt_sb_free(session);
}

/* ---- the perf_event decoder ---- */

static uint64_t stream_buf[256];
static char codefile[64];

/* The identifier records carry if their sample type has one. */
static uint64_t sample_ident = 7;

/* Appends a record with a time sample, and a pid/tid sample and the
 * identifier if the stream has them. */
static size_t put_samples(size_t at, uint32_t type, uint16_t misc,
			  const void *body, uint64_t sample_type, uint32_t pid,
			  uint64_t time)
{
	struct pev_config config;
	struct pev_event ev;
	int size;

	pev_config_init(&config);
	config.sample_type = sample_type;
	config.time_mult = 1;
	pev_event_init(&ev);
	ev.type = type;
	ev.misc = misc;
	ev.record.mmap = (const struct pev_record_mmap *) body;
	if (sample_type & PERF_SAMPLE_TID) {
		ev.sample.pid = &pid;
		ev.sample.tid = &pid;
	}
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		ev.sample.identifier = &sample_ident;
	ev.sample.time = &time;
	size = pev_write(&ev, (uint8_t *) stream_buf + at,
			 (uint8_t *) stream_buf + sizeof(stream_buf), &config);
	CHECK(size > 0);
	return at + (size > 0 ? (size_t) size : 0);
}

static size_t put(size_t at, uint32_t type, uint16_t misc, const void *body,
		  uint64_t time)
{
	return put_samples(at, type, misc, body, PERF_SAMPLE_TIME, 0, time);
}

/* An MMAP of @name for @pid, with the samples of @sample_type. */
static size_t put_mmap(size_t at, uint64_t sample_type, uint32_t pid,
		       uint64_t addr, const char *name, uint64_t time)
{
	uint64_t store[12];
	struct pev_record_mmap *m = (struct pev_record_mmap *) store;

	memset(store, 0, sizeof(store));
	m->pid = m->tid = pid;
	m->addr = addr;
	m->len = 0x10;
	snprintf(m->filename, sizeof(store) - sizeof(*m), "%s", name);
	return put_samples(at, PERF_RECORD_MMAP, 0, m, sample_type, pid, time);
}

/* The stream the tests decode, and the offsets of its records. */
static size_t off_lost, off_aux, off_anon, off_vdso, off_bad, stream_end;

static size_t make_stream(void)
{
	struct pev_record_itrace_start it = { 1, 1 };
	struct pev_record_switch_cpu_wide sw = { 2, 2 };
	struct pev_record_lost lost = { 1, 5 };
	struct pev_record_aux aux = { 0, 0x100, PERF_AUX_FLAG_TRUNCATED };
	size_t at = 0;

	at = put_mmap(at, PERF_SAMPLE_TIME, 1, 0x1000, codefile, 0);
	at = put_mmap(at, PERF_SAMPLE_TIME, 2, 0x2000, codefile, 0);
	at = put(at, PERF_RECORD_ITRACE_START, 0, &it, 0);
	at = put(at, PERF_RECORD_SWITCH_CPU_WIDE, PERF_RECORD_MISC_SWITCH_OUT,
		 &sw, 5);
	off_lost = at;
	at = put(at, PERF_RECORD_LOST, 0, &lost, 6);
	off_aux = at;
	at = put(at, PERF_RECORD_AUX, 0, &aux, 6);
	off_anon = at;
	at = put_mmap(at, PERF_SAMPLE_TIME, 1, 0x3000, "//anon", 6);
	off_vdso = at;
	at = put_mmap(at, PERF_SAMPLE_TIME, 1, 0x4000, "[vdso]", 6);
	/* A header whose size is below a header's. */
	off_bad = at;
	memset((uint8_t *) stream_buf + at, 0, 8);
	((uint8_t *) stream_buf)[at] = PERF_RECORD_LOST;
	((uint8_t *) stream_buf)[at + 6] = 4;
	stream_end = at + 8;
	return stream_end;
}

struct notes {
	char text[512];
	int switches;
};

static int note_error(int errcode, const char *filename, uint64_t offset,
		      void *priv)
{
	struct notes *n = (struct notes *) priv;
	char entry[64];

	snprintf(entry, sizeof(entry), "%s:%d@%x ", filename, errcode,
		 (unsigned) offset);
	strcat(n->text, entry);
	return 0;
}

static int note_switch(const struct pt_sb_context *context, void *priv)
{
	struct notes *n = (struct notes *) priv;

	(void) context;
	n->switches += 1;
	return 0;
}

static void pevent_config(struct pt_sb_pevent_config *config)
{
	memset(config, 0, sizeof(*config));
	config->size = sizeof(*config);
	config->filename = "mem";
	config->sample_type = PERF_SAMPLE_TIME;
	config->time_mult = 1;
	config->kernel_start = 0x8000;
	config->primary = 1;
}

static struct pt_event make_event(enum pt_event_type type, uint64_t tsc,
				  uint64_t ip, int suppressed)
{
	struct pt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.tsc = tsc;
	ev.has_tsc = 1;
	ev.ip_suppressed = suppressed ? 1 : 0;
	ev.variant.tip.ip = ip; /* tip, tick and disabled share the spot */
	ev.variant.tick.ip = ip;
	ev.variant.disabled.ip = ip;
	return ev;
}

/* Runs the stream through a session.  With checks off, only that nothing
 * crashes or leaks matters (the fault-injection runs). */
static int run_stream(const struct ipt_allocator *a, int checks)
{
	struct pt_sb_pevent_config config;
	struct pt_sb_session *session;
	struct pt_image *image;
	struct pt_event ev;
	struct notes notes;
	int errcode;

	memset(&notes, 0, sizeof(notes));
	session = ipt_sb_alloc_with(NULL, a);
	if (!session)
		return -pte_nomem;
	pt_sb_notify_error(session, note_error, &notes);
	pt_sb_notify_switch(session, note_switch, &notes);

	pevent_config(&config);
	errcode = ipt_sb_alloc_pevent_decoder_mem(
		session, &config, (const uint8_t *) stream_buf,
		(const uint8_t *) stream_buf + stream_end);
	if (errcode < 0) {
		pt_sb_free(session);
		return errcode;
	}
	errcode = pt_sb_init_decoders(session);

	/* Time 1, in user space: the maps and the trace start apply; the
	 * trace starts in pid 1 at once. */
	image = NULL;
	ev = make_event(ptev_tick, 1, 0x1000, 0);
	errcode = pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0);
	if (checks) {
		CHECK_EQ(errcode, 0);
		CHECK(image && !strcmp(pt_image_name(image), "pid-1"));
		CHECK_EQ(notes.switches, 1);
	}

	/* Time 5, still in user space: the switch to pid 2 waits. */
	image = NULL;
	ev = make_event(ptev_tip, 5, 0x1008, 0);
	(void) pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0);
	if (checks)
		CHECK(image == NULL);

	/* Tracing stops with the IP suppressed: likely into the kernel,
	 * where the switch happens. */
	ev = make_event(ptev_disabled, 5, 0, 1);
	(void) pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0);
	if (checks) {
		CHECK(image && !strcmp(pt_image_name(image), "pid-2"));
		CHECK_EQ(notes.switches, 2);
	}

	/* The rest: warnings, an error for [vdso] without a vdso, and the
	 * bad record ends the decoder. */
	ev = make_event(ptev_tick, 100, 0x2000, 0);
	(void) pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0);
	(void) pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0);
	if (checks) {
		char want[512];

		snprintf(want, sizeof(want),
			 "mem:%d@%x mem:%d@%x mem:%d@%x mem:%d@%x mem:%d@%x ",
			 ptse_lost, (unsigned) off_lost, ptse_trace_lost,
			 (unsigned) off_aux, ptse_section_lost,
			 (unsigned) off_anon, -pte_bad_config,
			 (unsigned) off_vdso, -pte_nosync, (unsigned) off_bad);
		CHECK(!strcmp(notes.text, want));
		if (strcmp(notes.text, want))
			printf("     got  %s\n     want %s\n", notes.text, want);
	}

	/* pid 2's context is the one the decoder switched to. */
	if (checks) {
		struct pt_sb_context *ctx = NULL;

		CHECK_EQ(pt_sb_find_context_by_pid(&ctx, session, 2), 0);
		CHECK(ctx && pt_sb_ctx_image(ctx) == image);
	}

	pt_sb_free(session);
	return 0;
}

static void test_pevent(void)
{
	struct counting c = { 0, 0, -1 };
	struct ipt_allocator a = counting_allocator(&c);
	long calls, n;

	make_stream();
	CHECK_EQ(run_stream(&a, 1), 0);
	CHECK_EQ(c.live, 0);

	/* Each allocation of the run fails in turn. */
	calls = c.calls;
	CHECK(calls > 10);
	for (n = 0; n < calls; ++n) {
		c.calls = 0;
		c.fail_at = n;
		(void) run_stream(&a, 0);
		if (c.live)
			break;
	}
	CHECK_EQ(n, calls);
	CHECK_EQ(c.live, 0);
}

/* Exec, fork, switches with a pid sample, MMAP2, kernel maps, a
 * secondary decoder and a time offset. */
static size_t put_tid(size_t at, uint32_t type, uint16_t misc,
		      const void *body, uint32_t pid, uint64_t time)
{
	return put_samples(at, type, misc, body,
			   PERF_SAMPLE_TID | PERF_SAMPLE_TIME, pid, time);
}

static size_t make_process_stream(void)
{
	struct pev_record_itrace_start it = { 1, 1 };
	struct pev_record_fork fork = { 3, 1, 3, 1, 0 };
	struct pev_record_exit exit = { 3, 1, 3, 1, 0 };
	uint64_t mstore[16], cstore[4];
	struct pev_record_mmap2 *m2 = (struct pev_record_mmap2 *) mstore;
	struct pev_record_comm *comm = (struct pev_record_comm *) cstore;
	size_t at = 0;

	memset(mstore, 0, sizeof(mstore));
	memset(cstore, 0, sizeof(cstore));
	m2->pid = m2->tid = 1;
	m2->addr = 0x1000;
	m2->len = 0x10;
	snprintf(m2->filename, sizeof(mstore) - sizeof(*m2), "%s", codefile);
	at = put_tid(at, PERF_RECORD_MMAP2, 0, m2, 1, 0);
	/* A kernel map is ignored: the kernel image comes from elsewhere. */
	m2->addr = 0x2000;
	at = put_tid(at, PERF_RECORD_MMAP2, PERF_RECORD_MISC_KERNEL, m2, 1, 0);
	at = put_tid(at, PERF_RECORD_ITRACE_START, 0, &it, 1, 0);
	/* pid 3 forks from 1 at time 2, switches in at 3, exits at 4. */
	at = put_tid(at, PERF_RECORD_FORK, 0, &fork, 1, 2);
	at = put_tid(at, PERF_RECORD_SWITCH, 0, NULL, 3, 3);
	at = put_tid(at, PERF_RECORD_EXIT, 0, &exit, 3, 4);
	/* pid 1 execs at 10: a new, empty image. */
	comm->pid = comm->tid = 1;
	strcpy(comm->comm, "new");
	at = put_tid(at, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, comm, 1,
		     10);
	at = put_tid(at, PERF_RECORD_SWITCH, 0, NULL, 1, 11);
	return at;
}

static void test_processes(void)
{
	struct pt_sb_pevent_config config;
	struct pt_sb_session *session;
	struct pt_sb_context *ctx1, *ctx3;
	struct pt_image *image, *old1;
	struct pt_event ev;
	size_t size;

	size = make_process_stream();
	session = pt_sb_alloc(NULL);
	pevent_config(&config);
	config.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	CHECK_EQ(ipt_sb_alloc_pevent_decoder_mem(
			 session, &config, (const uint8_t *) stream_buf,
			 (const uint8_t *) stream_buf + size), 0);
	/* The same stream again, secondary: it never switches. */
	config.primary = 0;
	CHECK_EQ(ipt_sb_alloc_pevent_decoder_mem(
			 session, &config, (const uint8_t *) stream_buf,
			 (const uint8_t *) stream_buf + size), 0);
	CHECK_EQ(pt_sb_init_decoders(session), 0);

	image = NULL;
	ev = make_event(ptev_enabled, 2, 0x1000, 0);
	CHECK_EQ(pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0), 0);
	CHECK(image && !strcmp(pt_image_name(image), "pid-1"));

	/* The fork made pid 3 with a copy of pid 1's image: the same
	 * sections (one), at the same place. */
	CHECK_EQ(pt_sb_find_context_by_pid(&ctx3, session, 3), 0);
	CHECK(ctx3 != NULL);
	CHECK_EQ(pt_sb_find_context_by_pid(&ctx1, session, 1), 0);
	CHECK(ctx1 != NULL);
	if (!ctx1 || !ctx3)
		return;
	CHECK_EQ(pt_image_remove_by_filename(pt_sb_ctx_image(ctx3), codefile,
					     NULL), 1);
	/* pid 1 has the one map; the kernel's went nowhere. */
	CHECK_EQ(pt_image_copy(pt_sb_ctx_image(ctx3), pt_sb_ctx_image(ctx1)),
		 0);
	CHECK_EQ(pt_image_remove_by_filename(pt_sb_ctx_image(ctx3), codefile,
					     NULL), 1);
	CHECK_EQ(pt_image_remove_by_filename(pt_sb_kernel_image(session),
					     codefile, NULL), 0);

	/* The switch-in to 3 at time 3 waits for the kernel; an event at a
	 * kernel address places it. */
	image = NULL;
	ev = make_event(ptev_tip, 3, 0x1004, 0);
	CHECK_EQ(pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0), 0);
	CHECK(image == NULL);
	ev = make_event(ptev_tip, 3, 0x9000, 0);
	CHECK_EQ(pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0), 0);
	CHECK(image == pt_sb_ctx_image(ctx3));

	/* Exec replaces pid 1's context; the switch back to 1 at time 11
	 * goes to the new one, which lacks the old map. */
	old1 = pt_sb_ctx_image(ctx1);
	image = NULL;
	ev = make_event(ptev_tip, 11, 0x9004, 0);
	CHECK_EQ(pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0), 0);
	ev = make_event(ptev_tip, 11, 0x9008, 0);
	CHECK_EQ(pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0), 0);
	CHECK_EQ(pt_sb_find_context_by_pid(&ctx1, session, 1), 0);
	CHECK(ctx1 && image == pt_sb_ctx_image(ctx1));
	CHECK(image != old1 && image && !strcmp(pt_image_name(image), "pid-1"));
	CHECK_EQ(pt_image_remove_by_filename(image, codefile, NULL), 0);
	pt_sb_free(session);

	/* A time offset applies records early: the fork's time 2 less 2. */
	session = pt_sb_alloc(NULL);
	config.primary = 1;
	config.tsc_offset = 2;
	CHECK_EQ(ipt_sb_alloc_pevent_decoder_mem(
			 session, &config, (const uint8_t *) stream_buf,
			 (const uint8_t *) stream_buf + size), 0);
	CHECK_EQ(pt_sb_init_decoders(session), 0);
	ev = make_event(ptev_enabled, 0, 0x1000, 0);
	CHECK_EQ(pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0), 0);
	CHECK_EQ(pt_sb_find_context_by_pid(&ctx3, session, 3), 0);
	CHECK(ctx3 != NULL);
	pt_sb_free(session);
}

/* A stream that mixes sample types: the decoder's sample configuration
 * picks each record's by its identifier.  The decoder keeps a copy of
 * the configuration: the caller's may change or go away. */
static void test_sample_config(void)
{
	uint64_t storage[1 + 2 * 2];
	struct pev_sample_config *sc = (struct pev_sample_config *) storage;
	const uint64_t mixed = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_IDENTIFIER;
	struct pt_sb_pevent_config config;
	struct pt_sb_session *session;
	struct pt_sb_context *ctx;
	struct pt_image *image;
	struct pt_event ev;
	uint32_t pid = 5;
	size_t size;

	/* One MMAP of pid 5 with tid, time and identifier samples. */
	size = put_mmap(0, mixed, pid, 0x1000, codefile, 1);

	sc->nstypes = 2;
	sc->stypes[0].identifier = 1;
	sc->stypes[0].sample_type = PERF_SAMPLE_IDENTIFIER;
	sc->stypes[1].identifier = sample_ident;
	sc->stypes[1].sample_type = mixed;
	session = pt_sb_alloc(NULL);
	pevent_config(&config);
	config.sample_type = PERF_SAMPLE_IDENTIFIER;
	config.sample_config = sc;
	CHECK_EQ(ipt_sb_alloc_pevent_decoder_mem(
			 session, &config, (const uint8_t *) stream_buf,
			 (const uint8_t *) stream_buf + size),
		 0);
	memset(storage, 0, sizeof(storage));
	CHECK_EQ(pt_sb_init_decoders(session), 0);

	image = NULL;
	ev = make_event(ptev_tick, 2, 0x1000, 0);
	CHECK_EQ(pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0), 0);
	ctx = NULL;
	CHECK_EQ(pt_sb_find_context_by_pid(&ctx, session, pid), 0);
	CHECK(ctx != NULL);
	if (ctx)
		CHECK_EQ(pt_image_remove_by_filename(pt_sb_ctx_image(ctx),
						     codefile, NULL), 1);
	pt_sb_free(session);
}

/* [vdso] mappings: each process gets the vdso file of its ABI
 * (pt_sb_pevent_config's vdso_x64, vdso_x32, vdso_ia32), which the ELF
 * header of the first ELF file it maps tells: class 64, class 32 with
 * machine x86-64 (x32), class 32 with machine 386.  A process whose ABI is
 * unknown (it mapped no ELF file) gets none: -pte_bad_config, reported at
 * the record, as libipt 2.3's sideband library does (pt_sb_pevent.c). */
enum { nabi = 3 };

/* A 64-byte file: an ELF header's first 20 bytes (class, version 1,
 * LSB, e_machine), the rest zero. */
static void write_elf(const char *name, uint8_t elf_class, uint16_t machine)
{
	uint8_t head[64] = { 0x7f, 'E', 'L', 'F' };

	head[4] = elf_class;
	head[5] = 1;
	head[6] = 1;
	head[16] = 2;
	head[18] = (uint8_t) machine;
	head[19] = (uint8_t) (machine >> 8);
	CHECK(write_file(name, head, sizeof(head)));
}

static int note_bad(int errcode, const char *filename, uint64_t offset,
		    void *priv)
{
	uint64_t *at = (uint64_t *) priv;

	(void) filename;
	if (errcode == -pte_bad_config)
		*at = offset;
	else
		*at = UINT64_MAX;
	return 0;
}

static void test_vdso(void)
{
	/* pid 1: 64-bit; 2: x32; 3: 32-bit; 4: no ELF file. */
	static const uint8_t classes[nabi + 1] = { 2, 1, 1, 0 };
	static const uint16_t machines[nabi + 1] = { 62, 62, 3, 0 };
	const uint64_t samples = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	char dir[] = "/tmp/t_sb_vdso.XXXXXX";
	char elf[nabi + 1][64], vdso[nabi][64];
	struct pt_sb_pevent_config config;
	struct pt_sb_session *session;
	struct pt_image *image = NULL;
	struct pt_event ev;
	uint64_t bad = 0;
	size_t at = 0, bad_at = 0;
	int i, k;

	if (!CHECK(mkdtemp(dir) != NULL))
		return;
	for (i = 0; i <= nabi; ++i) {
		snprintf(elf[i], sizeof(elf[i]), "%s/elf%d", dir, i);
		if (classes[i])
			write_elf(elf[i], classes[i], machines[i]);
		else
			CHECK(write_file(elf[i], "text", 4));
		at = put_mmap(at, samples, (uint32_t) i + 1, 0x1000, elf[i], 1);
		if (i == nabi)
			bad_at = at;
		at = put_mmap(at, samples, (uint32_t) i + 1, 0x4000, "[vdso]",
			      1);
	}
	for (i = 0; i < nabi; ++i) {
		snprintf(vdso[i], sizeof(vdso[i]), "%s/vdso%d", dir, i);
		CHECK(write_file(vdso[i], "vdso", 4));
	}

	session = pt_sb_alloc(NULL);
	pt_sb_notify_error(session, note_bad, &bad);
	pevent_config(&config);
	config.sample_type = samples;
	config.vdso_x64 = vdso[0];
	config.vdso_x32 = vdso[1];
	config.vdso_ia32 = vdso[2];
	CHECK_EQ(ipt_sb_alloc_pevent_decoder_mem(
			 session, &config, (const uint8_t *) stream_buf,
			 (const uint8_t *) stream_buf + at),
		 0);
	CHECK_EQ(pt_sb_init_decoders(session), 0);
	ev = make_event(ptev_tick, 2, 0x1000, 0);
	CHECK_EQ(pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0), 0);

	/* Each process's image holds its ELF file and its ABI's vdso. */
	for (i = 0; i <= nabi; ++i) {
		struct pt_sb_context *ctx = NULL;
		struct pt_image *pimage;

		CHECK_EQ(pt_sb_find_context_by_pid(&ctx, session,
						   (uint32_t) i + 1), 0);
		if (!CHECK(ctx != NULL))
			continue;
		pimage = pt_sb_ctx_image(ctx);
		CHECK_EQ(pt_image_remove_by_filename(pimage, elf[i], NULL), 1);
		for (k = 0; k < nabi; ++k)
			CHECK_EQ(pt_image_remove_by_filename(pimage, vdso[k],
							     NULL),
				 k == i);
	}
	CHECK_EQ(bad, bad_at);
	pt_sb_free(session);

	for (i = 0; i <= nabi; ++i)
		unlink(elf[i]);
	for (i = 0; i < nabi; ++i)
		unlink(vdso[i]);
	rmdir(dir);
}

/* What ptdump prints: compact and verbose, with offsets, time and file
 * name; the same from a file as from memory. */
static void test_print(void)
{
	struct pt_sb_pevent_config config;
	struct pt_sb_session *session;
	char *text = NULL, *ftext = NULL, line[256];
	size_t len = 0, flen = 0;
	char sbfile[] = "/tmp/t_sb_session.XXXXXX";
	FILE *out;
	int fd;

	session = pt_sb_alloc(NULL);
	pevent_config(&config);
	CHECK_EQ(ipt_sb_alloc_pevent_decoder_mem(
			 session, &config, (const uint8_t *) stream_buf,
			 (const uint8_t *) stream_buf + off_bad), 0);
	CHECK_EQ(pt_sb_init_decoders(session), 0);
	out = open_memstream(&text, &len);
	CHECK_EQ(pt_sb_dump(session, out, ptsbp_compact | ptsbp_file_offset,
			    4), 0);
	CHECK_EQ(pt_sb_dump(session, out, ptsbp_verbose | ptsbp_tsc, 5), 0);
	CHECK_EQ(pt_sb_dump(session, out,
			    ptsbp_compact | ptsbp_filename | ptsbp_file_offset,
			    UINT64_MAX), 0);
	fclose(out);
	pt_sb_free(session);

	snprintf(line, sizeof(line),
		 "0000000000000000  PERF_RECORD_MMAP  1/1, 1000, 10, 0, %s  { 0 }\n",
		 codefile);
	CHECK(text && !strncmp(text, line, strlen(line)));
	CHECK(strstr(text, "PERF_RECORD_ITRACE_START  1/1  { 0 }\n") != NULL);
	CHECK(strstr(text, "0000000000000005  PERF_RECORD_SWITCH_CPU_WIDE.OUT\n"
			   "  next pid: 2\n  next tid: 2\n  time: 5\n") != NULL);
	snprintf(line, sizeof(line),
		 "mem:%016x  PERF_RECORD_AUX.TRUNCATED  0, 100, 1  { 6 }\n",
		 (unsigned) off_aux);
	CHECK(strstr(text, line) != NULL);

	/* The same from a file, from an offset. */
	fd = mkstemp(sbfile);
	CHECK(fd >= 0);
	CHECK(write(fd, "pad.pad.", 8) == 8);
	CHECK(write(fd, stream_buf, off_bad) == (ssize_t) off_bad);
	close(fd);
	session = pt_sb_alloc(NULL);
	config.filename = sbfile;
	config.begin = 8;
	CHECK_EQ(pt_sb_alloc_pevent_decoder(session, &config), 0);
	CHECK_EQ(pt_sb_init_decoders(session), 0);
	out = open_memstream(&ftext, &flen);
	CHECK_EQ(pt_sb_dump(session, out, ptsbp_compact | ptsbp_file_offset,
			    4), 0);
	CHECK_EQ(pt_sb_dump(session, out, ptsbp_verbose | ptsbp_tsc, 5), 0);
	fclose(out);
	pt_sb_free(session);
	CHECK(ftext && text && !strncmp(ftext, text, flen));

	/* Bad configurations and files. */
	session = pt_sb_alloc(NULL);
	config.end = 8;
	CHECK_EQ(pt_sb_alloc_pevent_decoder(session, &config), -pte_invalid);
	config.end = 0;
	config.filename = "/nonexistent/sideband";
	CHECK_EQ(pt_sb_alloc_pevent_decoder(session, &config), -pte_bad_file);
	config.filename = NULL;
	CHECK_EQ(pt_sb_alloc_pevent_decoder(session, &config), -pte_invalid);
	config.filename = sbfile;
	config.size = 8;
	CHECK_EQ(pt_sb_alloc_pevent_decoder(session, &config), -pte_invalid);
	pt_sb_free(session);

	unlink(sbfile);
	free(text);
	free(ftext);
}

int main(void)
{
	int fd;

	/* The file the MMAP records name. */
	snprintf(codefile, sizeof(codefile), "/tmp/t_sb_code.XXXXXX");
	fd = mkstemp(codefile);
	if (fd < 0 || write(fd, "\x90\x90\x90\x90\x90\x90\x90\x90"
			    "\x90\x90\x90\x90\x90\x90\x90\xc3", 16) != 16) {
		printf("cannot make %s\n", codefile);
		return 1;
	}
	close(fd);

	test_contexts();
	test_order();
	test_pevent();
	test_print();
	test_processes();
	test_sample_config();
	test_vdso();

	unlink(codefile);
	return check_done();
}

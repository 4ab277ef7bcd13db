/* Sideband harness: the perf_event record reader, and a sideband session
 * applying a stream to trace decoder events.
 *
 * Input: the sideband header (fuzz.h: stream configuration, flags, the
 * events), then the perf_event stream.  First every record is read with
 * pev_read, each field it points to is looked at, and each record is
 * written back with pev_write and read again: the two must agree.  Then
 * a session gets the stream (once or twice, primary or secondary) and the
 * events, printing records if asked.  The files records map live under a
 * directory that does not exist, so nothing outside the input is read.
 * Errors reach the notifier with an offset inside the stream. */
#include "fuzz.h"

#define FZ_SB_ROOT "/nonexistent-ipt-fuzz/"

/* Touches what a record points to, so ASan checks it is in the input. */
static uint64_t sb_touch(const struct pev_event *ev)
{
	uint64_t sum = ev->type;

	switch (ev->type) {
	case PERF_RECORD_MMAP:
		sum += ev->record.mmap->pgoff + strlen(ev->record.mmap->filename);
		break;
	case PERF_RECORD_MMAP2:
		sum += ev->record.mmap2->flags +
		       strlen(ev->record.mmap2->filename);
		break;
	case PERF_RECORD_COMM:
		sum += strlen(ev->record.comm->comm);
		break;
	case PERF_RECORD_SWITCH:
		if (ev->record.mmap)
			fz_fail("SWITCH with a body", 0, 0);
		break;
	default:
		/* Every other body ends with at least 8 bytes. */
		if (ev->record.lost_samples)
			sum += ev->record.lost_samples->lost;
		break;
	}
	if (ev->sample.tid)
		sum += *ev->sample.pid + *ev->sample.tid;
	if (ev->sample.time)
		sum += *ev->sample.time;
	if (ev->sample.id)
		sum += *ev->sample.id;
	if (ev->sample.stream_id)
		sum += *ev->sample.stream_id;
	if (ev->sample.cpu)
		sum += *ev->sample.cpu;
	if (ev->sample.identifier)
		sum += *ev->sample.identifier;
	return sum;
}

/* The samples pev_read and pev_write know. */
static const uint64_t sb_known_samples =
	PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
	PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;

/* Whether a sample type the configuration may pick has other bits: the
 * reader skips them, the writer, which writes what the record has, finds
 * them missing (-pte_bad_config), as libipt's does. */
static int sb_other_samples(const struct pev_config *config)
{
	int i;

	if (config->sample_type & ~sb_known_samples)
		return 1;
	for (i = 0; config->sample_config &&
		    i < config->sample_config->nstypes; ++i)
		if (config->sample_config->stypes[i].sample_type &
		    ~sb_known_samples)
			return 1;
	return 0;
}

/* Reads every record; writes each back and reads it again. */
static void sb_read_all(const uint8_t *begin, const uint8_t *end,
			const struct pev_config *config)
{
	static uint64_t copy[0x10000 / 8];
	const uint8_t *pos = begin;
	volatile uint64_t sink = 0;

	while (pos < end) {
		struct pev_event ev, again;
		int size, wsize;

		size = pev_read(&ev, pos, end, config);
		if (size < 0)
			break;
		if (size < 8 || size > end - pos || size % 8)
			fz_fail("pev_read size", size, end - pos);
		sink += sb_touch(&ev);

		wsize = pev_write(&ev, (uint8_t *) copy,
				  (uint8_t *) copy + sizeof(copy), config);
		if (wsize == -pte_bad_opc && !ev.record.mmap &&
		    ev.type != PERF_RECORD_SWITCH)
			; /* a type pev_read only skips */
		else if (wsize == -pte_bad_config && sb_other_samples(config))
			;
		else if (wsize != size)
			fz_fail("pev_write differs from pev_read", wsize, size);
		else if (pev_read(&again, (uint8_t *) copy,
				  (uint8_t *) copy + wsize, config) != size ||
			 again.type != ev.type || again.misc != ev.misc)
			fz_fail("written record reads back differently", size,
				again.type);
		pos += size;
	}
	(void) sink;
}

struct sb_notes {
	uint64_t size;
	unsigned count;
};

static int sb_note(int errcode, const char *filename, uint64_t offset,
		   void *priv)
{
	struct sb_notes *notes = (struct sb_notes *) priv;

	if (!filename || strcmp(filename, "fuzz"))
		fz_fail("error without the sideband's name", errcode, 0);
	if (offset > notes->size)
		fz_fail("error offset past the stream", (long long) offset,
			(long long) notes->size);
	if (errcode > ptse_section_lost || errcode < -pte_bad_cpu)
		fz_fail("unknown error code", errcode, 0);
	notes->count += 1;
	return 0;
}

static void sb_session(const struct fz_sb_header *h, struct pev_config *pev,
		       const uint8_t *events, size_t nevents,
		       const uint8_t *begin, const uint8_t *end)
{
	static FILE *devnull;
	struct pt_sb_pevent_config config;
	struct pt_sb_session *session;
	struct sb_notes notes;
	uint64_t tsc = 0;
	FILE *stream = NULL;
	size_t i;

	if ((h->flags & fz_sb_print) && !devnull)
		devnull = fopen("/dev/null", "w");
	if (h->flags & fz_sb_print)
		stream = devnull;

	fz_alloc_fail_at(h->fail_at);
	session = ipt_sb_alloc_with(NULL, fz_allocator());
	if (!session)
		return;
	notes.size = (uint64_t) (end - begin);
	notes.count = 0;
	pt_sb_notify_error(session, sb_note, &notes);

	memset(&config, 0, sizeof(config));
	config.size = sizeof(config);
	config.filename = "fuzz";
	config.sysroot = FZ_SB_ROOT;
	if (h->flags & fz_sb_vdso) {
		config.vdso_x64 = FZ_SB_ROOT "vdso64";
		config.vdso_x32 = FZ_SB_ROOT "vdsox32";
		config.vdso_ia32 = FZ_SB_ROOT "vdso32";
	}
	config.sample_type = pev->sample_type;
	config.sample_config = pev->sample_config;
	config.time_shift = pev->time_shift;
	config.time_mult = pev->time_mult;
	config.time_zero = pev->time_zero;
	config.tsc_offset = h->tsc_offset;
	config.kernel_start = h->kernel_start;
	config.primary = (h->flags & fz_sb_primary) ? 1 : 0;
	(void) ipt_sb_alloc_pevent_decoder_mem(session, &config, begin, end);
	if (h->flags & fz_sb_secondary) {
		config.primary = 0;
		(void) ipt_sb_alloc_pevent_decoder_mem(session, &config, begin,
						       end);
	}
	(void) pt_sb_init_decoders(session);

	for (i = 0; i < nevents; ++i) {
		const uint8_t *e = events + i * fz_sb_event_size;
		struct pt_image *image = NULL;
		struct pt_event ev;
		uint16_t delta;

		memset(&ev, 0, sizeof(ev));
		ev.type = (enum pt_event_type) (e[0] % (ptev_syscall + 1));
		ev.ip_suppressed = e[1] & 1;
		delta = (uint16_t) (e[2] | (e[3] << 8));
		tsc += delta;
		ev.tsc = tsc;
		ev.has_tsc = 1;
		memcpy(&ev.variant, e + 4, 24);

		if (pt_sb_event(session, &image, &ev, sizeof(ev), stream,
				h->print_flags & 0x1f) < 0)
			fz_fail("pt_sb_event failed", 0, 0);
		if (image && !(h->flags & fz_sb_primary))
			fz_fail("a secondary decoder switched images", 0, 0);
		if (image && !pt_image_name(image))
			fz_fail("switched to an image without a name", 0, 0);
	}
	if (stream)
		(void) pt_sb_dump(session, stream, h->print_flags & 0x1f,
				  UINT64_MAX);
	pt_sb_free(session);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A sample configuration and room for its entries. */
	uint64_t sc[1 + 2 * fz_sb_max_stypes];
	struct pev_sample_config *sconfig = (struct pev_sample_config *) sc;
	struct fz_sb_header h;
	struct pev_config pev;
	struct fz in;
	uint8_t *events, *stream;
	size_t nevents, ssize;

	fz_init(&in, data, size);
	fz_sb_header(&in, &h);
	events = fz_copy(&in, (size_t) h.nevents * fz_sb_event_size, &nevents);
	nevents /= fz_sb_event_size;
	stream = fz_copy(&in, in.n, &ssize);

	pev_config_init(&pev);
	pev.sample_type = h.sample_type;
	pev.time_shift = h.time_shift;
	pev.time_mult = h.time_mult;
	pev.time_zero = h.time_zero;
	if (h.nstypes) {
		sconfig->nstypes = h.nstypes;
		memcpy(sconfig->stypes, h.stypes, sizeof(h.stypes));
		pev.sample_config = sconfig;
	}

	sb_read_all(stream, stream + ssize, &pev);
	sb_session(&h, &pev, events, nevents, stream, stream + ssize);

	free(events);
	free(stream);
	return 0;
}

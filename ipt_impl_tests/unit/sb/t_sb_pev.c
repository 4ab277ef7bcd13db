/* t_sb_pev - the perf_event record reader and writer (>>pev).
 *
 * Every record type is written and read back with no samples, with some
 * and with all of them; every truncation of each record reads as the end
 * of the stream; corrupt headers, bodies, names and configurations give
 * their -pte_* errors; time converts both ways. */

#include "ipt.h"
#include "check.h"

#include <string.h>

/* Records are read in place: keep the buffer 8-byte aligned. */
static uint64_t storage[512];
#define BUF ((uint8_t *) storage)
#define BUFSIZE sizeof(storage)

static const uint32_t pid = 0x11, tid = 0x12, cpu = 3;
static const uint64_t stime = 0x1000, sid = 0x21, sstream = 0x22,
		      sident = 0x23;

/* The sample types the tests cycle through. */
static const uint64_t sample_types[] = {
	0,
	PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
	PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
		PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
		PERF_SAMPLE_IDENTIFIER,
	PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER,
};

static void set_samples(struct pev_event *ev, uint64_t sample_type)
{
	if (sample_type & PERF_SAMPLE_TID) {
		ev->sample.pid = &pid;
		ev->sample.tid = &tid;
	}
	if (sample_type & PERF_SAMPLE_TIME)
		ev->sample.time = &stime;
	if (sample_type & PERF_SAMPLE_ID)
		ev->sample.id = &sid;
	if (sample_type & PERF_SAMPLE_STREAM_ID)
		ev->sample.stream_id = &sstream;
	if (sample_type & PERF_SAMPLE_CPU)
		ev->sample.cpu = &cpu;
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		ev->sample.identifier = &sident;
}

static void check_samples(const struct pev_event *ev, uint64_t sample_type,
			  const struct pev_config *config)
{
	CHECK(!ev->sample.pid == !(sample_type & PERF_SAMPLE_TID));
	CHECK(!ev->sample.time == !(sample_type & PERF_SAMPLE_TIME));
	CHECK(!ev->sample.id == !(sample_type & PERF_SAMPLE_ID));
	CHECK(!ev->sample.stream_id == !(sample_type & PERF_SAMPLE_STREAM_ID));
	CHECK(!ev->sample.cpu == !(sample_type & PERF_SAMPLE_CPU));
	CHECK(!ev->sample.identifier ==
	      !(sample_type & PERF_SAMPLE_IDENTIFIER));
	if (ev->sample.pid && ev->sample.tid) {
		CHECK_EQ(*ev->sample.pid, pid);
		CHECK_EQ(*ev->sample.tid, tid);
	}
	if (ev->sample.time) {
		uint64_t tsc;

		CHECK_EQ(*ev->sample.time, stime);
		CHECK_EQ(pev_time_to_tsc(&tsc, stime, config), 0);
		CHECK_EQ(ev->sample.tsc, tsc);
	}
	if (ev->sample.id)
		CHECK_EQ(*ev->sample.id, sid);
	if (ev->sample.stream_id)
		CHECK_EQ(*ev->sample.stream_id, sstream);
	if (ev->sample.cpu)
		CHECK_EQ(*ev->sample.cpu, cpu);
	if (ev->sample.identifier)
		CHECK_EQ(*ev->sample.identifier, sident);
}

/* The bodies with names (filled in by make_bodies), in 8-byte aligned
 * storage: names long enough to need padding and not. */
static uint64_t mmap_store[8], mmap2_store[12], comm_store[4];

static void make_bodies(void)
{
	struct pev_record_mmap *m = (struct pev_record_mmap *) (void *) mmap_store;
	struct pev_record_mmap2 *m2 =
		(struct pev_record_mmap2 *) (void *) mmap2_store;
	struct pev_record_comm *c = (struct pev_record_comm *) (void *) comm_store;

	m->pid = 1;
	m->tid = 2;
	m->addr = 0x400000;
	m->len = 0x1000;
	m->pgoff = 0x200;
	strcpy(m->filename, "/bin/true");
	m2->pid = 3;
	m2->tid = 4;
	m2->addr = 0x7f0000;
	m2->len = 0x2000;
	m2->pgoff = 0x10;
	m2->maj = 8;
	m2->min = 1;
	m2->ino = 0x1234;
	m2->ino_generation = 5;
	m2->prot = 5;
	m2->flags = 2;
	strcpy(m2->filename, "libc.s");
	c->pid = 5;
	c->tid = 6;
	strcpy(c->comm, "bash");
}

static const struct pev_record_lost lost_body = { 7, 8 };
static const struct pev_record_exit exit_body = { 9, 10, 11, 12, 13 };
static const struct pev_record_fork fork_body = { 14, 15, 16, 17, 18 };
static const struct pev_record_throttle throttle_body = { 19, 20, 21 };
static const struct pev_record_aux aux_body = { 22, 23,
						PERF_AUX_FLAG_TRUNCATED };
static const struct pev_record_itrace_start itrace_body = { 24, 25 };
static const struct pev_record_lost_samples lost_samples_body = { 26 };
static const struct pev_record_switch_cpu_wide switch_body = { 27, 28 };

struct kind {
	uint32_t type;
	uint16_t misc;
	const void *body;
	size_t size;
};

static const struct kind kinds[] = {
	{ PERF_RECORD_MMAP, 0, mmap_store, sizeof(struct pev_record_mmap) },
	{ PERF_RECORD_LOST, 0, &lost_body, sizeof(lost_body) },
	{ PERF_RECORD_COMM, 0, comm_store, sizeof(struct pev_record_comm) },
	{ PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, comm_store,
	  sizeof(struct pev_record_comm) },
	{ PERF_RECORD_EXIT, 0, &exit_body, sizeof(exit_body) },
	{ PERF_RECORD_THROTTLE, 0, &throttle_body, sizeof(throttle_body) },
	{ PERF_RECORD_UNTHROTTLE, 0, &throttle_body, sizeof(throttle_body) },
	{ PERF_RECORD_FORK, 0, &fork_body, sizeof(fork_body) },
	{ PERF_RECORD_MMAP2, 0, mmap2_store,
	  sizeof(struct pev_record_mmap2) },
	{ PERF_RECORD_AUX, 0, &aux_body, sizeof(aux_body) },
	{ PERF_RECORD_ITRACE_START, 0, &itrace_body, sizeof(itrace_body) },
	{ PERF_RECORD_LOST_SAMPLES, 0, &lost_samples_body,
	  sizeof(lost_samples_body) },
	{ PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, NULL, 0 },
	{ PERF_RECORD_SWITCH_CPU_WIDE, 0, &switch_body, sizeof(switch_body) },
};

static void config_for(struct pev_config *config, uint64_t sample_type)
{
	pev_config_init(config);
	config->sample_type = sample_type;
	config->time_mult = 3;
	config->time_shift = 2;
	config->time_zero = 0x10;
}

static int write_kind(const struct kind *k, uint64_t sample_type,
		      struct pev_config *config)
{
	struct pev_event ev;

	pev_event_init(&ev);
	ev.type = k->type;
	ev.misc = k->misc;
	ev.record.mmap = (const struct pev_record_mmap *) k->body;
	set_samples(&ev, sample_type);
	config_for(config, sample_type);
	memset(BUF, 0xcc, BUFSIZE);
	return pev_write(&ev, BUF, BUF + BUFSIZE, config);
}

/* Each kind, each sample type: written, read back, compared; every
 * shorter buffer is the end of the stream. */
static void test_round_trips(void)
{
	size_t k, s;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); ++k) {
		for (s = 0; s < sizeof(sample_types) / sizeof(sample_types[0]);
		     ++s) {
			struct pev_config config;
			struct pev_event ev;
			int size, cut;

			size = write_kind(&kinds[k], sample_types[s], &config);
			CHECK(size >= 8);
			if (size < 8)
				continue;
			CHECK_EQ(size % 8, 0);

			CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), size);
			CHECK_EQ(ev.type, kinds[k].type);
			CHECK_EQ(ev.misc, kinds[k].misc);
			if (kinds[k].body)
				CHECK(!memcmp(ev.record.mmap, kinds[k].body,
					      kinds[k].size));
			else
				CHECK(!ev.record.mmap);
			check_samples(&ev, sample_types[s], &config);

			/* A longer buffer reads the same record. */
			CHECK_EQ(pev_read(&ev, BUF, BUF + BUFSIZE, &config),
				 size);

			for (cut = 0; cut < size; ++cut)
				CHECK_EQ(pev_read(&ev, BUF, BUF + cut, &config),
					 -pte_eos);
		}
	}

	/* The names came back whole. */
	{
		struct pev_config config;
		struct pev_event ev;
		int size;

		size = write_kind(&kinds[0], 0, &config);
		CHECK_EQ(size, 8 + 32 + 16);
		CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), size);
		CHECK(!strcmp(ev.record.mmap->filename, "/bin/true"));

		size = write_kind(&kinds[8], 0, &config);
		CHECK_EQ(size, 8 + 64 + 8);
		CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), size);
		CHECK(!strcmp(ev.record.mmap2->filename, "libc.s"));

		size = write_kind(&kinds[2], 0, &config);
		CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), size);
		CHECK(!strcmp(ev.record.comm->comm, "bash"));
	}
}

static void put_header(uint8_t *at, uint32_t type, uint16_t misc,
		       uint16_t size)
{
	struct perf_event_header h;

	h.type = type;
	h.misc = misc;
	h.size = size;
	memcpy(at, &h, sizeof(h));
}

static void test_corrupt(void)
{
	struct pev_config config;
	struct pev_event ev;
	int size;

	config_for(&config, 0);
	memset(BUF, 0, BUFSIZE);

	/* Header size below the header. */
	put_header(BUF, PERF_RECORD_LOST, 0, 4);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);
	put_header(BUF, PERF_RECORD_LOST, 0, 0);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);

	/* Type zero: the padding after the last record. */
	put_header(BUF, 0, 0, 24);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_eos);

	/* Bigger than the buffer. */
	put_header(BUF, PERF_RECORD_LOST, 0, 0xfff8);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_eos);

	/* Not a multiple of 8. */
	put_header(BUF, PERF_RECORD_LOST, 0, 25);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);

	/* A body that does not fit the record, and one with bytes left. */
	put_header(BUF, PERF_RECORD_LOST, 0, 16);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);
	put_header(BUF, PERF_RECORD_LOST, 0, 32);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);
	put_header(BUF, PERF_RECORD_MMAP2, 0, 8);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);
	put_header(BUF, PERF_RECORD_SWITCH, 0, 16);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);

	/* Samples the configuration asks for but the record lacks. */
	config_for(&config, PERF_SAMPLE_TID | PERF_SAMPLE_TIME);
	put_header(BUF, PERF_RECORD_LOST, 0, 24);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);
	put_header(BUF, PERF_RECORD_SWITCH, 0, 16);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);
	put_header(BUF, PERF_RECORD_SWITCH, 0, 24);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), 24);

	/* A name without its NUL, at the end of the record. */
	config_for(&config, 0);
	size = write_kind(&kinds[2], 0, &config);
	CHECK_EQ(size, 24);
	memset(BUF + 16, 'x', 8);
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), -pte_bad_packet);
	size = write_kind(&kinds[0], 0, &config);
	memset(BUF + 40, 'x', (size_t) size - 40);
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), -pte_bad_packet);
	/* ... or one that runs into the samples. */
	size = write_kind(&kinds[2], PERF_SAMPLE_TID, &config);
	CHECK_EQ(size, 32);
	memset(BUF + 16, 'x', 8);
	BUF[24] = 0;
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), -pte_nosync);

	/* Errors come in libipt's order: a name without NUL before an odd
	 * size, a bad time configuration before a size mismatch. */
	size = write_kind(&kinds[0], 0, &config);
	put_header(BUF, PERF_RECORD_MMAP, 0, 52);
	memset(BUF + 40, 'x', 16);
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), -pte_bad_packet);
	size = write_kind(&kinds[1], PERF_SAMPLE_TIME, &config);
	CHECK_EQ(size, 32);
	put_header(BUF, PERF_RECORD_LOST, 0, 40);
	config.time_mult = 0;
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_bad_config);
	config.time_mult = 1;
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);
	config_for(&config, 0);

	/* An unknown type of a size perf would have padded. */
	put_header(BUF, 0x1234, 0, 20);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), -pte_nosync);

	/* Unknown types are skipped whole, with nothing to look at. */
	put_header(BUF, 0x1234, 7, 40);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, &config), 40);
	CHECK_EQ(ev.type, 0x1234);
	CHECK_EQ(ev.misc, 7);
	CHECK(!ev.record.mmap && !ev.sample.time);

	/* Arguments. */
	CHECK_EQ(pev_read(NULL, BUF, BUF + 64, &config), -pte_internal);
	CHECK_EQ(pev_read(&ev, NULL, BUF + 64, &config), -pte_internal);
	CHECK_EQ(pev_read(&ev, BUF + 8, BUF, &config), -pte_internal);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 64, NULL), -pte_internal);
	CHECK_EQ(pev_read(&ev, BUF, BUF + 4, &config), -pte_eos);
}

static void test_config(void)
{
	/* A sample configuration with room for two entries. */
	uint64_t storage_sc[1 + 2 * 2];
	struct pev_sample_config *sc = (struct pev_sample_config *) storage_sc;
	struct pev_config config;
	struct pev_event ev;
	int size;

	/* Time with a zero multiplier, or a shift past 63. */
	size = write_kind(&kinds[1], PERF_SAMPLE_TIME, &config);
	CHECK_EQ(size, 32);
	config.time_mult = 0;
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), -pte_bad_config);
	config.time_mult = 1;
	config.time_shift = 64;
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), -pte_bad_config);

	/* A configuration too small for the sample type. */
	config_for(&config, 0);
	config.size = offsetof(struct pev_config, sample_type);
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), -pte_bad_config);

	/* A sample configuration picks the type by the identifier last in
	 * the record. */
	size = write_kind(&kinds[1], PERF_SAMPLE_TID | PERF_SAMPLE_IDENTIFIER,
			  &config);
	CHECK_EQ(size, 40);
	sc->nstypes = 2;
	sc->stypes[0].identifier = 1;
	sc->stypes[0].sample_type = PERF_SAMPLE_IDENTIFIER;
	sc->stypes[1].identifier = sident;
	sc->stypes[1].sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_IDENTIFIER;
	config_for(&config, PERF_SAMPLE_TIME);
	config.sample_config = sc;
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), size);
	CHECK(ev.sample.tid && ev.sample.identifier && !ev.sample.time);
	/* ... and must name PERF_SAMPLE_IDENTIFIER. */
	sc->stypes[1].sample_type = PERF_SAMPLE_TID;
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), -pte_bad_config);
	/* Unknown identifiers fall back to sample_type. */
	sc->stypes[1].identifier = sident + 1;
	config.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_IDENTIFIER;
	CHECK_EQ(pev_read(&ev, BUF, BUF + size, &config), size);
}

static void test_write_errors(void)
{
	struct pev_config config;
	struct pev_event ev;
	int size;

	config_for(&config, 0);
	pev_event_init(&ev);
	ev.type = 0x99;
	CHECK_EQ(pev_write(&ev, BUF, BUF + BUFSIZE, &config), -pte_bad_opc);
	ev.type = PERF_RECORD_LOST;
	CHECK_EQ(pev_write(&ev, BUF, BUF + BUFSIZE, &config), -pte_internal);
	ev.record.lost = &lost_body;
	CHECK_EQ(pev_write(&ev, BUF, BUF + 16, &config), -pte_eos);
	CHECK_EQ(pev_write(&ev, BUF, BUF + 24, &config), 24);
	/* Samples the configuration does not have. */
	ev.sample.time = &stime;
	CHECK_EQ(pev_write(&ev, BUF, BUF + BUFSIZE, &config), -pte_bad_config);
	CHECK_EQ(pev_write(NULL, BUF, BUF + BUFSIZE, &config), -pte_internal);
	CHECK_EQ(pev_write(&ev, BUF, BUF + BUFSIZE, NULL), -pte_internal);

	/* The cpu sample's reserved half is written as zero. */
	size = write_kind(&kinds[1], PERF_SAMPLE_CPU, &config);
	CHECK_EQ(size, 32);
	CHECK_EQ(BUF[28] | BUF[29] | BUF[30] | BUF[31], 0);
}

static void test_time(void)
{
	struct pev_config config;
	uint64_t tsc, time;

	pev_config_init(&config);
	config.time_zero = 1000;
	config.time_mult = 3;
	config.time_shift = 10;

	/* time = zero + (tsc * mult) >> shift */
	CHECK_EQ(pev_time_from_tsc(&time, 1024 * 7, &config), 0);
	CHECK_EQ(time, 1000 + 21);
	CHECK_EQ(pev_time_to_tsc(&tsc, 1021, &config), 0);
	CHECK_EQ(tsc, 1024 * 7);

	/* Round trips stay within one time unit's worth of ticks. */
	for (tsc = 1; tsc < (1ull << 40); tsc = tsc * 7 + 3) {
		uint64_t back;

		CHECK_EQ(pev_time_from_tsc(&time, tsc, &config), 0);
		CHECK_EQ(pev_time_to_tsc(&back, time, &config), 0);
		CHECK(back <= tsc && tsc - back < 1024 / 3 + 1);
	}

	/* Time zero is synthesized records' time: TSC zero. */
	config.time_mult = 0;
	CHECK_EQ(pev_time_to_tsc(&tsc, 0, &config), 0);
	CHECK_EQ(tsc, 0);
	CHECK_EQ(pev_time_to_tsc(&tsc, 5, &config), -pte_bad_config);
	CHECK_EQ(pev_time_from_tsc(&time, 5, &config), -pte_bad_config);
	CHECK_EQ(pev_time_to_tsc(NULL, 5, &config), -pte_internal);
	CHECK_EQ(pev_time_from_tsc(&time, 5, NULL), -pte_internal);
}

int main(void)
{
	make_bodies();
	test_round_trips();
	test_corrupt();
	test_config();
	test_write_errors();
	test_time();
	return check_done();
}

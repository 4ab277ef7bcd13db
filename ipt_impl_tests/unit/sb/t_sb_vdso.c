/* t_sb_vdso - [vdso] mappings in a perf_event stream: each process gets
 * the vdso file of its ABI (pt_sb_pevent_config's vdso_x64, vdso_x32,
 * vdso_ia32), which the ELF header of the first ELF file it maps tells:
 * class 64, class 32 with machine x86-64 (x32), class 32 with machine 386.
 * A process whose ABI is unknown (it mapped no ELF file) gets none:
 * -pte_bad_config, reported at the record, as libipt 2.3's sideband
 * library does (pt_sb_pevent.c).  The image is read through ipt.h's
 * internal interface, so this test compiles its own copy of the
 * implementation. */

#define _GNU_SOURCE
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"
#include "files.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { nproc = 4 };

static char dir[] = "/tmp/t_sb_vdso.XXXXXX";
static char elf[nproc][64], vdso[3][64];
static uint64_t stream[128];

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

static size_t put(size_t at, uint32_t type, const void *body, uint32_t pid)
{
	struct pev_config config;
	struct pev_event ev;
	uint64_t time = 1;
	int size;

	pev_config_init(&config);
	config.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	config.time_mult = 1;
	pev_event_init(&ev);
	ev.type = type;
	ev.record.mmap = (const struct pev_record_mmap *) body;
	ev.sample.pid = &pid;
	ev.sample.tid = &pid;
	ev.sample.time = &time;
	size = pev_write(&ev, (uint8_t *) stream + at,
			 (uint8_t *) stream + sizeof(stream), &config);
	CHECK(size > 0);
	return at + (size > 0 ? (size_t) size : 0);
}

static size_t put_mmap(size_t at, uint32_t pid, uint64_t addr,
		       const char *name)
{
	uint64_t store[16];
	struct pev_record_mmap *m = (struct pev_record_mmap *) store;

	memset(store, 0, sizeof(store));
	m->pid = m->tid = pid;
	m->addr = addr;
	m->len = 0x40;
	snprintf(m->filename, sizeof(store) - sizeof(*m), "%s", name);
	return put(at, PERF_RECORD_MMAP, m, pid);
}

struct notes {
	int errcode, count;
	uint64_t offset;
};

static int note_error(int errcode, const char *filename, uint64_t offset,
		      void *priv)
{
	struct notes *n = (struct notes *) priv;

	(void) filename;
	n->errcode = errcode;
	n->offset = offset;
	n->count += 1;
	return 0;
}

/* The byte at @addr in pid's image, or a negative error. */
static int byte_at(struct pt_sb_session *session, uint32_t pid,
		   uint64_t addr)
{
	struct pt_sb_context *context = NULL;
	struct pt_asid asid;
	uint8_t byte;
	int isid, status;

	status = pt_sb_find_context_by_pid(&context, session, pid);
	if (status < 0 || !context)
		return -pte_internal;
	pt_asid_init(&asid);
	status = ipt__image_read(pt_sb_ctx_image(context), &isid, &byte, 1,
				 &asid, addr);
	return status < 0 ? status : byte;
}

int main(void)
{
	/* pid 1: 64-bit; 2: x32; 3: 32-bit; 4: no ELF file. */
	static const uint8_t classes[nproc] = { 2, 1, 1, 0 };
	static const uint16_t machines[nproc] = { 62, 62, 3, 0 };
	static const uint8_t marks[3] = { 0x64, 0x32, 0x86 };
	struct pt_sb_pevent_config config;
	struct pt_sb_session *session;
	struct pt_image *image = NULL;
	struct pt_event ev;
	struct notes notes;
	size_t at = 0, bad_at = 0;
	int i;

	if (!CHECK(mkdtemp(dir) != NULL))
		return check_done();
	for (i = 0; i < nproc; ++i) {
		snprintf(elf[i], sizeof(elf[i]), "%s/elf%d", dir, i);
		if (classes[i])
			write_elf(elf[i], classes[i], machines[i]);
		else
			CHECK(write_file(elf[i], "text", 4));
	}
	for (i = 0; i < 3; ++i) {
		uint8_t bytes[64];

		memset(bytes, marks[i], sizeof(bytes));
		snprintf(vdso[i], sizeof(vdso[i]), "%s/vdso%d", dir, i);
		CHECK(write_file(vdso[i], bytes, sizeof(bytes)));
	}

	for (i = 0; i < nproc; ++i) {
		at = put_mmap(at, (uint32_t) i + 1, 0x1000, elf[i]);
		if (i == nproc - 1)
			bad_at = at;
		at = put_mmap(at, (uint32_t) i + 1, 0x4000, "[vdso]");
	}

	memset(&notes, 0, sizeof(notes));
	session = pt_sb_alloc(NULL);
	if (!CHECK(session != NULL))
		return check_done();
	pt_sb_notify_error(session, note_error, &notes);
	memset(&config, 0, sizeof(config));
	config.size = sizeof(config);
	config.filename = "mem";
	config.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	config.time_mult = 1;
	config.primary = 1;
	config.vdso_x64 = vdso[0];
	config.vdso_x32 = vdso[1];
	config.vdso_ia32 = vdso[2];
	CHECK_EQ(ipt_sb_alloc_pevent_decoder_mem(
			 session, &config, (const uint8_t *) stream,
			 (const uint8_t *) stream + at),
		 0);
	CHECK_EQ(pt_sb_init_decoders(session), 0);

	memset(&ev, 0, sizeof(ev));
	ev.type = ptev_tick;
	ev.has_tsc = 1;
	ev.tsc = 10;
	ev.variant.tick.ip = 0x1000;
	CHECK(pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0) >= 0);

	for (i = 0; i < 3; ++i) {
		CHECK_EQ(byte_at(session, (uint32_t) i + 1, 0x1000),
			 0x7f);
		CHECK_EQ(byte_at(session, (uint32_t) i + 1, 0x4010), marks[i]);
	}
	CHECK_EQ(byte_at(session, nproc, 0x1000), 't');
	CHECK_EQ(byte_at(session, nproc, 0x4010), -pte_nomap);
	CHECK_EQ(notes.count, 1);
	CHECK_EQ(notes.errcode, -pte_bad_config);
	CHECK_EQ(notes.offset, bad_at);
	pt_sb_free(session);

	for (i = 0; i < nproc; ++i)
		unlink(elf[i]);
	for (i = 0; i < 3; ++i)
		unlink(vdso[i]);
	rmdir(dir);
	return check_done();
}

/* threads.c - the same traces decoded on several threads at once.
 *
 * ipt.h keeps no mutable global or thread-local state, so decoders on
 * different threads must not disturb each other.  Each thread decodes the
 * test cases with the packet, event, block and instruction decoders (code
 * through a callback for blocks, through a file section for instructions)
 * a few times over; every digest must equal the one a single-threaded run
 * made first.  make test runs it twice: as built normally, and built with
 * ThreadSanitizer (implementation included), which reports any data race.
 *
 *     threads CONFORMANCE
 */
#include "ipt.h"
#include "check.h"
#include "cases.h"

#include <pthread.h>

enum { nthreads = 4, rounds = 20, max_steps = 100000 };

static struct hcase cases[hcase_count];
static int loaded[hcase_count];

static uint64_t digest(uint64_t d, uint64_t v)
{
	return (d ^ v) * 0x100000001b3ull;
}

static uint64_t run_pkt(const struct hcase *c)
{
	struct pt_config config;
	struct pt_packet_decoder *d;
	struct pt_packet p;
	uint64_t h = 1, off;
	int s, steps = 0;

	hcase_config(&config, c);
	d = pt_pkt_alloc_decoder(&config);
	if (!d)
		return 0;
	while (pt_pkt_sync_forward(d) >= 0 && steps < max_steps) {
		while ((s = pt_pkt_next(d, &p, sizeof(p))) >= 0 &&
		       ++steps < max_steps) {
			(void) pt_pkt_get_offset(d, &off);
			h = digest(digest(h, p.type), off);
		}
		if (s == -pte_eos)
			break;
	}
	pt_pkt_free_decoder(d);
	return h;
}

static uint64_t run_evt(const struct hcase *c)
{
	struct pt_config config;
	struct pt_event_decoder *d;
	struct pt_event ev;
	uint64_t h = 2;
	int s, steps = 0;

	hcase_config(&config, c);
	d = pt_evt_alloc_decoder(&config);
	if (!d)
		return 0;
	while (pt_evt_sync_forward(d) >= 0 && steps < max_steps) {
		while ((s = pt_evt_next(d, &ev, sizeof(ev))) >= 0 &&
		       ++steps < max_steps)
			h = digest(digest(h, ev.type), ev.tsc);
		if (s == -pte_eos)
			break;
	}
	pt_evt_free_decoder(d);
	return h;
}

static uint64_t run_blk(const struct hcase *c)
{
	struct pt_config config;
	struct pt_block_decoder *d;
	struct pt_block b;
	struct pt_event ev;
	uint64_t h = 3;
	int s, steps = 0;

	hcase_config(&config, c);
	d = pt_blk_alloc_decoder(&config);
	if (!d)
		return 0;
	(void) pt_image_set_callback(pt_blk_get_image(d), hcase_read,
				     (void *) c);
	while ((s = pt_blk_sync_forward(d)) >= 0 && steps < max_steps) {
		for (; ++steps < max_steps;) {
			while (s >= 0 && (s & pts_event_pending)) {
				s = pt_blk_event(d, &ev, sizeof(ev));
				h = digest(h, ev.type);
			}
			if (s < 0)
				break;
			s = pt_blk_next(d, &b, sizeof(b));
			if (s < 0)
				break;
			h = digest(digest(h, b.ip), b.ninsn);
		}
		h = digest(h, (uint64_t) s);
		if (s == -pte_eos)
			break;
	}
	pt_blk_free_decoder(d);
	return h;
}

static uint64_t run_insn(const struct hcase *c)
{
	struct pt_config config;
	struct pt_insn_decoder *d;
	struct pt_insn insn;
	struct pt_event ev;
	uint64_t h = 4;
	int s, steps = 0;

	hcase_config(&config, c);
	d = pt_insn_alloc_decoder(&config);
	if (!d)
		return 0;
	if (pt_image_add_file(pt_insn_get_image(d), c->image_path, 0,
			      c->isize, NULL, c->base) < 0)
		h = 5;
	while ((s = pt_insn_sync_forward(d)) >= 0 && steps < max_steps) {
		for (; ++steps < max_steps;) {
			while (s >= 0 && (s & pts_event_pending)) {
				s = pt_insn_event(d, &ev, sizeof(ev));
				h = digest(h, ev.type);
			}
			if (s < 0)
				break;
			s = pt_insn_next(d, &insn, sizeof(insn));
			if (s < 0)
				break;
			h = digest(digest(h, insn.ip), insn.iclass);
		}
		h = digest(h, (uint64_t) s);
		if (s == -pte_eos)
			break;
	}
	pt_insn_free_decoder(d);
	return h;
}

static uint64_t (*const runs[])(const struct hcase *) = {
	run_pkt, run_evt, run_blk, run_insn
};

enum { nruns = sizeof(runs) / sizeof(runs[0]) };

static uint64_t want[hcase_count][nruns];

struct job {
	int id;
	unsigned long mismatches;
	unsigned long decodes;
};

static void *worker(void *arg)
{
	struct job *job = (struct job *) arg;
	int r, i, k;

	for (r = 0; r < rounds; ++r) {
		for (i = 0; i < hcase_count; ++i) {
			/* Each thread walks the cases in its own order. */
			int ci = (i + job->id * 3) % hcase_count;

			if (!loaded[ci])
				continue;
			for (k = 0; k < nruns; ++k) {
				job->decodes++;
				if (runs[k](&cases[ci]) != want[ci][k])
					job->mismatches++;
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *conf = argc > 1 ? argv[1] : "ipt_impl_tests/conformance/corpus";
	pthread_t tid[nthreads];
	struct job jobs[nthreads];
	int i, k;

	for (i = 0; i < hcase_count; ++i) {
		loaded[i] = hcase_load(&cases[i], conf, hcase_names[i]) == 0;
		CHECK(loaded[i]);
		for (k = 0; loaded[i] && k < nruns; ++k)
			want[i][k] = runs[k](&cases[i]);
	}
	for (i = 0; i < nthreads; ++i) {
		jobs[i].id = i;
		jobs[i].mismatches = jobs[i].decodes = 0;
		CHECK_EQ(pthread_create(&tid[i], NULL, worker, &jobs[i]), 0);
	}
	for (i = 0; i < nthreads; ++i) {
		CHECK_EQ(pthread_join(tid[i], NULL), 0);
		printf("thread %d: %lu decodes, %lu differ from the "
		       "single-threaded run\n", i, jobs[i].decodes,
		       jobs[i].mismatches);
		CHECK_EQ(jobs[i].mismatches, 0);
		CHECK(jobs[i].decodes > 0);
	}
	for (i = 0; i < hcase_count; ++i)
		hcase_free(&cases[i]);
	return check_done();
}

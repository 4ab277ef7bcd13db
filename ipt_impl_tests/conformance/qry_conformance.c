/* qry_conformance.c - the query loop of pt_qry_cond_branch(3) over the
 * libipt conformance cases.
 *
 * For each ptxed case of DIR/libipt/MANIFEST it maps the case's --raw files
 * into an image, configures the decoder from the case's arguments (--cpu
 * and its errata, MTC/CPUID frequencies, iflags events, keep-tcal), and
 * follows the code with the query decoder the way the man page sketches
 * it: conditional branches ask pt_qry_cond_branch(), indirect branches and
 * far transfers pt_qry_indirect_branch(), everything else follows from the
 * code; pending events are fetched with pt_qry_event() and applied
 * (enable, disable, asynchronous branch, overflow, execution mode).
 * Returns come back from a small call stack when the trace compresses
 * them.  Errors resynchronize at the next PSB, as ptxed does.
 *
 * The check: where the expected ptxed output (ptxed.exp) reports no
 * error, the loop must reach the end of the trace without one.  Cases
 * whose expected output has errors are counted, not checked: the loop
 * does not look at the instructions as closely as ptxed does.
 *
 * This program includes ipt.h's implementation itself to reach the
 * instruction classification of >>ild (ipt__insn_decode).
 *
 * Usage: qry_conformance DIR     (DIR holds libipt/MANIFEST and cases/)
 * With DIR missing it fails.
 */
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "files.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { max_steps = 2000000, max_stack = 64, max_raws = 8 };

struct job {
	const char *dir;
	struct pt_config config;
	struct pt_image *image;
	uint8_t *trace;
	size_t size;
	int nraws;
};

/* Set up config and image from the case's ptxed arguments.  Unknown
 * options do not matter to the query loop. */
static int setup(struct job *job, char *args)
{
	char *save = NULL, *arg;

	pt_config_init(&job->config);
	job->image = pt_image_alloc(NULL);
	for (arg = strtok_r(args, " \t\n", &save); arg;
	     arg = strtok_r(NULL, " \t\n", &save)) {
		char *val, path[8192];

		if (!strcmp(arg, "--raw")) {
			char *colon, *range;
			uint64_t addr, from = 0, size = UINT64_MAX;

			/* FILE[:FROM[-TO]]:BASE */
			val = strtok_r(NULL, " \t\n", &save);
			if (!val || !(colon = strrchr(val, ':')))
				return -1;
			*colon = 0;
			addr = strtoull(colon + 1, NULL, 0);
			range = strchr(val, ':');
			if (range) {
				char *dash;

				*range++ = 0;
				from = strtoull(range, NULL, 0);
				dash = strchr(range, '-');
				if (dash)
					size = strtoull(dash + 1, NULL, 0) -
					       from;
			}
			snprintf(path, sizeof(path), "%s/%s", job->dir, val);
			if (pt_image_add_file(job->image, path, from, size,
					      NULL, addr) < 0)
				return -1;
			job->nraws++;
		} else if (!strcmp(arg, "--cpu")) {
			val = strtok_r(NULL, " \t\n", &save);
			if (!val || ipt_cpu_parse(&job->config.cpu, val) < 0)
				return -1;
			/* An unknown CPU has no errata. */
			(void) pt_cpu_errata(&job->config.errata,
					     &job->config.cpu);
		} else if (!strcmp(arg, "--mtc-freq")) {
			val = strtok_r(NULL, " \t\n", &save);
			job->config.mtc_freq = (uint8_t) strtoul(val, NULL, 0);
		} else if (!strcmp(arg, "--nom-freq")) {
			val = strtok_r(NULL, " \t\n", &save);
			job->config.nom_freq = (uint8_t) strtoul(val, NULL, 0);
		} else if (!strcmp(arg, "--cpuid-0x15.eax")) {
			val = strtok_r(NULL, " \t\n", &save);
			job->config.cpuid_0x15_eax =
				(uint32_t) strtoul(val, NULL, 0);
		} else if (!strcmp(arg, "--cpuid-0x15.ebx")) {
			val = strtok_r(NULL, " \t\n", &save);
			job->config.cpuid_0x15_ebx =
				(uint32_t) strtoul(val, NULL, 0);
		} else if (!strcmp(arg, "--event:iflags")) {
			job->config.flags.variant.query.enable_iflags_events = 1;
		} else if (!strcmp(arg, "--block:keep-tcal-on-ovf") ||
			   !strcmp(arg, "--insn:keep-tcal-on-ovf")) {
			job->config.flags.variant.query.keep_tcal_on_ovf = 1;
		} else if (!strcmp(arg, "--pt")) {
			val = strtok_r(NULL, " \t\n", &save);
			if (!val)
				return -1;
			snprintf(path, sizeof(path), "%s/%s", job->dir, val);
			job->trace = read_file(path, &job->size);
			if (!job->trace)
				return -1;
		}
	}
	if (!job->trace)
		return -1;
	job->config.begin = job->trace;
	job->config.end = job->trace + job->size;
	return 0;
}

/* The query loop.  Returns the number of errors met; *first gets the
 * first of them. */
static unsigned long total_steps, total_events;

/* The IPs of the instructions the loop went through. */
static uint64_t *trail;
static size_t ntrail, trail_cap;

static void record(uint64_t ip)
{
	if (ntrail == trail_cap) {
		trail_cap = trail_cap ? 2 * trail_cap : 4096;
		trail = (uint64_t *) realloc(trail, trail_cap * sizeof(*trail));
		if (!trail)
			abort();
	}
	trail[ntrail++] = ip;
}

/* Events that take effect at an IP the code has to reach first: an
 * asynchronous branch or disable at its source, a synchronous disable
 * after the next branch. */
enum defer { defer_none, defer_at_ip, defer_after_branch };

static int follow(struct job *job, int *first)
{
	struct pt_query_decoder *q = pt_qry_alloc_decoder(&job->config);
	uint64_t ip = 0, stack[max_stack], at = 0, to = 0;
	enum pt_exec_mode mode = ptem_64bit;
	enum defer defer = defer_none;
	struct pt_asid asid;
	int status, errors = 0, enabled = 0, depth = 0, eos = 0;
	int to_enabled = 0, dis_has_ip = 0;
	uint64_t dis_ip = 0;
	long steps = 0;

	*first = 0;
	ntrail = 0;
	if (!q)
		return 1;
	pt_asid_init(&asid);

	status = pt_qry_sync_forward(q, &ip);
	if (status >= 0)
		enabled = !(status & pts_ip_suppressed);

	while (steps++ < max_steps) {
		struct pt_insn insn;
		struct ipt__insn_ext iext;
		uint64_t next;
		int taken, err;

		if (status < 0) {
			if (status == -pte_eos)
				break;
			if (!errors++)
				*first = status;
			/* Resynchronize at the next PSB. */
			depth = 0;
			eos = 0;
			defer = defer_none;
			status = pt_qry_sync_forward(q, &ip);
			enabled = status >= 0 && !(status & pts_ip_suppressed);
			continue;
		}

		if (defer == defer_at_ip && enabled && ip == at) {
			defer = defer_none;
			enabled = to_enabled;
			ip = to;
			continue;
		}

		if (defer == defer_none && (status & pts_event_pending)) {
			struct pt_event ev;

			status = pt_qry_event(q, &ev, sizeof(ev));
			if (status < 0)
				continue;
			total_events++;
			switch (ev.type) {
			case ptev_enabled:
				/* The enabled status of a PSB+ while we trace
				 * is reached by following the code. */
				if (ev.status_update && enabled &&
				    !ev.ip_suppressed &&
				    ip != ev.variant.enabled.ip) {
					defer = defer_at_ip;
					at = to = ev.variant.enabled.ip;
					to_enabled = 1;
					break;
				}
				enabled = !ev.ip_suppressed;
				if (enabled)
					ip = ev.variant.enabled.ip;
				break;
			case ptev_disabled:
				if (ev.status_update || !enabled) {
					enabled = 0;
					break;
				}
				defer = defer_after_branch;
				dis_has_ip = !ev.ip_suppressed;
				dis_ip = ev.variant.disabled.ip;
				break;
			case ptev_async_disabled:
				defer = enabled ? defer_at_ip : defer_none;
				at = ev.variant.async_disabled.at;
				to_enabled = 0;
				enabled = enabled && defer;
				break;
			case ptev_async_branch:
				defer = enabled ? defer_at_ip : defer_none;
				at = ev.variant.async_branch.from;
				to = ev.variant.async_branch.to;
				to_enabled = !ev.ip_suppressed;
				break;
			case ptev_overflow:
				depth = 0;
				enabled = !ev.ip_suppressed;
				ip = ev.variant.overflow.ip;
				break;
			case ptev_exec_mode:
				mode = ev.variant.exec_mode.mode;
				break;
			default:
				break;
			}
			continue;
		}
		if (status & pts_eos) {
			/* The trace ends here, as in ptxed. */
			if (defer == defer_none)
				break;
			eos = 1;
		}
		if (!enabled) {
			if (eos)
				break;
			/* Tracing is off and no event says otherwise. */
			status = -pte_bad_query;
			continue;
		}

		memset(&insn, 0, sizeof(insn));
		insn.ip = ip;
		insn.mode = mode;
		err = ipt__insn_decode(&insn, &iext, job->image, &asid);
		if (err < 0) {
			/* Past the end of the trace, the code may end. */
			if (eos)
				break;
			status = err;
			continue;
		}

		err = ipt__insn_next_ip(&next, &insn, &iext);
		if (err != 0 && err != -pte_bad_query) {
			status = err;
			continue;
		}
		if (err == -pte_bad_query && (eos || defer != defer_none)) {
			/* The trace has no answer for this branch: the end,
			 * or an event we did not reach. */
			if (defer == defer_after_branch) {
				record(ip);
				defer = defer_none;
				enabled = 0;
				continue;
			}
			if (eos)
				break;
			status = -pte_bad_query;
			continue;
		}
		record(ip);
		/* A synchronous disable binds to a branch that needs trace,
		 * or, with an IP, to one that goes there. */
		if (defer == defer_after_branch &&
		    ((insn.iclass != ptic_other && insn.iclass != ptic_ptwrite) ||
		     (!dis_has_ip && ipt__insn_changes_cr3(&insn, &iext))) &&
		    (err != 0 || (dis_has_ip && next == dis_ip) ||
		     (!dis_has_ip && (ipt__insn_changes_cr3(&insn, &iext) ||
				      ipt__insn_changes_cpl(&insn, &iext))))) {
			defer = defer_none;
			enabled = 0;
			continue;
		}
		if (err == 0) {
			/* "call next" (position-independent code gets its
			 * IP) is not a call that returns. */
			if (insn.iclass == ptic_call && depth < max_stack &&
			    iext.variant.branch.displacement != 0)
				stack[depth++] = ip + insn.size;
			ip = next;
			continue;
		}

		switch (insn.iclass) {
		case ptic_cond_jump:
			status = pt_qry_cond_branch(q, &taken);
			if (status >= 0)
				ip = taken ? ip + insn.size +
					(uint64_t) iext.variant.branch.displacement
					   : ip + insn.size;
			continue;

		case ptic_return:
			/* A compressed return is one taken TNT bit. */
			if (depth) {
				status = pt_qry_cond_branch(q, &taken);
				if (status >= 0) {
					if (!taken)
						status = -pte_bad_retcomp;
					else
						ip = stack[--depth];
					continue;
				}
				if (status != -pte_bad_query)
					continue;
			}
			break;

		case ptic_call:
			if (depth < max_stack)
				stack[depth++] = ip + insn.size;
			break;

		default:
			break;
		}

		status = pt_qry_indirect_branch(q, &ip);
		if (status >= 0 && (status & pts_ip_suppressed))
			enabled = 0;
	}
	if (steps >= max_steps && !errors++)
		*first = 1;
	total_steps += (unsigned long) steps;
	pt_qry_free_decoder(q);
	return errors;
}

/* Compare the trail with the instruction lines of ptxed.exp.  Returns the
 * index of the first difference, or -1 if they agree. */
static long compare_trail(const char *dir)
{
	char path[8192], line[4096];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/ptxed.exp", dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		const char *p = line;
		char *end;
		uint64_t ip;

		if (p[0] == '?' && p[1] == ' ')
			p += 2;
		if (strlen(p) != 17 || p[16] != '\n')
			continue;
		ip = strtoull(p, &end, 16);
		if (end != p + 16)
			continue;
		if (n >= ntrail || trail[n] != ip) {
			fclose(f);
			return (long) n;
		}
		n++;
	}
	fclose(f);
	return n == ntrail ? -1 : (long) n;
}

static int expects_error(const char *dir)
{
	char path[8192], line[4096];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "%s/ptxed.exp", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "error") != NULL;
	fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	const char *root = argc > 1 ? argv[1] : "ipt_impl_tests/conformance/corpus";
	char path[4096], line[8192];
	unsigned long passed = 0, failed = 0, with_errors = 0, agree = 0;
	unsigned long skipped = 0, excluded = 0;
	FILE *manifest;

	snprintf(path, sizeof(path), "%s/libipt/MANIFEST", root);
	manifest = fopen(path, "r");
	if (!manifest) {
		printf("qry_conformance: no conformance corpus at %s\n"
		       "0 passed, 1 failed\n", root);
		return 1;
	}

	while (fgets(line, sizeof(line), manifest)) {
		char *tool = line, *name, *args, dir[4096];
		struct job job;
		int errors, first, expect, quiet;

		name = strchr(tool, '\t');
		if (!name)
			continue;
		*name++ = 0;
		args = strchr(name, '\t');
		if (!args || strcmp(tool, "ptxed"))
			continue;
		*args++ = 0;

		/* BDM64, SKD022 and SKL014 are worked around by the block
		 * and instruction decoders, from the code; a query loop
		 * does not. */
		if (!strncmp(name, "bdm64-", 6) || !strncmp(name, "skd022-", 7) ||
		    !strncmp(name, "skl014-", 7)) {
			excluded++;
			continue;
		}
		quiet = strstr(args, "--quiet") != NULL;
		snprintf(dir, sizeof(dir), "%s/libipt/cases/%s", root, name);
		memset(&job, 0, sizeof(job));
		job.dir = dir;
		expect = expects_error(dir);
		if (setup(&job, args) < 0 || expect < 0) {
			/* E.g. a --raw file the suite does not ship. */
			printf("skip %s: cannot load its files\n", name);
			skipped++;
			pt_image_free(job.image);
			free(job.trace);
			continue;
		}

		errors = follow(&job, &first);
		if (!expect && !errors && !quiet) {
			long at = compare_trail(dir);

			if (at >= 0) {
				printf("FAIL %s: instruction %ld differs from "
				       "ptxed.exp (loop: %s%" PRIx64 ")\n",
				       name, at, (size_t) at < ntrail ? "" :
				       "end ", (size_t) at < ntrail ?
				       trail[at] : 0);
				failed++;
				pt_image_free(job.image);
				free(job.trace);
				continue;
			}
		}
		if (expect) {
			with_errors++;
			agree += errors > 0;
		} else if (errors) {
			printf("FAIL %s: %d error(s), first %d (%s)\n", name,
			       errors, first,
			       first < 0 ? pt_errstr(pt_errcode(first))
					 : "step limit");
			failed++;
		} else {
			passed++;
		}
		pt_image_free(job.image);
		free(job.trace);
	}
	fclose(manifest);

	printf("qry_conformance: %lu loop steps, %lu events; %lu cases "
	       "skipped, %lu excluded (bdm64, skd022, skl014: block-level "
	       "errata)\n", total_steps, total_events, skipped, excluded);
	printf("qry_conformance: %lu cases where ptxed reports errors (not "
	       "checked); the query loop met errors in %lu of them\n",
	       with_errors, agree);
	printf("%lu passed, %lu failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* valgrind_all.c - every conformance case, under valgrind memcheck, in one
 * process.
 *
 * ptdump and ptxed are linked in (their main renamed, ipt.h static in
 * each), and each case of each suite's MANIFEST runs as a call: in the
 * case's folder, with its arguments, output thrown away (the conformance
 * runs compare it).  Started under valgrind, the program asks memcheck
 * after each case how many errors there are so far and runs a leak check:
 * a case fails when either went up.  One process saves valgrind's start-up
 * per case, which would cost a quarter of an hour for the whole set.
 * Not under valgrind, it runs the cases but fails: nothing was checked.
 *
 *     valgrind --error-exitcode=99 valgrind_all CONFORMANCE
 *
 * Ends with "valgrind: N passed, N failed".
 */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <valgrind/memcheck.h>

int ptdump_main(int argc, char *argv[]);
int ptxed_main(int argc, char *argv[]);

static int out_fd = -1;

/* Runs @tool with @args in @dir, its output to /dev/null. */
static void run_case(const char *dir, const char *tool, char *args)
{
	char *argv[64];
	int argc = 0, null, saved[2], here;
	char *arg, *save = NULL;

	argv[argc++] = (char *) tool;
	for (arg = strtok_r(args, " \t\n", &save); arg && argc < 63;
	     arg = strtok_r(NULL, " \t\n", &save))
		argv[argc++] = arg;
	argv[argc] = NULL;

	here = open(".", O_RDONLY);
	if (here < 0 || chdir(dir) < 0) {
		dprintf(out_fd, "cannot enter %s\n", dir);
		if (here >= 0)
			close(here);
		return;
	}
	fflush(stdout);
	fflush(stderr);
	null = open("/dev/null", O_WRONLY);
	saved[0] = dup(1);
	saved[1] = dup(2);
	dup2(null, 1);
	dup2(null, 2);
	if (strcmp(tool, "ptdump") == 0)
		(void) ptdump_main(argc, argv);
	else
		(void) ptxed_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved[0], 1);
	dup2(saved[1], 2);
	close(saved[0]);
	close(saved[1]);
	close(null);
	if (fchdir(here) < 0)
		dprintf(out_fd, "cannot go back from %s\n", dir);
	close(here);
}

int main(int argc, char **argv)
{
	static const char *const suites[] = { "libipt", "real" };
	unsigned long passed = 0, failed = 0;
	unsigned long errors = 0, lost = 0;
	size_t s;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CONFORMANCE\n", argv[0]);
		return 2;
	}
	out_fd = dup(1);
	for (s = 0; s < sizeof(suites) / sizeof(suites[0]); s++) {
		char path[4096], line[4096];
		FILE *manifest;

		snprintf(path, sizeof(path), "%s/%s/MANIFEST", argv[1],
			 suites[s]);
		manifest = fopen(path, "r");
		if (!manifest) {
			printf("FAIL no %s\n", path);
			failed++;
			continue;
		}
		while (fgets(line, sizeof(line), manifest)) {
			char *tool = line, *name, *args, dir[4096];
			unsigned long now, leaked, dubious, reachable, supp;

			name = strchr(tool, '\t');
			if (!name)
				continue;
			*name++ = 0;
			args = strchr(name, '\t');
			if (!args)
				continue;
			*args++ = 0;
			if (strcmp(tool, "ptdump") && strcmp(tool, "ptxed"))
				continue;
			snprintf(dir, sizeof(dir), "%s/%s/cases/%s", argv[1],
				 suites[s], name);
			run_case(dir, tool, args);

			/* A leak check reports new leaks as errors too. */
			VALGRIND_DO_ADDED_LEAK_CHECK;
			leaked = dubious = reachable = supp = 0;
			VALGRIND_COUNT_LEAKS(leaked, dubious, reachable, supp);
			now = (unsigned long) VALGRIND_COUNT_ERRORS;
			(void) reachable;
			(void) supp;
			if (now > errors || leaked + dubious > lost) {
				printf("FAIL %s %s %s: %lu memcheck errors, "
				       "%lu bytes lost\n", suites[s], tool,
				       name, now - errors,
				       leaked + dubious - lost);
				failed++;
			} else
				passed++;
			errors = now;
			lost = leaked + dubious;
		}
		fclose(manifest);
	}
	printf("%s\n", RUNNING_ON_VALGRIND ? "under valgrind memcheck"
					    : "not under valgrind: nothing "
					      "checked");
	if (!RUNNING_ON_VALGRIND)
		failed++;
	printf("valgrind: %lu passed, %lu failed\n", passed, failed);
	return failed ? 1 : 0;
}

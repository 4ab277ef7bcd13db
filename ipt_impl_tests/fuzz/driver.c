/* driver.c - run a fuzz harness without libFuzzer.
 *
 *     fuzz_pkt [-q] [-1] [-t SECONDS] [-x KNOWN] FILE|DIR...
 *
 * Feeds every file given, and every file under every folder given, to
 * LLVMFuzzerTestOneInput.  Each input runs in a child process, so one that
 * crashes or hangs (-t, 60 s) is reported by name and the others still run.  -1 runs inputs in
 * this process instead (for debuggers and valgrind); -q prints only the
 * failures.  -x names a list of inputs expected to fail (open bugs: lines
 * "ID HARNESS/INPUT WHAT"): those failing count as passed ("xfail"), and
 * those passing are pointed out so the entry can go.  Ends with "NAME: N passed, N failed"; exit status 1 when an
 * input failed. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long passed, failed;
static int in_process, quiet;
static unsigned timeout_s = 60;
static char known[64][260];
static int nknown;

static void load_known(const char *path)
{
	char line[1024], id[256], input[256];
	FILE *f = fopen(path, "r");

	if (!f) {
		perror(path);
		exit(2);
	}
	while (fgets(line, sizeof(line), f) && nknown < 64) {
		if (line[0] == '#' || sscanf(line, "%255s %255s", id, input) != 2)
			continue;
		snprintf(known[nknown++], sizeof(known[0]), "/%s", input);
	}
	fclose(f);
}

/* Is @path one of the inputs expected to fail? */
static int is_known(const char *path)
{
	size_t n = strlen(path);
	int i;

	for (i = 0; i < nknown; ++i) {
		size_t k = strlen(known[i]);

		if (n >= k && !strcmp(path + n - k, known[i]))
			return 1;
	}
	return 0;
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	size_t size = 0, cap = 0, n;

	if (!f) {
		perror(path);
		return 1;
	}
	for (;;) {
		if (size == cap) {
			uint8_t *more;

			cap = cap ? 2 * cap : 4096;
			more = (uint8_t *) realloc(data, cap);
			if (!more)
				abort();
			data = more;
		}
		n = fread(data + size, 1, cap - size, f);
		if (!n)
			break;
		size += n;
	}
	fclose(f);
	/* An exact-size copy, so that reads past the input are caught. */
	{
		uint8_t *exact = (uint8_t *) malloc(size ? size : 1);

		if (!exact)
			abort();
		memcpy(exact, data, size);
		free(data);
		LLVMFuzzerTestOneInput(exact, size);
		free(exact);
	}
	return 0;
}

static void run_one(const char *path)
{
	pid_t pid;
	int status;

	if (in_process) {
		if (run_file(path))
			failed++;
		else
			passed++;
		return;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		/* A hang fails too (libFuzzer's -timeout does this when
		 * fuzzing). */
		alarm(timeout_s);
		_exit(run_file(path));
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		exit(2);
	}
	if (is_known(path)) {
		passed++;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			printf("XPASS %s: fixed? take it off the known list\n",
			       path);
		else
			printf("xfail %s (open bug)\n", path);
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		passed++;
		if (!quiet)
			printf("ok   %s\n", path);
	} else {
		failed++;
		printf("FAIL %s\n", path);
	}
}

static void run_path(const char *path)
{
	struct stat st;
	struct dirent **names;
	int n, i;

	if (stat(path, &st) < 0) {
		perror(path);
		failed++;
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		run_one(path);
		return;
	}
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		perror(path);
		failed++;
		return;
	}
	for (i = 0; i < n; ++i) {
		if (names[i]->d_name[0] != '.') {
			size_t len = strlen(path) + strlen(names[i]->d_name) + 2;
			char *sub = (char *) malloc(len);

			if (!sub)
				abort();
			snprintf(sub, len, "%s/%s", path, names[i]->d_name);
			run_path(sub);
			free(sub);
		}
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/');
	int i;

	name = name ? name + 1 : argv[0];
	for (i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "-1"))
			in_process = 1;
		else if (!strcmp(argv[i], "-q"))
			quiet = 1;
		else if (!strcmp(argv[i], "-t") && i + 1 < argc)
			timeout_s = (unsigned) atoi(argv[++i]);
		else if (!strcmp(argv[i], "-x") && i + 1 < argc)
			load_known(argv[++i]);
		else
			run_path(argv[i]);
	}
	printf("%s: %lu passed, %lu failed\n", name, passed, failed);
	return failed ? 1 : 0;
}

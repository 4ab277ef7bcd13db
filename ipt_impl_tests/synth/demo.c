/* The small program `make demo` traces: recursion (calls and returns for
 * return compression), qsort with a comparison callback (indirect calls),
 * a loop of conditional branches, and two system calls.  Linked
 * statically where the C library allows, so the trace is short and the
 * image small. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int cmp(const void *a, const void *b)
{
	return *(const int *) a - *(const int *) b;
}

int main(void)
{
	int v[32], i, sum = 0;
	char msg[64] = "demo: traced fib(12) = ";
	size_t n = strlen(msg);
	int f = fib(12);

	for (i = 0; i < 32; i++)
		v[i] = (i * 7919) % 101;
	qsort(v, 32, sizeof(v[0]), cmp);
	for (i = 0; i < 32; i++)
		sum += (v[i] & 1) ? v[i] : -v[i];
	msg[n++] = (char) ('0' + f / 100);
	msg[n++] = (char) ('0' + f / 10 % 10);
	msg[n++] = (char) ('0' + f % 10);
	msg[n++] = '\n';
	if (write(1, msg, n) < 0)
		return 1;
	return sum == 12345;
}

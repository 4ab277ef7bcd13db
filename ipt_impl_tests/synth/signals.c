/* A program that takes signals, for ptsynth's asynchronous paths: a
 * handler entered after a system call (raise), handlers entered from a
 * fault (SIGSEGV, left with siglongjmp), and timer signals that interrupt
 * a busy loop anywhere.  Each is FUP + TIP.PGD() and TIP.PGE at the
 * handler in the trace, [disabled] and [enabled] in the truth. */
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t hits, ticks;
static sigjmp_buf env;

static void on_usr1(int sig)
{
	(void) sig;
	hits++;
}

static void on_segv(int sig)
{
	(void) sig;
	siglongjmp(env, 1);
}

static void on_alarm(int sig)
{
	(void) sig;
	ticks++;
}

int main(void)
{
	struct sigaction sa;
	struct itimerval it;
	volatile int *volatile nowhere = 0;
	volatile unsigned long x = 1;
	/* volatile: it lives across sigsetjmp. */
	volatile int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, 0);
	sa.sa_handler = on_segv;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, 0);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, 0);

	for (i = 0; i < 3; i++)
		raise(SIGUSR1);
	for (i = 0; i < 2; i++)
		if (!sigsetjmp(env, 1))
			*nowhere = i;

	memset(&it, 0, sizeof(it));
	it.it_interval.tv_usec = 2000;
	it.it_value.tv_usec = 2000;
	setitimer(ITIMER_REAL, &it, 0);
	for (i = 0; i < 300000 && ticks < 5; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, 0);
	return hits == 3 ? 0 : 1;
}

/* t_sb_location - where each trace event puts the trace, for the
 * perf_event decoder's context switches.  A switch record that is due
 * waits until the trace is in the kernel (or its place is unknown): the
 * next event decides.  As libipt 2.3 (sideband/src/pt_sb_pevent.c,
 * ploc_from_event): an event with an IP is in the kernel at or above
 * kernel_start, in user space below; a suppressed IP makes its place
 * unknown, except for disables (likely across the line from before, or
 * from where an asynchronous disable happened) and paging (likely in the
 * kernel); events without an IP are of unknown place.
 *
 * Each case: a session whose stream switches to pid 3 at time 3; an
 * enable in user space at time 1; then the event at time 3.  The image
 * switches to pid 3's exactly when the event is not (likely) in user
 * space. */

#include "ipt.h"
#include "check.h"

#include <string.h>

enum { user_ip = 0x1000, kernel_ip = 0x9000, kernel_start = 0x8000 };

static uint64_t stream_buf[8];

static size_t make_stream(void)
{
	struct pev_config config;
	struct pev_event ev;
	uint32_t pid = 3;
	uint64_t time = 3;
	int size;

	pev_config_init(&config);
	config.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	config.time_mult = 1;
	pev_event_init(&ev);
	ev.type = PERF_RECORD_SWITCH;
	ev.sample.pid = &pid;
	ev.sample.tid = &pid;
	ev.sample.time = &time;
	size = pev_write(&ev, (uint8_t *) stream_buf,
			 (uint8_t *) stream_buf + sizeof(stream_buf), &config);
	CHECK(size > 0);
	return size > 0 ? (size_t) size : 0;
}

/* The IP field of @ev, for the types that have one. */
static uint64_t *ip_of(struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_enabled: return &ev->variant.enabled.ip;
	case ptev_disabled: return &ev->variant.disabled.ip;
	case ptev_async_disabled: return &ev->variant.async_disabled.ip;
	case ptev_async_branch: return &ev->variant.async_branch.to;
	case ptev_async_paging: return &ev->variant.async_paging.ip;
	case ptev_overflow: return &ev->variant.overflow.ip;
	case ptev_exec_mode: return &ev->variant.exec_mode.ip;
	case ptev_tsx: return &ev->variant.tsx.ip;
	case ptev_exstop: return &ev->variant.exstop.ip;
	case ptev_mwait: return &ev->variant.mwait.ip;
	case ptev_ptwrite: return &ev->variant.ptwrite.ip;
	case ptev_tick: return &ev->variant.tick.ip;
	case ptev_tip: return &ev->variant.tip.ip;
	case ptev_iflags: return &ev->variant.iflags.ip;
	case ptev_interrupt: return &ev->variant.interrupt.ip;
	case ptev_iret: return &ev->variant.iret.ip;
	case ptev_smi: return &ev->variant.smi.ip;
	case ptev_rsm: return &ev->variant.rsm.ip;
	case ptev_init: return &ev->variant.init.ip;
	case ptev_vmentry: return &ev->variant.vmentry.ip;
	case ptev_vmexit: return &ev->variant.vmexit.ip;
	case ptev_shutdown: return &ev->variant.shutdown.ip;
	case ptev_uintr: return &ev->variant.uintr.ip;
	case ptev_uiret: return &ev->variant.uiret.ip;
	default: return NULL;
	}
}

/* Whether the event @type at @ip (0: suppressed) switches the image;
 * @at is an asynchronous disable's source. */
static int switches(size_t size, enum pt_event_type type, uint64_t ip,
		    uint64_t at)
{
	struct pt_sb_pevent_config config;
	struct pt_sb_session *session;
	struct pt_image *image = NULL;
	struct pt_event ev;
	uint64_t *field;
	int result;

	memset(&config, 0, sizeof(config));
	config.size = sizeof(config);
	config.filename = "mem";
	config.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	config.time_mult = 1;
	config.kernel_start = kernel_start;
	config.primary = 1;
	session = pt_sb_alloc(NULL);
	if (!session)
		return -1;
	if (ipt_sb_alloc_pevent_decoder_mem(session, &config,
					    (const uint8_t *) stream_buf,
					    (const uint8_t *) stream_buf +
						    size) < 0 ||
	    pt_sb_init_decoders(session) < 0) {
		pt_sb_free(session);
		return -1;
	}

	memset(&ev, 0, sizeof(ev));
	ev.type = ptev_enabled;
	ev.tsc = 1;
	ev.variant.enabled.ip = user_ip;
	result = pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0);

	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.tsc = 3;
	field = ip_of(&ev);
	if (field)
		*field = ip;
	ev.ip_suppressed = !ip;
	if (type == ptev_async_disabled)
		ev.variant.async_disabled.at = at;
	if (result >= 0)
		result = pt_sb_event(session, &image, &ev, sizeof(ev), NULL, 0);
	if (result >= 0)
		result = image != NULL;
	if (result > 0 && strcmp(pt_image_name(image), "pid-3"))
		result = -1;
	pt_sb_free(session);
	return result;
}

static void expect(size_t size, enum pt_event_type type, uint64_t ip,
		   uint64_t at, int want)
{
	int got = switches(size, type, ip, at);

	if (!CHECK(got == want))
		printf("     event %d at %llx (from %llx): %d, want %d\n",
		       (int) type, (unsigned long long) ip,
		       (unsigned long long) at, got, want);
}

int main(void)
{
	static const enum pt_event_type with_ip[] = {
		ptev_overflow, ptev_exec_mode, ptev_tsx, ptev_exstop,
		ptev_mwait, ptev_ptwrite, ptev_tick, ptev_iflags,
		ptev_interrupt, ptev_iret, ptev_smi, ptev_rsm, ptev_init,
		ptev_vmentry, ptev_vmexit, ptev_shutdown, ptev_uintr,
		ptev_uiret, ptev_async_paging
	};
	static const enum pt_event_type without_ip[] = {
		ptev_stop, ptev_vmcs, ptev_async_vmcs, ptev_pwre, ptev_pwrx,
		ptev_cbr, ptev_mnt, ptev_tnt, ptev_sipi, ptev_trig,
		ptev_swintr, ptev_syscall
	};
	size_t size = make_stream(), i;

	/* By the IP: stays in user space, or enters the kernel. */
	for (i = 0; i < sizeof(with_ip) / sizeof(with_ip[0]); ++i) {
		expect(size, with_ip[i], user_ip, 0, 0);
		expect(size, with_ip[i], kernel_ip, 0, 1);
	}
	/* Suppressed: unknown, except paging's, likely in the kernel. */
	for (i = 0; i < sizeof(with_ip) / sizeof(with_ip[0]); ++i)
		expect(size, with_ip[i], 0, 0, 1);
	expect(size, ptev_paging, 0, 0, 1);
	for (i = 0; i < sizeof(without_ip) / sizeof(without_ip[0]); ++i)
		expect(size, without_ip[i], 0, 0, 1);

	/* These always have an IP: the enable's, the branch's target, the
	 * TIP's. */
	expect(size, ptev_enabled, user_ip, 0, 0);
	expect(size, ptev_enabled, kernel_ip, 0, 1);
	expect(size, ptev_async_branch, user_ip, 0, 0);
	expect(size, ptev_async_branch, kernel_ip, 0, 1);
	expect(size, ptev_tip, user_ip, 0, 0);
	expect(size, ptev_tip, kernel_ip, 0, 1);

	/* Disables: by the IP, or across the line when it is suppressed:
	 * from user space (the enable's place) into the kernel; an
	 * asynchronous one from where it happened. */
	expect(size, ptev_disabled, user_ip, 0, 0);
	expect(size, ptev_disabled, kernel_ip, 0, 1);
	expect(size, ptev_disabled, 0, 0, 1);
	expect(size, ptev_async_disabled, user_ip, 0, 0);
	expect(size, ptev_async_disabled, kernel_ip, 0, 1);
	expect(size, ptev_async_disabled, 0, user_ip, 1);
	expect(size, ptev_async_disabled, 0, kernel_ip, 0);

	return check_done();
}

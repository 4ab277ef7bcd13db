/* The event decoder's time against the time layer's public functions:
 * random traces of MTC, CYC, TSC, TMA and CBR packets (MTC values that
 * wrap and jump, CYC before any calibration, TMA and TSC in every order,
 * configurations without cpuid 0x15 or nominal frequency) with tracing
 * enabled and disabled in turn, often or seldom (long runs of MTC and
 * CYC, which the event decoder takes in one loop), with or without PADs
 * between.  A model applies each timing packet with
 * ipt_tcal_* and then ipt_time_* (header forms inside PSB+), as the event
 * decoder's rules say, ignoring -pte_bad_config; every event's tsc,
 * lost_mtc and lost_cyc and any error must be what the model has at that
 * point.  The event decoder applies the same rules without the public
 * functions' argument checks: this catches any difference. */
#include "ipt.h"
#include "check.h"
#include "evt_trace.h"

#include <stdlib.h>

/* Events compared, of which some with a time; errors compared. */
static int checked, errors;

#define rnd check_rand

/* One step of the trace: a packet, and whether it is in the PSB+. */
struct step {
	struct pt_packet packet;
	int header;
	uint64_t offset;
};

struct model {
	struct ipt_time time;
	struct ipt_time_cal tcal;
	const struct pt_config *config;
};

static int ok_or_cfg(int err)
{
	return (err < 0 && err != -pte_bad_config) ? err : 0;
}

/* The rules of the event decoder for a time packet, through the public
 * functions. */
static int model_apply(struct model *m, const struct pt_packet *p,
		       int header)
{
	const struct pt_config *c = m->config;
	uint64_t fcr;
	int err;

	switch (p->type) {
	case ppt_tsc:
		err = header ? ipt_tcal_header_tsc(&m->tcal, &p->payload.tsc, c)
			     : ipt_tcal_update_tsc(&m->tcal, &p->payload.tsc, c);
		if ((err = ok_or_cfg(err)) < 0)
			return err;
		return ok_or_cfg(
			ipt_time_update_tsc(&m->time, &p->payload.tsc, c));
	case ppt_cbr:
		err = header ? ipt_tcal_header_cbr(&m->tcal, &p->payload.cbr, c)
			     : ipt_tcal_update_cbr(&m->tcal, &p->payload.cbr, c);
		if ((err = ok_or_cfg(err)) < 0)
			return err;
		return ok_or_cfg(
			ipt_time_update_cbr(&m->time, &p->payload.cbr, c));
	case ppt_tma:
		err = ipt_tcal_update_tma(&m->tcal, &p->payload.tma, c);
		if ((err = ok_or_cfg(err)) < 0)
			return err;
		return ok_or_cfg(
			ipt_time_update_tma(&m->time, &p->payload.tma, c));
	case ppt_mtc:
		err = ipt_tcal_update_mtc(&m->tcal, &p->payload.mtc, c);
		if ((err = ok_or_cfg(err)) < 0)
			return err;
		return ok_or_cfg(
			ipt_time_update_mtc(&m->time, &p->payload.mtc, c));
	case ppt_cyc:
		err = ipt_tcal_update_cyc(&m->tcal, &p->payload.cyc, c);
		if ((err = ok_or_cfg(err)) < 0)
			return err;
		err = ipt_tcal_fcr(&fcr, &m->tcal);
		if (err < 0) {
			if (err != -pte_no_time)
				return err;
			fcr = 0;
		}
		return ok_or_cfg(ipt_time_update_cyc(&m->time, &p->payload.cyc,
						     c, fcr));
	default:
		return -pte_internal;
	}
}

static struct pt_packet time_packet(uint8_t *mtc)
{
	struct pt_packet p;

	switch (rnd() % 20) {
	case 0:
		p = pk_tsc(((uint64_t) rnd() << 20 | rnd()) &
			   0xffffffffffffffull);
		break;
	case 1:
		/* TMA where it does not follow a TSC is an error: rare. */
		if (rnd() % 8)
			return time_packet(mtc);
		p = pk(ppt_tma);
		p.payload.tma.ctc = (uint16_t) rnd();
		p.payload.tma.fc = (uint16_t) (rnd() & 0x1ff);
		break;
	case 2:
		p = pk_cbr((uint8_t) (1 + rnd() % 60));
		break;
	case 3: case 4: case 5: case 6: case 7: case 8: case 9:
		p = pk(ppt_mtc);
		/* Mostly the next value, now and then a jump or a wrap. */
		*mtc = (uint8_t) (*mtc + (rnd() % 8 ? 1 : rnd()));
		p.payload.mtc.ctc = *mtc;
		break;
	default:
		p = pk(ppt_cyc);
		p.payload.cyc.value = rnd() % 16 ? rnd() % 300 : rnd();
		break;
	}
	return p;
}

static void one_trace(void)
{
	static struct step steps[160];
	struct tb t;
	struct model m;
	struct pt_event_decoder *d;
	struct pt_event ev;
	int nsteps = 0, i, err, enabled = 0, bad = 0, expect = 1;
	uint32_t gap = rnd() % 2 ? 3 : 25, pads = rnd() % 2;
	uint8_t mtc = (uint8_t) rnd();

	tb_begin(&t);
	switch (rnd() % 4) {
	case 0: t.config.mtc_freq = (uint8_t) (rnd() % 32); break;
	default: t.config.mtc_freq = (uint8_t) (rnd() % 16); break;
	}
	t.config.nom_freq = (uint8_t) (rnd() % 3 ? rnd() : 0);
	t.config.cpuid_0x15_eax = rnd() % 5 ? 1 + rnd() % 8 : 0;
	t.config.cpuid_0x15_ebx = rnd() % 5 ? 1 + rnd() % 400 : 0;

	/* PSB+ with time packets in any order. */
	tb_add(&t, pk(ppt_psb));
	for (i = (int) (rnd() % 5); i > 0; --i) {
		/* TSC and TMA often, in either order. */
		switch (rnd() % 3) {
		case 0:
			steps[nsteps].packet = pk_tsc(rnd());
			break;
		case 1:
			steps[nsteps].packet = pk(ppt_tma);
			steps[nsteps].packet.payload.tma.ctc = (uint16_t) rnd();
			steps[nsteps].packet.payload.tma.fc =
				(uint16_t) (rnd() & 0x1ff);
			break;
		default:
			steps[nsteps].packet = time_packet(&mtc);
			break;
		}
		steps[nsteps].header = 1;
		steps[nsteps].offset = tb_add(&t, steps[nsteps].packet);
		nsteps += 1;
	}
	tb_add(&t, pk(ppt_psbend));

	/* Time packets, a TIP.PGE or TIP.PGD now and then to see the
	 * time (the enabled/disabled events are stamped). */
	while (nsteps < 150) {
		if (pads && rnd() % 6 == 0)
			tb_add(&t, pk(ppt_pad));
		if (rnd() % gap == 0) {
			steps[nsteps].packet =
				enabled ? pk_supp(ppt_tip_pgd)
					: pk_full(ppt_tip_pge, 0x400000);
			enabled = !enabled;
		} else
			steps[nsteps].packet = time_packet(&mtc);
		steps[nsteps].header = 0;
		steps[nsteps].offset = tb_add(&t, steps[nsteps].packet);
		nsteps += 1;
	}
	tb_end(&t);
	if (!CHECK(!t.broken))
		return;

	m.config = &t.config;
	ipt_time_init(&m.time);
	ipt_tcal_init(&m.tcal);
	d = pt_evt_alloc_decoder(&t.config);
	if (!CHECK(d != NULL))
		return;

	/* The PSB+: its disabled status event and one per CBR, all with
	 * the time after it; an error fails the synchronization. */
	for (i = 0; i < nsteps && steps[i].header; ++i) {
		bad = model_apply(&m, &steps[i].packet, 1);
		if (bad < 0)
			break;
		if (steps[i].packet.type == ppt_cbr)
			expect += 1;
	}
	err = pt_evt_sync_forward(d);
	if (bad < 0) {
		CHECK_EQ(err, bad);
		pt_evt_free_decoder(d);
		return;
	}
	CHECK_EQ(err, 0);
	for (;;) {
		uint64_t tsc = 0;
		uint32_t lost_mtc = 0, lost_cyc = 0;
		int have, got;

		for (; expect > 0; --expect) {
			got = pt_evt_next(d, &ev, sizeof(ev));
			CHECK_EQ(got, 0);
			if (got < 0)
				goto out;
			have = ipt_time_query_tsc(&tsc, &lost_mtc, &lost_cyc,
						  &m.time);
			CHECK_EQ(ev.has_tsc, have >= 0);
			if (have >= 0) {
				CHECK_EQ(ev.tsc, tsc);
				CHECK_EQ(ev.lost_mtc, lost_mtc);
				CHECK_EQ(ev.lost_cyc, lost_cyc);
			}
			checked += 1;
		}
		/* On to the packet of the next event. */
		for (; i < nsteps && !expect; ++i) {
			enum pt_packet_type type = steps[i].packet.type;

			if (type == ppt_tip_pge || type == ppt_tip_pgd ||
			    type == ppt_cbr)
				expect = 1;
			if (type == ppt_tip_pge || type == ppt_tip_pgd)
				continue;
			bad = model_apply(&m, &steps[i].packet, 0);
			if (bad < 0)
				break;
		}
		if (bad < 0) {
			uint64_t offset = 0;

			/* The error at its packet. */
			CHECK_EQ(pt_evt_next(d, &ev, sizeof(ev)), bad);
			CHECK_EQ(pt_evt_get_offset(d, &offset), 0);
			CHECK_EQ(offset, steps[i].offset);
			errors += 1;
			break;
		}
		if (!expect) {
			CHECK_EQ(pt_evt_next(d, &ev, sizeof(ev)), -pte_eos);
			break;
		}
	}
out:
	pt_evt_free_decoder(d);
}

int main(void)
{
	int i;

	check_seed = 12345;
	for (i = 0; i < 2000; ++i)
		one_trace();
	/* Most traces get far: many events compared. */
	CHECK(checked > 2000 * 15);
	CHECK(errors > 100);
	printf("%d events compared, %d errors\n", checked, errors);
	return check_done();
}

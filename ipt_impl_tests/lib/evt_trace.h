/* evt_trace.h - build small traces with the encoder for the event and
 * query decoder tests (t_evt_*.c, t_qry_*.c).
 *
 *     struct tb t;
 *     tb_begin(&t);
 *     tb_add(&t, pk(ppt_psb));  ...      returns the packet's offset
 *     tb_end(&t);                        t.config describes the trace
 */
#ifndef IPT_EVT_TRACE_H
#define IPT_EVT_TRACE_H

#include <stdio.h>
#include <string.h>

struct tb {
	uint8_t buf[2048];
	struct pt_config config;
	struct pt_encoder *enc;
	int broken;
};

static inline void tb_begin(struct tb *t)
{
	memset(t->buf, 0, sizeof(t->buf));
	pt_config_init(&t->config);
	t->config.begin = t->buf;
	t->config.end = t->buf + sizeof(t->buf);
	t->enc = pt_alloc_encoder(&t->config);
	t->broken = t->enc == NULL;
}

static inline uint64_t tb_add(struct tb *t, struct pt_packet p)
{
	uint64_t offset = 0;
	int size;

	if (t->broken)
		return 0;
	pt_enc_get_offset(t->enc, &offset);
	size = pt_enc_next(t->enc, &p);
	if (size < 0) {
		printf("encoder refused packet type %d: %d\n", p.type, size);
		t->broken = 1;
	}
	return offset;
}

/* Finish: the trace ends after the last packet. */
static inline void tb_end(struct tb *t)
{
	uint64_t offset = 0;

	if (t->enc) {
		pt_enc_get_offset(t->enc, &offset);
		pt_free_encoder(t->enc);
		t->enc = NULL;
	}
	t->config.end = t->buf + offset;
}

static inline struct pt_packet pk(enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	return p;
}

static inline struct pt_packet pk_ip(enum pt_packet_type type,
			      enum pt_ip_compression ipc, uint64_t ip)
{
	struct pt_packet p = pk(type);

	p.payload.ip.ipc = ipc;
	p.payload.ip.ip = ip;
	return p;
}

/* A full 64-bit IP (sign-extended 48 bits). */
static inline struct pt_packet pk_full(enum pt_packet_type type, uint64_t ip)
{
	return pk_ip(type, pt_ipc_sext_48, ip & 0xffffffffffffull);
}

static inline struct pt_packet pk_supp(enum pt_packet_type type)
{
	return pk_ip(type, pt_ipc_suppressed, 0);
}

static inline struct pt_packet pk_tnt(uint64_t bits, uint8_t size)
{
	struct pt_packet p = pk(size <= 6 ? ppt_tnt_8 : ppt_tnt_64);

	p.payload.tnt.bit_size = size;
	p.payload.tnt.payload = bits;
	return p;
}

static inline struct pt_packet pk_exec(enum pt_exec_mode mode, int iflag)
{
	struct pt_packet p = pk(ppt_mode);

	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(mode);
	p.payload.mode.bits.exec.iflag = iflag ? 1 : 0;
	return p;
}

static inline struct pt_packet pk_tsx(int intx, int abrt)
{
	struct pt_packet p = pk(ppt_mode);

	p.payload.mode.leaf = pt_mol_tsx;
	p.payload.mode.bits.tsx.intx = intx ? 1 : 0;
	p.payload.mode.bits.tsx.abrt = abrt ? 1 : 0;
	return p;
}

static inline struct pt_packet pk_pip(uint64_t cr3, int nr)
{
	struct pt_packet p = pk(ppt_pip);

	p.payload.pip.cr3 = cr3;
	p.payload.pip.nr = nr ? 1 : 0;
	return p;
}

static inline struct pt_packet pk_vmcs(uint64_t base)
{
	struct pt_packet p = pk(ppt_vmcs);

	p.payload.vmcs.base = base;
	return p;
}

static inline struct pt_packet pk_tsc(uint64_t tsc)
{
	struct pt_packet p = pk(ppt_tsc);

	p.payload.tsc.tsc = tsc;
	return p;
}

static inline struct pt_packet pk_cbr(uint8_t ratio)
{
	struct pt_packet p = pk(ppt_cbr);

	p.payload.cbr.ratio = ratio;
	return p;
}

static inline struct pt_packet pk_mnt(uint64_t payload)
{
	struct pt_packet p = pk(ppt_mnt);

	p.payload.mnt.payload = payload;
	return p;
}

static inline struct pt_packet pk_exstop(int ip)
{
	struct pt_packet p = pk(ppt_exstop);

	p.payload.exstop.ip = ip ? 1 : 0;
	return p;
}

static inline struct pt_packet pk_mwait(uint32_t hints, uint32_t ext)
{
	struct pt_packet p = pk(ppt_mwait);

	p.payload.mwait.hints = hints;
	p.payload.mwait.ext = ext;
	return p;
}

static inline struct pt_packet pk_pwre(uint8_t state, uint8_t sub, int hw)
{
	struct pt_packet p = pk(ppt_pwre);

	p.payload.pwre.state = state;
	p.payload.pwre.sub_state = sub;
	p.payload.pwre.hw = hw ? 1 : 0;
	return p;
}

static inline struct pt_packet pk_pwrx(uint8_t last, uint8_t deepest, int intr,
				int store, int autonomous)
{
	struct pt_packet p = pk(ppt_pwrx);

	p.payload.pwrx.last = last;
	p.payload.pwrx.deepest = deepest;
	p.payload.pwrx.interrupt = intr ? 1 : 0;
	p.payload.pwrx.store = store ? 1 : 0;
	p.payload.pwrx.autonomous = autonomous ? 1 : 0;
	return p;
}

static inline struct pt_packet pk_ptw(uint8_t plc, int ip, uint64_t payload)
{
	struct pt_packet p = pk(ppt_ptw);

	p.payload.ptw.plc = plc;
	p.payload.ptw.ip = ip ? 1 : 0;
	p.payload.ptw.payload = payload;
	return p;
}

static inline struct pt_packet pk_cfe(enum pt_cfe_type type, uint8_t vector, int ip)
{
	struct pt_packet p = pk(ppt_cfe);

	p.payload.cfe.type = type;
	p.payload.cfe.vector = vector;
	p.payload.cfe.ip = ip ? 1 : 0;
	return p;
}

static inline struct pt_packet pk_evd(enum pt_evd_type type, uint64_t payload)
{
	struct pt_packet p = pk(ppt_evd);

	p.payload.evd.type = type;
	p.payload.evd.payload = payload;
	return p;
}

static inline struct pt_packet pk_trig(uint8_t trbv, int icntv, uint16_t icnt,
				int ip, int mult)
{
	struct pt_packet p = pk(ppt_trig);

	p.payload.trig.trbv = trbv;
	p.payload.trig.icntv = icntv ? 1 : 0;
	p.payload.trig.icnt = icnt;
	p.payload.trig.ip = ip ? 1 : 0;
	p.payload.trig.mult = mult ? 1 : 0;
	return p;
}

/* A random packet for the random-trace tests (t_evt_start,
 * t_evt_next_tnt), its payload from the test's @rnd: @kind 0 a TSC, 1 a
 * TMA, 2 a CBR, 3 a TIP.PGE (*on = 1), 4 a TIP.PGD (*on = 0), 5 an MTC
 * (mostly the value after *mtc, now and then a jump), else a CYC (mostly
 * small). */
static inline struct pt_packet pk_random(uint32_t (*rnd)(void), int kind,
					 uint8_t *mtc, int *on)
{
	struct pt_packet p;

	switch (kind) {
	case 0:
		return pk_tsc(((uint64_t) rnd() << 24 | rnd()) &
			      0xffffffffffffffull);
	case 1:
		p = pk(ppt_tma);
		p.payload.tma.ctc = (uint16_t) rnd();
		p.payload.tma.fc = (uint16_t) (rnd() & 0x1ff);
		return p;
	case 2:
		return pk_cbr((uint8_t) (1 + rnd() % 60));
	case 3:
		*on = 1;
		return pk_full(ppt_tip_pge, 0x400000 + (rnd() & 0xfff));
	case 4:
		*on = 0;
		return pk_supp(ppt_tip_pgd);
	case 5:
		p = pk(ppt_mtc);
		*mtc = (uint8_t) (*mtc + (rnd() % 8 ? 1 : rnd()));
		p.payload.mtc.ctc = *mtc;
		return p;
	default:
		p = pk(ppt_cyc);
		p.payload.cyc.value = rnd() % 16 ? rnd() % 300 : rnd();
		return p;
	}
}

#endif

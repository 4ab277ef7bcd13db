/* pkt_samples.h - sample packets of every type for the packet-layer tests:
 * each with the size its encoding must have. */
#ifndef IPT_PKT_SAMPLES_H
#define IPT_PKT_SAMPLES_H

#include <string.h>

/* Fill *packet with sample number n; return its encoded size, or 0 when
 * there are no more samples. */
static int pkt_sample(struct pt_packet *packet, int n)
{
	static const int ipc[] = { pt_ipc_suppressed, pt_ipc_update_16,
				   pt_ipc_update_32, pt_ipc_sext_48,
				   pt_ipc_update_48, pt_ipc_full };
	static const int ipc_size[] = { 1, 3, 5, 7, 7, 9 };
	static const enum pt_packet_type iptype[] = { ppt_fup, ppt_tip,
						      ppt_tip_pge,
						      ppt_tip_pgd };
	static const uint64_t cyc[] = { 0, 1, 0x1f, 0x20, 0xfff, 0x1000,
					0x7ffff, 0x12345678, 0xffffffffull,
					0x0123456789abcull,
					0x1fffffffffffffffull };
	static const int cyc_size[] = { 1, 1, 1, 2, 2, 3, 3, 5, 5, 7, 9 };
	memset(packet, 0, sizeof(*packet));

	/* IP packets: every type with every compression. */
	if (n < 24) {
		packet->type = iptype[n / 6];
		packet->payload.ip.ipc = (enum pt_ip_compression) ipc[n % 6];
		/* As many payload bytes as the compression carries. */
		if (ipc_size[n % 6] > 1)
			packet->payload.ip.ip = 0xfedcba9876543210ull >>
				(64 - 8 * (ipc_size[n % 6] - 1));
		return ipc_size[n % 6];
	}
	n -= 24;

	/* TNT-8 with 1..6 bits. */
	if (n < 6) {
		packet->type = ppt_tnt_8;
		packet->payload.tnt.bit_size = (uint8_t) (n + 1);
		packet->payload.tnt.payload = 0x2aull & ((1ull << (n + 1)) - 1);
		return 1;
	}
	n -= 6;

	/* TNT-64 with 1..47 bits. */
	if (n < 47) {
		packet->type = ppt_tnt_64;
		packet->payload.tnt.bit_size = (uint8_t) (n + 1);
		packet->payload.tnt.payload = 0x5a5a5a5a5a5aull &
					      ((1ull << (n + 1)) - 1);
		return 8;
	}
	n -= 47;

	if (n < (int) (sizeof(cyc) / sizeof(cyc[0]))) {
		packet->type = ppt_cyc;
		packet->payload.cyc.value = cyc[n];
		return cyc_size[n];
	}
	n -= (int) (sizeof(cyc) / sizeof(cyc[0]));

	switch (n) {
	case 0:
		packet->type = ppt_pad;
		return 1;
	case 1:
		packet->type = ppt_psb;
		return 16;
	case 2:
		packet->type = ppt_psbend;
		return 2;
	case 3:
	case 4:
	case 5:
	case 6:
		packet->type = ppt_mode;
		packet->payload.mode.leaf = pt_mol_exec;
		packet->payload.mode.bits.exec.csl = (n - 3) & 1;
		packet->payload.mode.bits.exec.csd = ((n - 3) >> 1) & 1;
		packet->payload.mode.bits.exec.iflag = n == 5;
		return 2;
	case 7:
	case 8:
	case 9:
		packet->type = ppt_mode;
		packet->payload.mode.leaf = pt_mol_tsx;
		packet->payload.mode.bits.tsx.intx = (n - 7) & 1;
		packet->payload.mode.bits.tsx.abrt = n == 9;
		return 2;
	case 10:
	case 11:
		packet->type = ppt_pip;
		packet->payload.pip.cr3 = 0x123456789ae0ull;
		packet->payload.pip.nr = n == 11;
		return 8;
	case 12:
		packet->type = ppt_vmcs;
		packet->payload.vmcs.base = 0x000bcdef12345000ull;
		return 7;
	case 13:
		packet->type = ppt_cbr;
		packet->payload.cbr.ratio = 0x2a;
		return 4;
	case 14:
		packet->type = ppt_tsc;
		packet->payload.tsc.tsc = 0x00ffeeddccbbaa99ull;
		return 8;
	case 15:
		packet->type = ppt_tma;
		packet->payload.tma.ctc = 0xbeef;
		packet->payload.tma.fc = 0x1ff;
		return 7;
	case 16:
		packet->type = ppt_mtc;
		packet->payload.mtc.ctc = 0xc3;
		return 2;
	case 17:
		packet->type = ppt_stop;
		return 2;
	case 18:
		packet->type = ppt_ovf;
		return 2;
	case 19:
		packet->type = ppt_mnt;
		packet->payload.mnt.payload = 0x8877665544332211ull;
		return 11;
	case 20:
	case 21:
		packet->type = ppt_exstop;
		packet->payload.exstop.ip = n == 21;
		return 2;
	case 22:
		packet->type = ppt_mwait;
		packet->payload.mwait.hints = 0xdeadbeef;
		packet->payload.mwait.ext = 0x01020304;
		return 10;
	case 23:
	case 24:
		packet->type = ppt_pwre;
		packet->payload.pwre.state = 0xc;
		packet->payload.pwre.sub_state = 0x3;
		packet->payload.pwre.hw = n == 24;
		return 4;
	case 25:
	case 26:
		packet->type = ppt_pwrx;
		packet->payload.pwrx.last = 0x7;
		packet->payload.pwrx.deepest = 0x9;
		packet->payload.pwrx.interrupt = n == 25;
		packet->payload.pwrx.store = 1;
		packet->payload.pwrx.autonomous = n == 26;
		return 7;
	case 27:
	case 28:
	case 29:
	case 30:
		packet->type = ppt_ptw;
		packet->payload.ptw.plc = (uint8_t) ((n - 27) & 1);
		packet->payload.ptw.ip = n >= 29;
		packet->payload.ptw.payload = packet->payload.ptw.plc ?
			0x1122334455667788ull : 0xa1b2c3d4ull;
		return packet->payload.ptw.plc ? 10 : 6;
	case 31:
	case 32:
		packet->type = ppt_cfe;
		packet->payload.cfe.type = pt_cfe_vmexit_intr;
		packet->payload.cfe.vector = 0x0e;
		packet->payload.cfe.ip = n == 32;
		return 4;
	case 33:
		packet->type = ppt_evd;
		packet->payload.evd.type = pt_evd_vmxq;
		packet->payload.evd.payload = 0x0102030405060708ull;
		return 11;
	case 34:
	case 35:
	case 36:
		packet->type = ppt_trig;
		packet->payload.trig.trbv = 0x5a;
		packet->payload.trig.ip = n != 34;
		packet->payload.trig.mult = n == 36;
		packet->payload.trig.icntv = n >= 35;
		packet->payload.trig.icnt = n >= 35 ? 0xabcd : 0;
		return n >= 35 ? 5 : 3;
	}
	return 0;
}

/* Do two packets agree on type, size (if both set) and payload? */
static int pkt_equal(const struct pt_packet *a, const struct pt_packet *b)
{
	if (a->type != b->type)
		return 0;

	switch (a->type) {
	case ppt_fup:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
		return a->payload.ip.ipc == b->payload.ip.ipc &&
		       a->payload.ip.ip == b->payload.ip.ip;
	case ppt_tnt_8:
	case ppt_tnt_64:
		return a->payload.tnt.bit_size == b->payload.tnt.bit_size &&
		       a->payload.tnt.payload == b->payload.tnt.payload;
	case ppt_mode:
		if (a->payload.mode.leaf != b->payload.mode.leaf)
			return 0;
		if (a->payload.mode.leaf == pt_mol_exec)
			return a->payload.mode.bits.exec.csl ==
				       b->payload.mode.bits.exec.csl &&
			       a->payload.mode.bits.exec.csd ==
				       b->payload.mode.bits.exec.csd &&
			       a->payload.mode.bits.exec.iflag ==
				       b->payload.mode.bits.exec.iflag;
		return a->payload.mode.bits.tsx.intx ==
			       b->payload.mode.bits.tsx.intx &&
		       a->payload.mode.bits.tsx.abrt ==
			       b->payload.mode.bits.tsx.abrt;
	case ppt_pip:
		return a->payload.pip.cr3 == b->payload.pip.cr3 &&
		       a->payload.pip.nr == b->payload.pip.nr;
	case ppt_vmcs:
		return a->payload.vmcs.base == b->payload.vmcs.base;
	case ppt_cbr:
		return a->payload.cbr.ratio == b->payload.cbr.ratio;
	case ppt_tsc:
		return a->payload.tsc.tsc == b->payload.tsc.tsc;
	case ppt_tma:
		return a->payload.tma.ctc == b->payload.tma.ctc &&
		       a->payload.tma.fc == b->payload.tma.fc;
	case ppt_mtc:
		return a->payload.mtc.ctc == b->payload.mtc.ctc;
	case ppt_cyc:
		return a->payload.cyc.value == b->payload.cyc.value;
	case ppt_mnt:
		return a->payload.mnt.payload == b->payload.mnt.payload;
	case ppt_exstop:
		return a->payload.exstop.ip == b->payload.exstop.ip;
	case ppt_mwait:
		return a->payload.mwait.hints == b->payload.mwait.hints &&
		       a->payload.mwait.ext == b->payload.mwait.ext;
	case ppt_pwre:
		return a->payload.pwre.state == b->payload.pwre.state &&
		       a->payload.pwre.sub_state ==
			       b->payload.pwre.sub_state &&
		       a->payload.pwre.hw == b->payload.pwre.hw;
	case ppt_pwrx:
		return a->payload.pwrx.last == b->payload.pwrx.last &&
		       a->payload.pwrx.deepest == b->payload.pwrx.deepest &&
		       a->payload.pwrx.interrupt ==
			       b->payload.pwrx.interrupt &&
		       a->payload.pwrx.store == b->payload.pwrx.store &&
		       a->payload.pwrx.autonomous ==
			       b->payload.pwrx.autonomous;
	case ppt_ptw:
		return a->payload.ptw.plc == b->payload.ptw.plc &&
		       a->payload.ptw.ip == b->payload.ptw.ip &&
		       a->payload.ptw.payload == b->payload.ptw.payload;
	case ppt_cfe:
		return a->payload.cfe.type == b->payload.cfe.type &&
		       a->payload.cfe.vector == b->payload.cfe.vector &&
		       a->payload.cfe.ip == b->payload.cfe.ip;
	case ppt_evd:
		return a->payload.evd.type == b->payload.evd.type &&
		       a->payload.evd.payload == b->payload.evd.payload;
	case ppt_trig:
		return a->payload.trig.trbv == b->payload.trig.trbv &&
		       a->payload.trig.ip == b->payload.trig.ip &&
		       a->payload.trig.mult == b->payload.trig.mult &&
		       a->payload.trig.icntv == b->payload.trig.icntv &&
		       (!a->payload.trig.icntv ||
			a->payload.trig.icnt == b->payload.trig.icnt);
	default:
		return 1;
	}
}

#endif

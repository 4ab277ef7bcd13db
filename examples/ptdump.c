/* ptdump - print an Intel PT trace one packet per line.
 *
 * This example shows the packet layer of ipt.h at work: it synchronizes a
 * packet decoder on the first PSB, decodes every packet, and prints it with
 * its offset.  On request it also follows the decoder state that packets
 * carry but do not show on their own: the last IP of compressed IP packets
 * (ipt_last_ip_*), the estimated time stamp counter (ipt_time_*) and the
 * calibration of cycles against it (ipt_tcal_*).  Given Linux perf_event
 * sideband files (--pevent:primary FILE), it prints their records, as
 * --sb:* asks, at the place in the trace their time stamps put them
 * (pt_sb_dump).
 *
 * Its command line and output are those of libipt's ptdump, character for
 * character, so that libipt's test suite can check ipt.h through it.  Run
 * `ptdump --help` for the options.
 *
 * --segments prints the segment index instead (ipt_seg_index): one line
 * per PSB with the range up to the next, as libipt's ptseg prints a
 * segment, and the state its PSB+ gives a decoder that starts there.
 *
 * Build: cc -O2 -I. -o examples/ptdump examples/ptdump.c -lZydis -lm
 */

#define IPT_IMPLEMENTATION
#include "ipt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "sideband.h"

/* What to show and how to decode; all off unless the command line says. */
struct options {
	unsigned show_offset:1;
	unsigned show_raw:1;
	unsigned show_last_ip:1;
	unsigned show_exec_mode:1;
	unsigned track_time:1;
	unsigned show_time:1;
	unsigned show_tcal:1;
	unsigned time_delta:1;
	unsigned keep_tcal_on_ovf:1;
	unsigned quiet:1;
	unsigned no_pad:1;
	unsigned no_sync:1;
	unsigned no_tcal:1;
	unsigned no_wall_clock:1;
	unsigned no_timing:1;
	unsigned no_cyc:1;
	unsigned segments:1;
#ifndef IPT_NO_STDIO
	/* --sb:* and --pevent:*. */
	struct sb_options sb;
#endif
};

/* Decoder state followed across packets; reset when we resynchronize. */
struct tracking {
	struct ipt_last_ip last_ip;
	struct ipt_time_cal tcal;
	struct ipt_time time;
	/* The last TSC and FCR printed, for --time-delta. */
	uint64_t tsc;
	uint64_t fcr;
	/* Between PSB and PSBEND. */
	int in_psb;
#ifndef IPT_NO_STDIO
	/* The sideband records to show between the packets. */
	struct pt_sb_session *session;
#endif
};

/* One output line, column by column.  Each column is a fixed-size string;
 * what does not fit is cut, and the sizes also give the column widths.
 * A packet's payload is either a short standard text or, for TNT and TRIG,
 * a longer one sharing its storage. */
struct line {
	char offset[17];
	char raw[33];
	char opcode[10];
	union {
		char standard[25];
		char extended[48];
	} payload;
	/* A named value in a last column: "ip", "tsc", "cr3", ... */
	char track_id[5];
	char track_value[17];
	/* Print nothing for this packet. */
	unsigned skip:1;
	/* This packet changes no time, or no calibration: do not show it. */
	unsigned skip_time:1;
	unsigned skip_tcal:1;
};

/* Format into a column, clearing it first so that nothing of an earlier,
 * longer text stays behind.  Text that does not fit is cut on purpose. */
static void format_field(char *field, size_t size, const char *format, ...)
{
	va_list ap;

	memset(field, 0, size);
	va_start(ap, format);
	vsnprintf(field, size, format, ap);
	va_end(ap);
}

#define set_field(field, ...) format_field(field, sizeof(field), __VA_ARGS__)

/* Report a problem at a trace offset, in line with the packets. */
static int diag(const char *what, uint64_t offset, int errcode)
{
	if (errcode)
		printf("[%" PRIx64 ": %s: %s]\n", offset, what,
		       pt_errstr(pt_errcode(errcode)));
	else
		printf("[%" PRIx64 ": %s]\n", offset, what);
	return errcode;
}

/* Resets what the trace carries; the sideband session goes on. */
static void tracking_reset(struct tracking *tr)
{
	ipt_last_ip_init(&tr->last_ip);
	ipt_tcal_init(&tr->tcal);
	ipt_time_init(&tr->time);
	tr->tsc = 0ull;
	tr->fcr = 0ull;
	tr->in_psb = 0;
}

static void print_line(const struct line *ln, const struct options *opt)
{
	const char *sep = "";

	if (ln->skip || opt->quiet)
		return;

	if (opt->show_offset) {
		printf("%-*s", (int) sizeof(ln->offset), ln->offset);
		sep = " ";
	}
	if (ln->raw[0]) {
		printf("%s%-*s", sep, (int) sizeof(ln->raw), ln->raw);
		sep = " ";
	}

	/* The opcode column is padded only when something follows. */
	if (ln->payload.standard[0])
		printf("%s%-*s", sep, (int) sizeof(ln->opcode), ln->opcode);
	else
		printf("%s%s", sep, ln->opcode);

	if (ln->track_id[0]) {
		printf(" %-*s", (int) sizeof(ln->payload.standard),
		       ln->payload.standard);
		printf(" %-*s", (int) sizeof(ln->track_id), ln->track_id);
		printf("%s", ln->track_value);
	} else if (ln->payload.standard[0])
		printf(" %.*s", (int) sizeof(ln->payload.extended),
		       ln->payload.extended);

	printf("\n");
}

static int format_raw(struct line *ln, uint64_t offset,
		      const struct pt_packet *packet,
		      const struct pt_config *config)
{
	const uint8_t *pos, *end;
	size_t used;

	pos = config->begin + offset;
	end = pos + packet->size;
	if (config->end < end)
		return diag("bad packet size", offset, -pte_bad_packet);

	for (used = 0; pos < end; ++pos, used += 2) {
		if (sizeof(ln->raw) < used + 3) {
			diag("truncating raw packet", offset, 0);
			break;
		}
		snprintf(ln->raw + used, sizeof(ln->raw) - used, "%02x", *pos);
	}
	return 0;
}

static void track_last_ip(struct line *ln, struct tracking *tr,
			  uint64_t offset, const struct pt_packet_ip *packet,
			  const struct pt_config *config)
{
	uint64_t ip;
	int errcode;

	set_field(ln->track_id, "ip");

	errcode = ipt_last_ip_update_ip(&tr->last_ip, packet, config);
	if (errcode < 0) {
		set_field(ln->track_value, "<unavailable>");
		diag("error tracking last-ip", offset, errcode);
		return;
	}

	errcode = ipt_last_ip_query(&ip, &tr->last_ip);
	if (errcode == -pte_ip_suppressed)
		set_field(ln->track_value, "<suppressed>");
	else if (errcode < 0) {
		set_field(ln->track_value, "<unavailable>");
		diag("error tracking last-ip", offset, errcode);
	} else
		set_field(ln->track_value, "%016" PRIx64, ip);
}

static void show_time(struct line *ln, struct tracking *tr, uint64_t offset,
		      const struct options *opt)
{
	uint64_t tsc;
	int errcode;

	set_field(ln->track_id, "tsc");

	/* Without a TSC the estimate is relative: fine if asked for. */
	errcode = ipt_time_query_tsc(&tsc, NULL, NULL, &tr->time);
	if (errcode < 0 && !(errcode == -pte_no_time && opt->no_wall_clock)) {
		diag("error printing time", offset, errcode);
		set_field(ln->track_value, "<unavailable>");
		return;
	}

	if (!opt->time_delta)
		set_field(ln->track_value, "%016" PRIx64, tsc);
	else {
		if (tr->tsc <= tsc)
			set_field(ln->track_value, "+%" PRIx64, tsc - tr->tsc);
		else
			set_field(ln->track_value, "-%" PRIx64, tr->tsc - tsc);
		tr->tsc = tsc;
	}
}

static void show_tcal(struct line *ln, struct tracking *tr, uint64_t offset,
		      const struct options *opt)
{
	const double scale = (double) (1ull << ipt_tcal_fcr_shr);
	uint64_t fcr;
	int errcode;

	set_field(ln->track_id, "fcr");

	errcode = ipt_tcal_fcr(&fcr, &tr->tcal);
	if (errcode < 0) {
		set_field(ln->track_value, "<unavailable>");
		diag("error printing time", offset, errcode);
		return;
	}

	/* The ratio is fixed-point; show it as a fraction. */
	if (!opt->time_delta)
		set_field(ln->track_value, "%.3f", (double) fcr / scale);
	else {
		set_field(ln->track_value, "%+.3f",
			  (double) fcr / scale - (double) tr->fcr / scale);
		tr->fcr = fcr;
	}
}

static void show_timing(struct line *ln, struct tracking *tr,
			uint64_t offset, const struct options *opt)
{
	if (opt->show_tcal && !ln->skip_tcal)
		show_tcal(ln, tr, offset, opt);
	if (opt->show_time && !ln->skip_time)
		show_time(ln, tr, offset, opt);
}

/* Calibration and time tracking failures are reported, and dumping goes
 * on. */
static void check_tcal(int errcode, uint64_t offset)
{
	if (errcode < 0)
		diag("error calibrating time", offset, errcode);
}

static void check_time(int errcode, uint64_t offset)
{
	if (errcode < 0)
		diag("error updating time", offset, errcode);
}

/* Print the sideband records up to the time the trace has reached, before
 * the packet that moved it there. */
static void show_sideband(struct tracking *tr, uint64_t offset,
			  const struct options *opt)
{
#ifndef IPT_NO_STDIO
	uint64_t tsc;
	int errcode;

	errcode = ipt_time_query_tsc(&tsc, NULL, NULL, &tr->time);
	if (errcode < 0 && errcode != -pte_no_time) {
		diag("time tracking error", offset, errcode);
		return;
	}
	errcode = pt_sb_dump(tr->session, stdout, opt->sb.flags, tsc);
	if (errcode < 0)
		diag("sideband dump error", offset, errcode);
#else
	(void) tr;
	(void) offset;
	(void) opt;
#endif
}

/* Feed a timing packet to calibration (unless --no-tcal) and to time
 * tracking, then show the result in the last column. */
static void track_timing(struct line *ln, struct tracking *tr,
			 uint64_t offset, const struct pt_packet *packet,
			 const struct options *opt,
			 const struct pt_config *config)
{
	struct ipt_time_cal *tcal = &tr->tcal;
	struct ipt_time *time = &tr->time;
	const struct pt_packet_tsc *tsc = &packet->payload.tsc;
	const struct pt_packet_cbr *cbr = &packet->payload.cbr;
	const struct pt_packet_tma *tma = &packet->payload.tma;
	const struct pt_packet_mtc *mtc = &packet->payload.mtc;
	const struct pt_packet_cyc *cyc = &packet->payload.cyc;
	int errcode;

	/* TSC and CBR in PSB+ are status, outside of it they are news: the
	 * calibration treats them differently. */
	switch (packet->type) {
	case ppt_tsc:
		if (!opt->no_tcal) {
			errcode = tr->in_psb ?
				ipt_tcal_header_tsc(tcal, tsc, config) :
				ipt_tcal_update_tsc(tcal, tsc, config);
			check_tcal(errcode, offset);
		}
		check_time(ipt_time_update_tsc(time, tsc, config), offset);
		break;

	case ppt_cbr:
		if (!opt->no_tcal) {
			errcode = tr->in_psb ?
				ipt_tcal_header_cbr(tcal, cbr, config) :
				ipt_tcal_update_cbr(tcal, cbr, config);
			check_tcal(errcode, offset);
		}
		check_time(ipt_time_update_cbr(time, cbr, config), offset);
		ln->skip_time = 1;
		break;

	case ppt_tma:
		if (!opt->no_tcal)
			check_tcal(ipt_tcal_update_tma(tcal, tma, config),
				   offset);
		check_time(ipt_time_update_tma(time, tma, config), offset);
		ln->skip_tcal = 1;
		break;

	case ppt_mtc:
		if (!opt->no_tcal)
			check_tcal(ipt_tcal_update_mtc(tcal, mtc, config),
				   offset);
		check_time(ipt_time_update_mtc(time, mtc, config), offset);
		break;

	case ppt_cyc: {
		/* Without calibration the cycles cannot be converted. */
		uint64_t fcr = 0ull;

		if (!opt->no_tcal) {
			errcode = ipt_tcal_fcr(&fcr, tcal);
			if (errcode < 0)
				diag("calibration error", offset, errcode);
			check_tcal(ipt_tcal_update_cyc(tcal, cyc, config),
				   offset);
		}
		errcode = ipt_time_update_cyc(time, cyc, config, fcr);
		if (errcode < 0)
			diag("error updating time", offset, errcode);
		else if (!fcr)
			diag("error updating time: no calibration", offset, 0);
		ln->skip_tcal = 1;
		break;
	}

	default:
		return;
	}

	show_timing(ln, tr, offset, opt);
	show_sideband(tr, offset, opt);
}

static uint64_t sign_extend_48(uint64_t ip)
{
	return (ip & (1ull << 47)) ? ip | ~0ull << 48 : ip & ~(~0ull << 48);
}

/* The IP payload as far as the packet gives it: '?' for the bits it
 * leaves to the last IP. */
static void format_ip(struct line *ln, uint64_t offset,
		      const struct pt_packet_ip *packet)
{
	switch (packet->ipc) {
	case pt_ipc_suppressed:
		set_field(ln->payload.standard, "%x: ????????????????",
			  (unsigned) packet->ipc);
		return;
	case pt_ipc_update_16:
		set_field(ln->payload.standard, "%x: ????????????%04" PRIx64,
			  (unsigned) packet->ipc, packet->ip);
		return;
	case pt_ipc_update_32:
		set_field(ln->payload.standard, "%x: ????????%08" PRIx64,
			  (unsigned) packet->ipc, packet->ip);
		return;
	case pt_ipc_update_48:
		set_field(ln->payload.standard, "%x: ????%012" PRIx64,
			  (unsigned) packet->ipc, packet->ip);
		return;
	case pt_ipc_sext_48:
		set_field(ln->payload.standard, "%x: %016" PRIx64,
			  (unsigned) packet->ipc, sign_extend_48(packet->ip));
		return;
	case pt_ipc_full:
		set_field(ln->payload.standard, "%x: %016" PRIx64,
			  (unsigned) packet->ipc, packet->ip);
		return;
	}

	set_field(ln->payload.standard, "%x: %016" PRIx64,
		  (unsigned) packet->ipc, packet->ip);
	diag("bad ipc", offset, -pte_bad_packet);
}

/* Taken '!' and not-taken '.', oldest first. */
static void format_tnt(struct line *ln, uint64_t offset,
		       const struct pt_packet_tnt *packet)
{
	size_t i, n = packet->bit_size;

	if (sizeof(ln->payload.extended) < n) {
		diag("truncating tnt payload", offset, 0);
		n = sizeof(ln->payload.extended);
	}
	for (i = 0; i < n; ++i)
		ln->payload.extended[i] =
			(packet->payload >> (packet->bit_size - 1 - i)) & 1 ?
			'!' : '.';
}

static const char *mode_name(enum pt_exec_mode mode)
{
	switch (mode) {
	case ptem_64bit:
		return "64-bit";
	case ptem_32bit:
		return "32-bit";
	case ptem_16bit:
		return "16-bit";
	case ptem_unknown:
		return "unknown";
	}
	return "invalid";
}

static const char *exec_mode_name(const struct pt_packet_mode_exec *exec)
{
	return mode_name(pt_get_exec_mode(exec));
}

/* The PWRX wake reason: exactly one of its bits should be set. */
static const char *pwrx_reason(const struct pt_packet_pwrx *packet)
{
	int n = packet->interrupt + packet->store + packet->autonomous;

	if (n != 1)
		return "bad";
	if (packet->interrupt)
		return "int";
	return packet->store ? " st" : " hw";
}

static const char *cfe_name(enum pt_cfe_type type)
{
	switch (type) {
	case pt_cfe_intr:
		return "intr";
	case pt_cfe_iret:
		return "iret";
	case pt_cfe_smi:
		return "smi";
	case pt_cfe_rsm:
		return "rsm";
	case pt_cfe_sipi:
		return "sipi";
	case pt_cfe_init:
		return "init";
	case pt_cfe_vmentry:
		return "vmentry";
	case pt_cfe_vmexit:
		return "vmexit";
	case pt_cfe_vmexit_intr:
		return "vmexit_intr";
	case pt_cfe_shutdown:
		return "shutdown";
	case pt_cfe_uintr:
		return "uintr";
	case pt_cfe_uiret:
		return "uiret";
	case pt_cfe_swintr:
		return "swintr";
	case pt_cfe_syscall:
		return "syscall";
	}
	return "unknown";
}

static const char *evd_name(enum pt_evd_type type)
{
	switch (type) {
	case pt_evd_cr2:
		return "cr2";
	case pt_evd_vmxq:
		return "vmxq";
	case pt_evd_vmxr:
		return "vmxr";
	}
	return "unknown";
}

static void format_mode(struct line *ln, uint64_t offset,
			const struct pt_packet_mode *mode,
			const struct options *opt)
{
	if (mode->leaf == pt_mol_exec) {
		const struct pt_packet_mode_exec *exec = &mode->bits.exec;
		const char *csd = exec->csd ? "cs.d" : "";
		const char *csl = exec->csl ? "cs.l" : "";
		int bits = exec->csd || exec->csl;

		set_field(ln->opcode, "mode.exec");
		set_field(ln->payload.standard, "%s%s%s%s%s", csd,
			  exec->csd && exec->csl ? ", " : "", csl,
			  exec->iflag && bits ? ", " : "",
			  exec->iflag ? "if" : "");
		if (opt->show_exec_mode) {
			set_field(ln->track_id, "em");
			set_field(ln->track_value, "%s",
				  exec_mode_name(exec));
		}
		return;
	}

	if (mode->leaf == pt_mol_tsx) {
		const struct pt_packet_mode_tsx *tsx = &mode->bits.tsx;

		set_field(ln->opcode, "mode.tsx");
		set_field(ln->payload.standard, "%s%s%s",
			  tsx->intx ? "intx" : "",
			  tsx->intx && tsx->abrt ? ", " : "",
			  tsx->abrt ? "abrt" : "");
		return;
	}

	set_field(ln->opcode, "mode");
	set_field(ln->payload.standard, "leaf: %x", (unsigned) mode->leaf);
	diag("unknown mode leaf", offset, 0);
}

static void format_cfe(struct line *ln, const struct pt_packet_cfe *cfe)
{
	const char *ip = cfe->ip ? ", ip" : "";

	set_field(ln->opcode, "cfe");
	set_field(ln->track_id, "type");
	set_field(ln->track_value, "%s", cfe_name(cfe->type));

	/* Only some types carry a vector; SIPI's is a page number. */
	switch (cfe->type) {
	case pt_cfe_intr:
	case pt_cfe_vmexit_intr:
	case pt_cfe_uintr:
	case pt_cfe_swintr:
		set_field(ln->payload.standard, "%u: %u%s",
			  (unsigned) cfe->type, (unsigned) cfe->vector, ip);
		return;
	case pt_cfe_sipi:
		set_field(ln->payload.standard, "%u: %x%s",
			  (unsigned) cfe->type, (unsigned) cfe->vector, ip);
		return;
	default:
		set_field(ln->payload.standard, "%u%s", (unsigned) cfe->type,
			  ip);
		return;
	}
}

static void format_trig(struct line *ln, const struct pt_packet_trig *trig)
{
	const char *ip = trig->ip ? ", ip" : "";
	const char *mult = trig->mult ? ", mult" : "";

	set_field(ln->opcode, "trig");
	if (trig->icntv)
		set_field(ln->payload.extended, "%02x%s%s, icnt: %u",
			  (unsigned) trig->trbv, ip, mult,
			  (unsigned) trig->icnt);
	else
		set_field(ln->payload.extended, "%02x%s%s",
			  (unsigned) trig->trbv, ip, mult);
}

/* Fill in a line for a packet and follow the state it changes.  Returns a
 * negative error code only when the packet cannot be shown at all. */
static int format_packet(struct line *ln, uint64_t offset,
			 const struct pt_packet *packet, struct tracking *tr,
			 const struct options *opt,
			 const struct pt_config *config)
{
	const char *name = NULL;

	switch (packet->type) {
	case ppt_unknown:
		set_field(ln->opcode, "<unknown>");
		return 0;

	case ppt_invalid:
		set_field(ln->opcode, "<invalid>");
		return 0;

	case ppt_psb:
		set_field(ln->opcode, "psb");
		if (opt->track_time)
			check_tcal(ipt_tcal_update_psb(&tr->tcal, config),
				   offset);
		tr->in_psb = 1;
		return 0;

	case ppt_psbend:
		set_field(ln->opcode, "psbend");
		tr->in_psb = 0;
		return 0;

	case ppt_pad:
		set_field(ln->opcode, "pad");
		ln->skip = opt->no_pad;
		return 0;

	case ppt_ovf:
		set_field(ln->opcode, "ovf");
		if (opt->track_time) {
			if (opt->keep_tcal_on_ovf)
				check_tcal(ipt_tcal_update_ovf(&tr->tcal,
							       config),
					   offset);
			else
				ipt_tcal_init(&tr->tcal);
		}
		return 0;

	case ppt_stop:
		set_field(ln->opcode, "stop");
		return 0;

	case ppt_fup:
		name = "fup";
		break;
	case ppt_tip:
		name = "tip";
		break;
	case ppt_tip_pge:
		name = "tip.pge";
		break;
	case ppt_tip_pgd:
		name = "tip.pgd";
		break;

	case ppt_pip:
		set_field(ln->opcode, "pip");
		set_field(ln->payload.standard, "%" PRIx64 "%s",
			  packet->payload.pip.cr3,
			  packet->payload.pip.nr ? ", nr" : "");
		set_field(ln->track_id, "cr3");
		set_field(ln->track_value, "%016" PRIx64,
			  packet->payload.pip.cr3);
		return 0;

	case ppt_vmcs:
		set_field(ln->opcode, "vmcs");
		set_field(ln->payload.standard, "%" PRIx64,
			  packet->payload.vmcs.base);
		set_field(ln->track_id, "vmcs");
		set_field(ln->track_value, "%016" PRIx64,
			  packet->payload.vmcs.base);
		return 0;

	case ppt_tnt_8:
	case ppt_tnt_64:
		set_field(ln->opcode, packet->type == ppt_tnt_8 ? "tnt.8" :
			  "tnt.64");
		format_tnt(ln, offset, &packet->payload.tnt);
		return 0;

	case ppt_mode:
		format_mode(ln, offset, &packet->payload.mode, opt);
		return 0;

	case ppt_tsc:
		set_field(ln->opcode, "tsc");
		set_field(ln->payload.standard, "%" PRIx64,
			  packet->payload.tsc.tsc);
		break;

	case ppt_cbr:
		set_field(ln->opcode, "cbr");
		set_field(ln->payload.standard, "%x",
			  (unsigned) packet->payload.cbr.ratio);
		break;

	case ppt_tma:
		set_field(ln->opcode, "tma");
		set_field(ln->payload.standard, "%x, %x",
			  (unsigned) packet->payload.tma.ctc,
			  (unsigned) packet->payload.tma.fc);
		break;

	case ppt_mtc:
		set_field(ln->opcode, "mtc");
		set_field(ln->payload.standard, "%x",
			  (unsigned) packet->payload.mtc.ctc);
		break;

	case ppt_cyc:
		set_field(ln->opcode, "cyc");
		set_field(ln->payload.standard, "%" PRIx64,
			  packet->payload.cyc.value);
		break;

	case ppt_mnt:
		set_field(ln->opcode, "mnt");
		set_field(ln->payload.standard, "%" PRIx64,
			  packet->payload.mnt.payload);
		return 0;

	case ppt_exstop:
		set_field(ln->opcode, "exstop");
		set_field(ln->payload.standard, "%s",
			  packet->payload.exstop.ip ? "ip" : "");
		return 0;

	case ppt_mwait:
		set_field(ln->opcode, "mwait");
		set_field(ln->payload.standard, "%08x, %08x",
			  (unsigned) packet->payload.mwait.hints,
			  (unsigned) packet->payload.mwait.ext);
		return 0;

	case ppt_pwre:
		/* C-states are numbered from C0 = 0xf. */
		set_field(ln->opcode, "pwre");
		set_field(ln->payload.standard, "c%u.%u%s",
			  (packet->payload.pwre.state + 1u) & 0xfu,
			  (packet->payload.pwre.sub_state + 1u) & 0xfu,
			  packet->payload.pwre.hw ? ", hw" : "");
		return 0;

	case ppt_pwrx:
		set_field(ln->opcode, "pwrx");
		set_field(ln->payload.standard, "%s: c%u, c%u",
			  pwrx_reason(&packet->payload.pwrx),
			  (packet->payload.pwrx.last + 1u) & 0xfu,
			  (packet->payload.pwrx.deepest + 1u) & 0xfu);
		return 0;

	case ppt_ptw:
		set_field(ln->opcode, "ptw");
		set_field(ln->payload.standard, "%x: %" PRIx64 "%s",
			  (unsigned) packet->payload.ptw.plc,
			  packet->payload.ptw.payload,
			  packet->payload.ptw.ip ? ", ip" : "");
		return 0;

	case ppt_cfe:
		format_cfe(ln, &packet->payload.cfe);
		return 0;

	case ppt_evd:
		set_field(ln->opcode, "evd");
		set_field(ln->payload.standard, "%u: %" PRIx64,
			  (unsigned) packet->payload.evd.type,
			  packet->payload.evd.payload);
		set_field(ln->track_id, "type");
		set_field(ln->track_value, "%s",
			  evd_name(packet->payload.evd.type));
		return 0;

	case ppt_trig:
		format_trig(ln, &packet->payload.trig);
		return 0;

	default:
		return diag("unknown packet", offset, -pte_bad_opc);
	}

	if (name) {
		set_field(ln->opcode, "%s", name);
		format_ip(ln, offset, &packet->payload.ip);
		if (opt->show_last_ip)
			track_last_ip(ln, tr, offset, &packet->payload.ip,
				      config);
		return 0;
	}

	/* The timing packets: tsc, cbr, tma, mtc, cyc.  With --no-cyc, CYCs
	 * neither show nor count. */
	if (opt->track_time && !(packet->type == ppt_cyc && opt->no_cyc))
		track_timing(ln, tr, offset, packet, opt, config);
	if (opt->no_timing || (packet->type == ppt_cyc && opt->no_cyc))
		ln->skip = 1;
	return 0;
}

static int dump_packet(uint64_t offset, const struct pt_packet *packet,
		       struct tracking *tr, const struct options *opt,
		       const struct pt_config *config)
{
	struct line ln;
	int errcode;

	memset(&ln, 0, sizeof(ln));
	set_field(ln.offset, "%016" PRIx64, offset);

	if (opt->show_raw) {
		errcode = format_raw(&ln, offset, packet, config);
		if (errcode < 0)
			return errcode;
	}

	errcode = format_packet(&ln, offset, packet, tr, opt, config);
	if (errcode < 0)
		return errcode;

	print_line(&ln, opt);
	return 0;
}

/* Print packets until the end of the trace (0) or an error (negative). */
static int dump_packets(struct pt_packet_decoder *decoder,
			struct tracking *tr, const struct options *opt,
			const struct pt_config *config)
{
	uint64_t offset = 0ull;

	for (;;) {
		struct pt_packet packet;
		int errcode;

		errcode = pt_pkt_get_offset(decoder, &offset);
		if (errcode < 0)
			return diag("error getting offset", offset, errcode);

		errcode = pt_pkt_next(decoder, &packet, sizeof(packet));
		if (errcode == -pte_eos)
			return 0;
		if (errcode < 0)
			return diag("error decoding packet", offset, errcode);

		errcode = dump_packet(offset, &packet, tr, opt, config);
		if (errcode < 0)
			return errcode;
	}
}

/* Dump the whole trace: after an error, go on at the next PSB with fresh
 * tracking state.  Running out of trace while looking for a PSB is the
 * normal end. */
static int dump_sync(struct pt_packet_decoder *decoder, struct tracking *tr,
		     const struct options *opt, const struct pt_config *config)
{
	int errcode;

	if (opt->no_sync) {
		errcode = pt_pkt_sync_set(decoder, 0ull);
		if (errcode < 0)
			return diag("sync error", 0ull, errcode);
	} else {
		errcode = pt_pkt_sync_forward(decoder);
		if (errcode < 0)
			goto sync_failed;
	}

	while (dump_packets(decoder, tr, opt, config) < 0) {
		errcode = pt_pkt_sync_forward(decoder);
		if (errcode < 0)
			goto sync_failed;
		tracking_reset(tr);
	}
	return 0;

sync_failed:
	if (errcode == -pte_eos)
		return 0;
	return diag("sync error", 0ull, errcode);
}

static int dump(const struct pt_config *config, struct tracking *tr,
		const struct options *opt)
{
	struct pt_packet_decoder *decoder;
	int errcode;

	decoder = pt_pkt_alloc_decoder(config);
	if (!decoder)
		return diag("failed to allocate decoder", 0ull, 0);

	errcode = dump_sync(decoder, tr, opt, config);
	pt_pkt_free_decoder(decoder);
	if (errcode < 0)
		return errcode;

#ifndef IPT_NO_STDIO
	/* The records after the end of the trace. */
	errcode = pt_sb_dump(tr->session, stdout, opt->sb.flags, UINT64_MAX);
	if (errcode < 0)
		return diag("sideband dump error", UINT64_MAX, errcode);
#endif
	return 0;
}

/* ---- the segment index ---- */

static void print_segment(const struct ipt_segment *seg)
{
	printf("0x%" PRIx64 "-0x%" PRIx64 " (size: 0x%" PRIx64 ")",
	       seg->offset, seg->end, seg->end - seg->offset);
	if (seg->enabled)
		printf(", ip: 0x%" PRIx64 ", mode: %s", seg->ip,
		       mode_name(seg->mode));
	else
		printf(", disabled");
	if (seg->has_cr3)
		printf(", cr3: 0x%" PRIx64 "%s", seg->cr3, seg->nr ? " nr" : "");
	if (seg->has_vmcs)
		printf(", vmcs: 0x%" PRIx64, seg->vmcs);
	if (seg->intx)
		printf(", intx");
	if (seg->has_tsc)
		printf(", tsc: 0x%" PRIx64, seg->tsc);
	if (seg->has_tma)
		printf(", tma: 0x%x/0x%x", (unsigned) seg->ctc,
		       (unsigned) seg->fc);
	if (seg->has_cbr)
		printf(", cbr: 0x%x", (unsigned) seg->cbr);
	if (seg->overflow)
		printf(", overflow");
	if (seg->broken)
		printf(", broken");
	printf("\n");
}

static int dump_segments(const struct pt_config *config)
{
	struct ipt_segment *segs;
	int64_t n, i;

	n = ipt_seg_index(config, NULL, 0);
	if (n < 0)
		return diag("segment index error", 0ull, (int) n);
	segs = (struct ipt_segment *) calloc((size_t) n + 1, sizeof(*segs));
	if (!segs)
		return diag("failed to allocate segments", 0ull, -pte_nomem);
	n = ipt_seg_index(config, segs, (size_t) n);
	for (i = 0; i < n; ++i)
		print_segment(&segs[i]);
	free(segs);
	return 0;
}

/* ---- the command line ---- */

static void help(const char *prog)
{
	printf("usage: %s [<options>] <ptfile>[:<from>[-<to>]\n\n", prog);
	fputs("options:\n"
	      "  --help|-h                 this text.\n"
	      "  --version                 display version information and exit.\n"
	      "  --no-sync                 don't try to sync to the first PSB, assume a valid\n"
	      "                            sync point at the beginning of the trace.\n"
	      "  --quiet                   don't print anything but errors.\n"
	      "  --no-pad                  don't show PAD packets.\n"
	      "  --no-timing               don't show timing packets.\n"
	      "  --no-cyc                  don't show CYC packets and ignore them when tracking time.\n"
	      "  --no-offset               don't show the offset as the first column.\n"
	      "  --raw                     show raw packet bytes.\n"
	      "  --lastip                  show last IP updates on packets with IP payloads.\n"
	      "  --exec-mode               show the current execution mode on mode.exec packets.\n"
	      "  --time                    show the estimated TSC on timing packets.\n"
	      "  --tcal                    show time calibration information.\n"
	      "  --time-delta              show timing information as delta.\n"
	      "  --no-tcal                 skip timing calibration.\n"
	      "                            this will result in errors when CYC packets are encountered.\n"
	      "  --no-wall-clock           suppress the no-time error and print relative time.\n"
	      "  --keep-tcal-on-ovf        preserve timing calibration on overflow.\n"
#ifndef IPT_NO_STDIO
	      "  --sb:compact | --sb       show sideband records in compact format.\n"
	      "  --sb:verbose              show sideband records in verbose format.\n"
	      "  --sb:filename             show the filename on sideband records.\n"
	      "  --sb:offset               show the offset on sideband records.\n"
	      "  --sb:time                 show the time on sideband records.\n"
	      "  --sb:warn                 show sideband warnings.\n"
	      "  --pevent[:primary/:secondary] <file>[:<from>[-<to>]]\n"
	      "                              load a perf_event sideband stream from <file>.\n"
	      "                              an optional offset or range can be given.\n"
	      "  --pevent:sample-type <val>  set perf_event_attr.sample_type to <val> (default: 0).\n"
	      "  --pevent:sample-config <id>:<val>\n"
	      "                              set perf_event_attr.sample_type to <val> for event <id>.\n"
	      "  --pevent:time-zero <val>    set perf_event_mmap_page.time_zero to <val> (default: 0).\n"
	      "  --pevent:time-shift <val>   set perf_event_mmap_page.time_shift to <val> (default: 0).\n"
	      "  --pevent:time-mult <val>    set perf_event_mmap_page.time_mult to <val> (default: 1).\n"
	      "  --pevent:tsc-offset <val>   show perf events <val> ticks earlier.\n"
	      "  --pevent:kernel-start <val> the start address of the kernel.\n"
	      "  --pevent:sysroot <path>     ignored.\n"
	      "  --pevent:kcore <file>       ignored.\n"
	      "  --pevent:vdso-x64 <file>    ignored.\n"
	      "  --pevent:vdso-x32 <file>    ignored.\n"
	      "  --pevent:vdso-ia32 <file>   ignored.\n"
#endif
	      "  --segments                print one line per PSB segment (its range and PSB+ state).\n"
	      "  --cpu none|f/m[/s]        set cpu to the given value and decode according to:\n"
	      "                              none     spec (default)\n"
	      "                              f/m[/s]  family/model[/stepping]\n"
	      "  --mtc-freq <n>            set the MTC frequency (IA32_RTIT_CTL[17:14]) to <n>.\n"
	      "  --nom-freq <n>            set the nominal frequency (MSR_PLATFORM_INFO[15:8]) to <n>.\n"
	      "  --cpuid-0x15.eax          set the value of cpuid[0x15].eax.\n"
	      "  --cpuid-0x15.ebx          set the value of cpuid[0x15].ebx.\n"
	      "  <ptfile>[:<from>[-<to>]]  load the processor trace data from <ptfile>;\n",
	      stdout);
}

/* major.minor.patch[-build][-ext] */
static void print_version(struct pt_version v)
{
	printf("%u.%u.%u", (unsigned) v.major, (unsigned) v.minor,
	       (unsigned) v.patch);
	if (v.build)
		printf("-%" PRIu32, v.build);
	if (v.ext && v.ext[0])
		printf("-%s", v.ext);
}

static void version(const char *prog)
{
	struct pt_version tool;

	tool.major = IPT_VERSION_MAJOR;
	tool.minor = IPT_VERSION_MINOR;
	tool.patch = IPT_VERSION_PATCH;
	tool.build = 0;
	tool.ext = "";

	printf("%s-", prog);
	print_version(tool);
	printf(" / libipt-");
	print_version(pt_library_version());
	printf("\n");
}

/* An option's numeric argument, at most max.  Prints why not and returns
 * zero if it is missing, malformed or too big. */
static int get_number(uint64_t *value, uint64_t max, const char *option,
		      const char *arg, const char *prog)
{
	char *rest;

	if (!arg || !arg[0] || (arg[0] == '-' && arg[1] == '-')) {
		fprintf(stderr, "%s: %s: missing argument.\n", prog, option);
		return 0;
	}

	errno = 0;
	*value = strtoull(arg, &rest, 0);
	if (errno || *rest) {
		fprintf(stderr, "%s: %s: bad argument: %s.\n", prog, option,
			arg);
		return 0;
	}
	if (*value > max) {
		fprintf(stderr, "%s: %s: value too big: %s.\n", prog, option,
			arg);
		return 0;
	}
	return 1;
}

static int get_u8(uint8_t *out, const char *option, const char *arg,
		  const char *prog)
{
	uint64_t v;

	if (!get_number(&v, UINT8_MAX, option, arg, prog))
		return 0;
	*out = (uint8_t) v;
	return 1;
}

static int get_u32(uint32_t *out, const char *option, const char *arg,
		   const char *prog)
{
	uint64_t v;

	if (!get_number(&v, UINT32_MAX, option, arg, prog))
		return 0;
	*out = (uint32_t) v;
	return 1;
}

/* A flag option: the bit it sets, or clears for --no-offset. */
static int set_flag(struct options *opt, const char *arg)
{
	if (!strcmp(arg, "--no-sync"))
		opt->no_sync = 1;
	else if (!strcmp(arg, "--segments"))
		opt->segments = 1;
	else if (!strcmp(arg, "--quiet")) {
		opt->quiet = 1;
#ifndef IPT_NO_STDIO
		opt->sb.flags = 0;
#endif
	}
	else if (!strcmp(arg, "--no-pad"))
		opt->no_pad = 1;
	else if (!strcmp(arg, "--no-timing"))
		opt->no_timing = 1;
	else if (!strcmp(arg, "--no-cyc"))
		opt->no_cyc = 1;
	else if (!strcmp(arg, "--no-offset"))
		opt->show_offset = 0;
	else if (!strcmp(arg, "--raw"))
		opt->show_raw = 1;
	else if (!strcmp(arg, "--lastip"))
		opt->show_last_ip = 1;
	else if (!strcmp(arg, "--exec-mode"))
		opt->show_exec_mode = 1;
	else if (!strcmp(arg, "--time-delta"))
		opt->time_delta = 1;
	else if (!strcmp(arg, "--no-tcal"))
		opt->no_tcal = 1;
	else if (!strcmp(arg, "--no-wall-clock"))
		opt->no_wall_clock = 1;
	else if (!strcmp(arg, "--keep-tcal-on-ovf"))
		opt->keep_tcal_on_ovf = 1;
	else
		return 0;
	return 1;
}

/* Parse the command line.  Returns 0 to go on, 1 to stop successfully
 * (--help, --version), -1 to stop with an error (already reported). */
static int parse_args(int argc, char *argv[], struct options *opt,
		      struct tracking *tr, struct pt_config *config,
		      char **ptfile)
{
	const char *prog = argv[0];
	int i;

	for (i = 1; i < argc; ++i) {
		const char *arg = argv[i];

		if (arg[0] != '-') {
			/* The trace file comes last. */
			*ptfile = argv[i];
			if (i < argc - 1) {
				fprintf(stderr, "%s: [<options>] <ptfile>.  "
					"Use --help or -h for help.\n", prog);
				return -1;
			}
			break;
		}

		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			help(prog);
			return 1;
		}
		if (!strcmp(arg, "--version")) {
			version(prog);
			return 1;
		}
		if (set_flag(opt, arg))
			continue;
#ifndef IPT_NO_STDIO
		{
			int taken;

			/* sb_option moves i past what it takes; the loop
			 * adds one. */
			taken = sb_option(&opt->sb, tr->session, argc, argv, &i,
					  prog);
			if (taken < 0)
				return -1;
			if (taken) {
				i -= 1;
				/* Records are placed by the trace's time. */
				if (opt->sb.files)
					opt->track_time = 1;
				continue;
			}
		}
#else
		(void) tr;
#endif

		if (!strcmp(arg, "--time") || !strcmp(arg, "--tcal")) {
			int tcal = !strcmp(arg, "--tcal");

			if (tcal ? opt->show_time : opt->show_tcal) {
				fprintf(stderr, "%s: specify either --time "
					"or --tcal.\n", prog);
				return -1;
			}
			opt->track_time = 1;
			if (tcal)
				opt->show_tcal = 1;
			else
				opt->show_time = 1;
		} else if (!strcmp(arg, "--cpu")) {
			const char *cpu = argv[++i];

			if (!cpu) {
				fprintf(stderr, "%s: --cpu: missing argument.\n",
					prog);
				return -1;
			}
			if (!strcmp(cpu, "none")) {
				memset(&config->cpu, 0, sizeof(config->cpu));
				continue;
			}
			if (ipt_cpu_parse(&config->cpu, cpu) < 0) {
				fprintf(stderr, "%s: cpu must be specified as "
					"f/m[/s]\n", prog);
				return -1;
			}
		} else if (!strcmp(arg, "--mtc-freq")) {
			if (!get_u8(&config->mtc_freq, arg, argv[++i], prog))
				return -1;
		} else if (!strcmp(arg, "--nom-freq")) {
			if (!get_u8(&config->nom_freq, arg, argv[++i], prog))
				return -1;
		} else if (!strcmp(arg, "--cpuid-0x15.eax")) {
			if (!get_u32(&config->cpuid_0x15_eax, arg, argv[++i],
				     prog))
				return -1;
		} else if (!strcmp(arg, "--cpuid-0x15.ebx")) {
			if (!get_u32(&config->cpuid_0x15_ebx, arg, argv[++i],
				     prog))
				return -1;
		} else {
			fprintf(stderr, "%s: unknown option: %s.\n", prog,
				arg);
			return -1;
		}
	}
	return 0;
}

/* Split "file:from" or "file:from-to" off a file argument.  A suffix that
 * does not parse stays part of the name.  Returns 0, or -pte_invalid for
 * an empty or backwards range. */
static int split_range(char *name, uint64_t *offset, uint64_t *size)
{
	char *colon, *rest;
	uint64_t from, to;

	*offset = 0ull;
	*size = 0ull;

	colon = strrchr(name, ':');
	if (!colon || !colon[1])
		return 0;

	errno = 0;
	from = strtoull(colon + 1, &rest, 0);
	if (errno)
		return 0;

	if (!*rest) {
		*offset = from;
		*colon = '\0';
		return 0;
	}
	if (*rest != '-')
		return 0;

	to = strtoull(rest + 1, &rest, 0);
	if (errno || *rest)
		return 0;
	if (to <= from)
		return -pte_invalid;

	*offset = from;
	*size = to - from;
	*colon = '\0';
	return 0;
}

/* Everything after the command line; returns the exit status. */
static int dump_file(struct options *opt, struct tracking *tr,
		     struct pt_config *config, char *ptfile, const char *prog)
{
	uint64_t offset, size;
	struct ex_file trace;
	int errcode;

	if (!ptfile) {
		fprintf(stderr, "%s: No processor trace file specified.\n",
			prog);
		return 1;
	}

	errcode = split_range(ptfile, &offset, &size);
	if (errcode < 0) {
		fprintf(stderr, "%s: bad file %s: %s.\n", prog, ptfile,
			pt_errstr(pt_errcode(errcode)));
		return -errcode;
	}

	if (config->cpu.vendor) {
		errcode = pt_cpu_errata(&config->errata, &config->cpu);
		if (errcode < 0)
			diag("failed to determine errata", 0ull, errcode);
	}

	if (ex_file_load(&trace, ptfile, offset, size, 0, prog) < 0)
		return 1;

	config->begin = trace.bytes;
	config->end = trace.bytes + trace.size;

#ifndef IPT_NO_STDIO
	errcode = pt_sb_init_decoders(tr->session);
	if (errcode < 0) {
		fprintf(stderr, "%s: error initializing sideband decoders: "
			"%s.\n", prog, pt_errstr(pt_errcode(errcode)));
		ex_file_release(&trace);
		return -errcode;
	}
#endif

	if (opt->segments)
		errcode = dump_segments(config);
	else
		errcode = dump(config, tr, opt);

	ex_file_release(&trace);
	return errcode < 0 ? -errcode : 0;
}

int main(int argc, char *argv[])
{
	struct tracking tracking;
	struct options opt;
	struct pt_config config;
	char *ptfile = NULL;
	int status;

	memset(&opt, 0, sizeof(opt));
	opt.show_offset = 1;
	pt_config_init(&config);
	tracking_reset(&tracking);

#ifndef IPT_NO_STDIO
	sb_options_init(&opt.sb, 0, get_number, split_range);
	tracking.session = pt_sb_alloc(NULL);
	if (!tracking.session) {
		fprintf(stderr, "%s: failed to allocate sideband session.\n",
			argv[0]);
		return 1;
	}
	pt_sb_notify_error(tracking.session, sb_print_error, &opt.sb);
#endif

	status = parse_args(argc, argv, &opt, &tracking, &config, &ptfile);
	if (status)
		status = status < 0 ? 1 : 0;
	else
		status = dump_file(&opt, &tracking, &config, ptfile, argv[0]);

#ifndef IPT_NO_STDIO
	pt_sb_free(tracking.session);
	sb_options_fini(&opt.sb);
#endif
	return status;
}

/* ipt.h - Intel Processor Trace decoding in one file.  Version 0.1.0.
 *
 * ipt.h decodes Intel PT trace streams: packets, events, branch queries,
 * executed blocks and instructions.  Its API is libipt's (version 2.3): the
 * same names, structures, enumerations, error codes and status flags, so a
 * libipt user switches by changing one include.  What ipt.h adds carries the
 * prefix ipt_.
 *
 * USAGE
 *
 *     Include ipt.h wherever you need the declarations.  In exactly one C or
 *     C++ file, define IPT_IMPLEMENTATION first:
 *
 *         #define IPT_IMPLEMENTATION
 *         #include "ipt.h"
 *
 *     and link with Zydis 4 (-lZydis), which decodes instruction lengths and
 *     classes for the image, block and instruction layers.
 *
 * OPTIONS (define before including ipt.h with IPT_IMPLEMENTATION)
 *
 *     IPT_STATIC        give every ipt.h function static linkage    (extern)
 *     IPT_MALLOC(n)     allocate n bytes                            (malloc)
 *     IPT_REALLOC(p,n)  resize p to n bytes                         (realloc)
 *     IPT_FREE(p)       release p                                   (free)
 *                       define all three or none of them
 *     IPT_MEMCPY(d,s,n) copy                                        (memcpy)
 *     IPT_MEMSET(d,c,n) fill                                        (memset)
 *     IPT_MEMCMP(a,b,n) compare                                     (memcmp)
 *     IPT_ASSERT(x)     check an internal invariant                 (assert)
 *     IPT_NO_STDIO      leave out everything that touches files: file
 *                       sections (pt_image_add_file, pt_iscache_*) go away
 *
 *     With IPT_NO_STDIO and all of the above defined, the implementation
 *     needs nothing but <stddef.h>, <stdint.h> and Zydis.
 *
 * THE FILE, LAYER BY LAYER (grep for the tag)
 *
 *     >>api    declarations: what a program sees
 *     ---- stop here if you only want the API ----
 *     >>shim   memory, copying and assertion hooks, the allocator
 *     >>err    error codes and messages (one table), version
 *     >>cfg    configuration copy-in, CPU errata, address filters
 *     >>opc    opcodes and the packet-layout table
 *     >>enc    packet encoder
 *     >>pkt    packet decoder, synchronization, last-IP tracking
 *     >>time   TSC/MTC/CYC/TMA/CBR time tracking and calibration
 *     >>evt    event decoder: packets to events
 *     >>qry    query decoder: built on the event decoder
 *     >>img    image: memory through a callback, address spaces, sections
 *     >>ild    instruction length and class, from Zydis
 *     >>blk    block decoder: built on the event decoder and the image
 *     >>insn   instruction decoder: built on the block decoder
 *
 * LICENSE: MIT, at the end of this file.
 */

/* ==== >>api  declarations =================================================
 * Everything a program that uses ipt.h sees: libipt 2.3's API and the ipt_
 * extensions.  Only <stddef.h> and <stdint.h> are needed here. */

#ifndef IPT_H
#define IPT_H

#include <stddef.h>
#include <stdint.h>

#define IPT_VERSION_MAJOR 0
#define IPT_VERSION_MINOR 1
#define IPT_VERSION_PATCH 0

/* The libipt version whose API ipt.h provides. */
#define LIBIPT_VERSION_MAJOR 2
#define LIBIPT_VERSION_MINOR 3
#define LIBIPT_VERSION_PATCH 0
#define LIBIPT_VERSION ((LIBIPT_VERSION_MAJOR << 8) + LIBIPT_VERSION_MINOR)

#ifndef IPT_API
#ifdef IPT_STATIC
#define IPT_API static
#else
#define IPT_API extern
#endif
#endif

/* libipt's export marker, for code that spells it out. */
#ifndef pt_export
#define pt_export
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct pt_encoder;
struct pt_packet_decoder;
struct pt_event_decoder;
struct pt_query_decoder;
struct pt_insn_decoder;
struct pt_block_decoder;
struct pt_image;
struct pt_image_section_cache;

/* ---- version ---- */

struct pt_version {
	uint8_t major;
	uint8_t minor;
	uint16_t patch;
	uint32_t build;
	/* An extension string, e.g. "-ipt.h". */
	const char *ext;
};

/* The version of the libipt API this library provides. */
IPT_API struct pt_version pt_library_version(void);

/* ---- errors ----
 * Functions return a negative pte_* code on failure.  The values are
 * libipt's; the messages come from one table in >>err. */
enum pt_error_code {
	pte_ok,
	pte_internal,
	pte_invalid,
	pte_nosync,
	pte_bad_opc,
	pte_bad_packet,
	pte_bad_context,
	pte_eos,
	pte_bad_query,
	pte_nomem,
	pte_bad_config,
	pte_noip,
	pte_ip_suppressed,
	pte_nomap,
	pte_bad_insn,
	pte_no_time,
	pte_no_cbr,
	pte_bad_image,
	pte_bad_lock,
	pte_not_supported,
	pte_retstack_empty,
	pte_bad_retcomp,
	pte_bad_status_update,
	pte_no_enable,
	pte_event_ignored,
	pte_overflow,
	pte_bad_file,
	pte_bad_cpu
};

/* The error code of a status: pte_ok for any non-negative status. */
static inline enum pt_error_code pt_errcode(int status)
{
	return (status >= 0) ? pte_ok : (enum pt_error_code) -status;
}

/* A human-readable message for an error code. */
IPT_API const char *pt_errstr(enum pt_error_code code);

/* Status bits that decoders return on success. */
enum pt_status_flag {
	/* An event is pending: fetch it with *_event() first. */
	pts_event_pending = 1 << 0,
	/* The IP has been suppressed. */
	pts_ip_suppressed = 1 << 1,
	/* No more trace: the end of the stream has been reached. */
	pts_eos = 1 << 2
};

/* ---- configuration ---- */

enum pt_cpu_vendor {
	pcv_unknown,
	pcv_intel
};

/* The processor that recorded the trace. */
struct pt_cpu {
	enum pt_cpu_vendor vendor;
	uint16_t family;
	uint8_t model;
	uint8_t stepping;
};

/* Errata that the decoders work around, one bit each. */
struct pt_errata {
	/* BDM70: Intel PT PSB+ packets may contain unexpected packets. */
	uint32_t bdm70:1;
	/* BDM64: an incorrect LBR or PT record after a TSX abort. */
	uint32_t bdm64:1;
	/* SKD007: PT buffer overflow may result in an incorrect last TIP. */
	uint32_t skd007:1;
	/* SKD022: VM entry that clears TraceEn may generate a FUP. */
	uint32_t skd022:1;
	/* SKD010: PT may incorrectly generate a TIP.PGD instead of a TIP. */
	uint32_t skd010:1;
	/* SKL014: PT TIP.PGD may not have a target IP. */
	uint32_t skl014:1;
	/* APL12: PT may omit a TIP.PGD. */
	uint32_t apl12:1;
	/* APL11: PT FUP after a PSB may point to the wrong IP. */
	uint32_t apl11:1;
	/* SKL168: PT CYC packets may be dropped when the core is idle. */
	uint32_t skl168:1;
	/* SKZ84: use of VMX TSC scaling or offsetting breaks Intel PT TSC. */
	uint32_t skz84:1;
	/* Room for more errata. */
	uint32_t reserved[15];
};

/* Decoder-specific flags. */
struct pt_conf_flags {
	union {
		struct {
			/* End a block after a call instruction. */
			uint32_t end_on_call:1;
			/* Report tick events on timing updates. */
			uint32_t enable_tick_events:1;
			/* End a block after a jump instruction. */
			uint32_t end_on_jump:1;
			/* Keep timing calibration across an overflow. */
			uint32_t keep_tcal_on_ovf:1;
			/* Report iflags events. */
			uint32_t enable_iflags_events:1;
		} block;
		struct {
			uint32_t enable_tick_events:1;
			uint32_t keep_tcal_on_ovf:1;
			uint32_t enable_iflags_events:1;
		} insn;
		struct {
			uint32_t keep_tcal_on_ovf:1;
			uint32_t enable_iflags_events:1;
		} query;
		struct {
			uint32_t keep_tcal_on_ovf:1;
			uint32_t enable_iflags_events:1;
		} event;
		uint32_t reserved[4];
	} variant;
};

/* How an address filter range is used (the addrN_cfg values). */
enum pt_addr_cfg {
	pt_addr_cfg_disabled = 0,
	pt_addr_cfg_filter = 1,
	pt_addr_cfg_stop = 2
};

/* The address filter configuration of IA32_RTIT_CTL and IA32_RTIT_ADDRn. */
struct pt_conf_addr_filter {
	union {
		uint64_t addr_cfg;
		struct {
			uint32_t addr0_cfg:4;
			uint32_t addr1_cfg:4;
			uint32_t addr2_cfg:4;
			uint32_t addr3_cfg:4;
		} ctl;
	} config;
	uint64_t addr0_a;
	uint64_t addr0_b;
	uint64_t addr1_a;
	uint64_t addr1_b;
	uint64_t addr2_a;
	uint64_t addr2_b;
	uint64_t addr3_a;
	uint64_t addr3_b;
	uint64_t reserved[8];
};

struct pt_packet_unknown;

/* The decoder and encoder configuration.  Decoders copy it in: they read
 * at most `size` bytes and treat fields past it as zero. */
struct pt_config {
	/* sizeof(struct pt_config) as the caller knows it. */
	size_t size;
	/* The trace buffer: [begin; end). */
	uint8_t *begin;
	uint8_t *end;
	/* Called for packets the decoder does not know; it returns the packet
	 * size, or a negative pte_* code. */
	struct {
		int (*callback)(struct pt_packet_unknown *unknown,
				const struct pt_config *config,
				const uint8_t *pos, void *context);
		void *context;
	} decode;
	struct pt_cpu cpu;
	struct pt_errata errata;
	/* CPUID leaf 0x15: the TSC to core crystal clock ratio. */
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx;
	/* IA32_RTIT_CTL.MTCFreq. */
	uint8_t mtc_freq;
	/* MSR_PLATFORM_INFO[15:8]: the nominal frequency ratio. */
	uint8_t nom_freq;
	struct pt_conf_flags flags;
	struct pt_conf_addr_filter addr_filter;
};

/* Zero a configuration and set its size. */
static inline void pt_config_init(struct pt_config *config)
{
	unsigned char *byte = (unsigned char *) config;
	size_t i;

	for (i = 0; i < sizeof(*config); ++i)
		byte[i] = 0;
	config->size = sizeof(*config);
}

/* Fill in the errata that apply to a CPU; -pte_bad_cpu if unknown. */
IPT_API int pt_cpu_errata(struct pt_errata *errata, const struct pt_cpu *cpu);

/* ---- packets ---- */

enum pt_packet_type {
	ppt_invalid,
	ppt_unknown,
	ppt_pad,
	ppt_psb,
	ppt_psbend,
	ppt_fup,
	ppt_tip,
	ppt_tip_pge,
	ppt_tip_pgd,
	ppt_tnt_8,
	ppt_tnt_64,
	ppt_mode,
	ppt_pip,
	ppt_vmcs,
	ppt_cbr,
	ppt_tsc,
	ppt_tma,
	ppt_mtc,
	ppt_cyc,
	ppt_stop,
	ppt_ovf,
	ppt_mnt,
	ppt_exstop,
	ppt_mwait,
	ppt_pwre,
	ppt_pwrx,
	ppt_ptw,
	ppt_cfe,
	ppt_evd,
	ppt_trig
};

/* How an IP packet's payload relates to the last IP. */
enum pt_ip_compression {
	pt_ipc_suppressed = 0x0,
	pt_ipc_update_16 = 0x01,
	pt_ipc_update_32 = 0x02,
	pt_ipc_sext_48 = 0x03,
	pt_ipc_update_48 = 0x04,
	pt_ipc_full = 0x06
};

enum pt_exec_mode {
	ptem_unknown,
	ptem_16bit,
	ptem_32bit,
	ptem_64bit
};

enum pt_mode_leaf {
	pt_mol_exec = 0x00,
	pt_mol_tsx = 0x20
};

struct pt_packet_tnt {
	/* The number of TNT bits. */
	uint8_t bit_size;
	/* The bits, oldest in the highest position. */
	uint64_t payload;
};

struct pt_packet_ip {
	enum pt_ip_compression ipc;
	/* The uncompressed payload bits as they are in the packet. */
	uint64_t ip;
};

struct pt_packet_mode_exec {
	uint32_t csl:1;
	uint32_t csd:1;
	uint32_t iflag:1;
};

static inline enum pt_exec_mode
pt_get_exec_mode(const struct pt_packet_mode_exec *packet)
{
	if (packet->csl)
		return packet->csd ? ptem_unknown : ptem_64bit;
	return packet->csd ? ptem_32bit : ptem_16bit;
}

static inline struct pt_packet_mode_exec
pt_set_exec_mode(enum pt_exec_mode mode)
{
	struct pt_packet_mode_exec packet;

	packet.iflag = 0;
	packet.csl = (mode == ptem_64bit || mode == ptem_unknown ||
		      mode > ptem_64bit) ? 1 : 0;
	packet.csd = (mode == ptem_32bit || mode == ptem_unknown ||
		      mode > ptem_64bit) ? 1 : 0;
	return packet;
}

struct pt_packet_mode_tsx {
	uint32_t intx:1;
	uint32_t abrt:1;
};

struct pt_packet_mode {
	enum pt_mode_leaf leaf;
	union {
		struct pt_packet_mode_exec exec;
		struct pt_packet_mode_tsx tsx;
	} bits;
};

struct pt_packet_pip {
	uint64_t cr3;
	/* Non-root (VMX guest). */
	uint32_t nr:1;
};

struct pt_packet_tsc {
	uint64_t tsc;
};

struct pt_packet_cbr {
	uint8_t ratio;
};

struct pt_packet_tma {
	uint16_t ctc;
	uint16_t fc;
};

struct pt_packet_mtc {
	uint8_t ctc;
};

struct pt_packet_cyc {
	uint64_t value;
};

struct pt_packet_vmcs {
	uint64_t base;
};

struct pt_packet_mnt {
	uint64_t payload;
};

struct pt_packet_exstop {
	uint32_t ip:1;
};

struct pt_packet_mwait {
	uint32_t hints;
	uint32_t ext;
};

struct pt_packet_pwre {
	uint8_t state;
	uint8_t sub_state;
	uint32_t hw:1;
};

struct pt_packet_pwrx {
	uint8_t last;
	uint8_t deepest;
	uint32_t interrupt:1;
	uint32_t store:1;
	uint32_t autonomous:1;
};

struct pt_packet_ptw {
	uint64_t payload;
	/* Payload length code: see pt_ptw_size(). */
	uint8_t plc;
	uint32_t ip:1;
};

/* The PTW payload size in bytes for a payload length code. */
static inline int pt_ptw_size(uint8_t plc)
{
	switch (plc) {
	case 0:
		return 4;
	case 1:
		return 8;
	case 2:
	case 3:
		return -pte_bad_packet;
	}
	return -pte_internal;
}

enum pt_cfe_type {
	pt_cfe_intr = 0x01,
	pt_cfe_iret = 0x02,
	pt_cfe_smi = 0x03,
	pt_cfe_rsm = 0x04,
	pt_cfe_sipi = 0x05,
	pt_cfe_init = 0x06,
	pt_cfe_vmentry = 0x07,
	pt_cfe_vmexit = 0x08,
	pt_cfe_vmexit_intr = 0x09,
	pt_cfe_shutdown = 0x0a,
	pt_cfe_uintr = 0x0c,
	pt_cfe_uiret = 0x0d,
	pt_cfe_swintr = 0x0e,
	pt_cfe_syscall = 0x0f
};

/* Interrupt and exception vectors a CFE packet may carry. */
enum pt_cfe_intr {
	pt_cfe_intr_de = 0,
	pt_cfe_intr_db = 1,
	pt_cfe_intr_nmi = 2,
	pt_cfe_intr_bp = 3,
	pt_cfe_intr_of = 4,
	pt_cfe_intr_br = 5,
	pt_cfe_intr_ud = 6,
	pt_cfe_intr_nm = 7,
	pt_cfe_intr_df = 8,
	pt_cfe_intr_ts = 10,
	pt_cfe_intr_np = 11,
	pt_cfe_intr_ss = 12,
	pt_cfe_intr_gp = 13,
	pt_cfe_intr_pf = 14,
	pt_cfe_intr_mf = 16,
	pt_cfe_intr_ac = 17,
	pt_cfe_intr_mc = 18,
	pt_cfe_intr_xm = 19,
	pt_cfe_intr_ve = 20,
	pt_cfe_intr_cp = 21
};

struct pt_packet_cfe {
	enum pt_cfe_type type;
	uint8_t vector;
	uint32_t ip:1;
};

enum pt_evd_type {
	pt_evd_cr2 = 0x00,
	pt_evd_vmxq = 0x01,
	pt_evd_vmxr = 0x02
};

struct pt_packet_evd {
	enum pt_evd_type type;
	uint64_t payload;
};

struct pt_packet_trig {
	/* Trigger bit vector. */
	uint8_t trbv;
	/* Instruction count since the last trigger. */
	uint16_t icnt;
	uint32_t ip:1;
	uint32_t icntv:1;
	uint32_t mult:1;
};

/* A packet the decoder did not know, as the decode callback describes it. */
struct pt_packet_unknown {
	/* Where the packet starts in the trace buffer. */
	const uint8_t *packet;
	/* Anything the callback wants to remember. */
	void *priv;
};

struct pt_packet {
	enum pt_packet_type type;
	/* The size of the packet in bytes. */
	uint8_t size;
	union {
		struct pt_packet_tnt tnt;
		struct pt_packet_ip ip;
		struct pt_packet_mode mode;
		struct pt_packet_pip pip;
		struct pt_packet_tsc tsc;
		struct pt_packet_cbr cbr;
		struct pt_packet_tma tma;
		struct pt_packet_mtc mtc;
		struct pt_packet_cyc cyc;
		struct pt_packet_vmcs vmcs;
		struct pt_packet_mnt mnt;
		struct pt_packet_exstop exstop;
		struct pt_packet_mwait mwait;
		struct pt_packet_pwre pwre;
		struct pt_packet_pwrx pwrx;
		struct pt_packet_ptw ptw;
		struct pt_packet_cfe cfe;
		struct pt_packet_evd evd;
		struct pt_packet_trig trig;
		struct pt_packet_unknown unknown;
	} payload;
};

/* ---- packet encoder ---- */

IPT_API struct pt_encoder *pt_alloc_encoder(const struct pt_config *config);
IPT_API void pt_free_encoder(struct pt_encoder *encoder);
IPT_API int pt_enc_sync_set(struct pt_encoder *encoder, uint64_t offset);
IPT_API int pt_enc_get_offset(const struct pt_encoder *encoder,
			      uint64_t *offset);
IPT_API const struct pt_config *
pt_enc_get_config(const struct pt_encoder *encoder);
/* Append one packet; returns its size in bytes. */
IPT_API int pt_enc_next(struct pt_encoder *encoder,
			const struct pt_packet *packet);

/* ---- packet decoder ---- */

IPT_API struct pt_packet_decoder *
pt_pkt_alloc_decoder(const struct pt_config *config);
IPT_API void pt_pkt_free_decoder(struct pt_packet_decoder *decoder);
IPT_API int pt_pkt_sync_forward(struct pt_packet_decoder *decoder);
IPT_API int pt_pkt_sync_backward(struct pt_packet_decoder *decoder);
IPT_API int pt_pkt_sync_set(struct pt_packet_decoder *decoder,
			    uint64_t offset);
IPT_API int pt_pkt_get_offset(const struct pt_packet_decoder *decoder,
			      uint64_t *offset);
IPT_API int pt_pkt_get_sync_offset(const struct pt_packet_decoder *decoder,
				   uint64_t *offset);
IPT_API const struct pt_config *
pt_pkt_get_config(const struct pt_packet_decoder *decoder);
/* Decode the next packet; returns its size in bytes. */
IPT_API int pt_pkt_next(struct pt_packet_decoder *decoder,
			struct pt_packet *packet, size_t size);

/* >>api-pkt-ext: ipt_ extensions of the packet layer (last-IP tracking) */

/* >>api-time: ipt_ extensions of the time layer
 *
 * Time tracking follows TSC, TMA, MTC and CYC packets to estimate the time
 * stamp counter at any packet; calibration counts cycles between MTCs (or
 * TSCs) to learn the fast-counter:cycles ratio (FCR) that CYC packets need.
 * Same semantics as libipt's internal pt_time_* and pt_tcal_*.  Both
 * structures are plain values: zero-initialize them with the *_init
 * functions, copy them freely.  Every function returns zero on success or
 * a negative pte_* code; NULL arguments give -pte_internal. */

struct ipt_time {
	/* The estimated time stamp counter. */
	uint64_t tsc;
	/* The TSC at the last MTC or TSC, less any TMA fast counter. */
	uint64_t base;
	/* The fast counter estimated since base (from TMA and CYC). */
	uint64_t fc;
	/* The last CTC value, adjusted (from MTC and TMA). */
	uint32_t ctc;
	/* The CTC value when fc was last cleared (from MTC and TMA). */
	uint32_t ctc_cyc;
	/* MTC and CYC updates lost since the last TSC. */
	uint32_t lost_mtc;
	uint32_t lost_cyc;
	/* The core:bus ratio. */
	uint8_t cbr;
	/* Which packets have been seen since the last TSC (cbr: ever). */
	uint32_t have_tsc:1;
	uint32_t have_cbr:1;
	uint32_t have_tma:1;
	uint32_t have_mtc:1;
};

/* Calibration of the fast-counter:cycles ratio. */
struct ipt_time_cal {
	/* The current FCR, scaled by 2^ipt_tcal_fcr_shr. */
	uint64_t fcr;
	/* The smallest and largest FCR so far; min > max: none yet. */
	uint64_t min_fcr, max_fcr;
	/* The last TSC and the cycles counted since then. */
	uint64_t tsc;
	uint64_t cyc_tsc;
	/* The cycles counted since the last MTC, and its adjusted CTC. */
	uint64_t cyc_mtc;
	uint32_t ctc;
	/* Failed MTC calibrations since the last successful one. */
	uint32_t lost_mtc;
	/* An MTC has been seen (since init or overflow). */
	uint32_t have_mtc:1;
	/* The next MTC is the first after a PSB on an SKL168 processor. */
	uint32_t check_skl168:1;
};

enum {
	/* FCR values carry this many fraction bits.  Pass ipt_tcal_fcr()'s
	 * result to ipt_time_update_cyc() as it is. */
	ipt_tcal_fcr_shr = 8
};

/* Reset time tracking to "nothing seen". */
IPT_API void ipt_time_init(struct ipt_time *time);

/* The estimated TSC in *tsc and, unless NULL, the MTC and CYC updates lost
 * since the last TSC packet.  -pte_no_time if there has not been a TSC
 * packet (the outputs are filled in anyway). */
IPT_API int ipt_time_query_tsc(uint64_t *tsc, uint32_t *lost_mtc,
			       uint32_t *lost_cyc, const struct ipt_time *time);

/* The core:bus ratio of the last CBR packet; -pte_no_cbr if none. */
IPT_API int ipt_time_query_cbr(uint32_t *cbr, const struct ipt_time *time);

/* Update the time at a timing packet.
 *
 *   tsc  restart from the packet's TSC; recover from losses.
 *   cbr  -pte_bad_packet for a zero ratio.
 *   tma  -pte_bad_context without a preceding TSC or after another TMA.
 *   mtc  -pte_bad_packet if the CTC went back more than one wrap (the MTC
 *        is counted as lost); -pte_bad_config if cpuid_0x15_eax or _ebx
 *        is zero.
 *   cyc  fcr is the calibrated ratio from ipt_tcal_fcr(); zero counts the
 *        CYC as lost. */
IPT_API int ipt_time_update_tsc(struct ipt_time *time,
				const struct pt_packet_tsc *packet,
				const struct pt_config *config);
IPT_API int ipt_time_update_cbr(struct ipt_time *time,
				const struct pt_packet_cbr *packet,
				const struct pt_config *config);
IPT_API int ipt_time_update_tma(struct ipt_time *time,
				const struct pt_packet_tma *packet,
				const struct pt_config *config);
IPT_API int ipt_time_update_mtc(struct ipt_time *time,
				const struct pt_packet_mtc *packet,
				const struct pt_config *config);
IPT_API int ipt_time_update_cyc(struct ipt_time *time,
				const struct pt_packet_cyc *packet,
				const struct pt_config *config, uint64_t fcr);

/* Reset calibration: no FCR known. */
IPT_API void ipt_tcal_init(struct ipt_time_cal *tcal);

/* The current FCR in *fcr; -pte_no_time if none is known yet. */
IPT_API int ipt_tcal_fcr(uint64_t *fcr, const struct ipt_time_cal *tcal);

/* Set the FCR (scaled by 2^ipt_tcal_fcr_shr), e.g. an initial guess to
 * use until calibration has seen one CBR or two MTCs. */
IPT_API int ipt_tcal_set_fcr(struct ipt_time_cal *tcal, uint64_t fcr);

/* Update calibration at a packet.  The _header_ variants are for TSC and
 * CBR inside PSB+; the _update_ variants for those outside it, where a
 * TSC only starts a new interval and a CBR (a frequency change) restarts
 * calibration.  psb: a PSB was seen (arms the SKL168 workaround); ovf: an
 * overflow, which forgets the intervals but keeps the FCR.  tsc and mtc
 * may fail with -pte_bad_packet (time went backwards), mtc with
 * -pte_bad_config (no cpuid 0x15 values), cbr with -pte_bad_packet (zero
 * ratio, when config->nom_freq is set). */
IPT_API int ipt_tcal_update_tsc(struct ipt_time_cal *tcal,
				const struct pt_packet_tsc *packet,
				const struct pt_config *config);
IPT_API int ipt_tcal_header_tsc(struct ipt_time_cal *tcal,
				const struct pt_packet_tsc *packet,
				const struct pt_config *config);
IPT_API int ipt_tcal_update_cbr(struct ipt_time_cal *tcal,
				const struct pt_packet_cbr *packet,
				const struct pt_config *config);
IPT_API int ipt_tcal_header_cbr(struct ipt_time_cal *tcal,
				const struct pt_packet_cbr *packet,
				const struct pt_config *config);
IPT_API int ipt_tcal_update_tma(struct ipt_time_cal *tcal,
				const struct pt_packet_tma *packet,
				const struct pt_config *config);
IPT_API int ipt_tcal_update_mtc(struct ipt_time_cal *tcal,
				const struct pt_packet_mtc *packet,
				const struct pt_config *config);
IPT_API int ipt_tcal_update_cyc(struct ipt_time_cal *tcal,
				const struct pt_packet_cyc *packet,
				const struct pt_config *config);
IPT_API int ipt_tcal_update_psb(struct ipt_time_cal *tcal,
				const struct pt_config *config);
IPT_API int ipt_tcal_update_ovf(struct ipt_time_cal *tcal,
				const struct pt_config *config);

/* ---- events ---- */

enum pt_event_type {
	ptev_enabled,
	ptev_disabled,
	ptev_async_disabled,
	ptev_async_branch,
	ptev_paging,
	ptev_async_paging,
	ptev_overflow,
	ptev_exec_mode,
	ptev_tsx,
	ptev_stop,
	ptev_vmcs,
	ptev_async_vmcs,
	ptev_exstop,
	ptev_mwait,
	ptev_pwre,
	ptev_pwrx,
	ptev_ptwrite,
	ptev_tick,
	ptev_cbr,
	ptev_mnt,
	ptev_tip,
	ptev_tnt,
	ptev_iflags,
	ptev_interrupt,
	ptev_iret,
	ptev_smi,
	ptev_rsm,
	ptev_sipi,
	ptev_init,
	ptev_vmentry,
	ptev_vmexit,
	ptev_shutdown,
	ptev_uintr,
	ptev_uiret,
	ptev_trig,
	ptev_swintr,
	ptev_syscall
};

struct pt_event {
	enum pt_event_type type;
	/* The event's IP fields are not valid. */
	uint32_t ip_suppressed:1;
	/* The event describes state, not a change of it. */
	uint32_t status_update:1;
	/* tsc, lost_mtc and lost_cyc are valid. */
	uint32_t has_tsc:1;
	uint64_t tsc;
	uint32_t lost_mtc;
	uint32_t lost_cyc;
	uint64_t reserved[2];
	union {
		struct {
			uint64_t ip;
			uint32_t resumed:1;
		} enabled;
		struct {
			uint64_t ip;
		} disabled;
		struct {
			uint64_t at;
			uint64_t ip;
		} async_disabled;
		struct {
			uint64_t from;
			uint64_t to;
		} async_branch;
		struct {
			uint64_t cr3;
			uint32_t non_root:1;
		} paging;
		struct {
			uint64_t cr3;
			uint32_t non_root:1;
			uint64_t ip;
		} async_paging;
		struct {
			uint64_t ip;
		} overflow;
		struct {
			enum pt_exec_mode mode;
			uint64_t ip;
		} exec_mode;
		struct {
			uint64_t ip;
			uint32_t speculative:1;
			uint32_t aborted:1;
		} tsx;
		struct {
			uint64_t base;
		} vmcs;
		struct {
			uint64_t base;
			uint64_t ip;
		} async_vmcs;
		struct {
			uint64_t ip;
		} exstop;
		struct {
			uint64_t ip;
			uint32_t hints;
			uint32_t ext;
		} mwait;
		struct {
			uint8_t state;
			uint8_t sub_state;
			uint32_t hw:1;
		} pwre;
		struct {
			uint8_t last;
			uint8_t deepest;
			uint32_t interrupt:1;
			uint32_t store:1;
			uint32_t autonomous:1;
		} pwrx;
		struct {
			uint64_t ip;
			uint8_t size;
			uint64_t payload;
		} ptwrite;
		struct {
			uint64_t ip;
		} tick;
		struct {
			uint16_t ratio;
		} cbr;
		struct {
			uint64_t payload;
		} mnt;
		struct {
			uint64_t ip;
		} tip;
		struct {
			uint64_t bits;
			uint8_t size;
		} tnt;
		struct {
			uint32_t iflag:1;
			uint64_t ip;
		} iflags;
		struct {
			uint32_t has_cr2:1;
			uint8_t vector;
			uint64_t cr2;
			uint64_t ip;
		} interrupt;
		struct {
			uint64_t ip;
		} iret;
		struct {
			uint64_t ip;
		} smi;
		struct {
			uint64_t ip;
		} rsm;
		struct {
			uint8_t vector;
		} sipi;
		struct {
			uint64_t ip;
		} init;
		struct {
			uint64_t ip;
		} vmentry;
		struct {
			uint32_t has_vector:1;
			uint32_t has_vmxr:1;
			uint32_t has_vmxq:1;
			uint8_t vector;
			uint64_t vmxr;
			uint64_t vmxq;
			uint64_t ip;
		} vmexit;
		struct {
			uint64_t ip;
		} shutdown;
		struct {
			uint8_t vector;
			uint64_t ip;
		} uintr;
		struct {
			uint64_t ip;
		} uiret;
		struct {
			uint8_t trbv;
			uint16_t icnt;
			uint64_t ip;
			uint32_t mult:1;
		} trig;
		struct {
			uint8_t vector;
			uint64_t ip;
		} swintr;
		struct {
			uint64_t ip;
		} syscall;
	} variant;
};

/* ---- event decoder ---- */

IPT_API struct pt_event_decoder *
pt_evt_alloc_decoder(const struct pt_config *config);
IPT_API void pt_evt_free_decoder(struct pt_event_decoder *decoder);
IPT_API int pt_evt_sync_forward(struct pt_event_decoder *decoder);
IPT_API int pt_evt_sync_backward(struct pt_event_decoder *decoder);
IPT_API int pt_evt_sync_set(struct pt_event_decoder *decoder,
			    uint64_t offset);
IPT_API int pt_evt_get_offset(const struct pt_event_decoder *decoder,
			      uint64_t *offset);
IPT_API int pt_evt_get_sync_offset(const struct pt_event_decoder *decoder,
				   uint64_t *offset);
IPT_API const struct pt_config *
pt_evt_get_config(const struct pt_event_decoder *decoder);
IPT_API int pt_evt_next(struct pt_event_decoder *decoder,
			struct pt_event *event, size_t size);

/* ---- query decoder ---- */

IPT_API struct pt_query_decoder *
pt_qry_alloc_decoder(const struct pt_config *config);
IPT_API void pt_qry_free_decoder(struct pt_query_decoder *decoder);
IPT_API int pt_qry_sync_forward(struct pt_query_decoder *decoder,
				uint64_t *ip);
IPT_API int pt_qry_sync_backward(struct pt_query_decoder *decoder,
				 uint64_t *ip);
IPT_API int pt_qry_sync_set(struct pt_query_decoder *decoder, uint64_t *ip,
			    uint64_t offset);
IPT_API int pt_qry_get_offset(const struct pt_query_decoder *decoder,
			      uint64_t *offset);
IPT_API int pt_qry_get_sync_offset(const struct pt_query_decoder *decoder,
				   uint64_t *offset);
IPT_API const struct pt_config *
pt_qry_get_config(const struct pt_query_decoder *decoder);
IPT_API int pt_qry_cond_branch(struct pt_query_decoder *decoder, int *taken);
IPT_API int pt_qry_indirect_branch(struct pt_query_decoder *decoder,
				   uint64_t *ip);
IPT_API int pt_qry_event(struct pt_query_decoder *decoder,
			 struct pt_event *event, size_t size);
IPT_API int pt_qry_time(struct pt_query_decoder *decoder, uint64_t *time,
			uint32_t *lost_mtc, uint32_t *lost_cyc);
IPT_API int pt_qry_core_bus_ratio(struct pt_query_decoder *decoder,
				  uint32_t *cbr);

/* >>api-evt-ext: ipt_ extensions of the event and query layers */

/* ---- address spaces and images ---- */

/* An address space: a CR3 value, a VMCS base, or both. */
struct pt_asid {
	size_t size;
	uint64_t cr3;
	uint64_t vmcs;
};

/* "Any" values for pt_asid fields. */
static const uint64_t pt_asid_no_cr3 = 0xffffffffffffffffull;
static const uint64_t pt_asid_no_vmcs = 0xffffffffffffffffull;

static inline void pt_asid_init(struct pt_asid *asid)
{
	asid->size = sizeof(*asid);
	asid->cr3 = pt_asid_no_cr3;
	asid->vmcs = pt_asid_no_vmcs;
}

IPT_API struct pt_image_section_cache *pt_iscache_alloc(const char *name);
IPT_API void pt_iscache_free(struct pt_image_section_cache *iscache);
IPT_API int pt_iscache_set_limit(struct pt_image_section_cache *iscache,
				 uint64_t limit);
IPT_API const char *
pt_iscache_name(const struct pt_image_section_cache *iscache);
IPT_API int pt_iscache_add_file(struct pt_image_section_cache *iscache,
				const char *filename, uint64_t offset,
				uint64_t size, uint64_t vaddr);
IPT_API int pt_iscache_read(struct pt_image_section_cache *iscache,
			    uint8_t *buffer, uint64_t size, int isid,
			    uint64_t vaddr);

IPT_API struct pt_image *pt_image_alloc(const char *name);
IPT_API void pt_image_free(struct pt_image *image);
IPT_API const char *pt_image_name(const struct pt_image *image);
IPT_API int pt_image_add_file(struct pt_image *image, const char *filename,
			      uint64_t offset, uint64_t size,
			      const struct pt_asid *asid, uint64_t vaddr);
IPT_API int pt_image_add_cached(struct pt_image *image,
				struct pt_image_section_cache *iscache,
				int isid, const struct pt_asid *asid);
IPT_API int pt_image_copy(struct pt_image *image, const struct pt_image *src);
IPT_API int pt_image_remove_by_filename(struct pt_image *image,
					const char *filename,
					const struct pt_asid *asid);
IPT_API int pt_image_remove_by_asid(struct pt_image *image,
				    const struct pt_asid *asid);

/* Read up to size bytes at ip in asid into buffer; return the number of
 * bytes read or a negative pte_* code. */
typedef int(read_memory_callback_t)(uint8_t *buffer, size_t size,
				    const struct pt_asid *asid, uint64_t ip,
				    void *context);

IPT_API int pt_image_set_callback(struct pt_image *image,
				  read_memory_callback_t *callback,
				  void *context);

/* >>api-img-ext: ipt_ extensions of the image layer (cache control) */

/* ---- instructions and blocks ---- */

enum pt_insn_class {
	ptic_unknown,
	ptic_error = ptic_unknown,
	ptic_other,
	ptic_call,
	ptic_return,
	ptic_jump,
	ptic_cond_jump,
	ptic_far_call,
	ptic_far_return,
	ptic_far_jump,
	ptic_ptwrite,
	ptic_indirect
};

enum {
	pt_max_insn_size = 15
};

struct pt_insn {
	uint64_t ip;
	/* The image section identifier, or zero. */
	int isid;
	enum pt_exec_mode mode;
	enum pt_insn_class iclass;
	uint8_t raw[pt_max_insn_size];
	uint8_t size;
	uint32_t speculative:1;
	uint32_t truncated:1;
};

IPT_API struct pt_insn_decoder *
pt_insn_alloc_decoder(const struct pt_config *config);
IPT_API void pt_insn_free_decoder(struct pt_insn_decoder *decoder);
IPT_API int pt_insn_sync_forward(struct pt_insn_decoder *decoder);
IPT_API int pt_insn_sync_backward(struct pt_insn_decoder *decoder);
IPT_API int pt_insn_sync_set(struct pt_insn_decoder *decoder,
			     uint64_t offset);
IPT_API int pt_insn_resync(struct pt_insn_decoder *decoder);
IPT_API int pt_insn_get_offset(const struct pt_insn_decoder *decoder,
			       uint64_t *offset);
IPT_API int pt_insn_get_sync_offset(const struct pt_insn_decoder *decoder,
				    uint64_t *offset);
IPT_API struct pt_image *pt_insn_get_image(struct pt_insn_decoder *decoder);
IPT_API int pt_insn_set_image(struct pt_insn_decoder *decoder,
			      struct pt_image *image);
IPT_API const struct pt_config *
pt_insn_get_config(const struct pt_insn_decoder *decoder);
IPT_API int pt_insn_time(struct pt_insn_decoder *decoder, uint64_t *time,
			 uint32_t *lost_mtc, uint32_t *lost_cyc);
IPT_API int pt_insn_core_bus_ratio(struct pt_insn_decoder *decoder,
				   uint32_t *cbr);
IPT_API int pt_insn_asid(const struct pt_insn_decoder *decoder,
			 struct pt_asid *asid, size_t size);
IPT_API int pt_insn_next(struct pt_insn_decoder *decoder,
			 struct pt_insn *insn, size_t size);
IPT_API int pt_insn_event(struct pt_insn_decoder *decoder,
			  struct pt_event *event, size_t size);

struct pt_block {
	/* The first and the last instruction's IP. */
	uint64_t ip;
	uint64_t end_ip;
	int isid;
	enum pt_exec_mode mode;
	/* The class of the last instruction. */
	enum pt_insn_class iclass;
	/* The number of instructions. */
	uint16_t ninsn;
	/* The last instruction's bytes, when truncated. */
	uint8_t raw[pt_max_insn_size];
	uint8_t size;
	uint32_t speculative:1;
	uint32_t truncated:1;
};

IPT_API struct pt_block_decoder *
pt_blk_alloc_decoder(const struct pt_config *config);
IPT_API void pt_blk_free_decoder(struct pt_block_decoder *decoder);
IPT_API int pt_blk_sync_forward(struct pt_block_decoder *decoder);
IPT_API int pt_blk_sync_backward(struct pt_block_decoder *decoder);
IPT_API int pt_blk_sync_set(struct pt_block_decoder *decoder,
			    uint64_t offset);
IPT_API int pt_blk_resync(struct pt_block_decoder *decoder);
IPT_API int pt_blk_get_offset(const struct pt_block_decoder *decoder,
			      uint64_t *offset);
IPT_API int pt_blk_get_sync_offset(const struct pt_block_decoder *decoder,
				   uint64_t *offset);
IPT_API struct pt_image *pt_blk_get_image(struct pt_block_decoder *decoder);
IPT_API int pt_blk_set_image(struct pt_block_decoder *decoder,
			     struct pt_image *image);
IPT_API const struct pt_config *
pt_blk_get_config(const struct pt_block_decoder *decoder);
IPT_API int pt_blk_time(struct pt_block_decoder *decoder, uint64_t *time,
			uint32_t *lost_mtc, uint32_t *lost_cyc);
IPT_API int pt_blk_core_bus_ratio(struct pt_block_decoder *decoder,
				  uint32_t *cbr);
IPT_API int pt_blk_asid(const struct pt_block_decoder *decoder,
			struct pt_asid *asid, size_t size);
IPT_API int pt_blk_next(struct pt_block_decoder *decoder,
			struct pt_block *block, size_t size);
IPT_API int pt_blk_event(struct pt_block_decoder *decoder,
			 struct pt_event *event, size_t size);

/* >>api-blk-ext: ipt_ extensions of the block and instruction layers */

#ifdef __cplusplus
}
#endif

#endif /* IPT_H */

/* ---- stop here if you only want the API ---- */

#ifdef IPT_IMPLEMENTATION
#ifndef IPT__IMPLEMENTED
#define IPT__IMPLEMENTED

/* ==== >>shim  memory, copying, assertions, the allocator ==================
 * The only place the implementation reaches outside itself, apart from
 * Zydis in >>ild and the file reads of hosted builds in >>img. */

#if defined(IPT_MALLOC) || defined(IPT_REALLOC) || defined(IPT_FREE)
#if !defined(IPT_MALLOC) || !defined(IPT_REALLOC) || !defined(IPT_FREE)
#error "ipt.h: define all of IPT_MALLOC, IPT_REALLOC and IPT_FREE, or none"
#endif
#else
#include <stdlib.h>
#define IPT_MALLOC(n) malloc(n)
#define IPT_REALLOC(p, n) realloc(p, n)
#define IPT_FREE(p) free(p)
#endif

#if !defined(IPT_MEMCPY) || !defined(IPT_MEMSET) || !defined(IPT_MEMCMP)
#include <string.h>
#endif
#ifndef IPT_MEMCPY
#define IPT_MEMCPY(d, s, n) memcpy(d, s, n)
#endif
#ifndef IPT_MEMSET
#define IPT_MEMSET(d, c, n) memset(d, c, n)
#endif
#ifndef IPT_MEMCMP
#define IPT_MEMCMP(a, b, n) memcmp(a, b, n)
#endif

#ifndef IPT_ASSERT
#include <assert.h>
#define IPT_ASSERT(x) assert(x)
#endif

#ifdef IPT_STATIC
#define IPT_DEF static
#else
#define IPT_DEF
#endif

#if defined(__GNUC__) || defined(__clang__)
#define IPT__LIKELY(x) __builtin_expect(!!(x), 1)
#define IPT__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define IPT__UNUSED __attribute__((unused))
#else
#define IPT__LIKELY(x) (x)
#define IPT__UNLIKELY(x) (x)
#define IPT__UNUSED
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* All memory goes through these three.  Every object remembers the size
 * of what it allocated, so a sized free is always possible. */
static IPT__UNUSED void *ipt__alloc(size_t size)
{
	return size ? IPT_MALLOC(size) : NULL;
}

static IPT__UNUSED void *ipt__zalloc(size_t size)
{
	void *p = ipt__alloc(size);

	if (p)
		IPT_MEMSET(p, 0, size);
	return p;
}

static IPT__UNUSED void *ipt__realloc(void *ptr, size_t old_size, size_t new_size)
{
	(void) old_size;
	return IPT_REALLOC(ptr, new_size);
}

static IPT__UNUSED void ipt__free(void *ptr, size_t size)
{
	(void) size;
	if (ptr)
		IPT_FREE(ptr);
}

/* ==== >>err  errors and version ==========================================
 * One table gives every error code its message. */

#define IPT__ERRORS(X)                                                       \
	X(pte_ok, "OK")                                                      \
	X(pte_internal, "internal error")                                    \
	X(pte_invalid, "invalid argument")                                   \
	X(pte_nosync, "decoder out of sync")                                 \
	X(pte_bad_opc, "unknown opcode")                                     \
	X(pte_bad_packet, "unknown packet")                                  \
	X(pte_bad_context, "unexpected packet context")                      \
	X(pte_eos, "reached end of trace stream")                            \
	X(pte_bad_query, "trace stream does not match query")                \
	X(pte_nomem, "out of memory")                                        \
	X(pte_bad_config, "bad configuration")                               \
	X(pte_noip, "no ip")                                                 \
	X(pte_ip_suppressed, "ip has been suppressed")                       \
	X(pte_nomap, "no memory mapped at this address")                     \
	X(pte_bad_insn, "unknown instruction")                               \
	X(pte_no_time, "no timing information")                              \
	X(pte_no_cbr, "no core:bus ratio")                                   \
	X(pte_bad_image, "bad image")                                        \
	X(pte_bad_lock, "locking error")                                     \
	X(pte_not_supported, "not supported")                                \
	X(pte_retstack_empty, "compressed return without call")              \
	X(pte_bad_retcomp, "bad compressed return")                          \
	X(pte_bad_status_update, "bad status update")                        \
	X(pte_no_enable, "expected tracing enabled event")                   \
	X(pte_event_ignored, "event ignored")                                \
	X(pte_overflow, "overflow")                                          \
	X(pte_bad_file, "bad file")                                          \
	X(pte_bad_cpu, "unknown cpu")

IPT_DEF const char *pt_errstr(enum pt_error_code code)
{
	switch (code) {
#define IPT__ERRSTR_CASE(name, text)                                         \
	case name:                                                           \
		return text;
		IPT__ERRORS(IPT__ERRSTR_CASE)
#undef IPT__ERRSTR_CASE
	}
	return "internal error.";
}

IPT_DEF struct pt_version pt_library_version(void)
{
	struct pt_version version;

	version.major = LIBIPT_VERSION_MAJOR;
	version.minor = LIBIPT_VERSION_MINOR;
	version.patch = LIBIPT_VERSION_PATCH;
	version.build = 0;
	version.ext = "-ipt.h-0.1.0";
	return version;
}

/* ==== >>cfg  configuration, CPU errata, address filters ==================
 * Copies a caller's pt_config in by its size, knows which errata each
 * CPU has, and answers address-filter questions. */

/* ==== >>opc  opcodes and the packet-layout table ==========================
 * Every packet's opcode, extended opcode and size, in one table that the
 * encoder and the decoder both read. */

/* ==== >>enc  packet encoder ==============================================
 * Writes struct pt_packet into the trace buffer. */

/* ==== >>pkt  packet decoder ==============================================
 * Turns trace bytes into struct pt_packet: synchronization on PSB,
 * first-byte dispatch, last-IP tracking.  Knows nothing of code. */

/* ==== >>time  time tracking and calibration ==============================
 * Follows TSC, TMA, MTC, CYC and CBR to estimate the time stamp counter
 * between TSC packets, and calibrates cycles against it. */

/* Payload widths that timing arithmetic depends on (SDM 33.4.2): an MTC
 * carries CTC bits [mtc_freq + 7 : mtc_freq], a TMA the low 16 CTC bits,
 * a TSC 56 bits of the time stamp counter. */
enum {
	IPT__TIME_MTC_BITS = 8,
	IPT__TIME_MTC_MASK = 0xff,
	IPT__TIME_TMA_CTC_BITS = 16,
	IPT__TIME_TMA_CTC_MASK = 0xffff,
	IPT__TIME_TSC_BITS = 56
};

/* v << n for 32-bit v, zero once everything is shifted out: a caller's
 * mtc_freq beyond IA32_RTIT_CTL's four bits must not shift too far. */
static uint32_t ipt__time_shl(uint32_t v, uint32_t n)
{
	return (n < 32) ? (v << n) : 0u;
}

IPT_DEF void ipt_time_init(struct ipt_time *time)
{
	if (time)
		IPT_MEMSET(time, 0, sizeof(*time));
}

IPT_DEF int ipt_time_query_tsc(uint64_t *tsc, uint32_t *lost_mtc,
			       uint32_t *lost_cyc, const struct ipt_time *time)
{
	if (!tsc || !time)
		return -pte_internal;

	*tsc = time->tsc;
	if (lost_mtc)
		*lost_mtc = time->lost_mtc;
	if (lost_cyc)
		*lost_cyc = time->lost_cyc;

	return time->have_tsc ? 0 : -pte_no_time;
}

IPT_DEF int ipt_time_query_cbr(uint32_t *cbr, const struct ipt_time *time)
{
	if (!cbr || !time)
		return -pte_internal;
	if (!time->have_cbr)
		return -pte_no_cbr;

	*cbr = time->cbr;
	return 0;
}

/* The CTC ticks from last to now.  The CTC as MTC sees it is
 * mtc_freq + 8 bits wide; one wrap-around is undone, more mean the two
 * values are unrelated (-pte_bad_packet). */
static int ipt__time_ctc_delta(uint32_t *delta, uint32_t now, uint32_t last,
			       const struct pt_config *config)
{
	if (!delta || !config)
		return -pte_internal;

	if (now < last) {
		now += ipt__time_shl(1u, config->mtc_freq + IPT__TIME_MTC_BITS);
		if (now < last)
			return -pte_bad_packet;
	}

	*delta = now - last;
	return 0;
}

/* CTC ticks in fast-counter (TSC) units: times cpuid[0x15].ebx/eax, the
 * TSC to crystal clock ratio. */
static int ipt__time_ctc_to_fc(uint64_t *fc, uint64_t ctc,
			       const struct pt_config *config)
{
	uint32_t eax, ebx;

	if (!fc || !config)
		return -pte_internal;

	eax = config->cpuid_0x15_eax;
	ebx = config->cpuid_0x15_ebx;
	if (!eax || !ebx)
		return -pte_bad_config;

	*fc = (ctc * ebx) / eax;
	return 0;
}

IPT_DEF int ipt_time_update_tsc(struct ipt_time *time,
				const struct pt_packet_tsc *packet,
				const struct pt_config *config)
{
	(void) config;

	if (!time || !packet)
		return -pte_internal;

	/* A full time stamp: start over, and forget earlier losses. */
	time->tsc = packet->tsc;
	time->base = packet->tsc;
	time->fc = 0ull;
	time->ctc = 0;
	time->lost_mtc = 0;
	time->lost_cyc = 0;
	time->have_tsc = 1;
	time->have_tma = 0;
	time->have_mtc = 0;
	return 0;
}

IPT_DEF int ipt_time_update_cbr(struct ipt_time *time,
				const struct pt_packet_cbr *packet,
				const struct pt_config *config)
{
	(void) config;

	if (!time || !packet)
		return -pte_internal;
	if (!packet->ratio)
		return -pte_bad_packet;

	time->cbr = packet->ratio;
	time->have_cbr = 1;
	return 0;
}

/* TMA follows a TSC in PSB+ and says where in the current MTC period the
 * TSC was taken: CTC's low bits and the fast counter's value then. */
IPT_DEF int ipt_time_update_tma(struct ipt_time *time,
				const struct pt_packet_tma *packet,
				const struct pt_config *config)
{
	uint32_t ctc_bits, ctc;

	if (!time || !packet || !config)
		return -pte_internal;

	/* One TMA per TSC, and it needs the TSC. */
	if (!time->have_tsc || time->have_tma)
		return -pte_bad_context;

	/* MTCs between TSC and TMA are ignored, so none can be recorded. */
	if (time->have_mtc)
		return -pte_internal;

	ctc_bits = (uint32_t) config->mtc_freq + IPT__TIME_MTC_BITS;
	ctc = packet->ctc & (ipt__time_shl(1u, ctc_bits) - 1u);

	/* The base moves back to the start of the fast counter so that
	 * base + fc stays the TSC. */
	time->base -= packet->fc;
	time->fc += packet->fc;
	time->have_tma = 1;

	/* When TMA carries every CTC bit that MTC does, it is as good as an
	 * MTC.  Otherwise the next MTC supplies the missing high bits. */
	if (ctc_bits <= IPT__TIME_TMA_CTC_BITS)
		time->have_mtc = 1;

	time->ctc = ctc;
	time->ctc_cyc = ctc;
	return 0;
}

IPT_DEF int ipt_time_update_mtc(struct ipt_time *time,
				const struct pt_packet_mtc *packet,
				const struct pt_config *config)
{
	uint32_t last_ctc, ctc, delta;
	uint64_t base, fc;
	int errcode, had_tma, had_mtc;

	if (!time || !packet || !config)
		return -pte_internal;

	had_tma = time->have_tma;
	had_mtc = time->have_mtc;

	/* Between a TSC and its TMA an MTC would look like a CTC jump; the
	 * TMA accounts for that time instead. */
	if (time->have_tsc && !had_tma)
		return 0;

	base = time->base;
	last_ctc = time->ctc;
	ctc = ipt__time_shl(packet->ctc, config->mtc_freq);

	/* Remember where cycle counting restarts if it has or would have. */
	if (time->fc || time->lost_cyc || !had_mtc)
		time->ctc_cyc = ctc;

	/* From here on this MTC is the reference, even if we fail below. */
	time->ctc = ctc;
	time->fc = 0ull;
	time->have_mtc = 1;
	time->lost_cyc = 0;

	if (!had_mtc) {
		uint32_t lo, hi;

		/* Without a TMA, the first MTC only starts the clock: we do
		 * not know how far into its period tracing began. */
		if (!had_tma)
			return 0;

		/* The TMA left the high CTC bits to this MTC. */
		if (last_ctc & ~(uint32_t) IPT__TIME_TMA_CTC_MASK)
			return -pte_internal;

		/* Take the high bits from this MTC, one TMA period back if
		 * the low bits wrapped in between; drop what MTC cannot
		 * carry. */
		lo = ctc & (uint32_t) IPT__TIME_TMA_CTC_MASK;
		hi = ctc & ~(uint32_t) IPT__TIME_TMA_CTC_MASK;
		if (lo < last_ctc) {
			hi -= 1u << IPT__TIME_TMA_CTC_BITS;
			hi &= ipt__time_shl(IPT__TIME_MTC_MASK,
					    config->mtc_freq);
		}
		last_ctc |= hi;
	}

	errcode = ipt__time_ctc_delta(&delta, ctc, last_ctc, config);
	if (errcode < 0) {
		time->lost_mtc += 1;
		return errcode;
	}

	errcode = ipt__time_ctc_to_fc(&fc, delta, config);
	if (errcode < 0)
		return errcode;

	base += fc;
	time->base = base;
	time->tsc = base;
	return 0;
}

/* A CYC counts cycles since the previous CYC-eligible packet, which may lie
 * in an earlier MTC period.  For the first CYC of a period, take away the
 * cycles the calibrated ratio says the earlier periods took; if that is
 * more than the CYC has, the whole CYC belongs to the past (better slow
 * than fast). */
static int ipt__time_adjust_cyc(uint64_t *cyc, const struct ipt_time *time,
				const struct pt_config *config, uint64_t fcr)
{
	uint32_t delta;
	uint64_t fc, past;
	int errcode;

	if (!cyc || !time || !config || !fcr)
		return -pte_internal;

	if (time->ctc == time->ctc_cyc)
		return 0;

	errcode = ipt__time_ctc_delta(&delta, time->ctc, time->ctc_cyc,
				      config);
	if (errcode < 0)
		return errcode;

	errcode = ipt__time_ctc_to_fc(&fc, delta, config);
	if (errcode < 0)
		return errcode;

	past = (fc << ipt_tcal_fcr_shr) / fcr;
	*cyc = (*cyc < past) ? 0ull : *cyc - past;
	return 0;
}

IPT_DEF int ipt_time_update_cyc(struct ipt_time *time,
				const struct pt_packet_cyc *packet,
				const struct pt_config *config, uint64_t fcr)
{
	uint64_t cyc;

	if (!time || !packet || !config)
		return -pte_internal;

	/* Without a ratio, cycles cannot become time. */
	if (!fcr) {
		time->lost_cyc += 1;
		return 0;
	}

	cyc = packet->value;
	if (!time->fc) {
		int errcode;

		errcode = ipt__time_adjust_cyc(&cyc, time, config, fcr);
		if (errcode < 0)
			return errcode;
	}

	time->fc += (cyc * fcr) >> ipt_tcal_fcr_shr;
	time->tsc = time->base + time->fc;
	return 0;
}

IPT_DEF void ipt_tcal_init(struct ipt_time_cal *tcal)
{
	if (!tcal)
		return;

	IPT_MEMSET(tcal, 0, sizeof(*tcal));
	tcal->min_fcr = ~0ull;
}

static int ipt__tcal_have_fcr(const struct ipt_time_cal *tcal)
{
	return tcal && tcal->min_fcr <= tcal->max_fcr;
}

IPT_DEF int ipt_tcal_fcr(uint64_t *fcr, const struct ipt_time_cal *tcal)
{
	if (!fcr || !tcal)
		return -pte_internal;
	if (!ipt__tcal_have_fcr(tcal))
		return -pte_no_time;

	*fcr = tcal->fcr;
	return 0;
}

IPT_DEF int ipt_tcal_set_fcr(struct ipt_time_cal *tcal, uint64_t fcr)
{
	if (!tcal)
		return -pte_internal;

	tcal->fcr = fcr;
	if (fcr < tcal->min_fcr)
		tcal->min_fcr = fcr;
	if (tcal->max_fcr < fcr)
		tcal->max_fcr = fcr;
	return 0;
}

/* SKL168: CYC packets right before a PSB may be dropped, so the first MTC
 * interval after a PSB is suspect. */
IPT_DEF int ipt_tcal_update_psb(struct ipt_time_cal *tcal,
				const struct pt_config *config)
{
	if (!tcal || !config)
		return -pte_internal;

	if (config->errata.skl168)
		tcal->check_skl168 = 1;
	return 0;
}

/* A TSC outside PSB+ may follow lost time, so it does not calibrate; it
 * only starts the interval that the next PSB+ TSC will measure. */
IPT_DEF int ipt_tcal_update_tsc(struct ipt_time_cal *tcal,
				const struct pt_packet_tsc *packet,
				const struct pt_config *config)
{
	(void) config;

	if (!tcal || !packet)
		return -pte_internal;

	tcal->tsc = packet->tsc;
	tcal->cyc_tsc = 0ull;
	return 0;
}

/* Calibrate over the cycles between two TSCs, unless MTCs do it better. */
IPT_DEF int ipt_tcal_header_tsc(struct ipt_time_cal *tcal,
				const struct pt_packet_tsc *packet,
				const struct pt_config *config)
{
	uint64_t last, now, cyc, delta;

	(void) config;

	if (!tcal || !packet)
		return -pte_internal;

	last = tcal->tsc;
	cyc = tcal->cyc_tsc;
	now = packet->tsc;

	tcal->tsc = now;
	tcal->cyc_tsc = 0ull;

	if (!last || !cyc || tcal->have_mtc)
		return 0;

	if (now < last) {
		now += 1ull << IPT__TIME_TSC_BITS;
		if (now < last)
			return -pte_bad_packet;
	}

	delta = now - last;

	/* The scaled delta must fit: refuse rather than overflow. */
	if (delta >> (64 - ipt_tcal_fcr_shr))
		return -pte_internal;

	return ipt_tcal_set_fcr(tcal, (delta << ipt_tcal_fcr_shr) / cyc);
}

/* A CBR outside PSB+ is a frequency change: what we learnt is stale. */
IPT_DEF int ipt_tcal_update_cbr(struct ipt_time_cal *tcal,
				const struct pt_packet_cbr *packet,
				const struct pt_config *config)
{
	ipt_tcal_init(tcal);
	return ipt_tcal_header_cbr(tcal, packet, config);
}

/* With the nominal frequency known, the ratio is nom_freq / cbr. */
IPT_DEF int ipt_tcal_header_cbr(struct ipt_time_cal *tcal,
				const struct pt_packet_cbr *packet,
				const struct pt_config *config)
{
	uint64_t nom;

	if (!tcal || !packet || !config)
		return -pte_internal;

	nom = config->nom_freq;
	if (!nom)
		return 0;
	if (!packet->ratio)
		return -pte_bad_packet;

	return ipt_tcal_set_fcr(tcal,
				(nom << ipt_tcal_fcr_shr) / packet->ratio);
}

IPT_DEF int ipt_tcal_update_tma(struct ipt_time_cal *tcal,
				const struct pt_packet_tma *packet,
				const struct pt_config *config)
{
	/* TMA tells nothing about cycles. */
	(void) tcal;
	(void) packet;
	(void) config;
	return 0;
}

/* Calibrate over the cycles between two MTCs.  An interval without cycles
 * merges into the next one. */
IPT_DEF int ipt_tcal_update_mtc(struct ipt_time_cal *tcal,
				const struct pt_packet_mtc *packet,
				const struct pt_config *config)
{
	uint32_t last_ctc, ctc, delta;
	uint64_t cyc, fc, fcr;
	int errcode, check_skl168;

	if (!tcal || !packet || !config)
		return -pte_internal;

	last_ctc = tcal->ctc;
	cyc = tcal->cyc_mtc;
	check_skl168 = tcal->check_skl168;
	tcal->check_skl168 = 0;

	ctc = ipt__time_shl(packet->ctc, config->mtc_freq);

	if (!tcal->have_mtc) {
		tcal->ctc = ctc;
		tcal->cyc_mtc = 0ull;
		tcal->have_mtc = 1;
		return 0;
	}

	if (!cyc)
		return 0;

	tcal->ctc = ctc;
	tcal->cyc_mtc = 0ull;

	/* Counted as lost until it succeeds. */
	tcal->lost_mtc += 1;

	errcode = ipt__time_ctc_delta(&delta, ctc, last_ctc, config);
	if (errcode < 0)
		return errcode;

	errcode = ipt__time_ctc_to_fc(&fc, delta, config);
	if (errcode < 0)
		return errcode;

	if (fc >> (64 - ipt_tcal_fcr_shr))
		return -pte_internal;

	fcr = (fc << ipt_tcal_fcr_shr) / cyc;

	if (check_skl168) {
		/* More than one MTC period: MTCs were lost, skip it. */
		if (ipt__time_shl(1u, config->mtc_freq) < delta)
			return 0;

		/* A dropped CYC would lack one 4096-cycle wrap.  Only at
		 * high MTC frequencies is that visible: if the previous
		 * ratio, given a little under 4096 extra cycles, still falls
		 * short of the fast counter, assume the CYC was dropped. */
		if (config->mtc_freq < 10 && ipt__tcal_have_fcr(tcal)) {
			uint64_t expected;

			expected = (tcal->fcr * (cyc + 0xf00)) >>
				ipt_tcal_fcr_shr;
			if (expected < fc)
				return 0;
		}
	}

	errcode = ipt_tcal_set_fcr(tcal, fcr);
	if (errcode < 0)
		return errcode;

	tcal->lost_mtc = 0;
	return 0;
}

IPT_DEF int ipt_tcal_update_cyc(struct ipt_time_cal *tcal,
				const struct pt_packet_cyc *packet,
				const struct pt_config *config)
{
	(void) config;

	if (!tcal || !packet)
		return -pte_internal;

	tcal->cyc_mtc += packet->value;
	tcal->cyc_tsc += packet->value;
	return 0;
}

/* After an overflow the intervals are broken but the ratio still holds. */
IPT_DEF int ipt_tcal_update_ovf(struct ipt_time_cal *tcal,
				const struct pt_config *config)
{
	if (!tcal || !config)
		return -pte_internal;

	tcal->tsc = 0ull;
	tcal->cyc_tsc = 0ull;
	tcal->cyc_mtc = 0ull;
	tcal->ctc = 0;
	tcal->have_mtc = 0;
	return 0;
}

/* ==== >>evt  event decoder ===============================================
 * Turns packets into events.  The one place that knows the packet-to-event
 * rules; the query decoder asks it. */

/* ==== >>qry  query decoder ===============================================
 * Answers "taken?", "where to?" and "which event?" on top of the event
 * decoder. */

/* ==== >>img  image ========================================================
 * Code memory by address space: the read-memory callback, and in hosted
 * builds file sections and the image section cache on top of it. */

/* ==== >>ild  instruction length and class =================================
 * Asks Zydis for an instruction's length and class. */

/* ==== >>blk  block decoder ===============================================
 * Follows the flow of execution from events and code, a block at a time. */

/* ==== >>insn  instruction decoder ========================================
 * One instruction at a time, on top of the block decoder. */

#ifdef __cplusplus
}
#endif

#endif /* IPT__IMPLEMENTED */
#endif /* IPT_IMPLEMENTATION */

/*
 * MIT License
 *
 * Copyright (c) 2026 the ipt.h authors
 *
 * Permission is hereby granted, free of charge, to any person obtaining a
 * copy of this software and associated documentation files (the
 * "Software"), to deal in the Software without restriction, including
 * without limitation the rights to use, copy, modify, merge, publish,
 * distribute, sublicense, and/or sell copies of the Software, and to permit
 * persons to whom the Software is furnished to do so, subject to the
 * following conditions:
 *
 * The above copyright notice and this permission notice shall be included
 * in all copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS
 * OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
 * MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
 * NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
 * DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
 * OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE
 * USE OR OTHER DEALINGS IN THE SOFTWARE.
 */

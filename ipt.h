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
 *                       define all three or none of them; they are the
 *                       default allocator: ipt_*_with() (>>api-alloc)
 *                       gives an object an allocator of its own instead
 *     IPT_MEMCPY(d,s,n) copy                                        (memcpy)
 *     IPT_MEMSET(d,c,n) fill                                        (memset)
 *     IPT_MEMCMP(a,b,n) compare                                     (memcmp)
 *     IPT_NO_STDIO      leave out everything that touches files: file
 *                       sections (pt_image_add_file, pt_iscache_*) and
 *                       sideband sessions (pt_sb_*) go away; the
 *                       perf_event record reader (pev_*) stays
 *     IPT_IMAGE_CACHE_LIMIT  callback memory an image caches, in bytes;
 *                       ipt_image_set_cache_limit() sets it per image (16 MiB)
 *     IPT_BLK_ICACHE_BITS  log2 of a block/instruction decoder's
 *                       decoded-instruction cache entries without a run
 *                       cache (256 entries beside one)               (11)
 *     IPT_BLK_CACHE_LIMIT  the most bytes its straight-line run cache
 *                       grows to; ipt_blk_set_cache_limit() and
 *                       ipt_insn_set_cache_limit() set it per decoder (2 MiB)
 *     IPT_COV_MEMO_LIMIT  the most bytes a coverage decoder's TNT memo
 *                       takes; ipt_cov_set_memo_limit() sets it per
 *                       decoder                                   (32 MiB)
 *     IPT_COV_IDLE_MAX  the instructions a coverage decode follows
 *                       between two uses of the trace before it gives
 *                       up on code that loops without trace (the rule:
 *                       at its definition); fuzzing builds set it
 *                       low                                     (2^18)
 *     IPT_BLK_GENERAL_PATH  test builds: the block and instruction
 *                       decoders take no shortcut (no run cache, no
 *                       one-piece common block, no instruction from a
 *                       run's text); what they report must not change
 *
 *     With IPT_NO_STDIO and all of the above defined, the implementation
 *     needs nothing but <stddef.h>, <stdint.h> and Zydis.
 *
 * THE FILE, LAYER BY LAYER (grep for the tag)
 *
 *     >>api    declarations: what a program sees
 *     ---- stop here if you only want the API ----
 *     >>shim   memory and copying hooks, the allocator
 *     >>err    error codes and messages (one table), version
 *     >>cfg    configuration copy-in, CPU errata, address filters
 *     >>opc    opcodes and the packet-layout table
 *     >>enc    packet encoder
 *     >>pkt    packet decoder, batches of packets, synchronization, last-IP
 *              tracking
 *     >>time   TSC/MTC/CYC/TMA/CBR time tracking and calibration
 *     >>evt    event decoder: packets to events
 *     >>qry    query decoder: built on the event decoder
 *     >>img    image: memory through a callback, address spaces, sections
 *     >>ild    instruction length and class, from Zydis
 *     >>blk    block decoder: built on the event decoder and the image
 *     >>insn   instruction decoder: built on the block decoder
 *     >>pev    perf_event sideband records: read and written in place
 *     >>sb     sideband sessions: perf_event records applied to a
 *              decoder's events, an image per process (hosted builds)
 *     >>cov    coverage: a trace to an edge bitmap, on the block decoder
 *     >>seg    segments: PSB index, joining decoders of adjacent segments,
 *              decoding one trace in pieces through the caller's loop
 *
 * LICENSE: MIT, at the end of this file.
 */

/* ==== >>api  declarations =================================================
 * Everything a program that uses ipt.h sees: libipt 2.3's API and the ipt_
 * extensions.  Only <stddef.h> and <stdint.h> are needed here, and for the
 * sideband declarations of hosted builds <stdio.h> and, on Linux,
 * <linux/perf_event.h> (see >>api-pev). */

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

/* ---- version ----
 * Specified by pt_library_version(3). */

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
 * libipt's; the messages come from one table in >>err.  What each code
 * means for a function: the ERRORS section of its man page. */
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
	pte_bad_cpu,
	/* ipt.h: the trace ends for now, more may come (ipt_*_extend). */
	ipt_pte_need_more
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

/* ---- configuration ----
 * Specified by pt_config(3); the decoders' copy of it by
 * pt_enc_get_config(3). */

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

/* ---- packets ----
 * Specified by pt_packet(3). */

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

/* ---- packet encoder ----
 * Specified by pt_alloc_encoder(3), pt_enc_get_offset(3),
 * pt_enc_get_config(3) and pt_packet(3) (pt_enc_next). */

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

/* ---- packet decoder ----
 * Specified by pt_pkt_alloc_decoder(3), pt_pkt_sync_forward(3),
 * pt_pkt_get_offset(3) and pt_packet(3) (pt_pkt_next). */

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

/* >>api-pkt-ext: ipt_ extensions of the packet layer (batches of packets,
 * last-IP tracking) */

/* Decode up to n packets into packets[0] .. packets[n - 1], as that many
 * pt_pkt_next calls would (each packet's size is in its size field), and
 * move past them; for decoding a trace with one call per batch rather than
 * per packet.  Returns how many packets were decoded, 1 to n (at most
 * 65536 in one call); or pt_pkt_next's error if the first packet cannot be
 * decoded.  An error at a later packet ends the batch before it, and the
 * next call reports it.  -pte_invalid for NULL arguments or n == 0.  One
 * difference: a PAD's payload, which pt_pkt_next leaves as it was, may be
 * zeroed (a PAD has no payload fields).
 * Ref: libipt's pt_pkt_next (man page pt_pkt_next.3), called n times. */
IPT_API int ipt_pkt_next_batch(struct pt_packet_decoder *decoder,
			       struct pt_packet *packets, size_t n);

/* Parse a CPU given as "family/model[/stepping]" (each number decimal, or
 * hex with 0x, or octal with a leading 0; the stepping defaults to zero)
 * into *cpu with vendor pcv_intel, as ptdump's and ptxed's --cpu option
 * does.  Returns 0, or -pte_invalid if cpu or s is NULL or s is malformed
 * or out of range (family > 65535, model or stepping > 255).
 * Ref: libipt's pt_cpu_parse (libipt/src/pt_cpu.c, for its tools). */
IPT_API int ipt_cpu_parse(struct pt_cpu *cpu, const char *s);

/* Last-IP tracking: IP packets (TIP, TIP.PGE, TIP.PGD, FUP) carry an IP
 * compressed against the last IP seen; this keeps that last IP. */
struct ipt_last_ip {
	/* The last IP. */
	uint64_t ip;
	/* An IP update has been seen. */
	uint32_t have_ip:1;
	/* The last update suppressed the IP. */
	uint32_t suppressed:1;
};

/* Forget any IP.  Ref: libipt's internal pt_last_ip_init. */
IPT_API void ipt_last_ip_init(struct ipt_last_ip *last_ip);

/* Apply an IP packet's payload.  config may be NULL.  Returns 0;
 * -pte_bad_packet if packet->ipc is not a valid compression (the last IP is
 * then unchanged); -pte_invalid if last_ip or packet is NULL.
 * Ref: libipt's internal pt_last_ip_update_ip. */
IPT_API int ipt_last_ip_update_ip(struct ipt_last_ip *last_ip,
				  const struct pt_packet_ip *packet,
				  const struct pt_config *config);

/* Store the last IP in *ip (if ip is not NULL).  Returns 0; -pte_noip if
 * no IP has been seen yet, -pte_ip_suppressed if the last update
 * suppressed it (*ip is then set to zero); -pte_invalid if last_ip is
 * NULL.  Ref: libipt's internal pt_last_ip_query. */
IPT_API int ipt_last_ip_query(uint64_t *ip, const struct ipt_last_ip *last_ip);

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
	/* Which packets have been seen since the last TSC (cbr: ever).
	 * Bytes, not bit-fields: every MTC reads and writes them. */
	uint8_t have_tsc;
	uint8_t have_cbr;
	uint8_t have_tma;
	uint8_t have_mtc;
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
	uint8_t have_mtc;
	/* The next MTC is the first after a PSB on an SKL168 processor. */
	uint8_t check_skl168;
};

enum {
	/* FCR values carry this many fraction bits.  Pass ipt_tcal_fcr()'s
	 * result to ipt_time_update_cyc() as it is. */
	ipt_tcal_fcr_shr = 8
};

/* Reset time tracking to "nothing seen".  Ref: libipt's internal
 * pt_time_init. */
IPT_API void ipt_time_init(struct ipt_time *time);

/* The estimated TSC in *tsc and, unless NULL, the MTC and CYC updates lost
 * since the last TSC packet.  -pte_no_time if there has not been a TSC
 * packet (the outputs are filled in anyway).  Ref: libipt's internal
 * pt_time_query_tsc. */
IPT_API int ipt_time_query_tsc(uint64_t *tsc, uint32_t *lost_mtc,
			       uint32_t *lost_cyc, const struct ipt_time *time);

/* The core:bus ratio of the last CBR packet; -pte_no_cbr if none.
 * Ref: libipt's internal pt_time_query_cbr. */
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
 *        CYC as lost.
 * Ref: libipt's internal pt_time_update_<packet>. */
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

/* Reset calibration: no FCR known.  Ref: libipt's internal pt_tcal_init. */
IPT_API void ipt_tcal_init(struct ipt_time_cal *tcal);

/* The current FCR in *fcr; -pte_no_time if none is known yet.
 * Ref: libipt's internal pt_tcal_fcr. */
IPT_API int ipt_tcal_fcr(uint64_t *fcr, const struct ipt_time_cal *tcal);

/* Set the FCR (scaled by 2^ipt_tcal_fcr_shr), e.g. an initial guess to
 * use until calibration has seen one CBR or two MTCs.  Ref: libipt's
 * internal pt_tcal_set_fcr. */
IPT_API int ipt_tcal_set_fcr(struct ipt_time_cal *tcal, uint64_t fcr);

/* Update calibration at a packet.  The _header_ variants are for TSC and
 * CBR inside PSB+; the _update_ variants for those outside it, where a
 * TSC only starts a new interval and a CBR (a frequency change) restarts
 * calibration.  psb: a PSB was seen (arms the SKL168 workaround); ovf: an
 * overflow, which forgets the intervals but keeps the FCR.  tsc and mtc
 * may fail with -pte_bad_packet (time went backwards), mtc with
 * -pte_bad_config (no cpuid 0x15 values), cbr with -pte_bad_packet (zero
 * ratio, when config->nom_freq is set).
 * Ref: libipt's internal pt_tcal_update_<packet>, pt_tcal_header_<packet>. */
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

/* ---- events ----
 * Specified by pt_evt_next(3). */

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

/* ---- event decoder ----
 * Specified by pt_evt_alloc_decoder(3), pt_evt_sync_forward(3),
 * pt_evt_get_offset(3) and pt_evt_next(3). */

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

/* ---- query decoder ----
 * Specified by pt_qry_alloc_decoder(3), pt_qry_sync_forward(3),
 * pt_qry_get_offset(3), pt_qry_cond_branch(3) and pt_qry_time(3). */

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

/* ---- address spaces and images ----
 * Specified by pt_image_alloc(3), pt_image_add_file(3),
 * pt_image_remove_by_filename(3), pt_image_set_callback(3),
 * pt_iscache_alloc(3), pt_iscache_add_file(3), pt_iscache_read(3) and
 * pt_iscache_set_limit(3). */

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

/* File sections and the image section cache exist in hosted builds
 * only: IPT_NO_STDIO leaves them out. */
#ifndef IPT_NO_STDIO
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
#endif /* IPT_NO_STDIO */

IPT_API struct pt_image *pt_image_alloc(const char *name);
IPT_API void pt_image_free(struct pt_image *image);
IPT_API const char *pt_image_name(const struct pt_image *image);
#ifndef IPT_NO_STDIO
IPT_API int pt_image_add_file(struct pt_image *image, const char *filename,
			      uint64_t offset, uint64_t size,
			      const struct pt_asid *asid, uint64_t vaddr);
IPT_API int pt_image_add_cached(struct pt_image *image,
				struct pt_image_section_cache *iscache,
				int isid, const struct pt_asid *asid);
#endif
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

/* Code read through the callback is kept in a cache of 4 KiB pages, keyed by
 * address space (cr3, vmcs) and page address, so that the callback runs once
 * per page rather than once per instruction.  The cache assumes the
 * callback answers like a view of memory: asked for n bytes at ip, it gives
 * all n or, at the end of a mapping, the bytes up to that end.
 *
 * ipt_image_invalidate() forgets what was read in [begin, end) (whole pages)
 * for address spaces matching asid (cr3/vmcs wildcards match anything; NULL
 * matches everything).  Call it after the memory the callback reads has
 * changed; until then the old bytes are decoded.  end is exclusive.
 * Returns zero, -pte_invalid if image is NULL or end < begin.
 *
 * ipt_image_set_cache_limit() bounds the cached page data to bytes (rounded
 * down to whole pages; below one page, or zero, turns the cache off so that
 * every read calls the callback).  The default is IPT_IMAGE_CACHE_LIMIT,
 * 16 MiB unless defined otherwise when compiling the implementation.
 * Returns zero, -pte_invalid if image is NULL.
 *
 * Threads: reading an image changes its page cache and the order of its
 * file sections, so an image is for one decoder at a time, unless it has
 * no file sections and no page cache (a limit of zero): such an image
 * only reads, and decoders on several threads may share it, if its
 * callback may be called from several threads.  Each decoder keeps its
 * own instruction and run caches either way (>>api-blk-ext).
 *
 * Running out of memory: allocations that only grow a cache never fail a
 * decode.  When the page cache cannot get a page (or its hash table), the
 * read goes to the callback uncached and decoding goes on with exactly the
 * result it would have had.  Every other failed allocation makes the call
 * that needed it return -pte_nomem (NULL for the allocating functions),
 * leaving the object usable and nothing leaked. */

/* Ref: ipt.h only, described above; README.md "Options". */
IPT_API int ipt_image_invalidate(struct pt_image *image,
				 const struct pt_asid *asid, uint64_t begin,
				 uint64_t end);
/* Ref: ipt.h only, described above; IPT_IMAGE_CACHE_LIMIT. */
IPT_API int ipt_image_set_cache_limit(struct pt_image *image, uint64_t bytes);

/* ---- instructions and blocks ----
 * Specified by pt_insn_alloc_decoder(3), pt_insn_sync_forward(3),
 * pt_insn_get_offset(3), pt_insn_get_image(3), pt_insn_next(3),
 * pt_blk_alloc_decoder(3), pt_blk_sync_forward(3), pt_blk_get_offset(3)
 * and pt_blk_next(3); the time queries by pt_qry_time(3). */

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

/* Each block decoder (and the one inside each instruction decoder) keeps
 * what it decoded: instructions by (address space, mode, IP), and the
 * straight-line runs between branches that need trace, with their bytes
 * for the instruction decoder.  Code decoded once is neither read from the
 * image again nor decoded again, whether it comes from file sections or
 * through the read-memory callback.
 *
 * The instruction cache has 256 entries (22 KiB) beside a run cache, and
 * IPT_BLK_ICACHE_BITS (log2 of its entries, 11: 176 KiB) without one.
 * The run cache starts at 4 KiB and doubles whenever it has had to push
 * runs out of full sets for a 128th of its entries, up to a limit in bytes: IPT_BLK_CACHE_LIMIT
 * when the implementation is compiled (2 MiB), or what
 * ipt_blk_set_cache_limit() / ipt_insn_set_cache_limit() set for one
 * decoder.  Setting a limit empties the run cache; a limit below one set
 * of four runs (128 bytes, 384 for an instruction decoder) turns it off.
 * With an allocator that has a realloc (the default's has) it grows in
 * place and keeps its runs.  Without, a block decoder's keeps its runs
 * when it grows while the old and the new table fit the limit together;
 * else, and an instruction decoder's always, it starts over empty: it
 * never takes more memory than the limit.
 * Without memory to grow it keeps its size (or, without memory even for
 * that, the decoder goes on without it): caches never fail a decode.  Both
 * return zero, -pte_invalid without a decoder.
 *
 * The caches are emptied when the decoder gets an image (pt_blk_set_image,
 * pt_insn_set_image) and when the image changes: sections added or
 * removed, a new callback, or ipt_image_invalidate() after the memory
 * behind the callback changed.  Until then the decoder keeps decoding the
 * code it saw.
 *
 * pt_blk_sync_backward and pt_insn_sync_backward return -pte_eos when the
 * packet layer finds no earlier PSB than the one they are at. */

/* Ref: ipt.h only, described above; IPT_BLK_CACHE_LIMIT. */
IPT_API int ipt_blk_set_cache_limit(struct pt_block_decoder *decoder,
				    uint64_t bytes);
/* Ref: ipt.h only, as ipt_blk_set_cache_limit. */
IPT_API int ipt_insn_set_cache_limit(struct pt_insn_decoder *decoder,
				     uint64_t bytes);

/* >>api-fault: a missing page is a pause, not the end */

/* Code read through the callback may be missing for a while: a guest page
 * not yet copied out, or paged out.  When neither a section nor the
 * callback has bytes the block decoder needs, pt_blk_next returns
 * -pte_nomap (or -pte_bad_insn where an instruction runs into the missing
 * page, as libipt does) and the decoder stops right before the instruction
 * it could not read: the block it returns holds the instructions before it
 * (as libipt's does), nothing after it has happened yet.  pt_insn_next does
 * the same, one instruction at a time.
 *
 * ipt_blk_get_fault() / ipt_insn_get_fault() tell what was missing: the
 * address space, the first address that could not be read and how many
 * bytes were asked for there.  Once the caller has made that memory
 * readable (and called ipt_image_invalidate() if the image had cached a
 * shorter read of that page), calling pt_blk_next / pt_insn_next again
 * goes on from that instruction: the output of all calls together is what
 * one decode with all memory present gives.  A program that
 * resynchronizes on the error instead, as libipt's tools do, sees
 * libipt's behaviour.
 *
 * Both return 1 and fill fault (up to size bytes of it) if the decoder's
 * last pt_*_next call stopped at missing memory; 0 if it did not (it
 * succeeded, or failed for another reason); -pte_invalid without decoder
 * or fault.
 *
 * Two erratum workarounds look at code the flow has not reached (SKD022:
 * is the instruction an asynchronous disable points at a VMLAUNCH or
 * VMRESUME; BDM64: can a TSX abort's IP be reached).  libipt takes code it
 * cannot read there as "the erratum does not apply", which a decode with
 * all memory present may not.  ipt_blk_set_wait_for_code() /
 * ipt_insn_set_wait_for_code() with on non-zero make them stop at missing
 * memory too, so that fetching pages on demand gives exactly the output of
 * a decode with all memory present; off (the default) they do as libipt.
 * The same holds for the instruction an event names by its IP (a software
 * interrupt, a system call), which the block decoder checks before it
 * walks any code.  Where such a look-ahead stops a call other than
 * *_next (*_event, *_sync_*, *_resync), nothing has happened yet: the
 * same call, once the code is there (after a sync: *_sync_set to the sync
 * offset), goes on.  Both return zero, -pte_invalid without decoder. */
struct ipt_fault {
	/* The address space of the read. */
	struct pt_asid asid;
	/* The first address that could not be read. */
	uint64_t addr;
	/* How many bytes were wanted from @addr on (at most an
	 * instruction's). */
	uint32_t size;
};

IPT_API int ipt_blk_get_fault(const struct pt_block_decoder *decoder,
			      struct ipt_fault *fault, size_t size);
IPT_API int ipt_insn_get_fault(const struct pt_insn_decoder *decoder,
			       struct ipt_fault *fault, size_t size);
IPT_API int ipt_blk_set_wait_for_code(struct pt_block_decoder *decoder,
				      int on);
IPT_API int ipt_insn_set_wait_for_code(struct pt_insn_decoder *decoder,
				       int on);

/* >>api-vm: traces of virtual machines as the hardware writes them */

/* Entering and leaving a VM switches tracing with the VMCS's controls
 * (SDM Vol. 3C, 26.x and 27.x "Loading/Saving IA32_RTIT_CTL", 33.5.2
 * "VMX transitions"), and the processor writes shapes libipt 2.3 takes as
 * errors: after a VM exit disabled tracing (FUP, TIP.PGD), the VM entry
 * sends a PSB+ whose FUP says tracing is on at the guest IP X, and right
 * after its PSBEND a TIP.PGE X.  libipt stops there with "bad status
 * update" or "unexpected packet context" and loses the trace up to the
 * next PSB.
 *
 * ipt_blk_set_vm_tolerant() / ipt_insn_set_vm_tolerant() with on non-zero
 * take them as what they are: a PSB+ that says tracing is on while the
 * decoder has it off enables it at that IP (the event is indicated as an
 * ordinary enable, resumed if at the IP tracing stopped at), and an enable
 * at the IP the decoder already stands at, while enabled, is indicated
 * and changes nothing.  Off by default (libipt's behaviour).  Both return
 * zero, -pte_invalid without decoder. */
IPT_API int ipt_blk_set_vm_tolerant(struct pt_block_decoder *decoder, int on);
IPT_API int ipt_insn_set_vm_tolerant(struct pt_insn_decoder *decoder, int on);

/* Guest or host: PIP's NR bit says whether the processor runs in VMX
 * non-root operation (a guest) after the CR3 it carries; the paging events
 * (ptev_paging, ptev_async_paging, and PSB+ status updates) carry it as
 * non_root.  ipt_qry_in_guest() / ipt_blk_in_guest() / ipt_insn_in_guest()
 * give it as of the events the caller has taken so far: 1 in a guest, 0
 * in the host, -pte_nosync if no PIP has said since the decoder
 * synchronized (or started), -pte_invalid without decoder.
 *
 * That makes it a tag for each piece of output, asked right after it:
 * after pt_*_next, the block or instruction just returned (events after it
 * are still pending); after pt_*_event, the event just returned, and a
 * paging event is tagged with the side it switches to.  A VM exit's
 * events (FUP, PIP with NR clear, TIP) are so tagged host from its paging
 * event on, a VM entry's guest from its paging event on.  The VMCS packet
 * (ptev_vmcs, ptev_async_vmcs) names the VMCS a VMM loaded, not the side:
 * it changes no tag.  With "conceal VMX from PT" set in the VMCS, VM
 * entries and exits write no PIP: the tag stays what the last PIP said,
 * and such a trace cannot tell guest from host.  An agent keeps the
 * guest's flow by dropping what comes while this is 0. */
IPT_API int ipt_qry_in_guest(const struct pt_query_decoder *decoder);
IPT_API int ipt_blk_in_guest(const struct pt_block_decoder *decoder);
IPT_API int ipt_insn_in_guest(const struct pt_insn_decoder *decoder);

/* One address space: ipt_blk_set_cr3_filter() / ipt_insn_set_cr3_filter()
 * with a CR3 make the decoder skip the trace of every other CR3 without
 * walking its code (the read-memory callback is never asked for it), as
 * if the hardware's own CR3 filter (IA32_RTIT_CR3_MATCH) had been on;
 * pt_asid_no_cr3 (the default) keeps all.  The CR3 is what PIP says,
 * compared whole; until the first PIP after synchronizing it is not
 * known and nothing is skipped.  A new filter takes effect at the next
 * paging event.
 *
 * At the boundaries the decoder reports:
 * - leaving: the paging event that names another CR3 (ptev_paging at the
 *   MOV CR3, ptev_async_paging at a far transfer, VM entry or exit, or a
 *   PSB+ status update), then, if tracing was enabled, ptev_disabled with
 *   its IP suppressed (bound to the MOV CR3, as TIP.PGD would be).
 * - in between: nothing.  No blocks, no events; the state the skipped
 *   events carry (CR3, VMCS, execution mode, TSX, core:bus ratio) is
 *   taken in, so pt_*_asid and pt_*_core_bus_ratio stay current; the
 *   next reported event carries the time as usual.
 * - coming back: the paging event that names the filter's CR3, then the
 *   flow from the first IP the trace gives: a TIP.PGE's ptev_enabled or
 *   an overflow's ptev_overflow as the trace has them (a PSB+ FUP's
 *   enable as ptev_enabled, not a status update); otherwise a
 *   ptev_enabled at that IP (not resumed) followed by the event that gave
 *   it: the target of a TIP (taken in), or the IP of an asynchronous
 *   branch, paging, VMCS, MODE.Exec or TSX event (then reported as
 *   usual).  Back at a far transfer or at a PSB+ the flow goes on where
 *   it comes back; back at a MOV CR3 (ptev_paging, IP unknown), the
 *   instructions up to the next IP packet cannot be decoded without the
 *   other address space's code, and are not reported.
 * So the blocks and instructions of the filter's CR3 are those a decode
 * without filter reports there, less those after a MOV CR3 into it and
 * before the next IP packet.
 *
 * While the decoder skips, ipt_*_get_start_state fails with
 * -pte_bad_context.  Both return zero, -pte_invalid without decoder. */
IPT_API int ipt_blk_set_cr3_filter(struct pt_block_decoder *decoder,
				   uint64_t cr3);
IPT_API int ipt_insn_set_cr3_filter(struct pt_insn_decoder *decoder,
				    uint64_t cr3);

/* >>api-start: starting where there is no PSB */

/* A trace that begins mid-stream (a wrapped ring buffer, a VM's trace
 * handed over piece by piece, tracing re-enabled after a VM exit) has no
 * PSB to synchronize on before its first one, and may have none at all.
 * A caller that knows the state of the trace at a packet boundary starts a
 * decoder there with it, instead of losing the trace up to the next PSB.
 *
 * The decoder takes the state as it takes a PSB+: its first events are
 * status updates (ptev_enabled or ptev_disabled, ptev_async_paging with
 * the CR3, ptev_async_vmcs, ptev_tsx if in a transaction, ptev_exec_mode;
 * all at @ip, stamped with @time; unlike a PSB+'s they give a TRIG no
 * new anchor, so that its count goes on across the start), then the
 * trace from @offset on.  A decoder that had decoded the trace before
 * @offset itself and stands there (see ipt_blk_get_start_state) gives
 * from then on what it gives.
 *
 * Fields a caller does not know are left zero: no CR3 or VMCS (as a PSB+
 * without PIP or VMCS), no last IP (a compressed IP packet then fails
 * with -pte_noip until a full one comes), no time (events carry none until
 * a TSC packet), an empty return stack (a compressed return then fails
 * with -pte_retstack_empty), ptem_unknown.  @size is sizeof(struct
 * ipt_start_state) as the caller knows it: what lies past it counts as
 * zero, so that the struct can grow. */
enum { ipt_start_max_ret = 64 };

struct ipt_start_state {
	/* The size of the caller's struct ipt_start_state. */
	size_t size;

	/* Tracing is enabled (PacketEn): the flow goes on at @ip.  With
	 * tracing disabled, @ip is where it stopped (an enable there is
	 * reported as resumed), or zero. */
	uint64_t ip;
	uint32_t enabled:1;
	/* @cr3 is valid; @non_root is PIP's NR bit (a VMX guest's CR3). */
	uint32_t has_cr3:1;
	uint32_t non_root:1;
	/* @vmcs is valid. */
	uint32_t has_vmcs:1;
	/* Inside a TSX transaction (MODE.TSX InTX). */
	uint32_t speculative:1;
	/* RFLAGS.IF, for decoders with iflags events enabled. */
	uint32_t iflag:1;
	/* @time and @tcal are valid. */
	uint32_t has_time:1;
	/* The trace has not stated the execution mode since the last
	 * overflow: @mode is the flow's, but the next MODE.EXEC is reported
	 * even if it says the same. */
	uint32_t mode_stale:1;
	/* @icnt is valid: the instructions since the last TRIG's IP, for
	 * the instruction count of the next TRIG. */
	uint32_t has_icnt:1;
	uint32_t icnt;

	enum pt_exec_mode mode;
	uint64_t cr3;
	uint64_t vmcs;

	/* The last IP that compressed IP packets build on (ipt_last_ip_*);
	 * all zero if not known. */
	struct ipt_last_ip last_ip;

	/* The time and its calibration (ipt_time_*, ipt_tcal_*).  To start
	 * from a bare TSC value: ipt_time_init() and ipt_tcal_init(), then
	 * @time.tsc and @time.have_tsc. */
	struct ipt_time time;
	struct ipt_time_cal tcal;

	/* The return addresses of the calls not yet returned from, oldest
	 * first, @nret of them (at most ipt_start_max_ret; a longer stack
	 * keeps its newest). */
	uint32_t nret;
	uint64_t ret[ipt_start_max_ret];

	/* Set by ipt_*_get_start_state, not read by ipt_*_start_at: how
	 * many of the instructions the decoder reported last a decoder
	 * started with this state reports again (see there). */
	uint32_t repeat;

	/* The instruction right before @ip, if @has_last_insn: the one whose
	 * trace the decoder took last (ipt_*_get_start_state fills it in).
	 * A TSX abort right after the start looks at it as it would at the
	 * end of the block before (erratum BDM64, with @mode). */
	uint32_t has_last_insn;
	uint64_t last_insn_ip;
};

/* Start decoder at @offset in its trace, at a packet boundary, in @state
 * (see above).  The event and query decoders take @ip, CR3, VMCS and mode
 * into their status events only; ipt_qry_start_at stores the start IP in
 * *ip (if ip is not NULL and tracing is enabled), as pt_qry_sync_set does.
 * Return what the corresponding pt_*_sync_set returns (a query decoder's
 * and a block or instruction decoder's status flags, zero for an event
 * decoder); -pte_invalid without decoder or state, if state->size is
 * smaller than offsetof(struct ipt_start_state, mode), or
 * state->nret is larger than ipt_start_max_ret; -pte_eos if @offset lies
 * past the trace's end.  Ref: pt_*_sync_set (pt_evt_sync_set is ipt.h's
 * event decoder); the state is ipt.h only. */
IPT_API int ipt_evt_start_at(struct pt_event_decoder *decoder,
			     uint64_t offset,
			     const struct ipt_start_state *state);
IPT_API int ipt_qry_start_at(struct pt_query_decoder *decoder, uint64_t *ip,
			     uint64_t offset,
			     const struct ipt_start_state *state);
IPT_API int ipt_blk_start_at(struct pt_block_decoder *decoder,
			     uint64_t offset,
			     const struct ipt_start_state *state);
IPT_API int ipt_insn_start_at(struct pt_insn_decoder *decoder,
			      uint64_t offset,
			      const struct ipt_start_state *state);

/* The state a block or instruction decoder is in once its event decoder
 * has run out of trace (pt_*_next then returns -pte_eos or an error such
 * as -pte_bad_query where a branch needs trace that is not there; not
 * while streaming, where such a call is undone), and the offset it
 * stands at: a decoder
 * started there with that state, in the same trace or one that goes on,
 * gives what this decoder would have given had its trace gone on.  This
 * is how an agent carries a decode over from one piece of trace to the
 * next when the pieces are not one buffer.
 *
 * The state is the one the decoder was in when it took its last piece of
 * trace.  After that it walked on through code that needs no trace, up to
 * the next branch that does, and reported those instructions; the trace
 * that follows may say they ran later, or not at all (an interrupt, or
 * tracing stopped, at one of them).  The started decoder reports them
 * again as that trace says: state->repeat is how many of the
 * instructions this decoder reported last are such, to be dropped from
 * its output when the two are put together.
 *
 * Fills up to state->size bytes (which the caller sets) and sets *offset.
 * Returns zero; -pte_invalid if an argument is NULL or state->size is too
 * small (as for ipt_*_start_at); -pte_nosync if the decoder is not
 * synchronized; -pte_bad_context if its trace has not run out, or ends
 * inside a group of packets that belong together (events wait for
 * packets still to come, such as a MODE.EXEC for its TIP; events bound to
 * an instruction are not all taken; an erratum's look ahead met the end
 * of the trace) or inside a packet: a start state cannot hold those.  Not
 * exact yet: a TRIG's instruction count across the start.  Ref: ipt.h
 * only. */
IPT_API int ipt_blk_get_start_state(const struct pt_block_decoder *decoder,
				    uint64_t *offset,
				    struct ipt_start_state *state);
IPT_API int ipt_insn_get_start_state(const struct pt_insn_decoder *decoder,
				     uint64_t *offset,
				     struct ipt_start_state *state);

/* >>api-buffer: one decoder for every trace */

/* Point a decoder at another trace buffer [begin, end): it keeps its
 * configuration (but for begin and end), its image and its caches, and is
 * as a new decoder would be otherwise: not synchronized, no time, no
 * events.  Nothing is allocated, so a fuzzer or an agent decoding many
 * short traces makes one decoder and reuses it.  Each returns zero,
 * -pte_invalid without decoder, begin or end, or if end < begin. */
IPT_API int ipt_pkt_set_buffer(struct pt_packet_decoder *decoder,
			       uint8_t *begin, uint8_t *end);
IPT_API int ipt_evt_set_buffer(struct pt_event_decoder *decoder,
			       uint8_t *begin, uint8_t *end);
IPT_API int ipt_qry_set_buffer(struct pt_query_decoder *decoder,
			       uint8_t *begin, uint8_t *end);
IPT_API int ipt_blk_set_buffer(struct pt_block_decoder *decoder,
			       uint8_t *begin, uint8_t *end);
IPT_API int ipt_insn_set_buffer(struct pt_insn_decoder *decoder,
				uint8_t *begin, uint8_t *end);

/* A ring buffer the processor has wrapped around in: the trace is
 * [older, older_end), the part written before the wrap (at the end of
 * the ring), then [newer, newer_end), written after it (at the start).
 * Point a decoder at it as ipt_*_set_buffer does, without copying the
 * ring: the decoder reads the trace as if the two pieces were one buffer
 * of (older_end - older) + (newer_end - newer) bytes, the older first.
 * Offsets (pt_*_get_offset, pt_*_get_sync_offset, pt_*_sync_set) count
 * in that buffer, and the output is what decoding a copy of it in one
 * piece gives.  A packet the wrap cuts in two is read as
 * one: the decoder keeps a copy of the 32 bytes on either side of the
 * wrap (which an unknown packet that a decode callback reads,
 * config.decode, must not outgrow).  pt_*_get_config's begin and end are
 * those of the piece the decoder reads in.  Either piece may be empty;
 * pieces that touch (older_end == newer) are one buffer.  Nothing is
 * allocated.
 *
 * ipt_*_extend moves the newer piece's end (streaming a ring as it
 * fills).  The pieces must not change while the decoder reads them.
 * Each returns zero, -pte_invalid without decoder or a piece, or if a
 * piece ends before it begins.  Ref: ipt.h only; ipt_impl_tests/unit/hv/
 * t_hv_ring. */
IPT_API int ipt_pkt_set_ring(struct pt_packet_decoder *decoder,
			     uint8_t *older, uint8_t *older_end,
			     uint8_t *newer, uint8_t *newer_end);
IPT_API int ipt_evt_set_ring(struct pt_event_decoder *decoder,
			     uint8_t *older, uint8_t *older_end,
			     uint8_t *newer, uint8_t *newer_end);
IPT_API int ipt_qry_set_ring(struct pt_query_decoder *decoder,
			     uint8_t *older, uint8_t *older_end,
			     uint8_t *newer, uint8_t *newer_end);
IPT_API int ipt_blk_set_ring(struct pt_block_decoder *decoder,
			     uint8_t *older, uint8_t *older_end,
			     uint8_t *newer, uint8_t *newer_end);
IPT_API int ipt_insn_set_ring(struct pt_insn_decoder *decoder,
			      uint8_t *older, uint8_t *older_end,
			      uint8_t *newer, uint8_t *newer_end);

/* Streaming: the trace's end moves forward as the processor writes.
 *
 * ipt_pkt_extend(), ipt_evt_extend(), ipt_qry_extend(), ipt_blk_extend()
 * and ipt_insn_extend() set a new end of the decoder's trace buffer (not
 * before the current one; the buffer's start stays) and say whether more
 * may come after it (more non-zero).  While more may come, a call that
 * runs into the end, or into a packet the end cuts, returns
 * -ipt_pte_need_more instead of -pte_eos or an error, and leaves the
 * decoder exactly as it was before the call: once the end has moved, the
 * same call (the same pt_*_next, pt_*_event, pt_qry_* query or pt_*_sync_*)
 * goes on, and decoding in pieces gives what decoding the whole trace
 * gives, item for item.  That holds for calls that only read ahead too:
 * a query decoder's answer needs the event after it, a block needs what
 * follows it to know its status flags, so they wait as well, and so does
 * a sync that finds a PSB+ the end cuts.  A forward sync that finds no
 * PSB before the end says -pte_eos, as for the whole trace, and moves
 * nowhere: made again once the end has moved, it searches on.  The last
 * call, with more zero, makes the end the end of the trace (-pte_eos).
 * A decoder starts with more zero (the whole of [begin, end) is there).
 *
 * The event, query, block and instruction decoders copy their state
 * before each call that may need more (for the block decoder: each block
 * but the most common, one conditional branch with trace bits in hand), a
 * few KiB; nothing is copied while more is zero.  The block decoder's record of
 * libipt's block cache (see >>blk) sees no call that was undone.
 * The coverage decoder streams too (ipt_cov_extend, >>api-cov).  A ring
 * buffer's newer piece grows the same way (ipt_*_set_ring above).
 *
 * Each returns zero; -pte_invalid without decoder or end, or if end lies
 * before the current end.
 *
 * Ref: ipt.h only, described above; ipt_impl_tests/unit/hv/t_hv_stream. */
IPT_API int ipt_pkt_extend(struct pt_packet_decoder *decoder, uint8_t *end,
			   int more);
IPT_API int ipt_evt_extend(struct pt_event_decoder *decoder, uint8_t *end,
			   int more);
IPT_API int ipt_qry_extend(struct pt_query_decoder *decoder, uint8_t *end,
			   int more);
IPT_API int ipt_blk_extend(struct pt_block_decoder *decoder, uint8_t *end,
			   int more);
IPT_API int ipt_insn_extend(struct pt_insn_decoder *decoder, uint8_t *end,
			    int more);

/* >>api-alloc: ipt_ extensions: a runtime allocator per object */

/* Where an object's memory comes from.  alloc returns size bytes aligned
 * for any type, as malloc's are (or NULL);
 * free gets back a block alloc returned, with the size it was asked for;
 * realloc, if not NULL, resizes a block from old_size to new_size bytes
 * (NULL: the block stays as it is), and if NULL, ipt.h allocates a new
 * block, copies and frees the old one.  context is passed to each call.
 * size is never zero.
 *
 * The ipt_*_with functions below make the object pt_*_alloc* makes, with
 * all of its memory from allocator: the object itself and everything it
 * allocates later, for as long as it lives (a block or instruction
 * decoder's caches and its own image; an image's page cache, name and
 * file sections; an image section cache's sections and list).  The
 * allocator is copied, so it may live on the caller's stack; its context
 * must outlive the object.  NULL for allocator means the default, the
 * IPT_MALLOC/IPT_FREE/IPT_REALLOC the implementation was compiled with,
 * which is what the pt_*_alloc* functions use.  Objects are freed with
 * the usual pt_*_free* functions.
 *
 * There is no global state: two decoders made with two allocators never
 * share memory.  An image given to a decoder (pt_blk_set_image) keeps its
 * own allocator.  The calls return NULL where their pt_ twins do, and
 * also if allocator lacks alloc or free. */
struct ipt_allocator {
	void *(*alloc)(void *context, size_t size);
	void (*free)(void *context, void *ptr, size_t size);
	void *context;
	void *(*realloc)(void *context, void *ptr, size_t old_size,
			 size_t new_size);
};

/* Ref: pt_alloc_encoder(3), with an allocator (above). */
IPT_API struct pt_encoder *
ipt_alloc_encoder_with(const struct pt_config *config,
		       const struct ipt_allocator *allocator);
/* Ref: pt_pkt_alloc_decoder(3), with an allocator (above). */
IPT_API struct pt_packet_decoder *
ipt_pkt_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_allocator *allocator);
/* Ref: pt_evt_alloc_decoder(3), with an allocator (above). */
IPT_API struct pt_event_decoder *
ipt_evt_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_allocator *allocator);
/* Ref: pt_qry_alloc_decoder(3), with an allocator (above). */
IPT_API struct pt_query_decoder *
ipt_qry_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_allocator *allocator);
/* Ref: pt_image_alloc(3), with an allocator (above). */
IPT_API struct pt_image *
ipt_image_alloc_with(const char *name,
		     const struct ipt_allocator *allocator);
/* Ref: pt_blk_alloc_decoder(3), with an allocator (above). */
IPT_API struct pt_block_decoder *
ipt_blk_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_allocator *allocator);
/* Ref: pt_insn_alloc_decoder(3), with an allocator (above). */
IPT_API struct pt_insn_decoder *
ipt_insn_alloc_decoder_with(const struct pt_config *config,
			    const struct ipt_allocator *allocator);
#ifndef IPT_NO_STDIO
/* Ref: pt_iscache_alloc(3), with an allocator (above). */
IPT_API struct pt_image_section_cache *
ipt_iscache_alloc_with(const char *name,
		       const struct ipt_allocator *allocator);
#endif

/* >>api-pev: the perf_event record reader
 * Specified by libipt's pevent.h (pevent/include/pevent.h; libipt has no
 * man page for it).
 *
 * Linux perf writes sideband records beside the trace: which files a
 * process maps (MMAP, MMAP2), exec (COMM with PERF_RECORD_MISC_COMM_EXEC),
 * fork and exit, context switches, where trace starts and what was lost.
 * Each record is a struct perf_event_header, a type-specific body, and the
 * samples that the event's sample_type asked for (sample_id_all: the tid,
 * time, id, stream id, cpu and identifier samples, in that order).  pev_read
 * reads one record in place: the pointers in struct pev_event point into
 * the caller's buffer, which must be 8-byte aligned, and stay valid as
 * long as it does.  Nothing here allocates or touches files: freestanding
 * builds have all of it.
 *
 * The PERF_RECORD_*, PERF_SAMPLE_* and misc values are Linux's.  Hosted
 * Linux builds take them from <linux/perf_event.h>, as libipt does; other
 * builds get the subset below, unless that header came first. */

#if !defined(IPT_NO_STDIO) && defined(__linux__)
#include <linux/perf_event.h>
#elif !defined(_LINUX_PERF_EVENT_H) && !defined(_UAPI_LINUX_PERF_EVENT_H)
struct perf_event_header {
	uint32_t type;
	uint16_t misc;
	uint16_t size;
};

enum perf_event_type {
	PERF_RECORD_MMAP = 1,
	PERF_RECORD_LOST = 2,
	PERF_RECORD_COMM = 3,
	PERF_RECORD_EXIT = 4,
	PERF_RECORD_THROTTLE = 5,
	PERF_RECORD_UNTHROTTLE = 6,
	PERF_RECORD_FORK = 7,
	PERF_RECORD_READ = 8,
	PERF_RECORD_SAMPLE = 9,
	PERF_RECORD_MMAP2 = 10,
	PERF_RECORD_AUX = 11,
	PERF_RECORD_ITRACE_START = 12,
	PERF_RECORD_LOST_SAMPLES = 13,
	PERF_RECORD_SWITCH = 14,
	PERF_RECORD_SWITCH_CPU_WIDE = 15
};

enum perf_event_sample_format {
	PERF_SAMPLE_IP = 1u << 0,
	PERF_SAMPLE_TID = 1u << 1,
	PERF_SAMPLE_TIME = 1u << 2,
	PERF_SAMPLE_ADDR = 1u << 3,
	PERF_SAMPLE_READ = 1u << 4,
	PERF_SAMPLE_CALLCHAIN = 1u << 5,
	PERF_SAMPLE_ID = 1u << 6,
	PERF_SAMPLE_CPU = 1u << 7,
	PERF_SAMPLE_PERIOD = 1u << 8,
	PERF_SAMPLE_STREAM_ID = 1u << 9,
	PERF_SAMPLE_RAW = 1u << 10,
	PERF_SAMPLE_IDENTIFIER = 1u << 16
};

#define PERF_RECORD_MISC_CPUMODE_MASK (7 << 0)
#define PERF_RECORD_MISC_CPUMODE_UNKNOWN (0 << 0)
#define PERF_RECORD_MISC_KERNEL (1 << 0)
#define PERF_RECORD_MISC_USER (2 << 0)
#define PERF_RECORD_MISC_HYPERVISOR (3 << 0)
#define PERF_RECORD_MISC_GUEST_KERNEL (4 << 0)
#define PERF_RECORD_MISC_GUEST_USER (5 << 0)
#define PERF_RECORD_MISC_COMM_EXEC (1 << 13)
#define PERF_RECORD_MISC_SWITCH_OUT (1 << 13)
#define PERF_AUX_FLAG_TRUNCATED 0x01
#endif

/* The sample type of the records whose PERF_SAMPLE_IDENTIFIER sample is
 * identifier; sample_type must include PERF_SAMPLE_IDENTIFIER. */
struct pev_sample_type {
	uint64_t identifier;
	uint64_t sample_type;
};

/* Sample types by identifier, for a stream that mixes events. */
struct pev_sample_config {
	uint8_t nstypes;
	struct pev_sample_type stypes[];
};

/* How a stream's records were recorded: perf_event_attr.sample_type (with
 * sample_id_all set), and the time conversion perf_event_mmap_page gives:
 * time_shift, time_mult, time_zero.  sample_config, if not NULL, overrides
 * sample_type for records whose identifier it lists. */
struct pev_config {
	size_t size;
	uint64_t sample_type;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	struct pev_sample_config *sample_config;
};

/* Whether config is big enough to have field (a caller may be older). */
#define pev_config_has(config, field)                                        \
	((config)->size >= (offsetof(struct pev_config, field) +             \
			    sizeof((config)->field)))

static inline void pev_config_init(struct pev_config *config)
{
	config->size = sizeof(*config);
	config->sample_type = 0;
	config->time_shift = 0;
	config->time_mult = 0;
	config->time_zero = 0;
	config->sample_config = NULL;
}

/* The bodies of the record types, as Linux lays them out. */
struct pev_record_mmap {
	uint32_t pid, tid;
	uint64_t addr;
	uint64_t len;
	uint64_t pgoff;
	char filename[];
};

struct pev_record_lost {
	uint64_t id;
	uint64_t lost;
};

struct pev_record_comm {
	uint32_t pid, tid;
	char comm[];
};

struct pev_record_exit {
	uint32_t pid, ppid;
	uint32_t tid, ptid;
	uint64_t time;
};

/* THROTTLE and UNTHROTTLE. */
struct pev_record_throttle {
	uint64_t time;
	uint64_t id;
	uint64_t stream_id;
};

struct pev_record_fork {
	uint32_t pid, ppid;
	uint32_t tid, ptid;
	uint64_t time;
};

struct pev_record_mmap2 {
	uint32_t pid, tid;
	uint64_t addr;
	uint64_t len;
	uint64_t pgoff;
	uint32_t maj, min;
	uint64_t ino;
	uint64_t ino_generation;
	uint32_t prot, flags;
	char filename[];
};

struct pev_record_aux {
	uint64_t aux_offset;
	uint64_t aux_size;
	uint64_t flags;
};

struct pev_record_itrace_start {
	uint32_t pid, tid;
};

struct pev_record_lost_samples {
	uint64_t lost;
};

struct pev_record_switch_cpu_wide {
	uint32_t next_prev_pid;
	uint32_t next_prev_tid;
};

/* One record: its type and misc from the header, its body (the member
 * that type names; SWITCH has none, and unknown types are only skipped),
 * and its samples (NULL where the sample type has none). */
struct pev_event {
	uint32_t type;
	uint16_t misc;
	union {
		const struct pev_record_mmap *mmap;
		const struct pev_record_lost *lost;
		const struct pev_record_comm *comm;
		const struct pev_record_exit *exit;
		const struct pev_record_throttle *throttle;
		const struct pev_record_fork *fork;
		const struct pev_record_mmap2 *mmap2;
		const struct pev_record_aux *aux;
		const struct pev_record_itrace_start *itrace_start;
		const struct pev_record_lost_samples *lost_samples;
		const struct pev_record_switch_cpu_wide *switch_cpu_wide;
	} record;
	struct {
		const uint32_t *pid;
		const uint32_t *tid;
		/* The time in perf_event format, and converted to TSC. */
		const uint64_t *time;
		uint64_t tsc;
		const uint64_t *id;
		const uint64_t *stream_id;
		const uint32_t *cpu;
		const uint64_t *identifier;
	} sample;
};

static inline void pev_event_init(struct pev_event *event)
{
	event->type = 0;
	event->misc = 0;
	event->record.mmap = NULL;
	event->sample.pid = NULL;
	event->sample.tid = NULL;
	event->sample.time = NULL;
	event->sample.tsc = 0;
	event->sample.id = NULL;
	event->sample.stream_id = NULL;
	event->sample.cpu = NULL;
	event->sample.identifier = NULL;
}

/* Converts a perf_event time to TSC (time 0, which perf gives synthesized
 * records, is TSC 0) and back.  Both return zero, -pte_internal if an
 * argument is NULL, -pte_bad_config if config is too small or its
 * time_mult is zero. */
IPT_API int pev_time_to_tsc(uint64_t *tsc, uint64_t time,
			    const struct pev_config *config);
IPT_API int pev_time_from_tsc(uint64_t *time, uint64_t tsc,
			      const struct pev_config *config);

/* Reads the record at begin, which ends before end, into event.  Returns
 * its size in bytes; -pte_internal for NULL arguments or end < begin;
 * -pte_eos if the record does not fit (or has type zero, which is where a
 * stream's zero padding starts); -pte_nosync if its header size is smaller
 * than the header or differs from what body and samples take;
 * -pte_bad_packet if a file or command name runs to the end of the
 * record; -pte_bad_config if config is too small, its time_mult is zero,
 * its time_shift 64 or more, or its sample configuration names a sample
 * type without PERF_SAMPLE_IDENTIFIER.  Records of types it does not know
 * are skipped whole (only type and misc are set), if their size is a
 * multiple of 8 as perf pads them (-pte_nosync otherwise: the next record
 * would be misaligned). */
IPT_API int pev_read(struct pev_event *event, const uint8_t *begin,
		     const uint8_t *end, const struct pev_config *config);

/* Writes event to [begin, end).  Returns the number of bytes written;
 * -pte_internal for NULL arguments or end < begin; -pte_bad_opc for a type
 * pev_read would only skip; -pte_eos if it does not fit; -pte_bad_packet
 * if the record grows beyond 64 KiB; -pte_bad_config if the samples the
 * event has are not those config's sample type asks for, or as for
 * pev_read. */
IPT_API int pev_write(const struct pev_event *event, uint8_t *begin,
		      uint8_t *end, const struct pev_config *config);

#ifndef IPT_NO_STDIO
/* >>api-sb: sideband sessions
 * Specified by libipt's libipt-sb.h (sideband/include/libipt-sb.h.in; no
 * man pages).
 *
 * A session serves one trace decoder.  It holds sideband decoders, one per
 * sideband stream, ordered by the time of their next record, and a process
 * context (an image) per pid.  pt_sb_event() gives the session each event
 * the trace decoder reports: records up to the event's time are printed
 * and applied, and a primary decoder may then switch the trace decoder's
 * image to another process's.  Secondary decoders keep their processes'
 * images up to date but never switch.  Sideband reads files (the records
 * name the files a process mapped) and prints: hosted builds only. */

#include <stdio.h>

#define LIBIPT_SB_VERSION_MAJOR LIBIPT_VERSION_MAJOR
#define LIBIPT_SB_VERSION_MINOR LIBIPT_VERSION_MINOR
#define LIBIPT_SB_VERSION_PATCH LIBIPT_VERSION_PATCH
#define LIBIPT_SB_VERSION LIBIPT_VERSION

#ifndef pt_sb_export
#define pt_sb_export
#endif

struct pt_sb_session;
struct pt_sb_context;

/* Warnings a sideband decoder reports (positive; errors are -pte_*). */
enum pt_sb_error_code {
	ptse_ok,
	/* Sideband records were lost (PERF_RECORD_LOST). */
	ptse_lost,
	/* Trace was lost (a truncated PERF_RECORD_AUX). */
	ptse_trace_lost,
	/* A mapping could not be added to an image and was ignored. */
	ptse_section_lost
};

/* A message for a warning code; "bad errcode" for others. */
IPT_API const char *pt_sb_errstr(enum pt_sb_error_code errcode);

/* What a sideband decoder prints of a record (pt_sb_event, pt_sb_dump).
 * Zero prints nothing. */
enum pt_sb_print_flag {
	ptsbp_compact = 1 << 0,
	ptsbp_verbose = 1 << 1,
	/* The sideband file's name, and the record's offset in it. */
	ptsbp_filename = 1 << 2,
	ptsbp_file_offset = 1 << 3,
	/* The record's time stamp. */
	ptsbp_tsc = 1 << 4
};

/* pt_sb_alloc: a session; new process images get their file sections
 * from iscache if it is not NULL.  NULL if out of memory.  pt_sb_free
 * frees the session with its decoders, contexts and kernel image.
 * pt_sb_iscache: the section cache given at allocation.
 * pt_sb_kernel_image: the kernel's image, which every new process image
 * starts as a copy of (e.g. sections from a kernel core dump). */
IPT_API struct pt_sb_session *
pt_sb_alloc(struct pt_image_section_cache *iscache);
IPT_API void pt_sb_free(struct pt_sb_session *session);
IPT_API struct pt_image_section_cache *
pt_sb_iscache(struct pt_sb_session *session);
IPT_API struct pt_image *pt_sb_kernel_image(struct pt_sb_session *session);

/* Called on each error (negative errcode) and warning (positive
 * enum pt_sb_error_code) a sideband decoder meets, with the sideband file
 * and the offset of the record in it.  Returns zero or a -pte_* code. */
typedef int(pt_sb_error_notifier_t)(int errcode, const char *filename,
				    uint64_t offset, void *priv);

/* Installs notifier (NULL: none); returns the one it replaces. */
IPT_API pt_sb_error_notifier_t *
pt_sb_notify_error(struct pt_sb_session *session,
		   pt_sb_error_notifier_t *notifier, void *priv);

/* Fetches the first record of each decoder added since the last call.  A
 * decoder whose first fetch fails is dropped (its notifier has told why).
 * Returns zero, -pte_invalid without a session. */
IPT_API int pt_sb_init_decoders(struct pt_sb_session *session);

/* Gives the session an event of the trace decoder (size: sizeof(*event)
 * as the caller knows it).  First every record not later than event->tsc
 * is printed to stream (if not NULL, by flags), applied and followed by
 * the next one, in time order across decoders; then every decoder sees the
 * event, so that it can place a context switch it put off.  A primary
 * decoder sets *image to the image the trace decoder is to use from now
 * on; it leaves *image alone otherwise.  A decoder whose callback fails is
 * removed.  Returns zero; -pte_invalid for a NULL session or event or a
 * size too small for the fields before reserved. */
IPT_API int pt_sb_event(struct pt_sb_session *session,
			struct pt_image **image,
			const struct pt_event *event, size_t size,
			FILE *stream, uint32_t flags);

/* Prints (by flags) and skips every record not later than tsc, in time
 * order.  Returns zero, -pte_invalid for a NULL session or stream. */
IPT_API int pt_sb_dump(struct pt_sb_session *session, FILE *stream,
		       uint32_t flags, uint64_t tsc);

/* A process context: a pid and its image.  Contexts count references:
 * pt_sb_ctx_get takes one (-pte_overflow beyond 65535), pt_sb_ctx_put
 * drops one and frees the context with the last (-pte_internal if none
 * was left).  Both return -pte_invalid for NULL.  pt_sb_ctx_image: the
 * context's image (NULL for NULL). */
IPT_API int pt_sb_ctx_get(struct pt_sb_context *context);
IPT_API int pt_sb_ctx_put(struct pt_sb_context *context);
IPT_API struct pt_image *pt_sb_ctx_image(const struct pt_sb_context *context);

/* Adds size bytes of filename from offset to context's image at vaddr,
 * through the session's section cache if it has one.  Returns zero or the
 * error pt_image_add_file / pt_iscache_add_file returns; -pte_internal
 * without a context. */
IPT_API int pt_sb_ctx_mmap(struct pt_sb_session *session,
			   struct pt_sb_context *context, const char *filename,
			   uint64_t offset, uint64_t size, uint64_t vaddr);

/* Sets *image to context's image, after telling the switch notifier.
 * Returns zero, the notifier's error, or -pte_internal for NULL. */
IPT_API int pt_sb_ctx_switch_to(struct pt_image **image,
				struct pt_sb_session *session,
				const struct pt_sb_context *context);

/* Called with the context pt_sb_ctx_switch_to switches to.  Returns zero
 * or a -pte_* code, which fails the switch. */
typedef int(pt_sb_ctx_switch_notifier_t)(const struct pt_sb_context *context,
					 void *priv);

/* Installs notifier (NULL: none); returns the one it replaces. */
IPT_API pt_sb_ctx_switch_notifier_t *
pt_sb_notify_switch(struct pt_sb_session *session,
		    pt_sb_ctx_switch_notifier_t *notifier, void *priv);

/* pt_sb_get_context_by_pid: pid's context, made (image "pid-<hex pid>", a
 * copy of the kernel image) if there is none.  pt_sb_find_context_by_pid:
 * pid's context or NULL.  Neither takes a reference.
 * pt_sb_remove_context: forgets context and drops the session's reference
 * (-pte_nosync if the session does not have it).  All return zero,
 * -pte_invalid for NULL arguments, -pte_nomem. */
IPT_API int pt_sb_get_context_by_pid(struct pt_sb_context **context,
				     struct pt_sb_session *session,
				     uint32_t pid);
IPT_API int pt_sb_find_context_by_pid(struct pt_sb_context **context,
				      struct pt_sb_session *session,
				      uint32_t pid);
IPT_API int pt_sb_remove_context(struct pt_sb_session *session,
				 struct pt_sb_context *context);

/* A sideband decoder of one's own: fetch reads the next record and gives
 * its time (-pte_eos at the end), apply applies the current record to
 * an event (image is NULL for secondary decoders), print prints it, dtor
 * frees priv.  All but dtor return zero or a -pte_* code. */
struct pt_sb_decoder_config {
	size_t size;
	int (*fetch)(struct pt_sb_session *session, uint64_t *tsc, void *priv);
	int (*apply)(struct pt_sb_session *session, struct pt_image **image,
		     const struct pt_event *event, void *priv);
	int (*print)(struct pt_sb_session *session, FILE *stream,
		     uint32_t flags, void *priv);
	void (*dtor)(void *priv);
	void *priv;
	uint32_t primary:1;
};

/* Adds a decoder; pt_sb_init_decoders() starts it.  Returns zero,
 * -pte_invalid for NULL arguments, -pte_nomem. */
IPT_API int pt_sb_alloc_decoder(struct pt_sb_session *session,
				 const struct pt_sb_decoder_config *config);

/* A decoder of Linux perf_event sideband (pt_sb_alloc_pevent_decoder).
 * filename: the sideband file, read from begin to end (zero: its end).
 * sysroot: prepended to the file names records map.  vdso_x64, vdso_x32,
 * vdso_ia32: files for [vdso] mappings of 64-bit, x32 and 32-bit
 * processes.  tsc_offset: applied this many ticks early.  kernel_start:
 * where kernel addresses begin (UINT64_MAX if ring 0 is not traced).
 * sample_type, time_*, sample_config: as in struct pev_config. */
struct pt_sb_pevent_config {
	size_t size;
	const char *filename;
	size_t begin;
	size_t end;
	const char *sysroot;
	const char *vdso_x64;
	const char *vdso_x32;
	const char *vdso_ia32;
	uint64_t tsc_offset;
	uint64_t sample_type;
	uint64_t kernel_start;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	uint32_t primary:1;
	struct pev_sample_config *sample_config;
};

/* Loads config->filename and adds a perf_event decoder for it.  Returns
 * zero; -pte_invalid for NULL arguments, a config smaller than libipt
 * 2.0's, no filename, or end <= begin; -pte_bad_file if the file cannot
 * be read; -pte_nomem. */
IPT_API int pt_sb_alloc_pevent_decoder(struct pt_sb_session *session,
				       const struct pt_sb_pevent_config *config);

/* ipt_ extensions: a session whose memory (the session, its contexts and
 * images, decoders and sideband copies) comes from allocator (NULL: the
 * default), as the ipt_*_with constructors of >>api-alloc; and a
 * perf_event decoder reading [begin, end) from memory, copied, instead of
 * config->filename (which, if not NULL, names it in messages).  Returns
 * as pt_sb_alloc_pevent_decoder, -pte_invalid also for end < begin. */
/* Ref: pt_sb_alloc (libipt-sb.h), with an allocator (>>api-alloc). */
IPT_API struct pt_sb_session *
ipt_sb_alloc_with(struct pt_image_section_cache *iscache,
		  const struct ipt_allocator *allocator);
/* Ref: pt_sb_alloc_pevent_decoder (libipt-sb.h), from memory. */
IPT_API int
ipt_sb_alloc_pevent_decoder_mem(struct pt_sb_session *session,
				const struct pt_sb_pevent_config *config,
				const uint8_t *begin, const uint8_t *end);
#endif /* IPT_NO_STDIO */
/* >>api-seg: ipt_ extensions: segments, for decoding one trace in pieces
 *
 * Every PSB starts a segment a decoder can start at (pt_blk_sync_set,
 * pt_insn_sync_set): the PSB+ that follows states tracing on or off, the
 * IP (FUP), the execution mode, CR3, VMCS and time.  ipt_seg_index finds
 * them all in one pass without decoding code, so the segments can go to
 * as many decoders as there are cores, or machines.
 *
 * STITCHING.  What a decoder started at a PSB reports is what a decoder
 * running through from an earlier PSB reports from the point where the
 * two are in the same state, and only from there: until then the one
 * from before may still hold a return stack, events bound to the last
 * block, a time calibration learned from earlier MTC/CYC packets, or an
 * error it is recovering from.  So segment k's decoder runs past the
 * next segment's PSB until, at a point between two calls, it is in a
 * state the next segment's decoder was in at a point between two calls;
 * the output is segment k's up to that point and segment k+1's from its
 * matching point on.  ipt_blk_converged / ipt_insn_converged decide; the
 * next segment's states are kept with ipt_blk_save / ipt_insn_save (a
 * decoder started afresh at the PSB and stepped as the segment's own
 * decoder is gives the same states, so the two need not wait for each
 * other).  The compared state is everything that decides what a decoder
 * returns next: the event decoder's position and queue, last IP, time,
 * the current event, the address space, mode, return stack, the status
 * held back and the error bookkeeping of pt_blk_resync; not the caches,
 * and not the image, which must give both decoders the same code.
 *
 * The return stack is the one thing that may differ: a decoder started
 * at a PSB begins with an empty one, the decoder from before keeps the
 * returns of calls made before the PSB.  Only returns from calls seen
 * since the last PSB may be compressed, and a decoder never needs to keep
 * anything across a PSB (Intel SDM Vol. 3C, 33.2.1.2 and 33.3.7), so in a
 * trace as specified the older entries are never used.  A join where the
 * later decoder's stack is only the top part of the earlier one's (2) is
 * therefore exact unless a decoder finds its return stack empty: from the
 * first such join on, every decoder whose output is used lacks older
 * entries (a later join can only lose more).  Such a decoder returns what
 * one with all entries returns up to the call where it finds its return
 * stack empty (-pte_retstack_empty); from that call on, the output is
 * void, and the decoder before that first join must go on from its own
 * start to the end of the trace, its output taking over at that call.
 * A decoder from before that never reaches a state of the next segment's
 * simply decodes that segment too; the output is exact either way, only
 * the parallelism is lost. */
struct ipt_segment {
	/* The PSB, and where the next PSB (or the end of the trace) is. */
	uint64_t offset;
	uint64_t end;

	/* What the PSB+ states, where its flag below says it has it. */
	uint64_t ip;		/* FUP: the IP tracing goes on at */
	uint64_t cr3;		/* PIP */
	uint64_t vmcs;		/* VMCS */
	uint64_t tsc;		/* TSC */
	uint16_t ctc;		/* TMA: the crystal clock value ... */
	uint16_t fc;		/* ... and the fast counter */
	uint8_t cbr;		/* CBR: the core:bus ratio */
	enum pt_exec_mode mode;	/* MODE.Exec; ptem_unknown without one */

	/* Tracing is on at the PSB: the PSB+ has a FUP, @ip is valid. */
	uint32_t enabled:1;
	uint32_t has_cr3:1;
	/* PIP.NR: CR3 is a VMX guest's. */
	uint32_t nr:1;
	uint32_t has_vmcs:1;
	uint32_t has_tsc:1;
	uint32_t has_tma:1;
	uint32_t has_cbr:1;
	/* A TSX transaction is in progress (MODE.TSX InTX). */
	uint32_t intx:1;
	/* The PSB+ ends in an OVF instead of PSBEND. */
	uint32_t overflow:1;
	/* The PSB+ does not end: a packet in it does not decode, or the
	 * trace ends first. */
	uint32_t broken:1;
};

/* Find the PSBs of config's trace, in order, as pt_pkt_sync_forward
 * finds them, and fill in up to max segments, one per PSB.  Reads each
 * PSB+ and nothing else.  Needs no memory; segs may be NULL when max is
 * zero, to count.  Returns the number of PSBs (more than max if segs was
 * too short); -pte_invalid if config is NULL or segs is NULL with max not
 * zero; -pte_bad_config for a bad config.  Ref: libipt's ptseg tool finds
 * one segment the same way (pt_pkt_sync_backward/_forward); the PSB+
 * state is ipt.h only. */
IPT_API int64_t ipt_seg_index(const struct pt_config *config,
			      struct ipt_segment *segs, size_t max);

/* A decoder's state, as ipt_blk_converged and ipt_insn_converged compare
 * it: ipt_*_state_size() bytes, aligned as malloc's are.  ipt_*_save
 * copies it to state; -pte_invalid if an argument is NULL or size is too
 * small.  Ref: ipt.h only. */
IPT_API size_t ipt_blk_state_size(void);
IPT_API int ipt_blk_save(const struct pt_block_decoder *decoder, void *state,
			 size_t size);
IPT_API size_t ipt_insn_state_size(void);
IPT_API int ipt_insn_save(const struct pt_insn_decoder *decoder,
			  void *state, size_t size);

/* Is decoder, between two calls, in the state saved in state, so that
 * with the same trace and code it returns from now on exactly what the
 * decoder that was saved returned after it was saved?  1: yes; 2: yes,
 * unless from here on a decoder finds its return stack empty (see
 * STITCHING above); 0: not for certain.  -pte_invalid if an argument is
 * NULL.  The decoders are compared, not their configurations: both must
 * decode the same trace with the same flags.  Ref: ipt.h only (libipt's
 * howto leaves stitching to the user). */
IPT_API int ipt_blk_converged(const struct pt_block_decoder *decoder,
			      const void *state);
IPT_API int ipt_insn_converged(const struct pt_insn_decoder *decoder,
			       const void *state);

/* ---- decoding in pieces: the split, its workers, the stitch ----
 *
 * The STITCHING rule above, as a helper that owns none of the decoding:
 * the caller's own decode loop (sync, events, instructions or blocks,
 * errors, what it prints or counts) runs through struct ipt_seg_loop, one
 * step at a time.  ipt_seg_split_alloc cuts the trace at PSBs spread over
 * it into pieces; ipt_seg_decode runs a piece on a loop of the
 * caller's until it joins a later piece or the trace ends; the stitch
 * (ipt_seg_stitch_next) says which part of which piece's output comes
 * next, and when a piece must be decoded once more (ipt_seg_rerun).
 *
 * Output is counted in marks: a number the loop chooses that grows with
 * what it has output (bytes printed, results logged), from zero at the
 * start of each piece.  The outputs, cut and put together as the stitch
 * says, are what the loop outputs when it decodes the whole trace from the
 * start, exactly.
 *
 * Threads are the caller's.  ipt_seg_decode of different pieces may run
 * at once on different threads, each with a worker and loops of its own:
 * it writes only its piece and reads of the others only where they begin.
 * A piece's results may be read (ipt_seg_stitch_next) once its
 * ipt_seg_decode has returned, with whatever the caller synchronizes
 * threads with (a mutex, a join).  Nothing here waits or locks. */

/* What a step did (struct ipt_seg_loop's step). */
enum ipt_seg_step {
	/* Go on. */
	ipt_seg_go,
	/* The loop is done: the end of the trace, or it gave up. */
	ipt_seg_done,
	/* Go on; the call the step made returned -pte_retstack_empty. */
	ipt_seg_retstack
};

/* The caller's decode loop, as ipt_seg_decode drives it.  loop is the
 * caller's object: a decoder and what the loop keeps of its own. */
struct ipt_seg_loop {
	/* Start loop at the PSB at offset (pt_*_sync_set), or, with first
	 * set, as a decode of the whole trace starts (on a decoder that has
	 * seen nothing of the trace; it synchronizes forward).  Its output
	 * starts at mark zero.  Returns zero; a negative pte_* code if it
	 * cannot start there. */
	int (*start)(void *loop, uint64_t offset, int first);

	/* Up to n steps (n > 0), each one call into the decoder and what
	 * the loop does with its result.  Returns an enum ipt_seg_step:
	 * ipt_seg_go after n steps; ipt_seg_done as soon as the loop is
	 * done; ipt_seg_retstack right after a step whose call found the
	 * return stack empty, with the output mark before that step in
	 * *mark.  (Taking steps by the dozen keeps a tight loop tight.) */
	int (*step)(void *loop, unsigned int n, uint64_t *mark);

	/* Where is the loop?  *mark: its output mark.  Returns 1, with the
	 * decoder's trace position (pt_*_get_offset) in *offset, if it is
	 * between two calls into the decoder at a point where it may join
	 * another loop (not synchronizing, not handling an error); zero if
	 * not. */
	int (*at)(void *loop, uint64_t *offset, uint64_t *mark);

	/* Save the loop's state in state (state_size bytes, as given to
	 * ipt_seg_split_alloc, aligned as malloc's are): the decoder's
	 * (ipt_*_save) and whatever of the loop's own decides what it
	 * outputs next.  Returns zero, or a negative pte_* code. */
	int (*save)(const void *loop, void *state);

	/* Is the loop in the state saved in state?  As ipt_*_converged (1,
	 * 2, 0), for the loop's own part too.  When it says yes, the piece
	 * joins there: it may keep what it needs of state (counts the mark
	 * does not give). */
	int (*same)(void *loop, const void *state);
};

/* A piece's results, once ipt_seg_decode has returned. */
enum { ipt_seg_rserr_max = 64 };
struct ipt_seg_piece {
	/* Its PSB; the first piece (zero here) synchronizes instead. */
	uint64_t begin;
	/* Its output mark where it stopped. */
	uint64_t end;
	/* It joined piece join_to, whose output goes on at mark join_at;
	 * join as ipt_*_converged (1, 2), zero if it did not join. */
	int join;
	size_t join_to;
	uint64_t join_at;
	/* Its loop could not start at its PSB. */
	int failed;
	/* The output marks before the steps that found the return stack
	 * empty, the first ipt_seg_rserr_max of nrserr. */
	size_t nrserr;
	uint64_t rserr[ipt_seg_rserr_max];
};

struct ipt_seg_split;
struct ipt_seg_worker;

/* Cut config's trace into at most max_pieces pieces (at least one), at
 * PSBs spread over it: pieces alike up to the middle, smaller after it,
 * the last few a small part of the first, so that threads taking them in
 * order end about together; for loops as ops describes (copied)
 * whose states take state_size bytes.  Memory comes from allocator (NULL:
 * the default): the split, its pieces, and its workers' states.  NULL if
 * an argument is NULL or zero, config is bad, or memory runs out.  Ref:
 * ipt.h only. */
IPT_API struct ipt_seg_split *
ipt_seg_split_alloc(const struct pt_config *config, size_t max_pieces,
		    const struct ipt_seg_loop *ops, size_t state_size,
		    const struct ipt_allocator *allocator);
/* NULL is fine. */
IPT_API void ipt_seg_split_free(struct ipt_seg_split *split);

/* The number of pieces; piece idx (NULL if idx is out of range). */
IPT_API size_t ipt_seg_split_count(const struct ipt_seg_split *split);
IPT_API const struct ipt_seg_piece *
ipt_seg_split_piece(const struct ipt_seg_split *split, size_t idx);

/* A worker: the states of the next piece's start, for one thread.  NULL
 * if split is NULL or memory runs out.  Free it before its split; NULL is
 * fine. */
IPT_API struct ipt_seg_worker *
ipt_seg_worker_alloc(const struct ipt_seg_split *split);
IPT_API void ipt_seg_worker_free(struct ipt_seg_worker *worker);

/* Decode piece idx on loop until it joins a later piece or its loop is
 * done, and record the piece's results.  probe is a second loop of the
 * same kind (its decoder's configuration and code the same), which
 * worker starts at the next pieces' PSBs to learn their states.  A
 * worker keeps what it learned from piece to piece; loop and probe may
 * be used again for any piece.  Returns zero; -pte_invalid if an argument
 * is NULL or idx is out of range; a negative pte_* code from the loop's
 * save.  A piece whose loop cannot start is failed, not an error. */
IPT_API int ipt_seg_decode(struct ipt_seg_worker *worker, size_t idx,
			   void *loop, void *probe);

/* Decode piece idx once more, from its start to the end of the trace
 * (the stitch asks for it, see below): loop is started as the piece
 * starts and stepped until it is done.  Returns zero; -pte_invalid as
 * ipt_seg_decode; a negative pte_* code if the loop cannot start. */
IPT_API int ipt_seg_rerun(const struct ipt_seg_split *split, size_t idx,
			  void *loop);

/* Where the stitch is.  Before each call of ipt_seg_stitch_next, piece
 * wait must have been decoded (its ipt_seg_decode returned). */
struct ipt_seg_stitch {
	size_t wait;
	/* The rest is the stitch's own. */
	size_t idx, again;
	uint64_t at, end, since;
	int phase;
};

/* A part of a piece's output: marks [from, to) of piece idx. */
struct ipt_seg_range {
	size_t idx;
	uint64_t from, to;
};

IPT_API void ipt_seg_stitch_init(struct ipt_seg_stitch *stitch);

/* The next part of the output.  Returns 1 with range: output piece
 * range->idx's marks [from, to) (possibly none; the pieces come in
 * order, each once); 2: decode piece range->idx once more to the end
 * (ipt_seg_rerun) and output what comes after its first range->from
 * marks, and that is all; zero: that was all.  -pte_invalid if an
 * argument is NULL.
 *
 * The rule: the pieces follow their joins from the first piece on, each
 * from the mark its predecessor joined it at.  From the first join whose
 * return stacks differ (2) on, every loop whose output is used lacks
 * older return stack entries: its output stands up to the first step
 * that found the return stack empty; from there on, and if such a chain
 * reaches a piece that could not start, the piece before that first
 * join is decoded once more. */
IPT_API int ipt_seg_stitch_next(const struct ipt_seg_split *split,
				struct ipt_seg_stitch *stitch,
				struct ipt_seg_range *range);

/* >>api-cov: ipt_ coverage for fuzzers: a trace to an edge bitmap */

/* A coverage decoder follows the flow of execution as a block decoder does
 * (it holds one) and turns every control-flow edge the trace implies into
 * a counter in an AFL-style bitmap: an array of 8-bit counters of any
 * power-of-two size, indexed by a hash of the edge's (from, to).
 *
 * The edges, by kind:
 *   ipt_cov_taken, ipt_cov_not_taken  a conditional branch: from its IP to
 *                                     where it went (a taken branch to the
 *                                     next instruction counts as not taken)
 *   ipt_cov_jump, ipt_cov_call        an indirect near jump or call (also
 *                                     JMPABS): from its IP to the target
 *   ipt_cov_return                    a near return, compressed or not
 *   ipt_cov_far                       a far transfer (far call, jump and
 *                                     return, SYSCALL, IRET, INT ...)
 *   ipt_cov_async                     an interrupt or exception: from the
 *                                     interrupted IP to the handler
 *   ipt_cov_enable                    tracing enabled: from 0 to the IP
 *   ipt_cov_disable                   tracing disabled: from the IP where
 *                                     it would resume (0 if unknown) to 0
 * A branch whose destination the trace does not tell (it disabled tracing
 * with its IP suppressed, or an overflow or error followed) makes no edge.
 * Direct jumps and calls are implied by the code, not the trace, and make
 * none either.
 *
 * struct ipt_cov_config selects what is counted:
 *   kinds    ipt_cov_kind bits; 0 means ipt_cov_all
 *   flags    ipt_cov_saturate: counters stop at 255 instead of wrapping;
 *            ipt_cov_libxdc: libxdc's bitmap: conditional branches only
 *            (kinds is ignored), wrapping counters;
 *            ipt_cov_pause: missing code is a pause (below)
 *   range    up to 4 IP ranges [begin, end); with nranges > 0 an edge
 *            counts only if its from (for enable edges: its to) lies in
 *            one of them, as libxdc counts branches in its ranges
 *   edge     if not NULL, called for each edge that counts
 *   block    if not NULL, called each time code is decoded into the block
 *            decoder's run cache: the run from begin to the IP of its last
 *            instruction, in the current address space (again after the
 *            cache dropped it or the image changed)
 *
 * The index of an edge is (mix(to) ^ (mix(from) >> 1)) modulo the bitmap
 * size, where mix(v) = (v ^ (v >> 31)) * 0x7fb5d329728ea185 in 64 bits:
 * libxdc's, so that in ipt_cov_libxdc mode the bitmap is byte for byte
 * the one libxdc makes.
 *
 * One decoder decodes trace after trace: ipt_cov_set_trace points it at
 * the next one (and clears the bitmap if asked); its caches stay warm and
 * the call allocates nothing.  ipt_cov_set_ring does so for a wrapped
 * ring buffer in two pieces, as ipt_blk_set_ring (>>api-buffer).  The
 * caches are a block decoder's and follow the image as its do
 * (ipt_image_invalidate and section changes drop them);
 * ipt_cov_set_cache_limit bounds the run cache as ipt_blk_set_cache_limit
 * does.  Decoding allocates only while the run
 * cache grows towards that limit (see >>api-blk-ext), and once for the
 * TNT memo.
 *
 * The TNT memo remembers, per place in the code and the next few TNT
 * bits, which edges those bits make and where the flow goes on, so that
 * a run of conditional branches costs one look-up once it has been seen;
 * a compressed return ends an entry when it returns to an address pushed
 * before the entry began, the flow going on where the return stack says.
 * It reads the bits of TNT packets in a row (PADs between them too) and
 * the TIPs between them straight from the trace, across packet borders.
 * Anything else (events, other packets, a return with nothing on the
 * return stack, missing code) takes the exact path, and the memo is
 * tagged as the run cache is, so that the edges and bitmap are the same
 * with it or without.
 * It is one table (with an arena for what entries hold beyond what a hit
 * reads) allocated small on first use that grows as it fills,
 * to at most IPT_COV_MEMO_LIMIT bytes (32 MiB) or what
 * ipt_cov_set_memo_limit sets (a growth where the old table and the new
 * one do not fit in the limit together, the last one or two, frees the
 * old one first and starts empty; a memo whose arena is full even when
 * compacted drops every other entry); setting a limit empties it, and a
 * limit below 16 entries (5 KiB, 21 KiB with an edge callback) turns it
 * off (it returns -pte_invalid without a decoder).  Code the memo covers
 * is not read again, so the block callback, told of runs recorded in the
 * run cache, may hear of fewer runs with it than without.
 * ipt_cov_status.memo_bits counts the TNT bits it took.
 *
 * ipt_cov_decode decodes the whole trace and returns 0, or -pte_invalid.
 * An error in the trace (or code that cannot be read or decoded) costs the
 * trace up to the next PSB, as in a block decoder; errors, the first and
 * last error code and the bytes skipped are counted in struct
 * ipt_cov_status (ipt_cov_get_status).  Code that runs on without trace
 * (a jump to itself) is given up on as IPT_COV_IDLE_MAX says, with the
 * error -pte_bad_query.  A branch's edge counts once the flow is seen to get to
 * its destination: the next block has an instruction, or an event says
 * where the branch went.
 *
 * Streaming (>>api-buffer): ipt_cov_extend moves the trace's end as
 * ipt_blk_extend does.  While more may come, ipt_cov_decode stops where
 * the trace ends for now and returns -ipt_pte_need_more; once the end
 * has moved, the next ipt_cov_decode goes on, and the bitmap and edges
 * are those of decoding the whole trace at once.  Until the last
 * ipt_cov_extend (more zero) the decode takes the block decoder's
 * pt_blk_next path only, without the run walk and the TNT memo, which
 * count edges before they know the trace goes on.
 *
 * ipt_cov_start_at starts the decode at @offset in @state, as
 * ipt_blk_start_at (>>api-start); the next ipt_cov_decode goes on from
 * there.  No branch is pending at the start: a branch taken before it
 * whose destination lies after it counts in neither decode.  It returns
 * zero or what ipt_blk_start_at returns on error.  ipt_cov_extend and
 * ipt_cov_start_at return -pte_invalid without a decoder.
 *
 * With ipt_cov_pause, code the image cannot supply stops the decode as it
 * stops pt_blk_next (>>api-fault, with ipt_blk_set_wait_for_code on):
 * ipt_cov_decode returns -pte_nomap and ipt_cov_get_fault says which
 * address space and address (as ipt_blk_get_fault); once the caller has
 * made that memory readable (and invalidated what the image cached of the
 * page), the next ipt_cov_decode goes on where it stopped, and the bitmap
 * ends up as after a decode with all code present.  Code still missing
 * then is an error like any other, as missing code always is without
 * ipt_cov_pause.
 *
 * ipt_cov_alloc_decoder returns NULL if the configuration is invalid or
 * memory is short; set_bitmap returns -pte_invalid for a size that is not
 * a power of two below 2^32; the others -pte_invalid without a decoder. */

/* When a coverage decode gives up on code that runs without trace (a jump
 * to itself, a loop of direct jumps and calls).  The rule: count the
 * instructions of each block pt_blk_next returns; once the count is above
 * IPT_COV_IDLE_MAX the decode gives up (the error -pte_bad_query, after
 * that block); the count starts again at zero after a block that ends in
 * a branch that used trace (a conditional branch, a return, an indirect
 * or far branch: one that makes an edge of its own) and at each event.
 * So it bounds the instructions from one use of the trace to the next,
 * the branch that uses it included: code that does not loop runs no more
 * than its own size that way.  The coverage decoder's ways that make no
 * blocks (its run walk, its TNT memo) keep the same count, and leave
 * code that would take it above the limit to pt_blk_next.  Blocks end
 * where pt_blk_next ends them: only for code that runs more than the
 * limit without trace and then uses trace (more code in a row than the
 * limit) can where they end decide whether the decode gives up before
 * that use or after it; the edges up to there are the same either way.
 *
 * Here, not with the implementation: a program that derives the same
 * edges from pt_blk_next's blocks and events gives up where the decode
 * does. */
#ifndef IPT_COV_IDLE_MAX
#define IPT_COV_IDLE_MAX 0x40000
#endif

enum ipt_cov_kind {
	ipt_cov_taken = 1 << 0,
	ipt_cov_not_taken = 1 << 1,
	ipt_cov_jump = 1 << 2,
	ipt_cov_call = 1 << 3,
	ipt_cov_return = 1 << 4,
	ipt_cov_far = 1 << 5,
	ipt_cov_async = 1 << 6,
	ipt_cov_enable = 1 << 7,
	ipt_cov_disable = 1 << 8,
	ipt_cov_all = (1 << 9) - 1
};

enum ipt_cov_flag {
	ipt_cov_saturate = 1 << 0,
	ipt_cov_libxdc = 1 << 1,
	ipt_cov_pause = 1 << 2
};

enum { ipt_cov_max_ranges = 4 };

struct ipt_cov_range {
	uint64_t begin;
	uint64_t end;
};

struct ipt_cov_config {
	uint32_t kinds;
	uint32_t flags;
	uint32_t nranges;
	struct ipt_cov_range range[ipt_cov_max_ranges];
	void (*edge)(void *context, uint64_t from, uint64_t to,
		     enum ipt_cov_kind kind);
	void (*block)(void *context, uint64_t begin, uint64_t last);
	void *context;
};

struct ipt_cov_status {
	/* Edges counted, over all traces. */
	uint64_t edges;
	/* Errors, and trace bytes skipped because of them. */
	uint64_t errors;
	uint64_t skipped;
	/* The first and the last error (negative pte_* codes), 0 if none. */
	int first_error;
	int last_error;
	/* TNT bits taken through the TNT memo, over all traces. */
	uint64_t memo_bits;
};

struct ipt_cov_decoder;

/* Ref: ipt.h only, described above.  The flow is pt_blk_next(3)'s; the
 * bitmap index and libxdc mode follow libxdc (nyx-fuzz/libxdc). */
IPT_API struct ipt_cov_decoder *
ipt_cov_alloc_decoder(const struct pt_config *config,
		      const struct ipt_cov_config *cov);
IPT_API struct ipt_cov_decoder *
ipt_cov_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_cov_config *cov,
			   const struct ipt_allocator *allocator);
IPT_API void ipt_cov_free_decoder(struct ipt_cov_decoder *decoder);
IPT_API int ipt_cov_set_image(struct ipt_cov_decoder *decoder,
			      struct pt_image *image);
IPT_API struct pt_image *ipt_cov_get_image(struct ipt_cov_decoder *decoder);
IPT_API int ipt_cov_set_bitmap(struct ipt_cov_decoder *decoder,
			       uint8_t *bitmap, size_t size);
IPT_API int ipt_cov_set_trace(struct ipt_cov_decoder *decoder,
			      const uint8_t *begin, const uint8_t *end,
			      int clear_bitmap);
IPT_API int ipt_cov_set_ring(struct ipt_cov_decoder *decoder,
			     const uint8_t *older, const uint8_t *older_end,
			     const uint8_t *newer, const uint8_t *newer_end,
			     int clear_bitmap);
IPT_API int ipt_cov_decode(struct ipt_cov_decoder *decoder);
IPT_API int ipt_cov_extend(struct ipt_cov_decoder *decoder,
			   const uint8_t *end, int more);
IPT_API int ipt_cov_start_at(struct ipt_cov_decoder *decoder,
			     uint64_t offset,
			     const struct ipt_start_state *state);
IPT_API int ipt_cov_get_status(const struct ipt_cov_decoder *decoder,
			       struct ipt_cov_status *status);
IPT_API int ipt_cov_set_cache_limit(struct ipt_cov_decoder *decoder,
				    uint64_t bytes);
IPT_API int ipt_cov_set_memo_limit(struct ipt_cov_decoder *decoder,
				   uint64_t bytes);
/* As ipt_blk_set_cr3_filter (see >>api-vm): the edges of one address
 * space.  Leaving it is a disable edge, coming back an enable edge to the
 * first IP the trace gives there. */
IPT_API int ipt_cov_set_cr3_filter(struct ipt_cov_decoder *decoder,
				   uint64_t cr3);
IPT_API int ipt_cov_get_fault(const struct ipt_cov_decoder *decoder,
			      struct ipt_fault *fault, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* IPT_H */

/* ---- stop here if you only want the API ---- */

#ifdef IPT_IMPLEMENTATION
#ifndef IPT__IMPLEMENTED
#define IPT__IMPLEMENTED

/* ==== >>shim  memory, copying, the allocator ==============================
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

#if defined(__GNUC__) || defined(__clang__)
#define IPT__LIKELY(x) __builtin_expect(!!(x), 1)
#define IPT__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define IPT__UNUSED __attribute__((unused))
/* Keeps slow paths out of fast ones, so that those need no stack frame. */
#define IPT__NOINLINE __attribute__((noinline))
/* A coverage build defines it as plain inline: each forced copy would
 * count the same source branches again. */
#ifndef IPT__INLINE
#define IPT__INLINE __attribute__((always_inline)) inline
#endif
#else
#define IPT__LIKELY(x) (x)
#define IPT__UNLIKELY(x) (x)
#define IPT__UNUSED
#define IPT__NOINLINE
#ifndef IPT__INLINE
#define IPT__INLINE inline
#endif
#endif

/* A structure assignment, dst = src, that never becomes a call to a
 * memcpy the embedder may not have: compilers turn copies of large
 * structures into memcpy calls even with -ffreestanding -fno-builtin.
 * dst and src are lvalues of one type (the sizeof checks, unevaluated). */
#define IPT__COPY(dst, src)                                                  \
	do {                                                                 \
		(void) sizeof((dst) = (src));                                \
		IPT_MEMCPY(&(dst), &(src), sizeof(dst));                     \
	} while (0)

/* Under IPT_STATIC a program may use only some of the functions. */
#ifdef IPT_STATIC
#define IPT_DEF static IPT__UNUSED
#else
#define IPT_DEF
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* All memory goes through these four and the allocator they are given:
 * the one an object was made with (ipt_*_with), copied into the object.
 * NULL stands for the default, the IPT_MALLOC/IPT_REALLOC/IPT_FREE
 * macros.  Every object remembers the size of what it allocated, so the
 * free always gets the exact size. */
static void *ipt__default_alloc(void *context, size_t size)
{
	(void) context;
	return IPT_MALLOC(size);
}

static void ipt__default_free(void *context, void *ptr, size_t size)
{
	(void) context;
	(void) size;
	IPT_FREE(ptr);
}

static void *ipt__default_realloc(void *context, void *ptr, size_t old_size,
				  size_t new_size)
{
	(void) context;
	(void) old_size;
	return IPT_REALLOC(ptr, new_size);
}

/* Copies a caller's allocator into an object, or the default for NULL.
 * -pte_invalid if it lacks alloc or free. */
static IPT__UNUSED int ipt__allocator_init(struct ipt_allocator *dst,
					   const struct ipt_allocator *src)
{
	if (!src) {
		dst->alloc = ipt__default_alloc;
		dst->free = ipt__default_free;
		dst->context = NULL;
		dst->realloc = ipt__default_realloc;
		return 0;
	}
	if (!src->alloc || !src->free)
		return -pte_invalid;
	*dst = *src;
	return 0;
}

static IPT__UNUSED void *ipt__alloc(const struct ipt_allocator *a, size_t size)
{
	return size ? a->alloc(a->context, size) : NULL;
}

static IPT__UNUSED void *ipt__zalloc(const struct ipt_allocator *a,
				     size_t size)
{
	void *p = ipt__alloc(a, size);

	if (p)
		IPT_MEMSET(p, 0, size);
	return p;
}

static IPT__UNUSED void ipt__free(const struct ipt_allocator *a, void *ptr,
				  size_t size)
{
	if (ptr)
		a->free(a->context, ptr, size);
}

/* An object the caller frees with a call of one argument keeps the
 * allocator it came from in its member `allocator`; IPT__OWN(type) is the
 * size of such a type and where in it that member is, for ipt__own_alloc
 * and ipt__own_free.  A decoder whose struct has no room for it is in a
 * box: the decoder first (a pointer to it is one to the box), the
 * allocator after it. */
#define IPT__OWN(type) sizeof(type), offsetof(type, allocator)

/* A zeroed object of @size bytes from @allocator (NULL: the default),
 * which it keeps @at bytes in.  NULL if the allocator lacks alloc or
 * free, or memory runs out. */
static IPT__UNUSED void *ipt__own_alloc(const struct ipt_allocator *allocator,
					size_t size, size_t at)
{
	struct ipt_allocator a;
	uint8_t *obj;

	if (ipt__allocator_init(&a, allocator) < 0)
		return NULL;
	obj = (uint8_t *) ipt__zalloc(&a, size);
	if (obj)
		IPT_MEMCPY(obj + at, &a, sizeof(a));
	return obj;
}

/* Free an object of ipt__own_alloc with the allocator it keeps; NULL is
 * fine. */
static IPT__UNUSED void ipt__own_free(void *obj, size_t size, size_t at)
{
	struct ipt_allocator a;

	if (!obj)
		return;
	IPT_MEMCPY(&a, (uint8_t *) obj + at, sizeof(a));
	ipt__free(&a, obj, size);
}

/* An allocation that only grows a cache.  When it fails the caller does
 * without (reads uncached, decodes again): allocations that only grow a
 * cache never fail a decode (the policy stated in >>api-img-ext).  A test
 * may define IPT__CACHE_ALLOC_HOOK(inside) to learn which allocations these
 * are. */
#ifndef IPT__CACHE_ALLOC_HOOK
#define IPT__CACHE_ALLOC_HOOK(inside) ((void) 0)
#endif

static IPT__UNUSED void *ipt__alloc_cache(const struct ipt_allocator *a,
					  size_t size)
{
	void *p;

	IPT__CACHE_ALLOC_HOOK(1);
	p = ipt__alloc(a, size);
	IPT__CACHE_ALLOC_HOOK(0);
	return p;
}

static IPT__UNUSED void *ipt__zalloc_cache(const struct ipt_allocator *a,
					   size_t size)
{
	void *p = ipt__alloc_cache(a, size);

	if (p)
		IPT_MEMSET(p, 0, size);
	return p;
}

/* Resizes ptr from old_size to new_size bytes.  Without a realloc of the
 * allocator's own: a new block, the common part copied, the old one freed.
 * NULL, with ptr untouched, if memory runs out. */
static IPT__UNUSED void *ipt__realloc(const struct ipt_allocator *a,
				      void *ptr, size_t old_size,
				      size_t new_size)
{
	void *fresh;

	if (!ptr)
		return ipt__alloc(a, new_size);
	if (a->realloc)
		return a->realloc(a->context, ptr, old_size, new_size);
	fresh = ipt__alloc(a, new_size);
	if (fresh) {
		IPT_MEMCPY(fresh, ptr, old_size < new_size ? old_size
			   : new_size);
		ipt__free(a, ptr, old_size);
	}
	return fresh;
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
	X(pte_bad_cpu, "unknown cpu")                                        \
	X(ipt_pte_need_more, "end of trace for now: more may come")

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
	version.ext = "ipt.h-0.1.0";
	return version;
}

/* ==== >>cfg  configuration, CPU errata, address filters ==================
 * Copies a caller's pt_config in by its size, knows which errata each
 * CPU has, and answers address-filter questions. */

/* Copy a caller's configuration in.  The caller's structure may be older
 * (smaller) or newer (larger) than ours: copy what both know, zero what the
 * caller did not know.  Same rules as libipt's pt_config_from_user: a size
 * that does not even cover the trace buffer is -pte_bad_config, and so is a
 * missing or reversed buffer. */
static IPT__UNUSED int ipt__config_from_user(struct pt_config *config,
					     const struct pt_config *uconfig)
{
	size_t size;

	if (!config)
		return -pte_internal;
	if (!uconfig)
		return -pte_invalid;

	size = uconfig->size;
	if (size < offsetof(struct pt_config, decode))
		return -pte_bad_config;

	if (!uconfig->begin || !uconfig->end || uconfig->end < uconfig->begin)
		return -pte_bad_config;

	if (sizeof(*config) <= size)
		size = sizeof(*config);
	else
		IPT_MEMSET(((uint8_t *) config) + size, 0,
			   sizeof(*config) - size);

	IPT_MEMCPY(config, uconfig, size);
	config->size = size;
	return 0;
}

/* Which errata a CPU has.  Each set below is a combination shared by a
 * processor generation; the table maps family/model to a set.  Stepping
 * does not matter for any of them. */
enum ipt__erratum {
	IPT__E_BDM70 = 1 << 0,
	IPT__E_BDM64 = 1 << 1,
	IPT__E_SKD007 = 1 << 2,
	IPT__E_SKD022 = 1 << 3,
	IPT__E_SKD010 = 1 << 4,
	IPT__E_SKL014 = 1 << 5,
	IPT__E_APL12 = 1 << 6,
	IPT__E_APL11 = 1 << 7,
	IPT__E_SKL168 = 1 << 8,
	IPT__E_SKZ84 = 1 << 9
};

enum {
	/* Broadwell. */
	IPT__ESET_BDW = IPT__E_BDM70 | IPT__E_BDM64,
	/* Skylake, Kaby Lake, Coffee Lake, Comet Lake client. */
	IPT__ESET_SKL = IPT__E_BDM70 | IPT__E_SKD007 | IPT__E_SKD022 |
			IPT__E_SKD010 | IPT__E_SKL014 | IPT__E_SKL168,
	/* Skylake, Cascade Lake, Ice Lake server. */
	IPT__ESET_SKX = IPT__E_BDM70 | IPT__E_SKL014 | IPT__E_SKD022 |
			IPT__E_SKZ84,
	/* Sapphire Rapids and later servers. */
	IPT__ESET_SPR = IPT__E_BDM70 | IPT__E_SKD022 | IPT__E_SKZ84,
	/* Cannon Lake, Ice Lake, Tiger Lake client. */
	IPT__ESET_ICL = IPT__E_BDM70 | IPT__E_SKL014 | IPT__E_SKD022,
	/* Alder Lake, Raptor Lake, Meteor Lake and later client. */
	IPT__ESET_ADL = IPT__E_BDM70 | IPT__E_SKD022 | IPT__E_APL11,
	/* Goldmont. */
	IPT__ESET_GLM = IPT__E_APL12 | IPT__E_APL11,
	/* Goldmont Plus, Tremont and later Atoms. */
	IPT__ESET_GLP = IPT__E_APL11
};

struct ipt__cpu_errata {
	uint16_t family;
	uint8_t model;
	uint16_t set;
};

static const struct ipt__cpu_errata ipt__cpu_errata_table[] = {
	{ 0x6, 0x3d, IPT__ESET_BDW }, { 0x6, 0x47, IPT__ESET_BDW },
	{ 0x6, 0x4f, IPT__ESET_BDW }, { 0x6, 0x56, IPT__ESET_BDW },

	{ 0x6, 0x4e, IPT__ESET_SKL }, { 0x6, 0x5e, IPT__ESET_SKL },
	{ 0x6, 0x8e, IPT__ESET_SKL }, { 0x6, 0x9e, IPT__ESET_SKL },
	{ 0x6, 0xa5, IPT__ESET_SKL }, { 0x6, 0xa6, IPT__ESET_SKL },

	{ 0x6, 0x55, IPT__ESET_SKX }, { 0x6, 0x6a, IPT__ESET_SKX },
	{ 0x6, 0x6c, IPT__ESET_SKX },

	{ 0x6, 0x8f, IPT__ESET_SPR }, { 0x6, 0xcf, IPT__ESET_SPR },
	{ 0x6, 0xad, IPT__ESET_SPR }, { 0x6, 0xae, IPT__ESET_SPR },
	{ 0x13, 0x01, IPT__ESET_SPR },

	{ 0x6, 0x66, IPT__ESET_ICL }, { 0x6, 0x7d, IPT__ESET_ICL },
	{ 0x6, 0x7e, IPT__ESET_ICL }, { 0x6, 0x8c, IPT__ESET_ICL },
	{ 0x6, 0x8d, IPT__ESET_ICL }, { 0x6, 0xa7, IPT__ESET_ICL },
	{ 0x6, 0xa8, IPT__ESET_ICL },

	{ 0x6, 0x97, IPT__ESET_ADL }, { 0x6, 0x9a, IPT__ESET_ADL },
	{ 0x6, 0xba, IPT__ESET_ADL }, { 0x6, 0xb7, IPT__ESET_ADL },
	{ 0x6, 0xbf, IPT__ESET_ADL }, { 0x6, 0xc5, IPT__ESET_ADL },
	{ 0x6, 0xc6, IPT__ESET_ADL }, { 0x6, 0xb5, IPT__ESET_ADL },
	{ 0x6, 0xaa, IPT__ESET_ADL }, { 0x6, 0xac, IPT__ESET_ADL },
	{ 0x6, 0xbd, IPT__ESET_ADL }, { 0x6, 0xcc, IPT__ESET_ADL },
	{ 0x6, 0xd5, IPT__ESET_ADL },
	{ 0x12, 0x01, IPT__ESET_ADL }, { 0x12, 0x03, IPT__ESET_ADL },

	{ 0x6, 0x5c, IPT__ESET_GLM }, { 0x6, 0x5f, IPT__ESET_GLM },

	{ 0x6, 0x7a, IPT__ESET_GLP }, { 0x6, 0x86, IPT__ESET_GLP },
	{ 0x6, 0x96, IPT__ESET_GLP }, { 0x6, 0x9c, IPT__ESET_GLP },
	{ 0x6, 0xb6, IPT__ESET_GLP }, { 0x6, 0xaf, IPT__ESET_GLP },
	{ 0x6, 0xdd, IPT__ESET_GLP }
};

/* Fill in the errata of cpu.  -pte_bad_cpu (with no errata set) for a
 * non-Intel or unknown processor, -pte_invalid for NULL arguments. */
IPT_DEF int pt_cpu_errata(struct pt_errata *errata, const struct pt_cpu *cpu)
{
	size_t i;
	unsigned int set;

	if (!errata || !cpu)
		return -pte_invalid;

	IPT_MEMSET(errata, 0, sizeof(*errata));

	if (cpu->vendor != pcv_intel)
		return -pte_bad_cpu;

	for (i = 0; i < sizeof(ipt__cpu_errata_table) /
			    sizeof(ipt__cpu_errata_table[0]); ++i) {
		if (ipt__cpu_errata_table[i].family != cpu->family ||
		    ipt__cpu_errata_table[i].model != cpu->model)
			continue;

		set = ipt__cpu_errata_table[i].set;
		errata->bdm70 = (set & IPT__E_BDM70) ? 1 : 0;
		errata->bdm64 = (set & IPT__E_BDM64) ? 1 : 0;
		errata->skd007 = (set & IPT__E_SKD007) ? 1 : 0;
		errata->skd022 = (set & IPT__E_SKD022) ? 1 : 0;
		errata->skd010 = (set & IPT__E_SKD010) ? 1 : 0;
		errata->skl014 = (set & IPT__E_SKL014) ? 1 : 0;
		errata->apl12 = (set & IPT__E_APL12) ? 1 : 0;
		errata->apl11 = (set & IPT__E_APL11) ? 1 : 0;
		errata->skl168 = (set & IPT__E_SKL168) ? 1 : 0;
		errata->skz84 = (set & IPT__E_SKZ84) ? 1 : 0;
		return 0;
	}

	return -pte_bad_cpu;
}

/* One number of a --cpu argument, read the way strtol(s, &end, 0) reads
 * it: leading white space, a sign, then hex after 0x, octal after 0,
 * decimal otherwise.  *end is s itself when there are no digits.  Values
 * saturate far above anything a caller accepts. */
static long ipt__parse_number(const char *s, const char **end)
{
	const char *p = s;
	unsigned long value = 0;
	unsigned int base = 10, digit;
	int negative = 0, any = 0;

	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\v' ||
	       *p == '\f' || *p == '\r')
		++p;

	if (*p == '+' || *p == '-')
		negative = (*p++ == '-');

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') &&
	    ((p[2] >= '0' && p[2] <= '9') || (p[2] >= 'a' && p[2] <= 'f') ||
	     (p[2] >= 'A' && p[2] <= 'F'))) {
		base = 16;
		p += 2;
	} else if (p[0] == '0')
		base = 8;

	for (;; ++p) {
		if (*p >= '0' && *p <= '9')
			digit = (unsigned int) (*p - '0');
		else if (*p >= 'a' && *p <= 'z')
			digit = (unsigned int) (*p - 'a') + 10;
		else if (*p >= 'A' && *p <= 'Z')
			digit = (unsigned int) (*p - 'A') + 10;
		else
			break;
		if (digit >= base)
			break;

		any = 1;
		if (value < 0x10000000ul)
			value = value * base + digit;
	}

	*end = any ? p : s;
	return negative ? -(long) value : (long) value;
}

IPT_DEF int ipt_cpu_parse(struct pt_cpu *cpu, const char *s)
{
	const char *end;
	long family, model, stepping;

	if (!cpu || !s)
		return -pte_invalid;

	family = ipt__parse_number(s, &end);
	if (end == s || *end != '/')
		return -pte_invalid;
	if (family < 0 || family > 0xffff)
		return -pte_invalid;

	s = end + 1;
	model = ipt__parse_number(s, &end);
	if (end == s || (*end != '\0' && *end != '/'))
		return -pte_invalid;
	if (model < 0 || model > 0xff)
		return -pte_invalid;

	stepping = 0;
	if (*end == '/') {
		/* An empty stepping reads as zero. */
		s = end + 1;
		stepping = ipt__parse_number(s, &end);
		if (*end != '\0')
			return -pte_invalid;
		if (stepping < 0 || stepping > 0xff)
			return -pte_invalid;
	}

	cpu->vendor = pcv_intel;
	cpu->family = (uint16_t) family;
	cpu->model = (uint8_t) model;
	cpu->stepping = (uint8_t) stepping;
	return 0;
}

/* Address filters.  IA32_RTIT_CTL has a 4-bit ADDRn_CFG field per range;
 * the configuration has room for eight ranges (the last four reserved).
 * Ranges are inclusive at both ends. */
enum {
	IPT__FILTER_NRANGES =
		(sizeof(struct pt_conf_addr_filter) -
		 offsetof(struct pt_conf_addr_filter, addr0_a)) /
		(2 * sizeof(uint64_t))
};

static IPT__UNUSED uint32_t
ipt__filter_addr_cfg(const struct pt_conf_addr_filter *filter, size_t n)
{
	if (!filter || IPT__FILTER_NRANGES <= n)
		return 0u;
	return (uint32_t) ((filter->config.addr_cfg >> (4 * n)) & 0xf);
}

static IPT__UNUSED uint64_t
ipt__filter_addr_a(const struct pt_conf_addr_filter *filter, size_t n)
{
	if (!filter || IPT__FILTER_NRANGES <= n)
		return 0ull;
	return (&filter->addr0_a)[2 * n];
}

static IPT__UNUSED uint64_t
ipt__filter_addr_b(const struct pt_conf_addr_filter *filter, size_t n)
{
	if (!filter || IPT__FILTER_NRANGES <= n)
		return 0ull;
	return (&filter->addr0_a)[2 * n + 1];
}

/* Is addr traced under filter?  A TraceStop range that holds addr says no
 * (SDM 33.2.5.3, "TraceStop"); otherwise, when at least one FilterEn range
 * exists, addr must be inside one of them.  Returns 1 (traced), 0 (not
 * traced), or -pte_internal when filter is NULL; same semantics as
 * libipt's pt_filter_addr_check. */
static IPT__UNUSED int
ipt__filter_addr_check(const struct pt_conf_addr_filter *filter, uint64_t addr)
{
	size_t n;
	int have_filter = 0;

	if (!filter)
		return -pte_internal;

	for (n = 0; n < IPT__FILTER_NRANGES; ++n) {
		if (ipt__filter_addr_cfg(filter, n) != pt_addr_cfg_stop)
			continue;
		if (ipt__filter_addr_a(filter, n) <= addr &&
		    addr <= ipt__filter_addr_b(filter, n))
			return 0;
	}

	for (n = 0; n < IPT__FILTER_NRANGES; ++n) {
		if (ipt__filter_addr_cfg(filter, n) != pt_addr_cfg_filter)
			continue;
		have_filter = 1;
		if (ipt__filter_addr_a(filter, n) <= addr &&
		    addr <= ipt__filter_addr_b(filter, n))
			return 1;
	}

	return have_filter ? 0 : 1;
}

/* ==== >>opc  opcodes and the packet-layout table ==========================
 * Every packet's opcode, extended opcode and size, in one table that the
 * encoder and the decoder both read. */

/* Opcode bytes (SDM 33.4.1).  Most packets are one byte, possibly with
 * payload bits in it; the rest start with IPT__OPC_EXT and a second,
 * extended opcode byte; MNT has a third byte. */
enum ipt__opcode {
	IPT__OPC_PAD = 0x00,
	IPT__OPC_EXT = 0x02,
	IPT__OPC_TNT_8 = 0x00,
	IPT__OPC_TIP_PGD = 0x01,
	IPT__OPC_CYC = 0x03,
	IPT__OPC_TIP = 0x0d,
	IPT__OPC_TIP_PGE = 0x11,
	IPT__OPC_TSC = 0x19,
	IPT__OPC_FUP = 0x1d,
	IPT__OPC_MTC = 0x59,
	IPT__OPC_MODE = 0x99,
	IPT__OPC_TRIG = 0xd9,

	IPT__EXT_CBR = 0x03,
	IPT__EXT_PTW = 0x12,
	IPT__EXT_CFE = 0x13,
	IPT__EXT_PWRE = 0x22,
	IPT__EXT_PSBEND = 0x23,
	IPT__EXT_PIP = 0x43,
	IPT__EXT_EVD = 0x53,
	IPT__EXT_EXSTOP = 0x62,
	IPT__EXT_TMA = 0x73,
	IPT__EXT_PSB = 0x82,
	IPT__EXT_STOP = 0x83,
	IPT__EXT_PWRX = 0xa2,
	IPT__EXT_TNT_64 = 0xa3,
	IPT__EXT_MWAIT = 0xc2,
	IPT__EXT_EXT2 = 0xc3,
	IPT__EXT_VMCS = 0xc8,
	IPT__EXT_OVF = 0xf3,

	IPT__EXT2_MNT = 0x88,

	/* Bits inside opcodes. */
	IPT__OPM_IPC_SHR = 5,
	IPT__OPM_TNT_8_SHR = 1,
	IPT__OPM_CYC_EXT = 0x04,
	IPT__OPM_CYC_SHR = 3,
	IPT__OPM_CYCX_EXT = 0x01,
	IPT__OPM_CYCX_SHR = 1,
	IPT__OPM_EXSTOP_IP = 0x80,
	IPT__OPM_PTW_IP = 0x80,
	IPT__OPM_PTW_PLC_SHR = 5,
	IPT__OPM_PTW_PLC = 0x3,

	/* Bits of packet payloads (SDM 33.4.2), for encoder and decoder.
	 * MODE: the leaf in [7:5] (enum pt_mode_leaf), then its bits. */
	IPT__MODE_LEAF = 0xe0,
	IPT__MODE_EXEC_CSL = 0x01,
	IPT__MODE_EXEC_CSD = 0x02,
	IPT__MODE_EXEC_IF = 0x04,
	IPT__MODE_TSX_INTX = 0x01,
	IPT__MODE_TSX_ABRT = 0x02,
	/* PIP: NR in bit 0, CR3[51:5] in bits [47:1]. */
	IPT__PIP_NR = 0x01,
	IPT__PIP_CR3_SHR = 5,
	IPT__PIP_CR3_SHL = 1,
	/* PWRE: resolved C-state [15:12], sub C-state [11:8], HW [3]. */
	IPT__PWRE_STATE_SHR = 12,
	IPT__PWRE_SUB_SHR = 8,
	IPT__PWRE_HW = 0x8,
	/* PWRX: last core C-state [7:4], deepest [3:0], wake reason
	 * [11:8]: interrupt, store, autonomous. */
	IPT__PWRX_LAST_SHR = 4,
	IPT__PWRX_INT = 0x100,
	IPT__PWRX_STORE = 0x400,
	IPT__PWRX_AUTO = 0x800,
	/* The C-state fields above are four bits wide. */
	IPT__PWR_CSTATE = 0xf,
	/* CFE: type [4:0], IP [7]; EVD: type [4:0]. */
	IPT__CFE_TYPE = 0x1f,
	IPT__CFE_IP = 0x80,
	IPT__EVD_TYPE = 0x1f,
	/* TMA: FastCounter has 9 bits.  VMCS: the base's bits [51:12]. */
	IPT__TMA_FC = 0x1ff,
	IPT__VMCS_BASE_SHR = 12,
	/* TRIG: IP [7], ICNTV [6] (a two-byte ICNT follows), MULT [5]. */
	IPT__TRIG_IP = 0x80,
	IPT__TRIG_ICNTV = 0x40,
	IPT__TRIG_MULT = 0x20,

	/* The PSB pattern: OPC_EXT, EXT_PSB, repeated eight times. */
	IPT__PSB_SIZE = 16,

	/* The largest CYC packet the encoder would write. */
	IPT__CYC_MAX_SIZE = 15
};

/* THE PACKET-LAYOUT TABLE.  One row per enum pt_packet_type, in that
 * enum's order; the encoder, the decoder's dispatch tables and the
 * decoder's size checks all come from it.
 *
 *   opc, opm   the first byte b selects this packet when (b & opm) == opc
 *   ext, exm   for opcode sizes 2 and 3: the second byte, likewise
 *   ext2       for opcode size 3: the third byte
 *   os         opcode size in bytes (0: no encoding)
 *   size       packet size in bytes; for the variable-size packets (IP
 *              packets, CYC, PTW, TRIG) the size without optional payload
 *
 * A row with opm 0 and opc 0xff never matches.  Rows that could both match
 * one byte (PAD and TNT-8, the extended opcode and TNT-8) are resolved by
 * order: the first matching row wins. */
#define IPT__PACKETS(X, a)                                                   \
	/*  type      opc   opm   ext   exm   ext2  os size */               \
	X(a, invalid, 0xff, 0x00, 0x00, 0x00, 0x00, 0, 0)                    \
	X(a, unknown, 0xff, 0x00, 0x00, 0x00, 0x00, 0, 0)                    \
	X(a, pad,     0x00, 0xff, 0x00, 0x00, 0x00, 1, 1)                    \
	X(a, psb,     0x02, 0xff, 0x82, 0xff, 0x00, 2, 16)                   \
	X(a, psbend,  0x02, 0xff, 0x23, 0xff, 0x00, 2, 2)                    \
	X(a, fup,     0x1d, 0x1f, 0x00, 0x00, 0x00, 1, 1)                    \
	X(a, tip,     0x0d, 0x1f, 0x00, 0x00, 0x00, 1, 1)                    \
	X(a, tip_pge, 0x11, 0x1f, 0x00, 0x00, 0x00, 1, 1)                    \
	X(a, tip_pgd, 0x01, 0x1f, 0x00, 0x00, 0x00, 1, 1)                    \
	X(a, tnt_8,   0x00, 0x01, 0x00, 0x00, 0x00, 1, 1)                    \
	X(a, tnt_64,  0x02, 0xff, 0xa3, 0xff, 0x00, 2, 8)                    \
	X(a, mode,    0x99, 0xff, 0x00, 0x00, 0x00, 1, 2)                    \
	X(a, pip,     0x02, 0xff, 0x43, 0xff, 0x00, 2, 8)                    \
	X(a, vmcs,    0x02, 0xff, 0xc8, 0xff, 0x00, 2, 7)                    \
	X(a, cbr,     0x02, 0xff, 0x03, 0xff, 0x00, 2, 4)                    \
	X(a, tsc,     0x19, 0xff, 0x00, 0x00, 0x00, 1, 8)                    \
	X(a, tma,     0x02, 0xff, 0x73, 0xff, 0x00, 2, 7)                    \
	X(a, mtc,     0x59, 0xff, 0x00, 0x00, 0x00, 1, 2)                    \
	X(a, cyc,     0x03, 0x03, 0x00, 0x00, 0x00, 1, 1)                    \
	X(a, stop,    0x02, 0xff, 0x83, 0xff, 0x00, 2, 2)                    \
	X(a, ovf,     0x02, 0xff, 0xf3, 0xff, 0x00, 2, 2)                    \
	X(a, mnt,     0x02, 0xff, 0xc3, 0xff, 0x88, 3, 11)                   \
	X(a, exstop,  0x02, 0xff, 0x62, 0x7f, 0x00, 2, 2)                    \
	X(a, mwait,   0x02, 0xff, 0xc2, 0xff, 0x00, 2, 10)                   \
	X(a, pwre,    0x02, 0xff, 0x22, 0xff, 0x00, 2, 4)                    \
	X(a, pwrx,    0x02, 0xff, 0xa2, 0xff, 0x00, 2, 7)                    \
	X(a, ptw,     0x02, 0xff, 0x12, 0x1f, 0x00, 2, 2)                    \
	X(a, cfe,     0x02, 0xff, 0x13, 0xff, 0x00, 2, 4)                    \
	X(a, evd,     0x02, 0xff, 0x53, 0xff, 0x00, 2, 11)                   \
	X(a, trig,    0xd9, 0xff, 0x00, 0x00, 0x00, 1, 3)

struct ipt__layout {
	uint8_t opc, opm, ext, exm, ext2;
	uint8_t opc_size;
	uint8_t size;
};

#define IPT__LAYOUT_ROW(a, t, opc, opm, ext, exm, ext2, os, size)           \
	{ opc, opm, ext, exm, ext2, os, size },

static const struct ipt__layout ipt__layout[] = {
	IPT__PACKETS(IPT__LAYOUT_ROW, 0)
};

/* Dispatch: what the first byte says.  A packet type for one-byte
 * opcodes, IPT__KIND_EXT for the extended opcode, and ppt_invalid for
 * bytes no packet starts with. */
enum {
	IPT__KIND_EXT = ppt_trig + 1
};

#define IPT__FIRST_ROW(b, t, opc, opm, ext, exm, ext2, os, size)            \
	((os) == 1 && ((b) & (opm)) == (opc)) ? (int) ppt_##t :               \
	((os) > 1 && ((b) & (opm)) == (opc)) ? (int) IPT__KIND_EXT :

#define IPT__FIRST(b) (IPT__PACKETS(IPT__FIRST_ROW, b) (int) ppt_invalid)

/* Dispatch: what the second byte after IPT__OPC_EXT says.  For MNT, the
 * third byte is checked by its decoder. */
#define IPT__SECOND_ROW(b, t, opc, opm, ext, exm, ext2, os, size)           \
	((os) > 1 && ((b) & (exm)) == (ext)) ? (int) ppt_##t :

#define IPT__SECOND(b) (IPT__PACKETS(IPT__SECOND_ROW, b) (int) ppt_invalid)

#define IPT__R16(M, n)                                                       \
	M((n) + 0), M((n) + 1), M((n) + 2), M((n) + 3), M((n) + 4),          \
	M((n) + 5), M((n) + 6), M((n) + 7), M((n) + 8), M((n) + 9),          \
	M((n) + 10), M((n) + 11), M((n) + 12), M((n) + 13), M((n) + 14),     \
	M((n) + 15)
#define IPT__R256(M)                                                         \
	IPT__R16(M, 0), IPT__R16(M, 16), IPT__R16(M, 32), IPT__R16(M, 48),   \
	IPT__R16(M, 64), IPT__R16(M, 80), IPT__R16(M, 96),                   \
	IPT__R16(M, 112), IPT__R16(M, 128), IPT__R16(M, 144),                \
	IPT__R16(M, 160), IPT__R16(M, 176), IPT__R16(M, 192),                \
	IPT__R16(M, 208), IPT__R16(M, 224), IPT__R16(M, 240)

static const uint8_t ipt__first_byte[256] = { IPT__R256(IPT__FIRST) };

/* The PSB packet: its two opcode bytes, eight times. */
#define IPT__PSB_PAIR IPT__OPC_EXT, IPT__EXT_PSB
static const uint8_t ipt__psb_pattern[IPT__PSB_SIZE] = {
	IPT__PSB_PAIR, IPT__PSB_PAIR, IPT__PSB_PAIR, IPT__PSB_PAIR,
	IPT__PSB_PAIR, IPT__PSB_PAIR, IPT__PSB_PAIR, IPT__PSB_PAIR
};
#undef IPT__PSB_PAIR
static const uint8_t ipt__second_byte[256] = { IPT__R256(IPT__SECOND) };

/* The IP payload size in bytes for each IP compression; -1 for reserved
 * ones (SDM 33.4.2.2).  One list, three tables: the size; the mask that
 * keeps that many low bytes of an 8-byte load (0 for reserved ones); and
 * the packet sizes, opcode byte included, as the nibbles of one constant
 * (IP compression n in bits 4n to 4n+3, 0 for reserved ones). */
#define IPT__IPC_SIZES(X)                                                    \
	X(0, 0) X(1, 2) X(2, 4) X(3, 6) X(4, 6) X(5, -1) X(6, 8) X(7, -1)

#define IPT__IPC_SIZE(ipc, n) n,
#define IPT__IPC_MASK(ipc, n)                                                \
	((n) <= 0 ? 0ull : (n) >= 8 ? ~0ull                                 \
		  : (1ull << (8 * ((n) > 0 && (n) < 8 ? (n) : 0))) - 1ull),
#define IPT__IPC_NIBBLE(ipc, n) | ((n) < 0 ? 0ull : (uint64_t) ((n) + 1) << (4 * (ipc)))

static const int8_t ipt__ipc_size[8] = { IPT__IPC_SIZES(IPT__IPC_SIZE) };
static const uint64_t ipt__ipc_mask[8] = { IPT__IPC_SIZES(IPT__IPC_MASK) };
#define IPT__IPC_PACKET_SIZES (0ull IPT__IPC_SIZES(IPT__IPC_NIBBLE))

/* ==== >>enc  packet encoder ==============================================
 * Writes struct pt_packet into the trace buffer. */

struct pt_encoder {
	/* The configuration, copied in. */
	struct pt_config config;
	/* Where the next packet goes; always within [begin; end]. */
	uint8_t *pos;
};

/* An encoder as allocated (IPT__OWN). */
struct ipt__enc_box {
	struct pt_encoder encoder;
	struct ipt_allocator allocator;
};

/* A new encoder writing at config->begin.  NULL if config is NULL or bad
 * (see ipt__config_from_user), allocator lacks alloc or free, or memory
 * runs out. */
IPT_DEF struct pt_encoder *
ipt_alloc_encoder_with(const struct pt_config *config,
		       const struct ipt_allocator *allocator)
{
	struct ipt__enc_box *box = (struct ipt__enc_box *) ipt__own_alloc(
		allocator, IPT__OWN(struct ipt__enc_box));

	if (!box)
		return NULL;
	if (ipt__config_from_user(&box->encoder.config, config) < 0) {
		ipt__own_free(box, IPT__OWN(struct ipt__enc_box));
		return NULL;
	}
	box->encoder.pos = box->encoder.config.begin;
	return &box->encoder;
}

IPT_DEF struct pt_encoder *pt_alloc_encoder(const struct pt_config *config)
{
	return ipt_alloc_encoder_with(config, NULL);
}

/* Free an encoder; NULL is fine. */
IPT_DEF void pt_free_encoder(struct pt_encoder *encoder)
{
	ipt__own_free(encoder, IPT__OWN(struct ipt__enc_box));
}

/* Write the next packet at offset.  -pte_eos if offset is past the end
 * of the buffer, -pte_invalid if encoder is NULL. */
IPT_DEF int pt_enc_sync_set(struct pt_encoder *encoder, uint64_t offset)
{
	if (!encoder)
		return -pte_invalid;

	if ((uint64_t) (encoder->config.end - encoder->config.begin) < offset)
		return -pte_eos;

	encoder->pos = encoder->config.begin + offset;
	return 0;
}

/* Where the next packet goes.  -pte_invalid for NULL arguments. */
IPT_DEF int pt_enc_get_offset(const struct pt_encoder *encoder,
			      uint64_t *offset)
{
	if (!encoder || !offset)
		return -pte_invalid;

	if (!encoder->pos || !encoder->config.begin)
		return -pte_internal;

	*offset = (uint64_t) (encoder->pos - encoder->config.begin);
	return 0;
}

/* The encoder's copy of the configuration; NULL if encoder is NULL. */
IPT_DEF const struct pt_config *
pt_enc_get_config(const struct pt_encoder *encoder)
{
	if (!encoder)
		return NULL;

	return &encoder->config;
}

/* Is there room for size more bytes?  0 or -pte_eos. */
static int ipt__enc_reserve(const struct pt_encoder *encoder,
			    unsigned int size)
{
	if (!encoder->pos)
		return -pte_internal;

	if ((size_t) (encoder->config.end - encoder->pos) < size)
		return -pte_eos;

	return 0;
}

/* The most CYC value bits the packet decoder reads: five in the opcode byte
 * and seven in each of at most eight extension bytes. */
#define IPT__CYC_MAX_BITS ((8 - IPT__OPM_CYC_SHR) + 8 * (8 - IPT__OPM_CYCX_SHR))

/* Write the opcode bytes of a packet type from the layout table. */
static uint8_t *ipt__enc_opcode(uint8_t *pos, enum pt_packet_type type)
{
	const struct ipt__layout *layout = &ipt__layout[type];

	*pos++ = layout->opc;
	if (layout->opc_size > 1)
		*pos++ = layout->ext;
	if (layout->opc_size > 2)
		*pos++ = layout->ext2;
	return pos;
}

/* Write the size low bytes of val, least significant first. */
static uint8_t *ipt__enc_int(uint8_t *pos, uint64_t val, int size)
{
	for (; size > 0; --size, val >>= 8)
		*pos++ = (uint8_t) val;
	return pos;
}

/* Append one packet.  The checks of libipt's pt_enc_next, in the same
 * order and with the same errors: -pte_eos when the packet does not fit
 * (nothing is written), -pte_bad_packet or -pte_invalid for payloads that
 * cannot be encoded, -pte_bad_opc for ppt_invalid, ppt_unknown and unknown
 * types, -pte_invalid for NULL arguments.  Beyond libipt's, ipt.h refuses
 * with -pte_bad_packet what libipt would write although the packet decoder
 * rejects it or reads back another packet: a TNT without bits (TNT-8
 * would be the extended-opcode byte 0x02, TNT-64 a payload without
 * bits), TNT-8 payload bits at or above bit_size, and a CYC value of 2^61
 * or more (the decoder takes at most eight extension bytes).  Returns the
 * number of bytes written. */
IPT_DEF int pt_enc_next(struct pt_encoder *encoder,
			const struct pt_packet *packet)
{
	uint8_t *pos, *begin;
	enum pt_packet_type type;
	int errcode, size;

	if (!encoder || !packet)
		return -pte_invalid;

	/* The switch below lists every type; this catches the others. */
	type = packet->type;
	if ((unsigned int) type > (unsigned int) ppt_trig)
		return -pte_bad_opc;

	pos = begin = encoder->pos;
	switch (type) {
	case ppt_pad:
	case ppt_psbend:
	case ppt_ovf:
	case ppt_stop:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;
		pos = ipt__enc_opcode(pos, type);
		break;

	case ppt_psb:
		errcode = ipt__enc_reserve(encoder, IPT__PSB_SIZE);
		if (errcode < 0)
			return errcode;
		IPT_MEMCPY(pos, ipt__psb_pattern, IPT__PSB_SIZE);
		pos += IPT__PSB_SIZE;
		break;

	case ppt_fup:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd: {
		unsigned int ipc = (unsigned int) packet->payload.ip.ipc;

		if (ipc > 7 || ipt__ipc_size[ipc] < 0)
			return -pte_invalid;
		size = ipt__ipc_size[ipc];

		errcode = ipt__enc_reserve(encoder, 1u + (unsigned int) size);
		if (errcode < 0)
			return errcode;

		*pos++ = (uint8_t) (ipt__layout[type].opc |
				    (ipc << IPT__OPM_IPC_SHR));
		pos = ipt__enc_int(pos, packet->payload.ip.ip, size);
		break;
	}

	case ppt_tnt_8: {
		unsigned int stop;

		if (packet->payload.tnt.bit_size >= 7 ||
		    packet->payload.tnt.bit_size == 0)
			return -pte_bad_packet;
		if (packet->payload.tnt.payload >>
		    packet->payload.tnt.bit_size)
			return -pte_bad_packet;

		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;

		stop = packet->payload.tnt.bit_size + IPT__OPM_TNT_8_SHR;
		*pos++ = (uint8_t) ((packet->payload.tnt.payload
				     << IPT__OPM_TNT_8_SHR) | (1u << stop));
		break;
	}

	case ppt_tnt_64: {
		uint64_t stop;

		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;

		if (packet->payload.tnt.bit_size >= 48)
			return -pte_invalid;
		if (packet->payload.tnt.bit_size == 0)
			return -pte_bad_packet;

		stop = 1ull << packet->payload.tnt.bit_size;
		if (packet->payload.tnt.payload & ~(stop - 1))
			return -pte_invalid;

		pos = ipt__enc_opcode(pos, type);
		pos = ipt__enc_int(pos, packet->payload.tnt.payload | stop, 6);
		break;
	}

	case ppt_mode: {
		uint8_t mode;

		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;

		switch (packet->payload.mode.leaf) {
		case pt_mol_exec:
			mode = (uint8_t) pt_mol_exec;
			if (packet->payload.mode.bits.exec.csl)
				mode |= IPT__MODE_EXEC_CSL;
			if (packet->payload.mode.bits.exec.csd)
				mode |= IPT__MODE_EXEC_CSD;
			if (packet->payload.mode.bits.exec.iflag)
				mode |= IPT__MODE_EXEC_IF;
			break;

		case pt_mol_tsx:
			mode = (uint8_t) pt_mol_tsx;
			if (packet->payload.mode.bits.tsx.intx)
				mode |= IPT__MODE_TSX_INTX;
			if (packet->payload.mode.bits.tsx.abrt)
				mode |= IPT__MODE_TSX_ABRT;
			break;

		default:
			return -pte_bad_packet;
		}

		pos = ipt__enc_opcode(pos, type);
		*pos++ = mode;
		break;
	}

	case ppt_pip: {
		uint64_t cr3;

		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;

		cr3 = (packet->payload.pip.cr3 >> IPT__PIP_CR3_SHR)
		      << IPT__PIP_CR3_SHL;
		if (packet->payload.pip.nr)
			cr3 |= IPT__PIP_NR;

		pos = ipt__enc_opcode(pos, type);
		pos = ipt__enc_int(pos, cr3, 6);
		break;
	}

	case ppt_tsc:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;
		pos = ipt__enc_opcode(pos, type);
		pos = ipt__enc_int(pos, packet->payload.tsc.tsc, 7);
		break;

	case ppt_cbr:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;
		pos = ipt__enc_opcode(pos, type);
		*pos++ = packet->payload.cbr.ratio;
		*pos++ = 0;
		break;

	case ppt_tma:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;

		/* FastCounter has 9 bits. */
		if (packet->payload.tma.fc & ~IPT__TMA_FC)
			return -pte_bad_packet;

		pos = ipt__enc_opcode(pos, type);
		pos = ipt__enc_int(pos, packet->payload.tma.ctc, 2);
		*pos++ = 0;
		pos = ipt__enc_int(pos, packet->payload.tma.fc, 2);
		break;

	case ppt_mtc:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;
		pos = ipt__enc_opcode(pos, type);
		*pos++ = packet->payload.mtc.ctc;
		break;

	case ppt_cyc: {
		/* Five value bits in the opcode byte, seven in each following
		 * byte; the low bit of each byte says whether one follows. */
		uint8_t byte[IPT__CYC_MAX_SIZE];
		uint64_t ctc;
		unsigned int end, i;

		ctc = packet->payload.cyc.value;
		if (ctc >> IPT__CYC_MAX_BITS)
			return -pte_bad_packet;
		byte[0] = (uint8_t) (IPT__OPC_CYC |
				     ((ctc << IPT__OPM_CYC_SHR) & 0xf8));
		ctc >>= 8 - IPT__OPM_CYC_SHR;
		if (ctc)
			byte[0] |= IPT__OPM_CYC_EXT;

		for (end = 1; ctc; ++end) {
			if (IPT__CYC_MAX_SIZE <= end)
				return -pte_bad_packet;

			byte[end] = (uint8_t) ((ctc << IPT__OPM_CYCX_SHR) &
					       0xfe);
			ctc >>= 8 - IPT__OPM_CYCX_SHR;
			if (ctc)
				byte[end] |= IPT__OPM_CYCX_EXT;
		}

		errcode = ipt__enc_reserve(encoder, end);
		if (errcode < 0)
			return errcode;

		for (i = 0; i < end; ++i)
			*pos++ = byte[i];
		break;
	}

	case ppt_vmcs:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;
		pos = ipt__enc_opcode(pos, type);
		pos = ipt__enc_int(pos, packet->payload.vmcs.base >>
					IPT__VMCS_BASE_SHR, 5);
		break;

	case ppt_mnt:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;
		pos = ipt__enc_opcode(pos, type);
		pos = ipt__enc_int(pos, packet->payload.mnt.payload, 8);
		break;

	case ppt_exstop:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;
		pos = ipt__enc_opcode(pos, type);
		if (packet->payload.exstop.ip)
			pos[-1] |= IPT__OPM_EXSTOP_IP;
		break;

	case ppt_mwait:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;
		pos = ipt__enc_opcode(pos, type);
		pos = ipt__enc_int(pos, packet->payload.mwait.hints, 4);
		pos = ipt__enc_int(pos, packet->payload.mwait.ext, 4);
		break;

	case ppt_pwre: {
		unsigned int payload;

		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;

		payload = ((unsigned int) packet->payload.pwre.state &
			   IPT__PWR_CSTATE) << IPT__PWRE_STATE_SHR;
		payload |= ((unsigned int) packet->payload.pwre.sub_state &
			    IPT__PWR_CSTATE) << IPT__PWRE_SUB_SHR;
		if (packet->payload.pwre.hw)
			payload |= IPT__PWRE_HW;

		pos = ipt__enc_opcode(pos, type);
		pos = ipt__enc_int(pos, payload, 2);
		break;
	}

	case ppt_pwrx: {
		unsigned int payload;

		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;

		payload = ((unsigned int) packet->payload.pwrx.last &
			   IPT__PWR_CSTATE) << IPT__PWRX_LAST_SHR;
		payload |= (unsigned int) packet->payload.pwrx.deepest &
			   IPT__PWR_CSTATE;
		if (packet->payload.pwrx.interrupt)
			payload |= IPT__PWRX_INT;
		if (packet->payload.pwrx.store)
			payload |= IPT__PWRX_STORE;
		if (packet->payload.pwrx.autonomous)
			payload |= IPT__PWRX_AUTO;

		pos = ipt__enc_opcode(pos, type);
		pos = ipt__enc_int(pos, payload, 5);
		break;
	}

	case ppt_ptw: {
		uint8_t plc = packet->payload.ptw.plc;

		size = pt_ptw_size(plc);
		if (size < 0)
			return size;

		errcode = ipt__enc_reserve(encoder,
					   ipt__layout[type].size +
					   (unsigned int) size);
		if (errcode < 0)
			return errcode;

		pos = ipt__enc_opcode(pos, type);
		pos[-1] = (uint8_t) (pos[-1] | (plc << IPT__OPM_PTW_PLC_SHR));
		if (packet->payload.ptw.ip)
			pos[-1] |= IPT__OPM_PTW_IP;
		pos = ipt__enc_int(pos, packet->payload.ptw.payload, size);
		break;
	}

	case ppt_cfe: {
		uint8_t byte;

		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;

		byte = (uint8_t) ((unsigned int) packet->payload.cfe.type &
				  IPT__CFE_TYPE);
		if (packet->payload.cfe.ip)
			byte |= IPT__CFE_IP;

		pos = ipt__enc_opcode(pos, type);
		*pos++ = byte;
		*pos++ = packet->payload.cfe.vector;
		break;
	}

	case ppt_evd:
		errcode = ipt__enc_reserve(encoder, ipt__layout[type].size);
		if (errcode < 0)
			return errcode;

		pos = ipt__enc_opcode(pos, type);
		*pos++ = (uint8_t) ((unsigned int) packet->payload.evd.type &
				    IPT__EVD_TYPE);
		pos = ipt__enc_int(pos, packet->payload.evd.payload, 8);
		break;

	case ppt_trig:
		errcode = ipt__enc_reserve(encoder,
					   ipt__layout[type].size +
					   (packet->payload.trig.icntv ? 2u
								       : 0u));
		if (errcode < 0)
			return errcode;

		pos = ipt__enc_opcode(pos, type);
		*pos++ = (uint8_t) ((packet->payload.trig.ip ? IPT__TRIG_IP : 0) |
				    (packet->payload.trig.icntv ?
				     IPT__TRIG_ICNTV : 0) |
				    (packet->payload.trig.mult ?
				     IPT__TRIG_MULT : 0));
		*pos++ = packet->payload.trig.trbv;
		if (packet->payload.trig.icntv)
			pos = ipt__enc_int(pos, packet->payload.trig.icnt, 2);
		break;

	case ppt_invalid:
	case ppt_unknown:
		return -pte_bad_opc;
	}

	encoder->pos = pos;
	return (int) (pos - begin);
}

/* ==== >>pkt  packet decoder ==============================================
 * Turns trace bytes into struct pt_packet: synchronization on PSB,
 * first-byte dispatch, last-IP tracking.  Knows nothing of code. */

/* What the layers below use, besides the public pt_pkt_* functions:
 *
 *   struct pt_packet_decoder            config, pos, sync (see below)
 *   ipt__pkt_init(dec, config)          embed a decoder; ipt__pkt_fini
 *   ipt__pkt_config/_pos/_end(dec)      where it is
 *   ipt__pkt_sync_pos(dec)              the PSB it synchronized on last
 *   ipt__pkt_pos_off/_sync_off/_size(dec)  the same as offsets in the
 *                                       trace (positions in a ring's
 *                                       pieces do not compare)
 *   ipt__pkt_skip(dec, size)            move on without reading
 *   ipt__pkt_same(a, b), ipt__last_ip_same(a, b)
 *                                       the same state (>>seg)
 *   ipt__pkt_read_<packet>(pkt, pos, config)
 *                                       read one packet at pos: its size
 *                                       or -pte_eos/-pte_bad_packet/...
 *   ipt__sync_forward/_backward(&sync, pos, config, grows),
 *   ipt__sync_set(&sync, pos, config)
 *                                       find a PSB (libipt's pt_sync_*)
 *   ipt_last_ip_*                       public, declared in >>api
 *
 * and from >>cfg: ipt__config_from_user, ipt__filter_addr_cfg/_a/_b,
 * ipt__filter_addr_check. */

/* The bytes a ring's bridge keeps from each side of the wrap: at least
 * the longest packet (a PSB's 16 bytes), so that every packet that
 * crosses the wrap lies whole in the bridge, and twice that, so that a
 * PSB search sees PSB pattern on both sides of the wrap. */
enum {
	IPT__RING_ROOM = 32
};

/* A stretch of the trace that lies in one piece of memory.  Its packets
 * start in [begin, stop); they may be read on up to end, where the next
 * piece's first bytes lie too (the bridge holds them).  base is the
 * offset of begin in the trace. */
struct ipt__pkt_piece {
	const uint8_t *begin;
	const uint8_t *stop;
	const uint8_t *end;
	uint64_t base;
};

/* Where a decoder's trace lies: one piece for one buffer; for a ring
 * given as two (ipt_pkt_set_ring), the older piece up to the last
 * IPT__RING_ROOM bytes before the wrap, the bridge, and the newer piece.
 * The bridge is a copy of the IPT__RING_ROOM bytes on each side of the
 * wrap (fewer if a piece is shorter), so that a packet the wrap cuts is
 * read as one.  config.begin and config.end are the current piece's. */
struct ipt__pkt_pieces {
	struct ipt__pkt_piece piece[3];
	/* How many pieces there are; which one pos lies in; which one sync
	 * lies in. */
	uint32_t n;
	uint32_t cur;
	uint32_t sync_piece;
	uint8_t bridge[2 * IPT__RING_ROOM];
};

/* The packet decoder.  Other layers embed one (ipt__pkt_init/_fini) and
 * use it through pt_pkt_* and the accessors listed above. */
struct pt_packet_decoder {
	/* The next packet; NULL until synchronized. */
	const uint8_t *pos;
	/* pos - config.begin is below this where at least IPT__FAST_ROOM
	 * bytes are left: pt_pkt_next's fast path; 0 if none is.  Next to
	 * pos and config.begin, the only fields the fast path reads. */
	size_t fast;
	/* The configuration, copied in. */
	struct pt_config config;
	/* The last PSB seen, or the position set by sync_set; NULL until
	 * synchronized. */
	const uint8_t *sync;
	/* More trace may come after config.end (ipt_pkt_extend). */
	uint32_t more;
	/* @sync is where a start state put the decoder (ipt_evt_start_at),
	 * not a PSB: a forward sync searches from there. */
	uint32_t sync_started;
	/* Where the trace lies; pos and sync are in pieces.cur and
	 * pieces.sync_piece. */
	struct ipt__pkt_pieces pieces;
};

/* The bytes pt_pkt_next's fast path may read from a packet's start: every
 * packet it decodes, and one 8-byte load after the first byte. */
enum {
	IPT__FAST_ROOM = 16
};

/* The most packets one ipt_pkt_next_batch call decodes: its count must
 * fit the int it returns. */
enum {
	IPT__PKT_BATCH_MAX = 1 << 16
};

/* ---- reading packets ----
 * One ipt__pkt_read_<packet> per packet, each reading the packet whose
 * first byte is at pos: it checks once that the whole packet lies before
 * config->end (-pte_eos if not), then reads it without further checks, and
 * returns its size or a negative pte_* code.  The caller has dispatched on
 * the opcode bytes; those are known to be in bounds.  Same semantics as
 * libipt's pt_pkt_read_*, whose NULL checks they leave out: their
 * arguments are the decoder's own (ipt__pkt_decode, ipt__sync_*). */

/* The bytes left from pos to the end of the trace. */
static inline size_t ipt__pkt_left(const uint8_t *pos,
				   const struct pt_config *config)
{
	return (size_t) (config->end - pos);
}

/* A little-endian value of size bytes. */
static inline uint64_t ipt__read_le(const uint8_t *pos, int size)
{
	uint64_t val = 0;
	int i;

	for (i = size - 1; i >= 0; --i)
		val = (val << 8) | pos[i];
	return val;
}

/* The same for a size that varies from packet to packet (0 to 8), where
 * 8 bytes may be read at pos: one load and a mask instead of a loop whose
 * length the processor would have to guess. */
static inline uint64_t ipt__read_le_var(const uint8_t *pos, int size,
					 size_t readable)
{
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) &&            \
	__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (IPT__LIKELY(readable >= 8)) {
		uint64_t val;

		IPT_MEMCPY(&val, pos, sizeof(val));
		return size >= 8 ? val
				 : val & ((1ull << (8 * size)) - 1);
	}
#else
	(void) readable;
#endif
	return ipt__read_le(pos, size);
}

static IPT__UNUSED int ipt__pkt_read_psb(const uint8_t *pos,
					 const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < IPT__PSB_SIZE)
		return -pte_eos;

	if (IPT_MEMCMP(pos, ipt__psb_pattern, IPT__PSB_SIZE) != 0)
		return -pte_bad_packet;

	return IPT__PSB_SIZE;
}

/* TIP, TIP.PGE, TIP.PGD, FUP: IPBytes in the opcode's top three bits. */
static IPT__UNUSED int ipt__pkt_read_ip(struct pt_packet_ip *packet,
					const uint8_t *pos,
					const struct pt_config *config)
{
	unsigned int ipc;
	int size;

	ipc = (unsigned int) (pos[0] >> IPT__OPM_IPC_SHR);
	size = ipt__ipc_size[ipc];
	if (size < 0)
		return -pte_bad_packet;

	if (ipt__pkt_left(pos, config) < (size_t) size + 1u)
		return -pte_eos;

	packet->ipc = (enum pt_ip_compression) ipc;
	packet->ip = ipt__read_le_var(pos + 1, size,
				      ipt__pkt_left(pos, config) - 1);
	return size + 1;
}

/* The index of the highest set bit of a non-zero value. */
static inline uint8_t ipt__msb(uint64_t val)
{
#if defined(__GNUC__) || defined(__clang__)
	/* 63 ^ clz rather than 63 - clz: the same for 0..63, and what
	 * compilers turn into a single bit-scan instruction. */
	return (uint8_t) (63 ^ __builtin_clzll(val));
#else
	uint8_t n = 0;

	while (val >>= 1)
		++n;
	return n;
#endif
}

/* The index of the lowest set bit of a non-zero value. */
static inline uint8_t ipt__lsb(uint64_t val)
{
#if defined(__GNUC__) || defined(__clang__)
	return (uint8_t) __builtin_ctzll(val);
#else
	uint8_t n = 0;

	while (!(val & 1)) {
		val >>= 1;
		++n;
	}
	return n;
#endif
}

/* TNT payloads end in a stop bit: the bits below it are the payload. */
static inline int ipt__pkt_read_tnt(struct pt_packet_tnt *packet,
				    uint64_t payload)
{
	uint8_t bit_size;

	if (payload < 2)
		return -pte_bad_packet;

	bit_size = ipt__msb(payload);
	packet->payload = payload & ~(1ull << bit_size);
	packet->bit_size = bit_size;
	return 0;
}

static IPT__UNUSED int ipt__pkt_read_tnt_8(struct pt_packet_tnt *packet,
					   const uint8_t *pos,
					   const struct pt_config *config)
{
	int errcode;

	(void) config;
	if (!packet || !pos)
		return -pte_internal;

	errcode = ipt__pkt_read_tnt(packet, pos[0] >> IPT__OPM_TNT_8_SHR);
	if (errcode < 0)
		return errcode;
	return 1;
}

static IPT__UNUSED int ipt__pkt_read_tnt_64(struct pt_packet_tnt *packet,
					    const uint8_t *pos,
					    const struct pt_config *config)
{
	int errcode;

	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_tnt_64].size)
		return -pte_eos;

	/* The packet's eight bytes are in bounds: one load, then drop the
	 * two opcode bytes. */
	errcode = ipt__pkt_read_tnt(packet, ipt__read_le_var(pos, 8, 8) >> 16);
	if (errcode < 0)
		return errcode;
	return ipt__layout[ppt_tnt_64].size;
}

static IPT__UNUSED int ipt__pkt_read_pip(struct pt_packet_pip *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	uint64_t payload;

	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_pip].size)
		return -pte_eos;

	payload = ipt__read_le(pos + 2, 6);
	packet->nr = (uint32_t) (payload & IPT__PIP_NR);
	packet->cr3 = (payload >> IPT__PIP_CR3_SHL) << IPT__PIP_CR3_SHR;
	return ipt__layout[ppt_pip].size;
}

/* A MODE packet's payload byte @bits: the packet's size, or
 * -pte_bad_packet for a leaf we do not know. */
static IPT__INLINE int ipt__pkt_mode_bits(struct pt_packet_mode *packet,
					  uint8_t bits)
{
	packet->leaf = (enum pt_mode_leaf) (bits & IPT__MODE_LEAF);
	switch (bits & IPT__MODE_LEAF) {
	case pt_mol_exec:
		packet->bits.exec.csl = (bits & IPT__MODE_EXEC_CSL) ? 1 : 0;
		packet->bits.exec.csd = (bits & IPT__MODE_EXEC_CSD) ? 1 : 0;
		packet->bits.exec.iflag = (bits & IPT__MODE_EXEC_IF) ? 1 : 0;
		return ipt__layout[ppt_mode].size;

	case pt_mol_tsx:
		packet->bits.tsx.intx = (bits & IPT__MODE_TSX_INTX) ? 1 : 0;
		packet->bits.tsx.abrt = (bits & IPT__MODE_TSX_ABRT) ? 1 : 0;
		return ipt__layout[ppt_mode].size;
	}

	return -pte_bad_packet;
}

static IPT__UNUSED int ipt__pkt_read_mode(struct pt_packet_mode *packet,
					  const uint8_t *pos,
					  const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_mode].size)
		return -pte_eos;
	return ipt__pkt_mode_bits(packet, pos[1]);
}

static IPT__UNUSED int ipt__pkt_read_tsc(struct pt_packet_tsc *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_tsc].size)
		return -pte_eos;

	packet->tsc = ipt__read_le(pos + 1, 7);
	return ipt__layout[ppt_tsc].size;
}

static IPT__UNUSED int ipt__pkt_read_cbr(struct pt_packet_cbr *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_cbr].size)
		return -pte_eos;

	packet->ratio = pos[2];
	return ipt__layout[ppt_cbr].size;
}

/* TMA: CTC[15:0] in bytes 2-3, a reserved zero byte, FastCounter[8:0] in
 * bytes 5-6; reserved bits set make a bad packet. */
static IPT__UNUSED int ipt__pkt_read_tma(struct pt_packet_tma *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	uint16_t ctc, fc;

	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_tma].size)
		return -pte_eos;

	ctc = (uint16_t) (pos[2] | (pos[3] << 8));
	fc = (uint16_t) (pos[5] | (pos[6] << 8));
	if ((fc & ~IPT__TMA_FC) || pos[4])
		return -pte_bad_packet;

	packet->ctc = ctc;
	packet->fc = fc;
	return ipt__layout[ppt_tma].size;
}

static IPT__UNUSED int ipt__pkt_read_mtc(struct pt_packet_mtc *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_mtc].size)
		return -pte_eos;

	packet->ctc = pos[1];
	return ipt__layout[ppt_mtc].size;
}

/* CYC: a variable-length value; see the encoder for the layout.  More
 * than 64 value bits make a bad packet. */
static IPT__UNUSED int ipt__pkt_read_cyc(struct pt_packet_cyc *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	const uint8_t *begin;
	size_t left;
	uint64_t value;
	unsigned int shl, ext;

	begin = pos;
	left = ipt__pkt_left(pos, config);

	ext = pos[0] & IPT__OPM_CYC_EXT;
	value = pos[0] >> IPT__OPM_CYC_SHR;
	shl = 8 - IPT__OPM_CYC_SHR;
	++pos;

	while (ext) {
		uint64_t bits;

		if ((size_t) (pos - begin) >= left)
			return -pte_eos;

		bits = *pos++;
		ext = (unsigned int) (bits & IPT__OPM_CYCX_EXT);

		bits >>= IPT__OPM_CYCX_SHR;
		bits <<= shl;

		shl += 8 - IPT__OPM_CYCX_SHR;
		if (64 < shl)
			return -pte_bad_packet;

		value |= bits;
	}

	packet->value = value;
	return (int) (pos - begin);
}

/* The base address a VMCS packet at @pos gives. */
static IPT__INLINE uint64_t ipt__pkt_vmcs_base(const uint8_t *pos)
{
	return ipt__read_le(pos + 2, 5) << IPT__VMCS_BASE_SHR;
}

static IPT__UNUSED int ipt__pkt_read_vmcs(struct pt_packet_vmcs *packet,
					  const uint8_t *pos,
					  const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_vmcs].size)
		return -pte_eos;

	packet->base = ipt__pkt_vmcs_base(pos);
	return ipt__layout[ppt_vmcs].size;
}

static IPT__UNUSED int ipt__pkt_read_mnt(struct pt_packet_mnt *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_mnt].size)
		return -pte_eos;

	packet->payload = ipt__read_le(pos + 3, 8);
	return ipt__layout[ppt_mnt].size;
}

static IPT__UNUSED int ipt__pkt_read_exstop(struct pt_packet_exstop *packet,
					    const uint8_t *pos,
					    const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_exstop].size)
		return -pte_eos;

	packet->ip = (pos[1] & IPT__OPM_EXSTOP_IP) ? 1 : 0;
	return ipt__layout[ppt_exstop].size;
}

static IPT__UNUSED int ipt__pkt_read_mwait(struct pt_packet_mwait *packet,
					   const uint8_t *pos,
					   const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_mwait].size)
		return -pte_eos;

	packet->hints = (uint32_t) ipt__read_le(pos + 2, 4);
	packet->ext = (uint32_t) ipt__read_le(pos + 6, 4);
	return ipt__layout[ppt_mwait].size;
}

static IPT__UNUSED int ipt__pkt_read_pwre(struct pt_packet_pwre *packet,
					  const uint8_t *pos,
					  const struct pt_config *config)
{
	unsigned int payload;

	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_pwre].size)
		return -pte_eos;

	payload = (unsigned int) (pos[2] | (pos[3] << 8));
	IPT_MEMSET(packet, 0, sizeof(*packet));
	packet->state = (uint8_t) ((payload >> IPT__PWRE_STATE_SHR) &
				   IPT__PWR_CSTATE);
	packet->sub_state = (uint8_t) ((payload >> IPT__PWRE_SUB_SHR) &
				       IPT__PWR_CSTATE);
	packet->hw = (payload & IPT__PWRE_HW) ? 1 : 0;
	return ipt__layout[ppt_pwre].size;
}

static IPT__UNUSED int ipt__pkt_read_pwrx(struct pt_packet_pwrx *packet,
					  const uint8_t *pos,
					  const struct pt_config *config)
{
	unsigned int payload;

	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_pwrx].size)
		return -pte_eos;

	payload = (unsigned int) (pos[2] | (pos[3] << 8));
	IPT_MEMSET(packet, 0, sizeof(*packet));
	packet->last = (uint8_t) ((payload >> IPT__PWRX_LAST_SHR) &
				  IPT__PWR_CSTATE);
	packet->deepest = (uint8_t) (payload & IPT__PWR_CSTATE);
	packet->interrupt = (payload & IPT__PWRX_INT) ? 1 : 0;
	packet->store = (payload & IPT__PWRX_STORE) ? 1 : 0;
	packet->autonomous = (payload & IPT__PWRX_AUTO) ? 1 : 0;
	return ipt__layout[ppt_pwrx].size;
}

/* PTW: the payload size comes from the second opcode byte's PayloadBytes
 * field; that byte is known to be in bounds. */
static IPT__UNUSED int ipt__pkt_read_ptw(struct pt_packet_ptw *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	uint8_t plc;
	int size;

	plc = (uint8_t) ((pos[1] >> IPT__OPM_PTW_PLC_SHR) & IPT__OPM_PTW_PLC);
	size = pt_ptw_size(plc);
	if (size < 0)
		return size;

	if (ipt__pkt_left(pos, config) < (size_t) size + 2u)
		return -pte_eos;

	packet->payload = ipt__read_le_var(pos + 2, size,
					   ipt__pkt_left(pos, config) - 2);
	packet->plc = plc;
	packet->ip = (pos[1] & IPT__OPM_PTW_IP) ? 1 : 0;
	return size + 2;
}

static IPT__UNUSED int ipt__pkt_read_cfe(struct pt_packet_cfe *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_cfe].size)
		return -pte_eos;

	packet->type = (enum pt_cfe_type) (pos[2] & IPT__CFE_TYPE);
	packet->vector = pos[3];
	packet->ip = (pos[2] & IPT__CFE_IP) ? 1 : 0;
	return ipt__layout[ppt_cfe].size;
}

static IPT__UNUSED int ipt__pkt_read_evd(struct pt_packet_evd *packet,
					 const uint8_t *pos,
					 const struct pt_config *config)
{
	if (ipt__pkt_left(pos, config) < ipt__layout[ppt_evd].size)
		return -pte_eos;

	packet->type = (enum pt_evd_type) (pos[2] & IPT__EVD_TYPE);
	packet->payload = ipt__read_le(pos + 3, 8);
	return ipt__layout[ppt_evd].size;
}

/* TRIG: a two-byte ICNT follows when ICNTV is set. */
static IPT__UNUSED int ipt__pkt_read_trig(struct pt_packet_trig *packet,
					  const uint8_t *pos,
					  const struct pt_config *config)
{
	int size = ipt__layout[ppt_trig].size;

	if (ipt__pkt_left(pos, config) < (size_t) size)
		return -pte_eos;

	if (pos[1] & IPT__TRIG_ICNTV) {
		if (ipt__pkt_left(pos, config) < (size_t) size + 2u)
			return -pte_eos;
		packet->icnt = (uint16_t) (pos[3] | (pos[4] << 8));
		size += 2;
	}

	packet->ip = (pos[1] & IPT__TRIG_IP) ? 1 : 0;
	packet->icntv = (pos[1] & IPT__TRIG_ICNTV) ? 1 : 0;
	packet->mult = (pos[1] & IPT__TRIG_MULT) ? 1 : 0;
	packet->trbv = pos[2];
	return size;
}

/* A packet no row of the layout table describes: ask the configuration's
 * decode callback.  Without one, -pte_bad_opc.  The callback's size may
 * be zero (it may have patched the buffer and wants a retry); above 255 it
 * is -pte_invalid; past the end of the trace -pte_eos. */
static IPT__UNUSED int ipt__pkt_read_unknown(struct pt_packet *packet,
					     const uint8_t *pos,
					     const struct pt_config *config)
{
	int size;

	if (!config->decode.callback)
		return -pte_bad_opc;

	packet->payload.unknown.packet = pos;
	packet->payload.unknown.priv = NULL;

	size = config->decode.callback(&packet->payload.unknown, config, pos,
				       config->decode.context);
	if (size < 0)
		return size;
	if (size > 255)
		return -pte_invalid;

	packet->type = ppt_unknown;
	packet->size = (uint8_t) size;

	if (ipt__pkt_left(pos, config) < (size_t) size)
		return -pte_eos;

	return size;
}

/* ---- synchronization ----
 * A PSB is the 2-byte pattern 02 82 eight times.  The search looks at
 * aligned 8-byte words (the payload of a PSB always covers one), then
 * walks back to where the PSB starts.  Same semantics as libipt's
 * pt_sync_*, including where the search starts and which PSB it finds. */

/* Is the aligned word at pos all PSB pattern, in either phase?  The two
 * phases read as the two constants below on either byte order. */
static inline int ipt__psb_word(const uint8_t *pos)
{
	uint64_t val;

	IPT_MEMCPY(&val, pos, sizeof(val));
	return val == 0x8202820282028202ull || val == 0x0282028202820282ull;
}

/* Given a position inside PSB pattern, find the start of the PSB the
 * pattern belongs to; NULL if there is none, or if the pattern runs to
 * the end of a trace that may go on (@grows): more of it may come, and
 * the PSB is the pattern's last 16 bytes. */
static const uint8_t *ipt__find_psb(const uint8_t *pos,
				    const struct pt_config *config, int grows)
{
	size_t off, n;

	n = (size_t) (config->end - config->begin);
	off = (size_t) (pos - config->begin);

	/* Walk to the end of the pattern.  A PSB's payload starts in the
	 * high-byte phase; the extended opcode of the packet after the PSB
	 * must not be taken for part of it. */
	if (pos[0] != IPT__OPC_EXT)
		off += 1;

	for (; off + 1 < n; off += 2) {
		if (config->begin[off] != IPT__OPC_EXT ||
		    config->begin[off + 1] != IPT__EXT_PSB)
			break;
	}

	if (off < IPT__PSB_SIZE || (grows && off + 1 >= n))
		return NULL;
	off -= IPT__PSB_SIZE;

	pos = config->begin + off;
	if (pos[0] != IPT__OPC_EXT || pos[1] != IPT__EXT_PSB)
		return NULL;
	if (ipt__pkt_read_psb(pos, config) < 0)
		return NULL;
	return pos;
}

/* Set *sync to the PSB at pos.  -pte_eos if pos is outside the trace or
 * too close to its end, -pte_nosync if no PSB starts there, -pte_bad_packet
 * or -pte_eos for a broken or truncated one. */
static IPT__UNUSED int ipt__sync_set(const uint8_t **sync, const uint8_t *pos,
				     const struct pt_config *config)
{
	int errcode;

	if (!sync || !pos || !config)
		return -pte_internal;

	if (pos < config->begin || config->end < pos)
		return -pte_eos;
	if (ipt__pkt_left(pos, config) < 2)
		return -pte_eos;

	if (pos[0] != IPT__OPC_EXT || pos[1] != IPT__EXT_PSB)
		return -pte_nosync;

	errcode = ipt__pkt_read_psb(pos, config);
	if (errcode < 0)
		return errcode;

	*sync = pos;
	return 0;
}

/* Set *sync to the first PSB at or after pos.  The search starts at the
 * first 8-byte aligned address at or after pos; -pte_eos if there is none
 * before the end. */
static IPT__UNUSED int ipt__sync_forward(const uint8_t **sync,
					 const uint8_t *pos,
					 const struct pt_config *config,
					 int grows)
{
	const uint8_t *start, *found;
	size_t off, n;

	if (!sync || !pos || !config)
		return -pte_internal;
	if (pos < config->begin || config->end < pos)
		return -pte_internal;

	start = pos;
	n = (size_t) (config->end - config->begin);
	off = (size_t) (pos - config->begin);
	off += (size_t) ((8u - ((uintptr_t) pos & 7u)) & 7u);

	for (; off + 8 <= n; off += 8) {
		if (!ipt__psb_word(config->begin + off))
			continue;

		found = ipt__find_psb(config->begin + off, config, grows);
		if (!found || found < start)
			continue;

		*sync = found;
		return 0;
	}

	return -pte_eos;
}

/* Set *sync to the last PSB found before pos.  The search looks at the
 * aligned 8-byte words that end at or before pos; -pte_eos if none holds
 * a PSB. */
static IPT__UNUSED int ipt__sync_backward(const uint8_t **sync,
					  const uint8_t *pos,
					  const struct pt_config *config,
					  int grows)
{
	const uint8_t *found;
	size_t off;

	if (!sync || !pos || !config)
		return -pte_internal;
	if (pos < config->begin || config->end < pos)
		return -pte_internal;

	off = (size_t) (pos - config->begin);
	off -= (size_t) ((uintptr_t) pos & 7u);
	if (off > (size_t) (pos - config->begin))
		return -pte_eos;

	while (off >= 8) {
		off -= 8;
		if (!ipt__psb_word(config->begin + off))
			continue;

		/* In a run of PSB pattern longer than one PSB, every word
		 * of the run names the PSB at the run's end, which may lie
		 * at or after pos.  Only a PSB before pos is progress. */
		found = ipt__find_psb(config->begin + off, config, grows);
		if (!found || found >= pos)
			continue;

		*sync = found;
		return 0;
	}

	return -pte_eos;
}

/* ---- the decoder ---- */

/* ---- pieces ----
 * A trace in one buffer is one piece; a ring's older piece, bridge and
 * newer piece follow one another (struct ipt__pkt_pieces).  pos moves
 * into the next piece once it reaches its piece's stop, in the slow path
 * of pt_pkt_next only: the fast path stays before the stop, so that a
 * trace in one piece costs nothing more. */

/* Make piece i the current one: config.begin and config.end are its, and
 * the fast path of pt_pkt_next may go where at least IPT__FAST_ROOM
 * bytes are left, up to its stop. */
static void ipt__pkt_use_piece(struct pt_packet_decoder *decoder, uint32_t i)
{
	const struct ipt__pkt_piece *piece = &decoder->pieces.piece[i];
	size_t n, stop;

	decoder->pieces.cur = i;
	decoder->config.begin = (uint8_t *) (uintptr_t) piece->begin;
	decoder->config.end = (uint8_t *) (uintptr_t) piece->end;
	n = (size_t) (piece->end - piece->begin);
	stop = (size_t) (piece->stop - piece->begin);
	decoder->fast = n >= IPT__FAST_ROOM ? n - IPT__FAST_ROOM + 1 : 0;
	if (decoder->fast > stop)
		decoder->fast = stop;
}

/* The trace is config.begin to config.end, in one piece. */
static void ipt__pkt_one_piece(struct pt_packet_decoder *decoder)
{
	struct ipt__pkt_piece *piece = &decoder->pieces.piece[0];

	piece->begin = decoder->config.begin;
	piece->stop = decoder->config.end;
	piece->end = decoder->config.end;
	piece->base = 0;
	decoder->pieces.n = 1;
	decoder->pieces.sync_piece = 0;
	ipt__pkt_use_piece(decoder, 0);
}

/* The offset in the trace of p, a position in piece i. */
static inline uint64_t ipt__pkt_off_in(const struct pt_packet_decoder *decoder,
				       uint32_t i, const uint8_t *p)
{
	const struct ipt__pkt_piece *piece = &decoder->pieces.piece[i];

	return piece->base + (uint64_t) (p - piece->begin);
}

/* The offset of the decoder's position; of the first byte after its
 * last piece; of the end of piece i's packets. */
static inline uint64_t ipt__pkt_off(const struct pt_packet_decoder *decoder)
{
	return ipt__pkt_off_in(decoder, decoder->pieces.cur, decoder->pos);
}

static uint64_t ipt__pkt_size(const struct pt_packet_decoder *decoder)
{
	uint32_t last = decoder->pieces.n - 1;

	return ipt__pkt_off_in(decoder, last, decoder->pieces.piece[last].end);
}

static uint64_t ipt__pkt_stop_off(const struct pt_packet_decoder *decoder,
				  uint32_t i)
{
	return ipt__pkt_off_in(decoder, i, decoder->pieces.piece[i].stop);
}

/* The piece a packet at offset off starts in (off at most the size). */
static uint32_t ipt__pkt_piece_of(const struct pt_packet_decoder *decoder,
				  uint64_t off)
{
	uint32_t i = 0;

	while (i + 1 < decoder->pieces.n && ipt__pkt_stop_off(decoder, i) <= off)
		i += 1;
	return i;
}

/* Move to offset off (at most the size). */
static void ipt__pkt_seek(struct pt_packet_decoder *decoder, uint64_t off)
{
	uint32_t i = ipt__pkt_piece_of(decoder, off);

	ipt__pkt_use_piece(decoder, i);
	decoder->pos = decoder->pieces.piece[i].begin +
		       (size_t) (off - decoder->pieces.piece[i].base);
}

/* Before reading at pos: move into the next piece if pos has reached the
 * stop of its own. */
static inline void ipt__pkt_settle(struct pt_packet_decoder *decoder)
{
	const struct ipt__pkt_pieces *pieces = &decoder->pieces;

	if (IPT__UNLIKELY(pieces->cur + 1 < pieces->n && decoder->pos &&
			  decoder->pos >= pieces->piece[pieces->cur].stop))
		ipt__pkt_seek(decoder, ipt__pkt_off(decoder));
}

/* Whether the current piece may go on after its end: more trace may come
 * (ipt_pkt_extend), and it is the newest piece, or the bridge while it
 * lacks some of the newest piece's first bytes. */
static int ipt__pkt_piece_grows(const struct pt_packet_decoder *decoder)
{
	const struct ipt__pkt_pieces *pieces = &decoder->pieces;
	const struct ipt__pkt_piece *piece = &pieces->piece[pieces->cur];

	if (!decoder->more || pieces->cur + 2 < pieces->n)
		return 0;
	return pieces->cur + 1 == pieces->n ||
	       (size_t) (piece->end - piece->stop) < (size_t) IPT__RING_ROOM;
}

/* Copy into the bridge what it lacks of the newer piece's first
 * IPT__RING_ROOM bytes, as far as the newer piece goes now. */
static void ipt__pkt_fill_bridge(struct pt_packet_decoder *decoder)
{
	struct ipt__pkt_pieces *pieces = &decoder->pieces;
	struct ipt__pkt_piece *bridge = &pieces->piece[pieces->n - 2];
	const struct ipt__pkt_piece *newer = &pieces->piece[pieces->n - 1];
	size_t k, m, want;

	k = (size_t) (bridge->stop - bridge->begin);
	m = (size_t) (bridge->end - bridge->stop);
	want = (size_t) (newer->end - newer->begin);
	if (want > (size_t) IPT__RING_ROOM)
		want = (size_t) IPT__RING_ROOM;
	if (want <= m)
		return;
	IPT_MEMCPY(pieces->bridge + k + m, newer->begin + m, want - m);
	bridge->end = bridge->stop + want;
}

static IPT__UNUSED int ipt__pkt_init(struct pt_packet_decoder *decoder,
				     const struct pt_config *config)
{
	int errcode;

	if (!decoder || !config)
		return -pte_invalid;

	IPT_MEMSET(decoder, 0, sizeof(*decoder));
	errcode = ipt__config_from_user(&decoder->config, config);
	if (errcode < 0)
		return errcode;

	ipt__pkt_one_piece(decoder);
	return 0;
}

static IPT__UNUSED void ipt__pkt_fini(struct pt_packet_decoder *decoder)
{
	(void) decoder;
}

/* Where an embedded decoder is, and where its trace ends. */
static IPT__UNUSED inline const struct pt_config *
ipt__pkt_config(const struct pt_packet_decoder *decoder)
{
	return decoder ? &decoder->config : NULL;
}

static IPT__UNUSED inline const uint8_t *
ipt__pkt_pos(const struct pt_packet_decoder *decoder)
{
	return decoder ? decoder->pos : NULL;
}

static IPT__UNUSED inline const uint8_t *
ipt__pkt_end(const struct pt_packet_decoder *decoder)
{
	return decoder ? decoder->config.end : NULL;
}

/* The PSB the decoder last synchronized on or read (see sync). */
static IPT__UNUSED inline const uint8_t *
ipt__pkt_sync_pos(const struct pt_packet_decoder *decoder)
{
	return decoder ? decoder->sync : NULL;
}

/* Move on by size bytes without reading them (the caller knows what they
 * hold).  -pte_eos if that leaves the trace, -pte_nosync before the first
 * synchronization. */
static IPT__UNUSED int ipt__pkt_skip(struct pt_packet_decoder *decoder,
				     uint64_t size)
{
	uint64_t off;

	if (!decoder->pos)
		return -pte_nosync;
	off = ipt__pkt_off(decoder);
	if (ipt__pkt_size(decoder) - off < size)
		return -pte_eos;
	ipt__pkt_seek(decoder, off + size);
	return 0;
}

/* The offset of the decoder's position, of the PSB it synchronized on
 * last; UINT64_MAX for none. */
static IPT__UNUSED uint64_t
ipt__pkt_pos_off(const struct pt_packet_decoder *decoder)
{
	return decoder->pos ? ipt__pkt_off(decoder) : UINT64_MAX;
}

static IPT__UNUSED uint64_t
ipt__pkt_sync_off(const struct pt_packet_decoder *decoder)
{
	if (!decoder->sync)
		return UINT64_MAX;
	return ipt__pkt_off_in(decoder, decoder->pieces.sync_piece,
			       decoder->sync);
}

/* Synchronized at p, a position in the current piece. */
static void ipt__pkt_sync_here(struct pt_packet_decoder *decoder,
			       const uint8_t *p)
{
	decoder->sync = p;
	decoder->pos = p;
	decoder->pieces.sync_piece = decoder->pieces.cur;
	decoder->sync_started = 0;
}

/* ---- comparing decoders ----
 * For joining the decoders of adjacent trace segments (>>seg): two
 * decoders are in the same state if everything a later call reads is
 * equal. */

/* The packet decoder: where it is, and what it decodes (the same bytes
 * with the same configuration, copied in alike). */
static IPT__UNUSED int ipt__pkt_same(const struct pt_packet_decoder *a,
				     const struct pt_packet_decoder *b)
{
	return a->pos == b->pos && a->sync == b->sync && a->fast == b->fast &&
	       a->sync_started == b->sync_started &&
	       !IPT_MEMCMP(&a->config, &b->config, sizeof(a->config));
}

static IPT__UNUSED int ipt__last_ip_same(const struct ipt_last_ip *a,
					 const struct ipt_last_ip *b)
{
	return a->ip == b->ip && a->have_ip == b->have_ip &&
	       a->suppressed == b->suppressed;
}

/* A packet decoder as allocated, not one inside an event decoder
 * (IPT__OWN). */
struct ipt__pkt_box {
	struct pt_packet_decoder decoder;
	struct ipt_allocator allocator;
};

/* A new, unsynchronized decoder.  NULL if config is NULL or bad (see
 * ipt__config_from_user), allocator lacks alloc or free, or memory runs
 * out. */
IPT_DEF struct pt_packet_decoder *
ipt_pkt_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_allocator *allocator)
{
	struct ipt__pkt_box *box = (struct ipt__pkt_box *) ipt__own_alloc(
		allocator, IPT__OWN(struct ipt__pkt_box));

	if (!box)
		return NULL;
	if (ipt__pkt_init(&box->decoder, config) < 0) {
		ipt__own_free(box, IPT__OWN(struct ipt__pkt_box));
		return NULL;
	}
	return &box->decoder;
}

IPT_DEF struct pt_packet_decoder *
pt_pkt_alloc_decoder(const struct pt_config *config)
{
	return ipt_pkt_alloc_decoder_with(config, NULL);
}

/* Free a decoder; NULL is fine. */
IPT_DEF void pt_pkt_free_decoder(struct pt_packet_decoder *decoder)
{
	if (!decoder)
		return;
	ipt__pkt_fini(decoder);
	ipt__own_free(decoder, IPT__OWN(struct ipt__pkt_box));
}

/* Move to the next PSB: the first at or after the current position (the
 * start if unsynchronized), or after the current one if the decoder sits
 * on it.  -pte_eos if there is none, -pte_internal if the decoder was set
 * to the very end, -pte_invalid if decoder is NULL; the position does not
 * change on errors. */
IPT_DEF int ipt_pkt_set_buffer(struct pt_packet_decoder *decoder,
			       uint8_t *begin, uint8_t *end)
{
	if (!decoder || !begin || !end || end < begin)
		return -pte_invalid;
	decoder->config.begin = begin;
	decoder->config.end = end;
	decoder->pos = NULL;
	decoder->sync = NULL;
	decoder->sync_started = 0;
	decoder->more = 0;
	ipt__pkt_one_piece(decoder);
	return 0;
}

/* The older piece up to the bridge (if the bridge does not hold all of
 * it), the bridge, the newer piece; see struct ipt__pkt_pieces. */
IPT_DEF int ipt_pkt_set_ring(struct pt_packet_decoder *decoder,
			     uint8_t *older, uint8_t *older_end,
			     uint8_t *newer, uint8_t *newer_end)
{
	struct ipt__pkt_pieces *pieces;
	struct ipt__pkt_piece *piece;
	size_t k, size;
	int err;

	if (!newer || !newer_end || newer_end < newer)
		return -pte_invalid;
	err = ipt_pkt_set_buffer(decoder, older, older_end);
	if (err < 0)
		return err;
	/* Pieces that touch are one buffer; so is a ring that has not
	 * wrapped.  An empty newer piece stays, for ipt_pkt_extend. */
	if (older_end == newer)
		return ipt_pkt_set_buffer(decoder, older, newer_end);
	if (older == older_end)
		return ipt_pkt_set_buffer(decoder, newer, newer_end);

	pieces = &decoder->pieces;
	size = (size_t) (older_end - older);
	k = size < (size_t) IPT__RING_ROOM ? size : (size_t) IPT__RING_ROOM;
	piece = pieces->piece;
	if (k < size) {
		piece->begin = older;
		piece->stop = older_end - k;
		piece->end = older_end;
		piece->base = 0;
		piece += 1;
	}
	IPT_MEMCPY(pieces->bridge, older_end - k, k);
	piece->begin = pieces->bridge;
	piece->stop = pieces->bridge + k;
	piece->end = piece->stop;
	piece->base = (uint64_t) (size - k);
	piece += 1;
	piece->begin = newer;
	piece->stop = newer_end;
	piece->end = newer_end;
	piece->base = (uint64_t) size;
	pieces->n = (uint32_t) (piece - pieces->piece) + 1;
	ipt__pkt_fill_bridge(decoder);
	ipt__pkt_use_piece(decoder, 0);
	return 0;
}

/* The newest piece grows; a bridge takes what it lacks of its start. */
IPT_DEF int ipt_pkt_extend(struct pt_packet_decoder *decoder, uint8_t *end,
			   int more)
{
	struct ipt__pkt_piece *last;

	if (!decoder || !end)
		return -pte_invalid;
	last = &decoder->pieces.piece[decoder->pieces.n - 1];
	if (end < last->end)
		return -pte_invalid;
	last->stop = end;
	last->end = end;
	if (decoder->pieces.n > 1)
		ipt__pkt_fill_bridge(decoder);
	decoder->more = more ? 1 : 0;
	ipt__pkt_use_piece(decoder, decoder->pieces.cur);
	return 0;
}

/* The first PSB at or after offset off, searched piece by piece: a PSB
 * counts in the piece it starts in (before its stop), and one that
 * crosses the wrap lies whole in the bridge.  The position does not
 * change on errors. */
static int ipt__pkt_find_forward(struct pt_packet_decoder *decoder,
				 uint64_t off)
{
	const struct ipt__pkt_piece *piece;
	const uint8_t *sync;
	uint32_t i, cur = decoder->pieces.cur;
	int errcode;

	for (i = ipt__pkt_piece_of(decoder, off);; i += 1) {
		ipt__pkt_use_piece(decoder, i);
		piece = &decoder->pieces.piece[i];
		if (off < piece->base)
			off = piece->base;
		errcode = ipt__sync_forward(&sync, piece->begin +
						   (size_t) (off - piece->base),
					    &decoder->config,
					    ipt__pkt_piece_grows(decoder));
		if (errcode < 0 && errcode != -pte_eos)
			break;
		if (!errcode && sync < piece->stop) {
			ipt__pkt_sync_here(decoder, sync);
			return 0;
		}
		errcode = -pte_eos;
		if (i + 1 == decoder->pieces.n)
			break;
	}
	ipt__pkt_use_piece(decoder, cur);
	return errcode;
}

IPT_DEF int pt_pkt_sync_forward(struct pt_packet_decoder *decoder)
{
	uint64_t off;

	if (!decoder)
		return -pte_invalid;

	off = 0;
	if (decoder->pos)
		off = ipt__pkt_off(decoder);

	/* Move past the PSB we are synchronized at, but start a bit earlier
	 * to find a PSB that the preceding packet partially consumed. */
	if (!decoder->sync_started || off != ipt__pkt_sync_off(decoder)) {
		if (off == ipt__pkt_sync_off(decoder))
			off += IPT__PSB_SIZE;
		off -= (off < IPT__PSB_SIZE) ? off : IPT__PSB_SIZE - 1;
	}

	if (ipt__pkt_size(decoder) < off)
		return -pte_internal;

	return ipt__pkt_find_forward(decoder, off);
}

/* Move to the PSB before the current position (the end if
 * unsynchronized).  -pte_eos if there is none, -pte_invalid if decoder is
 * NULL.  Searched piece by piece, back from the position: a PSB counts in
 * the piece it starts in, so the search in an earlier piece looks past
 * its stop for a PSB that starts before it. */
IPT_DEF int pt_pkt_sync_backward(struct pt_packet_decoder *decoder)
{
	const struct ipt__pkt_piece *piece;
	const uint8_t *from, *want, *sync;
	uint32_t i, cur;
	uint64_t off;
	int errcode, grows;

	if (!decoder)
		return -pte_invalid;

	off = decoder->pos ? ipt__pkt_off(decoder) : ipt__pkt_size(decoder);
	cur = decoder->pieces.cur;
	i = ipt__pkt_piece_of(decoder, off);
	piece = &decoder->pieces.piece[i];
	from = piece->begin + (size_t) (off - piece->base);
	want = from;
	for (;;) {
		ipt__pkt_use_piece(decoder, i);
		grows = ipt__pkt_piece_grows(decoder);
		do {
			errcode = ipt__sync_backward(&sync, from,
						     &decoder->config, grows);
			from = sync;
		} while (!errcode && sync >= want);
		if (!errcode) {
			ipt__pkt_sync_here(decoder, sync);
			return 0;
		}
		if (!i || errcode != -pte_eos)
			break;
		i -= 1;
		piece = &decoder->pieces.piece[i];
		want = piece->stop;
		from = piece->stop + IPT__PSB_SIZE - 1;
		if (from > piece->end)
			from = piece->end;
	}
	ipt__pkt_use_piece(decoder, cur);
	return errcode;
}

/* Decode from offset on, PSB or not; it also becomes the sync offset.
 * -pte_eos if offset is past the end, -pte_invalid if decoder is NULL. */
IPT_DEF int pt_pkt_sync_set(struct pt_packet_decoder *decoder,
			    uint64_t offset)
{
	if (!decoder)
		return -pte_invalid;

	if (ipt__pkt_size(decoder) < offset)
		return -pte_eos;

	ipt__pkt_seek(decoder, offset);
	ipt__pkt_sync_here(decoder, decoder->pos);
	return 0;
}

/* pt_pkt_sync_set for a start without a PSB (ipt_evt_start_at): a
 * forward sync from there finds a PSB right there, too. */
static int ipt__pkt_start_at(struct pt_packet_decoder *decoder,
			     uint64_t offset)
{
	int err = pt_pkt_sync_set(decoder, offset);

	if (err >= 0)
		decoder->sync_started = 1;
	return err;
}

/* The offset of the next packet.  -pte_nosync before the first
 * synchronization, -pte_invalid for NULL arguments. */
IPT_DEF int pt_pkt_get_offset(const struct pt_packet_decoder *decoder,
			      uint64_t *offset)
{
	if (!decoder || !offset)
		return -pte_invalid;
	if (!decoder->pos)
		return -pte_nosync;

	*offset = ipt__pkt_off(decoder);
	return 0;
}

/* The offset of the last PSB synchronized at or decoded (or of the last
 * pt_pkt_sync_set).  -pte_nosync before the first synchronization,
 * -pte_invalid for NULL arguments. */
IPT_DEF int pt_pkt_get_sync_offset(const struct pt_packet_decoder *decoder,
				   uint64_t *offset)
{
	if (!decoder || !offset)
		return -pte_invalid;
	if (!decoder->sync)
		return -pte_nosync;

	*offset = ipt__pkt_sync_off(decoder);
	return 0;
}

/* The decoder's copy of the configuration; NULL if decoder is NULL. */
IPT_DEF const struct pt_config *
pt_pkt_get_config(const struct pt_packet_decoder *decoder)
{
	if (!decoder)
		return NULL;

	return &decoder->config;
}

/* SKD007: a buffer overflow may corrupt the CYC before an OVF so that the
 * OVF's extended opcode byte reads as the second byte of a 2-byte CYC.  A
 * 2-byte CYC whose second byte looks like IPT__OPC_EXT and is followed by
 * an OVF extension byte is taken for that: skip the CYC's first byte and
 * report the OVF.  Returns the OVF's size, 0 if the erratum did not hit,
 * -pte_eos if the trace ends for now before the byte that decides. */
static int ipt__pkt_handle_skd007(struct pt_packet_decoder *decoder,
				  struct pt_packet *packet)
{
	const uint8_t *pos;

	if (packet->size != 2)
		return 0;

	if ((packet->payload.cyc.value & 0xffe0u) != 0x20)
		return 0;

	/* At the end for now, the byte that decides may yet come. */
	pos = decoder->pos + 2;
	if (decoder->config.end <= pos)
		return decoder->more ? -pte_eos : 0;
	if (*pos != IPT__EXT_OVF)
		return 0;

	decoder->pos += 1;
	packet->type = ppt_ovf;
	packet->size = ipt__layout[ppt_ovf].size;
	return ipt__layout[ppt_ovf].size;
}

/* Decode the packet at decoder->pos into *packet; do not advance. */
static int ipt__pkt_decode(struct pt_packet_decoder *decoder,
			   struct pt_packet *packet)
{
	const struct pt_config *config = &decoder->config;
	const uint8_t *pos = decoder->pos;
	enum pt_packet_type type;
	unsigned int kind;
	int size;

	if (!pos || pos < config->begin)
		return -pte_nosync;
	if (config->end <= pos)
		return -pte_eos;

	kind = ipt__first_byte[pos[0]];
	type = (enum pt_packet_type) kind;
	switch (kind) {
	case ppt_tnt_8:
		size = ipt__pkt_read_tnt_8(&packet->payload.tnt, pos, config);
		break;

	case ppt_pad:
		size = 1;
		break;

	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
	case ppt_fup:
		size = ipt__pkt_read_ip(&packet->payload.ip, pos, config);
		break;

	case ppt_cyc:
		size = ipt__pkt_read_cyc(&packet->payload.cyc, pos, config);
		if (size < 0)
			return size;

		packet->type = ppt_cyc;
		packet->size = (uint8_t) size;
		if (decoder->config.errata.skd007) {
			int ovf = ipt__pkt_handle_skd007(decoder, packet);

			if (ovf)
				return ovf;
		}
		return size;

	case ppt_mtc:
		size = ipt__pkt_read_mtc(&packet->payload.mtc, pos, config);
		break;

	case ppt_tsc:
		size = ipt__pkt_read_tsc(&packet->payload.tsc, pos, config);
		break;

	case ppt_mode:
		size = ipt__pkt_read_mode(&packet->payload.mode, pos, config);
		break;

	case ppt_trig:
		size = ipt__pkt_read_trig(&packet->payload.trig, pos, config);
		break;

	case IPT__KIND_EXT:
		if (ipt__pkt_left(pos, config) < 2)
			return -pte_eos;

		kind = ipt__second_byte[pos[1]];
		type = (enum pt_packet_type) kind;
		switch (kind) {
		case ppt_psb:
			size = ipt__pkt_read_psb(pos, config);
			if (size >= 0)
				ipt__pkt_sync_here(decoder, pos);
			break;

		case ppt_psbend:
		case ppt_ovf:
		case ppt_stop:
			size = 2;
			break;

		case ppt_tnt_64:
			size = ipt__pkt_read_tnt_64(&packet->payload.tnt, pos,
						    config);
			break;

		case ppt_pip:
			size = ipt__pkt_read_pip(&packet->payload.pip, pos,
						 config);
			break;

		case ppt_vmcs:
			size = ipt__pkt_read_vmcs(&packet->payload.vmcs, pos,
						  config);
			break;

		case ppt_cbr:
			size = ipt__pkt_read_cbr(&packet->payload.cbr, pos,
						 config);
			break;

		case ppt_tma:
			size = ipt__pkt_read_tma(&packet->payload.tma, pos,
						 config);
			/* SKZ84: TSC scaling or offsetting may corrupt TMA;
			 * reserved bits set is what can be seen.  Such a TMA
			 * decodes as an invalid packet one byte longer. */
			if (size == -pte_bad_packet &&
			    decoder->config.errata.skz84) {
				packet->type = ppt_invalid;
				packet->size = (uint8_t) (ipt__layout[ppt_tma]
							  .size + 1);
				return packet->size;
			}
			break;

		case ppt_mnt:
			if (ipt__pkt_left(pos, config) < 3)
				return -pte_eos;
			if (pos[2] != IPT__EXT2_MNT) {
				type = ppt_unknown;
				size = ipt__pkt_read_unknown(packet, pos,
							     config);
				break;
			}
			size = ipt__pkt_read_mnt(&packet->payload.mnt, pos,
						 config);
			break;

		case ppt_exstop:
			size = ipt__pkt_read_exstop(&packet->payload.exstop,
						    pos, config);
			break;

		case ppt_mwait:
			size = ipt__pkt_read_mwait(&packet->payload.mwait, pos,
						   config);
			break;

		case ppt_pwre:
			size = ipt__pkt_read_pwre(&packet->payload.pwre, pos,
						  config);
			break;

		case ppt_pwrx:
			size = ipt__pkt_read_pwrx(&packet->payload.pwrx, pos,
						  config);
			break;

		case ppt_ptw:
			size = ipt__pkt_read_ptw(&packet->payload.ptw, pos,
						 config);
			break;

		case ppt_cfe:
			size = ipt__pkt_read_cfe(&packet->payload.cfe, pos,
						 config);
			break;

		case ppt_evd:
			size = ipt__pkt_read_evd(&packet->payload.evd, pos,
						 config);
			break;

		default:
			type = ppt_unknown;
			size = ipt__pkt_read_unknown(packet, pos, config);
			break;
		}
		break;

	default:
		type = ppt_unknown;
		size = ipt__pkt_read_unknown(packet, pos, config);
		break;
	}

	if (size < 0)
		return size;

	packet->type = type;
	packet->size = (uint8_t) size;
	return size;
}

/* pt_pkt_next for everything but the common packets: decode, copy out as
 * the caller's size says (bytes past sizeof(struct pt_packet) zeroed,
 * fewer bytes truncated), advance. */
/* Whether more trace may come after the end (ipt_pkt_extend). */
static IPT__UNUSED int ipt__pkt_more(const struct pt_packet_decoder *decoder)
{
	return (int) decoder->more;
}

/* The end of the trace, or a packet cut by it, is only the end for now if
 * more may come. */
static int ipt__pkt_end_status(const struct pt_packet_decoder *decoder,
			       int status)
{
	return status == -pte_eos && decoder->more ? -ipt_pte_need_more :
						     status;
}

static IPT__NOINLINE int ipt__pkt_next_slow(struct pt_packet_decoder *decoder,
			      struct pt_packet *packet, size_t psize)
{
	struct pt_packet pkt;
	int size;

	ipt__pkt_settle(decoder);
	if (psize == sizeof(pkt)) {
		size = ipt__pkt_decode(decoder, packet);
		if (size < 0)
			return ipt__pkt_end_status(decoder, size);
	} else {
		size = ipt__pkt_decode(decoder, &pkt);
		if (size < 0)
			return ipt__pkt_end_status(decoder, size);

		if (sizeof(pkt) < psize) {
			IPT_MEMSET(((uint8_t *) packet) + sizeof(pkt), 0,
				   psize - sizeof(pkt));
			psize = sizeof(pkt);
		}
		IPT_MEMCPY(packet, &pkt, psize);
	}

	decoder->pos += size;
	return size;
}

/* Eight trace bytes at pos, little-endian; all eight must be readable. */
static inline uint64_t ipt__load64(const uint8_t *pos)
{
	return ipt__read_le_var(pos, 8, 8);
}

/* The one-byte packets, decoded in advance: entry b / 2 for an even first
 * byte b.  Zero is PAD, IPT__OPC_EXT (2) has size zero (not a one-byte
 * packet), and every other even byte is a TNT-8: its bits above bit 0,
 * up to the highest set bit (the stop bit), oldest first. */
#define IPT__TNT8_MSB(x)                                                       \
	((x) >= 64 ? 6 : (x) >= 32 ? 5 : (x) >= 16 ? 4 : (x) >= 8 ? 3 :       \
	 (x) >= 4 ? 2 : (x) >= 2 ? 1 : 0)
#define IPT__ONE_BYTE(x)                                                       \
	{ (x) == 0 ? ppt_pad : (x) == 1 ? ppt_invalid : ppt_tnt_8,             \
	  (x) == 1 ? 0 : 1,                                                    \
	  { { (uint8_t) ((x) < 2 ? 0 : IPT__TNT8_MSB(x)),                       \
	      (uint64_t) ((x) < 2 ? 0 : (x) & ~(1u << IPT__TNT8_MSB(x))) } } }
#define IPT__ONE_BYTE4(x)                                                      \
	IPT__ONE_BYTE(x), IPT__ONE_BYTE((x) + 1), IPT__ONE_BYTE((x) + 2),     \
	IPT__ONE_BYTE((x) + 3)
#define IPT__ONE_BYTE16(x)                                                     \
	IPT__ONE_BYTE4(x), IPT__ONE_BYTE4((x) + 4), IPT__ONE_BYTE4((x) + 8),  \
	IPT__ONE_BYTE4((x) + 12)

static const struct pt_packet ipt__pkt_one_byte[128] = {
	IPT__ONE_BYTE16(0), IPT__ONE_BYTE16(16), IPT__ONE_BYTE16(32),
	IPT__ONE_BYTE16(48), IPT__ONE_BYTE16(64), IPT__ONE_BYTE16(80),
	IPT__ONE_BYTE16(96), IPT__ONE_BYTE16(112)
};

/* The TNT-8s alone, for a reader of their bits only: for a first byte
 * b, the number of its bits and the bits, as ipt__pkt_one_byte has them
 * (entry b / 2); zero bits for every byte that is no TNT-8 (PAD too). */
struct ipt__tnt8 {
	uint8_t size;
	uint8_t bits;
};

#define IPT__TNT8(b)                                                           \
	{ (uint8_t) ((b) & 1 || (b) < 4 ? 0 : IPT__TNT8_MSB((b) >> 1)),        \
	  (uint8_t) ((b) & 1 || (b) < 4 ? 0 :                                  \
		     ((b) >> 1) & ~(1u << IPT__TNT8_MSB((b) >> 1))) }

static const struct ipt__tnt8 ipt__tnt8[256] = { IPT__R256(IPT__TNT8) };

#undef IPT__TNT8
#undef IPT__ONE_BYTE16
#undef IPT__ONE_BYTE4
#undef IPT__ONE_BYTE
#undef IPT__TNT8_MSB

/* Whether @b, a packet's first byte, is a TNT-8, as ipt__pkt_one_byte
 * says (an even byte from 4 up), in one test: below 4 the difference
 * wraps to bit 31.  Its bits are those between bit 0 and its highest set
 * bit. */
static IPT__INLINE int ipt__pkt_is_tnt8(uint32_t b)
{
	return !((b - 4u) & 0x80000001u);
}

/* The IP packet (TIP, FUP, TIP.PGE or TIP.PGD) at pos, for the fast
 * path: its size, 0 for a compression the SDM reserves (the slow path's);
 * its IP payload in @ip and compression in @ipc.  The packet's size comes
 * from the opcode byte by shifts rather than a table load: the next
 * packet's position waits for it. */
static IPT__INLINE int ipt__pkt_fast_ip(const uint8_t *pos, uint64_t *ip,
					unsigned int *ipc)
{
	unsigned int c = (unsigned int) pos[0] >> IPT__OPM_IPC_SHR;

	*ipc = c;
	*ip = ipt__load64(pos + 1) & ipt__ipc_mask[c];
	return (int) ((IPT__IPC_PACKET_SIZES >> (4 * c)) & 0xf);
}

/* ipt__pkt_fast for the packets with an extended opcode, at pos. */
static IPT__INLINE int ipt__pkt_fast_ext(const uint8_t *pos,
					 struct pt_packet *packet)
{
	uint64_t val;
	unsigned int kind;

	/* TNT-64: where long TNTs are used (up to 47 bits), about as
	 * frequent as TIPs, so tested before the table.  Without a stop
	 * bit it is malformed. */
	if (pos[1] == IPT__EXT_TNT_64) {
		val = ipt__load64(pos) >> 16;
		if (IPT__UNLIKELY(val < 2))
			return 0;
		packet->type = ppt_tnt_64;
		packet->size = ipt__layout[ppt_tnt_64].size;
		packet->payload.tnt.bit_size = ipt__msb(val);
		packet->payload.tnt.payload = val ^ (1ull << ipt__msb(val));
		return ipt__layout[ppt_tnt_64].size;
	}

	kind = ipt__second_byte[pos[1]];
	switch (kind) {
	case ppt_psbend:
	case ppt_ovf:
	case ppt_stop:
		packet->type = (enum pt_packet_type) kind;
		packet->size = 2;
		return 2;

	case ppt_cbr:
		packet->type = ppt_cbr;
		packet->size = ipt__layout[ppt_cbr].size;
		packet->payload.cbr.ratio = pos[2];
		return ipt__layout[ppt_cbr].size;

	case ppt_pip:
		val = ipt__load64(pos) >> 16;
		packet->type = ppt_pip;
		packet->size = ipt__layout[ppt_pip].size;
		packet->payload.pip.nr = (uint32_t) (val & IPT__PIP_NR);
		packet->payload.pip.cr3 = (val >> IPT__PIP_CR3_SHL)
					  << IPT__PIP_CR3_SHR;
		return ipt__layout[ppt_pip].size;

	case ppt_vmcs:
		packet->type = ppt_vmcs;
		packet->size = ipt__layout[ppt_vmcs].size;
		packet->payload.vmcs.base = ipt__pkt_vmcs_base(pos);
		return ipt__layout[ppt_vmcs].size;
	}
	return 0;
}

/* Decode the common packet at pos into *packet; return its size, or 0 if
 * it is not one of them (or is cut short, malformed, or an erratum may
 * apply), for ipt__pkt_next_slow to decode from scratch.  At least
 * IPT__FAST_ROOM bytes must be readable at pos: no packet decoded here can
 * be cut off and no byte read needs a bounds check.
 *
 * It decodes the packets that make up nearly all of a trace: TNT-8, PAD,
 * TNT-64, the IP packets, and the timing packets (CYC, MTC, TSC) and the
 * PSB+ packets of hardware traces (MODE, PIP, VMCS, CBR, PSBEND),
 * dispatching on the first byte through the layout table's
 * ipt__first_byte.  Errors, errata, PSB and the rest go to the slow
 * path.  pt_pkt_next and ipt_pkt_next_batch both use it;
 * whole (a constant) is 1 for the batch, whose PADs get a zero payload. */
static IPT__INLINE int ipt__pkt_fast(const uint8_t *pos,
				     struct pt_packet *packet, int skd007,
				     int whole)
{
	uint64_t val;
	unsigned int b, kind;
	int size;

	b = pos[0];

	/* TNT-8 and PAD, one byte each, make up most of a hardware trace;
	 * they are copied from packets decoded in advance.  A batch copies
	 * both alike; pt_pkt_next only TNT-8s, as a PAD leaves the payload
	 * alone there, as libipt's does, at the cost of a branch between
	 * the two that real traces make hard to predict. */
	if (!(b & 1)) {
		const struct pt_packet *one = &ipt__pkt_one_byte[b >> 1];

		if (IPT__LIKELY(whole ? one->size != 0
				      : one->type == ppt_tnt_8)) {
			IPT__COPY(*packet, *one);
			return 1;
		}
		if (!b) {
			packet->type = ppt_pad;
			packet->size = 1;
			return 1;
		}

		/* The other even byte is IPT__OPC_EXT. */
		return ipt__pkt_fast_ext(pos, packet);
	}

	/* CYC and MTC: in cycle-accurate traces every other packet is a
	 * CYC, and MTCs come between them.  Tested by their rows of the
	 * layout table, constants after compilation; no earlier row
	 * overlaps them (t_pkt_internal checks both tests against
	 * ipt__first_byte).  The byte is odd by now, so the CYC row's
	 * test, its two low bits set, is one bit test. */
	if (b & ipt__layout[ppt_cyc].opc & ~1u) {
		/* As ipt__pkt_read_cyc.  One or two bytes in nearly all
		 * traces; longer ones take the loop, which reads at most
		 * ten bytes before a value too large is found. */
		unsigned int shl = 8 - IPT__OPM_CYC_SHR;

		val = b >> IPT__OPM_CYC_SHR;
		size = 1;
		if (b & IPT__OPM_CYC_EXT) {
			b = pos[1];
			if (IPT__LIKELY(!(b & IPT__OPM_CYCX_EXT))) {
				/* SKD007 (see ipt__pkt_handle_skd007) looks
				 * at 2-byte CYCs whose second byte is
				 * IPT__OPC_EXT. */
				if (IPT__UNLIKELY(b == IPT__OPC_EXT) && skd007)
					return 0;
				/* As the loop below does for one byte: its
				 * bit 0 is clear, so no shift right. */
				packet->type = ppt_cyc;
				packet->size = 2;
				packet->payload.cyc.value =
					val | (uint64_t) b
						      << (shl - IPT__OPM_CYCX_SHR);
				return 2;
			} else {
				do {
					b = pos[size++];
					val |= (uint64_t) (b >>
							   IPT__OPM_CYCX_SHR)
					       << shl;
					shl += 8 - IPT__OPM_CYCX_SHR;
				} while ((b & IPT__OPM_CYCX_EXT) && shl <= 64);
				if (IPT__UNLIKELY(shl > 64))
					return 0;
			}
		}
		packet->type = ppt_cyc;
		packet->size = (uint8_t) size;
		packet->payload.cyc.value = val;
		return size;
	}
	if (b == ipt__layout[ppt_mtc].opc) {
		packet->type = ppt_mtc;
		packet->size = ipt__layout[ppt_mtc].size;
		packet->payload.mtc.ctc = pos[1];
		return ipt__layout[ppt_mtc].size;
	}

	/* TIP, FUP, TIP.PGE, TIP.PGD: next most frequent, and adjacent in
	 * enum pt_packet_type. */
	kind = ipt__first_byte[b];
	if (kind - ppt_fup <= ppt_tip_pgd - ppt_fup) {
		unsigned int ipc;
		uint64_t ip;

		size = ipt__pkt_fast_ip(pos, &ip, &ipc);
		if (IPT__LIKELY(size)) {
			packet->type = (enum pt_packet_type) kind;
			packet->size = (uint8_t) size;
			packet->payload.ip.ipc = (enum pt_ip_compression) ipc;
			packet->payload.ip.ip = ip;
			return size;
		}
	}

	if (kind == ppt_tsc) {
		packet->type = ppt_tsc;
		packet->size = ipt__layout[ppt_tsc].size;
		packet->payload.tsc.tsc = ipt__load64(pos) >> 8;
		return ipt__layout[ppt_tsc].size;
	}
	if (kind == ppt_mode) {
		size = ipt__pkt_mode_bits(&packet->payload.mode, pos[1]);
		if (size < 0)
			return 0;
		packet->type = ppt_mode;
		packet->size = (uint8_t) size;
		return size;
	}
	return 0;
}

/* Whether ipt__pkt_fast may decode at pos, given a decoder's config.begin
 * and fast: at least IPT__FAST_ROOM bytes are left.  One compare, which
 * also fails for a NULL or out-of-range position. */
static IPT__INLINE int ipt__pkt_in_fast(uintptr_t begin, size_t fast,
					const uint8_t *pos)
{
	return (uintptr_t) pos - begin < fast;
}

/* Past the PADs at @pos, as calls of pt_pkt_next would go, one PAD each,
 * given a decoder's config.begin and fast; in traces PADs often outnumber
 * all other packets.  Only from where the fast path would decode them;
 * it stops at the first other packet, or past the fast region (by less
 * than eight bytes, all PADs).  ipt__pkt_skip_pads moves the decoder's
 * position. */
static IPT__INLINE const uint8_t *ipt__pkt_past_pads(uintptr_t begin,
						     size_t fast,
						     const uint8_t *pos)
{
	uint64_t bytes;

	/* Most packets have no PAD before them: one byte decides.  Past
	 * that, eight bytes at a time (IPT__FAST_ROOM are readable), which
	 * may go up to seven PADs past the fast region. */
	if (!ipt__pkt_in_fast(begin, fast, pos) || *pos)
		return pos;
	do {
		bytes = ipt__load64(pos);
		if (bytes)
			return pos + (ipt__lsb(bytes) >> 3);
		pos += 8;
	} while (ipt__pkt_in_fast(begin, fast, pos));
	return pos;
}

/* Past the MTC, CYC and PAD packets at @pos that ipt__pkt_fast decodes,
 * for a reader that needs neither time nor those packets: it stops at the
 * first other packet, at one the slow path must decode, or where the fast
 * region ends. */
static IPT__UNUSED IPT__INLINE const uint8_t *
ipt__pkt_past_time(uintptr_t begin, size_t fast, const uint8_t *pos,
		   int skd007)
{
	struct pt_packet packet;
	int size;

	while (ipt__pkt_in_fast(begin, fast, pos)) {
		size = ipt__pkt_fast(pos, &packet, skd007, 1);
		if (!size || (packet.type != ppt_mtc &&
			      packet.type != ppt_cyc && packet.type != ppt_pad))
			break;
		pos += size;
	}
	return pos;
}

static IPT__UNUSED IPT__INLINE void
ipt__pkt_skip_pads(struct pt_packet_decoder *decoder)
{
	decoder->pos = ipt__pkt_past_pads((uintptr_t) decoder->config.begin,
					  decoder->fast, decoder->pos);
}

/* pt_pkt_next's fast path, for a caller with a struct pt_packet of its
 * own: the next packet into @packet and the decoder past it, returning
 * its size; 0 (nothing moved) where pt_pkt_next decodes it the slow
 * way. */
static IPT__INLINE int ipt__pkt_next_fast(struct pt_packet_decoder *decoder,
					  struct pt_packet *packet)
{
	const uint8_t *pos = decoder->pos;
	int size;

	if (!ipt__pkt_in_fast((uintptr_t) decoder->config.begin,
			      decoder->fast, pos))
		return 0;
	size = ipt__pkt_fast(pos, packet, decoder->config.errata.skd007, 0);
	decoder->pos = pos + size;
	return size;
}

/* pt_pkt_next where its fast path gave up: a PSB in the fast region
 * decoded as the slow path does (ipt__pkt_read_psb), the decoder
 * synchronized at it; the rest by ipt__pkt_next_slow.  A PSB+ often
 * follows another with nothing between them, and ipt__pkt_fast leaves
 * PSBs alone, as they move the decoder's sync point. */
static IPT__NOINLINE int ipt__pkt_next_rest(struct pt_packet_decoder *decoder,
					    struct pt_packet *packet,
					    size_t psize)
{
	const uint8_t *pos = decoder->pos;

	if (psize != sizeof(*packet) ||
	    !ipt__pkt_in_fast((uintptr_t) decoder->config.begin,
			      decoder->fast, pos) ||
	    ipt__pkt_read_psb(pos, &decoder->config) != IPT__PSB_SIZE)
		return ipt__pkt_next_slow(decoder, packet, psize);
	ipt__pkt_sync_here(decoder, pos);
	decoder->pos = pos + IPT__PSB_SIZE;
	packet->type = ppt_psb;
	packet->size = IPT__PSB_SIZE;
	return IPT__PSB_SIZE;
}

/* Decode the next packet and move past it; return its size.  Same
 * semantics as libipt's pt_pkt_next: -pte_nosync before synchronization,
 * -pte_eos at the end or for a packet cut off by it, -pte_bad_opc for an
 * unknown opcode without a decode callback (or the callback's error),
 * -pte_bad_packet for a malformed packet, -pte_invalid for NULL
 * arguments; the position does not change on errors.
 *
 * The fast path: the caller's struct is ours and ipt__pkt_fast may read
 * at the position; everything else goes to ipt__pkt_next_rest. */
IPT_DEF int pt_pkt_next(struct pt_packet_decoder *decoder,
			struct pt_packet *packet, size_t psize)
{
	int size;

	if (!packet || !decoder)
		return -pte_invalid;

	if (IPT__LIKELY(psize == sizeof(*packet))) {
		size = ipt__pkt_next_fast(decoder, packet);
		if (IPT__LIKELY(size))
			return size;
	}
	return ipt__pkt_next_rest(decoder, packet, psize);
}

/* ipt_pkt_next_batch's inner loop: decode packets at *pos into *out on
 * to last, all in the fast region, and up to stop too if bounded (a
 * constant); move both on.  Returns the last size, 0 if the fast path
 * left the packet at *pos to the slow one. */
static IPT__INLINE int ipt__pkt_fast_run(const uint8_t **pos,
					 struct pt_packet **out,
					 const struct pt_packet *last,
					 const uint8_t *stop, int skd007,
					 int bounded)
{
	const uint8_t *at = *pos;
	struct pt_packet *packet = *out;
	int size;

	do {
		size = ipt__pkt_fast(at, packet, skd007, 1);
		if (IPT__UNLIKELY(!size))
			break;
		at += size;
		packet += 1;
	} while (packet < last && (!bounded || at < stop));
	*pos = at;
	*out = packet;
	return size;
}

/* See the declaration in >>api-pkt-ext.  The inner loops keep the
 * position in a register.  Every packet ipt__pkt_fast decodes is at most
 * IPT__FAST_ROOM bytes long; so where the fast region has room for that
 * many bytes for each packet still wanted, one loop decodes them all and
 * tests only the count; elsewhere the same loop tests the region's end
 * too.  Packets outside the fast region or the fast path go through
 * ipt__pkt_next_slow one by one. */
IPT_DEF int ipt_pkt_next_batch(struct pt_packet_decoder *decoder,
			       struct pt_packet *packets, size_t n)
{
	struct pt_packet *out, *last;
	const uint8_t *pos, *stop;
	uintptr_t begin;
	size_t fast;
	int size, skd007;

	if (!decoder || !packets || !n)
		return -pte_invalid;
	if (n > IPT__PKT_BATCH_MAX)
		n = IPT__PKT_BATCH_MAX;

	/* Kept in locals: stores to packets[] might alias the decoder. */
	pos = decoder->pos;
	begin = (uintptr_t) decoder->config.begin;
	fast = decoder->fast;
	skd007 = decoder->config.errata.skd007;
	out = packets;
	last = packets + n;
	while (out < last) {
		if (IPT__LIKELY(ipt__pkt_in_fast(begin, fast, pos))) {
			/* The bytes left in the fast region, at least 1:
			 * packet k from here starts at most
			 * k * IPT__FAST_ROOM bytes on. */
			stop = (const uint8_t *) (begin + fast);
			if ((size_t) (stop - pos) >
			    (size_t) (last - out - 1) * IPT__FAST_ROOM)
				size = ipt__pkt_fast_run(&pos, &out, last, stop,
							 skd007, 0);
			else
				size = ipt__pkt_fast_run(&pos, &out, last, stop,
							 skd007, 1);
			if (size)
				continue;
		}
		decoder->pos = pos;
		size = ipt__pkt_next_slow(decoder, out, sizeof(*out));
		if (size < 0)
			return out > packets ? (int) (out - packets) : size;
		out += 1;
		pos = decoder->pos;
		begin = (uintptr_t) decoder->config.begin;
		fast = decoder->fast;
	}
	decoder->pos = pos;
	return (int) n;
}

/* ---- last-IP tracking ---- */

/* See the declarations in >>api-pkt-ext. */
IPT_DEF void ipt_last_ip_init(struct ipt_last_ip *last_ip)
{
	if (!last_ip)
		return;

	last_ip->ip = 0ull;
	last_ip->have_ip = 0;
	last_ip->suppressed = 0;
}

IPT_DEF int ipt_last_ip_query(uint64_t *ip, const struct ipt_last_ip *last_ip)
{
	if (!last_ip)
		return -pte_invalid;

	if (!last_ip->have_ip) {
		if (ip)
			*ip = 0ull;
		return -pte_noip;
	}

	if (last_ip->suppressed) {
		if (ip)
			*ip = 0ull;
		return -pte_ip_suppressed;
	}

	if (ip)
		*ip = last_ip->ip;
	return 0;
}

/* The last-IP rule, SDM 33.4.2.2: the update forms replace the low 16, 32
 * or 48 bits of the last IP; sext-48 sign-extends bit 47; suppressed
 * leaves the IP but marks it suppressed until the next update.  0, or
 * -pte_bad_packet for a compression the SDM reserves. */
static IPT__INLINE int ipt__last_ip_update(struct ipt_last_ip *last_ip,
					   const struct pt_packet_ip *packet)
{
	uint64_t ip = packet->ip;

	switch (packet->ipc) {
	case pt_ipc_suppressed:
		last_ip->suppressed = 1;
		return 0;

	case pt_ipc_update_16:
		ip = (last_ip->ip & ~0xffffull) | (ip & 0xffffull);
		break;

	case pt_ipc_update_32:
		ip = (last_ip->ip & ~0xffffffffull) | (ip & 0xffffffffull);
		break;

	case pt_ipc_update_48:
		ip = (last_ip->ip & ~0xffffffffffffull) |
		     (ip & 0xffffffffffffull);
		break;

	case pt_ipc_sext_48:
		ip &= 0xffffffffffffull;
		if (ip & (1ull << 47))
			ip |= ~0xffffffffffffull;
		break;

	case pt_ipc_full:
		break;

	default:
		return -pte_bad_packet;
	}

	last_ip->ip = ip;
	last_ip->have_ip = 1;
	last_ip->suppressed = 0;
	return 0;
}

/* ipt__last_ip_update's IP for a payload that ipt__pkt_fast_ip read (so
 * masked to its compression), neither suppressed nor reserved, after the
 * last IP @last: one mask for all the update forms (full's takes all of
 * the payload). */
static IPT__INLINE uint64_t ipt__last_ip_next(uint64_t last, uint64_t payload,
					      unsigned int ipc)
{
	if (ipc == pt_ipc_sext_48)
		return (uint64_t) ((int64_t) (payload << 16) >> 16);
	return (last & ~ipt__ipc_mask[ipc]) | payload;
}

IPT_DEF int ipt_last_ip_update_ip(struct ipt_last_ip *last_ip,
				  const struct pt_packet_ip *packet,
				  const struct pt_config *config)
{
	(void) config;

	if (!last_ip || !packet)
		return -pte_invalid;
	return ipt__last_ip_update(last_ip, packet);
}

/* ==== >>time  time tracking and calibration ==============================
 * Follows TSC, TMA, MTC, CYC and CBR to estimate the time stamp counter
 * between TSC packets, and calibrates cycles against it.  Besides the
 * public ipt_time_* and ipt_tcal_*, other layers use ipt__time_same and
 * ipt__tcal_same (the same state, for >>seg) and ipt__time_run_mtc with
 * its helpers (runs of MTC, for >>evt). */

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

/* The CTC ticks from last to now, for a CTC that wraps at wrap: one
 * wrap-around is undone, more mean the two values are unrelated
 * (-pte_bad_packet). */
static IPT__INLINE int ipt__time_wrap_delta(uint32_t *delta, uint32_t now,
					    uint32_t last, uint32_t wrap)
{
	if (now < last) {
		now += wrap;
		if (now < last)
			return -pte_bad_packet;
	}

	*delta = now - last;
	return 0;
}

/* The CTC ticks from last to now.  The CTC as MTC sees it is
 * mtc_freq + 8 bits wide. */
static int ipt__time_ctc_delta(uint32_t *delta, uint32_t now, uint32_t last,
			       const struct pt_config *config)
{
	if (!delta || !config)
		return -pte_internal;

	return ipt__time_wrap_delta(
		delta, now, last,
		ipt__time_shl(1u, config->mtc_freq + IPT__TIME_MTC_BITS));
}

/* CTC ticks in fast-counter (TSC) units: times cpuid[0x15].ebx/eax, the
 * TSC to crystal clock ratio; eax is not zero. */
static IPT__INLINE uint64_t ipt__time_fc(uint64_t ctc, uint32_t eax,
					 uint32_t ebx)
{
	return (ctc * ebx) / eax;
}

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

	*fc = ipt__time_fc(ctc, eax, ebx);
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

/* An MTC's payload as CTC bits. */
static IPT__INLINE uint32_t ipt__time_mtc_ctc(uint8_t payload,
					      const struct pt_config *config)
{
	return ipt__time_shl(payload, config->mtc_freq);
}

/* ipt_time_update_mtc for valid arguments and the MTC's CTC bits; the
 * event decoder calls it directly. */
static IPT__INLINE int ipt__time_mtc(struct ipt_time *time, uint32_t ctc,
				     const struct pt_config *config)
{
	uint32_t last_ctc, delta;
	uint64_t base, fc;
	int errcode, had_tma, had_mtc;

	had_tma = time->have_tma;
	had_mtc = time->have_mtc;

	/* Between a TSC and its TMA an MTC would look like a CTC jump; the
	 * TMA accounts for that time instead. */
	if (time->have_tsc && !had_tma)
		return 0;

	base = time->base;
	last_ctc = time->ctc;

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

IPT_DEF int ipt_time_update_mtc(struct ipt_time *time,
				const struct pt_packet_mtc *packet,
				const struct pt_config *config)
{
	if (!time || !packet || !config)
		return -pte_internal;

	return ipt__time_mtc(time, ipt__time_mtc_ctc(packet->ctc, config),
			     config);
}

/* A CYC counts cycles since the previous CYC-eligible packet, which may lie
 * in an earlier MTC period.  For the first CYC of a period, take away the
 * cycles the calibrated ratio says the earlier periods took; if that is
 * more than the CYC has, the whole CYC belongs to the past (better slow
 * than fast).  fcr is not zero. */
static IPT__INLINE int ipt__time_adjust_cyc(uint64_t *cyc,
					    const struct ipt_time *time,
					    const struct pt_config *config,
					    uint64_t fcr)
{
	uint32_t delta;
	uint64_t fc, past;
	int errcode;

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

/* ipt_time_update_cyc for valid arguments and the CYC's cycles. */
static IPT__INLINE int ipt__time_cyc(struct ipt_time *time, uint64_t cyc,
				     const struct pt_config *config,
				     uint64_t fcr)
{
	/* Without a ratio, cycles cannot become time. */
	if (!fcr) {
		time->lost_cyc += 1;
		return 0;
	}

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

IPT_DEF int ipt_time_update_cyc(struct ipt_time *time,
				const struct pt_packet_cyc *packet,
				const struct pt_config *config, uint64_t fcr)
{
	if (!time || !packet || !config)
		return -pte_internal;

	return ipt__time_cyc(time, packet->value, config, fcr);
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

static IPT__INLINE void ipt__tcal_set_fcr(struct ipt_time_cal *tcal,
					  uint64_t fcr)
{
	tcal->fcr = fcr;
	if (fcr < tcal->min_fcr)
		tcal->min_fcr = fcr;
	if (tcal->max_fcr < fcr)
		tcal->max_fcr = fcr;
}

IPT_DEF int ipt_tcal_set_fcr(struct ipt_time_cal *tcal, uint64_t fcr)
{
	if (!tcal)
		return -pte_internal;

	ipt__tcal_set_fcr(tcal, fcr);
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
static IPT__INLINE int ipt__tcal_mtc(struct ipt_time_cal *tcal, uint32_t ctc,
				     const struct pt_config *config)
{
	uint32_t last_ctc, delta;
	uint64_t cyc, fc, fcr;
	int errcode, check_skl168;

	last_ctc = tcal->ctc;
	cyc = tcal->cyc_mtc;
	check_skl168 = tcal->check_skl168;
	tcal->check_skl168 = 0;

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

	ipt__tcal_set_fcr(tcal, fcr);
	tcal->lost_mtc = 0;
	return 0;
}

IPT_DEF int ipt_tcal_update_mtc(struct ipt_time_cal *tcal,
				const struct pt_packet_mtc *packet,
				const struct pt_config *config)
{
	if (!tcal || !packet || !config)
		return -pte_internal;

	return ipt__tcal_mtc(tcal, ipt__time_mtc_ctc(packet->ctc, config),
			     config);
}

static IPT__INLINE void ipt__tcal_cyc(struct ipt_time_cal *tcal, uint64_t cyc)
{
	tcal->cyc_mtc += cyc;
	tcal->cyc_tsc += cyc;
}

IPT_DEF int ipt_tcal_update_cyc(struct ipt_time_cal *tcal,
				const struct pt_packet_cyc *packet,
				const struct pt_config *config)
{
	(void) config;

	if (!tcal || !packet)
		return -pte_internal;

	ipt__tcal_cyc(tcal, packet->value);
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

/* ---- runs of MTC and CYC ----
 * The event decoder takes a run of MTC and CYC packets in one loop.  For
 * MTC, the costly one, ipt__time_run_mtc does what ipt__tcal_mtc and then
 * ipt__time_mtc do, in the state that nearly every MTC of a run meets,
 * with the configuration's part worked out once per run in struct
 * ipt__time_clk.  In any other state it does nothing and the packet goes
 * the per-packet way.  t_time_run checks the two against each other. */
struct ipt__time_clk {
	/* MTC payload to CTC: shift left by mtc_shl; the CTC as MTC sees
	 * it wraps at ctc_wrap. */
	uint32_t mtc_shl, ctc_wrap;
	/* cpuid[0x15], both non-zero. */
	uint32_t eax, ebx;
};

/* The configuration as ipt__time_run_mtc uses it; 0 if the run cannot go
 * the fast way at all (the per-packet way then reports what is wrong). */
static IPT__INLINE int ipt__time_clk_init(struct ipt__time_clk *clk,
					  const struct pt_config *config)
{
	uint32_t ctc_bits = (uint32_t) config->mtc_freq + IPT__TIME_MTC_BITS;

	clk->mtc_shl = config->mtc_freq;
	clk->ctc_wrap = ipt__time_shl(1u, ctc_bits);
	clk->eax = config->cpuid_0x15_eax;
	clk->ebx = config->cpuid_0x15_ebx;
	return clk->eax && clk->ebx && ctc_bits < 32;
}

/* Whether ipt__time_run_mtc may take MTCs: both sides have seen an MTC,
 * no TMA is due and no SKL168 check is pending.  Neither it nor a CYC
 * changes that. */
static IPT__INLINE int ipt__time_run_ready(const struct ipt_time *time,
					   const struct ipt_time_cal *tcal)
{
	return time->have_mtc && (!time->have_tsc || time->have_tma) &&
	       tcal->have_mtc && !tcal->check_skl168;
}

/* An MTC through ipt__tcal_mtc and ipt__time_mtc, when ready and the CTC
 * moved by at most one wrap: then 1.  Otherwise 0, and nothing has
 * changed. */
static IPT__INLINE int ipt__time_run_mtc(struct ipt_time *time,
					 struct ipt_time_cal *tcal,
					 uint8_t payload,
					 const struct ipt__time_clk *clk)
{
	uint32_t ctc = (uint32_t) payload << clk->mtc_shl, delta, cal_delta;
	uint64_t cyc = tcal->cyc_mtc, fc, cal_fc;

	if (ipt__time_wrap_delta(&delta, ctc, time->ctc, clk->ctc_wrap) < 0)
		return 0;
	fc = ipt__time_fc(delta, clk->eax, clk->ebx);
	if (cyc) {
		/* Both sides usually count from the same MTC. */
		cal_fc = fc;
		if (tcal->ctc != time->ctc) {
			if (ipt__time_wrap_delta(&cal_delta, ctc, tcal->ctc,
						 clk->ctc_wrap) < 0)
				return 0;
			cal_fc = ipt__time_fc(cal_delta, clk->eax, clk->ebx);
		}
		if (cal_fc >> (64 - ipt_tcal_fcr_shr))
			return 0;

		ipt__tcal_set_fcr(tcal, (cal_fc << ipt_tcal_fcr_shr) / cyc);
		tcal->ctc = ctc;
		tcal->cyc_mtc = 0ull;
		tcal->lost_mtc = 0;
	}

	if (time->fc || time->lost_cyc)
		time->ctc_cyc = ctc;
	time->ctc = ctc;
	time->fc = 0ull;
	time->lost_cyc = 0;
	time->base += fc;
	time->tsc = time->base;
	return 1;
}

/* Do two time trackers, two calibrations agree?  For >>seg. */
static IPT__UNUSED int ipt__time_same(const struct ipt_time *a,
				      const struct ipt_time *b)
{
	return a->tsc == b->tsc && a->base == b->base && a->fc == b->fc &&
	       a->ctc == b->ctc && a->ctc_cyc == b->ctc_cyc &&
	       a->lost_mtc == b->lost_mtc && a->lost_cyc == b->lost_cyc &&
	       a->cbr == b->cbr && a->have_tsc == b->have_tsc &&
	       a->have_cbr == b->have_cbr && a->have_tma == b->have_tma &&
	       a->have_mtc == b->have_mtc;
}

static IPT__UNUSED int ipt__tcal_same(const struct ipt_time_cal *a,
				      const struct ipt_time_cal *b)
{
	return a->fcr == b->fcr && a->min_fcr == b->min_fcr &&
	       a->max_fcr == b->max_fcr && a->tsc == b->tsc &&
	       a->cyc_tsc == b->cyc_tsc && a->cyc_mtc == b->cyc_mtc &&
	       a->ctc == b->ctc && a->lost_mtc == b->lost_mtc &&
	       a->have_mtc == b->have_mtc &&
	       a->check_skl168 == b->check_skl168;
}

/* ==== >>evt  event decoder ===============================================
 * Turns packets into events.  The one place that knows the packet-to-event
 * rules; the query decoder asks it.  Same semantics as libipt 2.3's event
 * decoder: the query decoder (>>qry) and the block decoder (>>blk) are both
 * built on it and never look at packets themselves.
 *
 * Internal interface (for >>qry and >>blk; struct pt_event_decoder below is
 * complete so that it can be embedded and copied by value):
 *
 *   int  ipt__evt_decoder_init(struct pt_event_decoder *decoder,
 *                              const struct pt_config *config);
 *        copies config in (the event.* flags are read), 0 or -pte_*
 *   void ipt__evt_decoder_fini(struct pt_event_decoder *decoder);
 *   const struct pt_config *ipt__evt_config(const struct pt_event_decoder *);
 *   const uint8_t *ipt__evt_pos(const struct pt_event_decoder *);
 *   uint64_t ipt__evt_off(const struct pt_event_decoder *);
 *   uint64_t ipt__evt_size(const struct pt_event_decoder *);
 *        the packet decoder's position: the packet after the current one
 *   const uint8_t *ipt__evt_end(const struct pt_event_decoder *);
 *   int  ipt__evt_more(const struct pt_event_decoder *);
 *        whether more trace may come after the end (ipt_evt_extend)
 *   void ipt__evt_save_time(struct ipt_time *time,
 *                           const struct pt_event_decoder *decoder);
 *        a copy of the time as of the packets read so far, to be asked
 *        later (pt_qry_time semantics)
 *   int  ipt__evt_start_ip(const struct pt_event_decoder *decoder,
 *                          uint64_t *ip);
 *        after synchronizing: 1 and the IP if the PSB+ says tracing is
 *        on, 0 if not (its events stay for the caller)
 *   int  ipt__evt_sync_backward(struct pt_event_decoder *decoder,
 *                               int (*start)(void *ctx), void *ctx);
 *        the one backward synchronization: start(ctx) resets and starts
 *        the caller's decoder at each PSB tried
 *   int  ipt__evt_same(const struct pt_event_decoder *,
 *                      const struct pt_event_decoder *);
 *   int  ipt__evt_same_event(const struct pt_event *,
 *                            const struct pt_event *);
 *        between two calls: the same state, the same event (for >>seg)
 *   int  ipt__evt_paging(const struct pt_event *ev, uint64_t *cr3);
 *        a paging event's CR3 and NR bit (1 guest, 0 host); -1 for
 *        other events
 *   struct ipt__vm_side, ipt__vm_side_take(side, ev),
 *   ipt__vm_side_set(side, nr), ipt__vm_side_get(side)
 *        guest or host as the paging events taken say (ipt_*_in_guest)
 *   uint32_t ipt__evt_queued(const struct pt_event_decoder *decoder);
 *        right after ipt_evt_start_at: how many status events the
 *        state gave
 *   int  ipt__evt_next_tnt(struct pt_event_decoder *decoder,
 *                          struct pt_event *ev);
 *        pt_evt_next() for a caller holding a used-up TNT, TIP, enable
 *        or disable (also asynchronous) event when the next event is a
 *        TNT or a plain TIP, TIP.PGE or TIP.PGD (after MTC and CYC
 *        packets, say): 1 and @ev refilled in place, or 0
 *   int  ipt__evt_next_status(struct pt_event_decoder *decoder,
 *                             struct pt_event *ev);
 *        pt_evt_next() when the next event is a status event of the
 *        PSB+ whose PSB or PSBEND is current: 1 and @ev filled, or 0
 *   int  ipt__evt_psb_peek(const struct pt_event_decoder *decoder,
 *                          struct ipt__evt_psb *psb,
 *                          struct ipt__evt_psb_memo *memo);
 *   int  ipt__evt_psb_take(struct pt_event_decoder *decoder,
 *                          const struct ipt__evt_psb *psb, uint64_t *tsc,
 *                          uint32_t *lost_mtc, uint32_t *lost_cyc);
 *   int  ipt__evt_psb_again(struct pt_event_decoder *decoder,
 *                           const struct ipt__evt_psb_memo *memo);
 *        a PSB+ with tracing off that holds only state, read while its
 *        PSB is current, then taken whole as if all its status events
 *        had been; the same bytes right behind it, taken by them alone
 *        (see "a PSB+ taken whole")
 *   enum pt_packet_type ipt__evt_tnt_ahead(const struct pt_event_decoder *,
 *                                          const uint8_t **pos,
 *                                          uint64_t *payload,
 *                                          uint32_t *size, int tip_free);
 *   int  ipt__evt_tnt_fill(const struct pt_event_decoder *,
 *                          const uint8_t **pos, struct ipt__tnt_window *,
 *                          uint32_t room,
 *                          struct ipt__tnt_packet *, int tip_free);
 *   int  ipt__evt_tnt8_next(const struct pt_event_decoder *,
 *                           const uint8_t *pos);
 *   void ipt__evt_tnt_taken(struct pt_event_decoder *decoder,
 *                           const uint8_t *pos, const struct ipt_last_ip *);
 *   const struct ipt_last_ip *
 *        ipt__evt_last_ip(const struct pt_event_decoder *);
 *        for a caller holding a TNT event: the TNT and TIP packets that
 *        follow it, read without events, and going on past the ones it
 *        took (see "TNT and TIP packets in a row")
 *   IPT__EV_IGNORE  the internal event type that binds a packet without
 *                   reporting anything; never leaves this section
 *
 * How it works.  Most packets do not make an event on their own: they bind
 * to a later packet that gives the IP (FUP, TIP, TIP.PGE/PGD, PSBEND,
 * EXSTOP, PWRX, CFE).  Such events wait in a small queue, each tagged with
 * the packets it may bind to; the binding packet takes them out in order.
 * Packets that stand alone fill a separate "standalone" slot.  Packet
 * handlers return 0 when they produced an event (and fetched the next packet
 * if they are done with the current one), > 0 to ask for the next packet,
 * < 0 on error.  Packet-decoder errors are remembered in `status` and
 * reported when the decoder reaches them, so events before a broken packet
 * still come out.
 *
 * Errata worked around here, each switched by pt_config.errata: BDM70 (FUP
 * before TIP.PGE inside PSB+), SKD010 (OVF without FUP), APL11 (extra
 * TIP.PGD after OVF), APL12 (extra FUP after OVF).  SKD007 and SKZ84 are
 * packet-level (>>pkt), SKL168 is in the time layer, BDM64, SKD022 and
 * SKL014 need the code and live in >>blk. */

/* Never an event of this layer (tick events are made by higher layers), so
 * it is free to mark queue entries that bind a packet silently. */
#define IPT__EV_IGNORE ptev_tick

/* What a queued event binds to: the packet that will complete it. */
enum ipt__evb {
	ipt__evb_psbend = 1 << 0,	/* status updates of a PSB+ */
	ipt__evb_tip = 1 << 1,		/* TIP, TIP.PGE or TIP.PGD */
	ipt__evb_fup = 1 << 2,		/* FUP of an asynchronous event */
	ipt__evb_fup_bound = 1 << 3,	/* FUP that belongs to a packet */
	ipt__evb_exstop = 1 << 4,	/* MWAIT waits for EXSTOP */
	ipt__evb_cfe = 1 << 5,		/* EVD waits for its CFE */
	ipt__evb_pwrx = 1 << 6		/* PWRE waits for PWRX */
};

/* A power of two; one slot stays free so the event most recently taken out
 * is not overwritten while the caller still looks at it. */
enum { ipt__evq_max = 16 };

struct ipt__evq_entry {
	struct pt_event event;
	uint32_t binding;	/* enum ipt__evb bits */
};

struct ipt__evq {
	struct ipt__evq_entry queue[ipt__evq_max];
	uint8_t begin;
	uint8_t end;
	struct pt_event standalone;
};

/* The event decoder.  Plain data, no pointers into itself between calls,
 * so it may be copied to look ahead. */
struct pt_event_decoder {
	struct pt_packet_decoder pacdec;

	/* The caller's flags (the packet decoder gets none). */
	struct pt_conf_flags flags;

	/* The packet being processed; ppt_invalid after a packet-decoder
	 * error, which then waits in status. */
	struct pt_packet packet;

	struct ipt_last_ip ip;
	struct ipt_time time;
	struct ipt_time_cal tcal;
	struct ipt__evq evq;

	/* The event being reported by the current pt_evt_next() call. */
	struct pt_event *event;

	int status;

	/* The MODE.EXEC state, valid once mode_exec_valid is set. */
	unsigned int mode_exec_valid:1;
	unsigned int iflag:1;
	unsigned int csd:1;
	unsigned int csl:1;

	/* PacketEn as far as the trace tells. */
	unsigned int enabled:1;

	/* The current packet already completed bound events and must not
	 * also be taken as a packet on its own. */
	unsigned int bound:1;

	/* The status events queued for the current PSBEND carry their IP
	 * already: a start state's (ipt_evt_start_at), not the last IP. */
	unsigned int placed:1;

	/* An erratum's look ahead ran into the end of the trace: what it
	 * decided holds for this trace only (ipt_blk_get_start_state). */
	unsigned int peeked_end:1;

	/* A copy that looks ahead and throws its time away: MTC and CYC
	 * are passed over (ipt__evt_start_ip_as says when that is exact). */
	unsigned int no_time:1;
};

/* ---- the event queue ---- */

static uint8_t ipt__evq_inc(uint8_t idx)
{
	return (uint8_t) ((idx + 1) % ipt__evq_max);
}

static uint8_t ipt__evq_dec(uint8_t idx)
{
	return (uint8_t) ((idx + ipt__evq_max - 1) % ipt__evq_max);
}

static struct pt_event *ipt__evq_clean(struct pt_event *ev)
{
	IPT_MEMSET(ev, 0, sizeof(*ev));
	return ev;
}

static void ipt__evq_init(struct ipt__evq *evq)
{
	IPT_MEMSET(evq, 0, sizeof(*evq));
}

static struct pt_event *ipt__evq_standalone(struct ipt__evq *evq)
{
	return ipt__evq_clean(&evq->standalone);
}

/* Append a zeroed event for binding evb; NULL when full. */
static struct pt_event *ipt__evq_enqueue(struct ipt__evq *evq, uint32_t evb)
{
	uint8_t idx = evq->end, end;

	if (evq->begin >= ipt__evq_max || idx >= ipt__evq_max)
		return NULL;
	end = ipt__evq_inc(idx);
	if (ipt__evq_inc(end) == evq->begin)
		return NULL;
	evq->end = end;
	evq->queue[idx].binding = evb;
	return ipt__evq_clean(&evq->queue[idx].event);
}

/* Take out the oldest event whose binding meets evb.  An event from the
 * middle is moved to the front first so that the queue stays dense and the
 * returned slot stays valid until the next enqueue. */
static struct pt_event *ipt__evq_dequeue(struct ipt__evq *evq, uint32_t evb)
{
	struct ipt__evq_entry found;
	uint8_t begin = evq->begin, end = evq->end, idx;

	if (begin >= ipt__evq_max || end >= ipt__evq_max || begin == end)
		return NULL;

	if (evq->queue[begin].binding & evb) {
		evq->begin = ipt__evq_inc(begin);
		return &evq->queue[begin].event;
	}

	for (idx = ipt__evq_inc(begin);; idx = ipt__evq_inc(idx)) {
		if (idx == end)
			return NULL;
		if (evq->queue[idx].binding & evb)
			break;
	}

	IPT__COPY(found, evq->queue[idx]);
	for (;;) {
		uint8_t prev = ipt__evq_dec(idx);

		IPT__COPY(evq->queue[idx], evq->queue[prev]);
		if (prev == begin)
			break;
		idx = prev;
	}
	evq->begin = idx;
	IPT__COPY(evq->queue[begin], found);
	return &evq->queue[begin].event;
}

/* Queue a copy of ev, a standalone or just dequeued event, for evb. */
static struct pt_event *ipt__evq_requeue(struct ipt__evq *evq,
					 const struct pt_event *ev,
					 uint32_t evb)
{
	struct pt_event copy, *rev;

	IPT__COPY(copy, *ev);
	rev = ipt__evq_enqueue(evq, evb);
	if (rev)
		IPT__COPY(*rev, copy);
	return rev;
}

static int ipt__evq_pending(const struct ipt__evq *evq, uint32_t evb)
{
	uint8_t idx;

	if (evq->begin >= ipt__evq_max || evq->end >= ipt__evq_max)
		return -pte_internal;
	for (idx = evq->begin; idx != evq->end; idx = ipt__evq_inc(idx))
		if (evq->queue[idx].binding & evb)
			return 1;
	return 0;
}

/* The first queued event for evb, of type evt unless evt is negative. */
static struct pt_event *ipt__evq_find(struct ipt__evq *evq, uint32_t evb,
				      int evt)
{
	uint8_t idx;

	if (evq->begin >= ipt__evq_max || evq->end >= ipt__evq_max)
		return NULL;
	for (idx = evq->begin; idx != evq->end; idx = ipt__evq_inc(idx)) {
		struct ipt__evq_entry *entry = &evq->queue[idx];

		if (!(entry->binding & evb))
			continue;
		if (evt < 0 || (int) entry->event.type == evt)
			return &entry->event;
	}
	return NULL;
}

/* ---- helpers ---- */

static IPT__UNUSED const struct pt_config *
ipt__evt_config(const struct pt_event_decoder *decoder)
{
	return decoder ? pt_pkt_get_config(&decoder->pacdec) : NULL;
}

static IPT__UNUSED const uint8_t *
ipt__evt_pos(const struct pt_event_decoder *decoder)
{
	return decoder ? ipt__pkt_pos(&decoder->pacdec) : NULL;
}

/* The offset of the next packet; UINT64_MAX before synchronization.
 * The trace's size. */
static IPT__UNUSED uint64_t
ipt__evt_off(const struct pt_event_decoder *decoder)
{
	return ipt__pkt_pos_off(&decoder->pacdec);
}

static IPT__UNUSED uint64_t
ipt__evt_size(const struct pt_event_decoder *decoder)
{
	return ipt__pkt_size(&decoder->pacdec);
}

static IPT__UNUSED const uint8_t *
ipt__evt_end(const struct pt_event_decoder *decoder)
{
	const struct pt_config *config = ipt__evt_config(decoder);

	return config ? config->end : NULL;
}

/* Keep the time as of the packets read so far, to answer queries about
 * it later, after the decoder has read on. */
static IPT__UNUSED void ipt__evt_save_time(struct ipt_time *time,
					   const struct pt_event_decoder *decoder)
{
	IPT__COPY(*time, decoder->time);
}

/* Where an event keeps its IP, or NULL if it has none. */
static uint64_t *ipt__evt_ip_field(struct pt_event *ev)
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
	case ptev_async_vmcs: return &ev->variant.async_vmcs.ip;
	case ptev_exstop: return &ev->variant.exstop.ip;
	case ptev_mwait: return &ev->variant.mwait.ip;
	case ptev_ptwrite: return &ev->variant.ptwrite.ip;
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
	case ptev_trig: return &ev->variant.trig.ip;
	case ptev_swintr: return &ev->variant.swintr.ip;
	case ptev_syscall: return &ev->variant.syscall.ip;
	case ptev_paging: case ptev_stop: case ptev_vmcs: case ptev_pwre:
	case ptev_pwrx: case ptev_tick: case ptev_cbr: case ptev_mnt:
	case ptev_tnt: case ptev_sipi:
		break;
	}
	return NULL;
}

/* Give ev the current time, if there is one. */
static IPT__INLINE int ipt__evt_stamp(struct pt_event *ev,
				      const struct ipt_time *time)
{
	int err = ipt_time_query_tsc(&ev->tsc, &ev->lost_mtc, &ev->lost_cyc,
				     time);

	if (err >= 0)
		ev->has_tsc = 1;
	else if (err != -pte_no_time)
		return err;
	return 0;
}

/* Give ev the last IP, or mark it suppressed if there is none. */
static int ipt__evt_place(struct pt_event *ev, const struct ipt_last_ip *ip)
{
	uint64_t *field = ipt__evt_ip_field(ev);
	uint64_t dummy;
	int err;

	err = ipt_last_ip_query(field ? field : &dummy, ip);
	if (err < 0) {
		if (err != -pte_noip && err != -pte_ip_suppressed)
			return err;
		ev->ip_suppressed = 1;
	}
	return 0;
}

/* Both of the above. */
static int ipt__evt_complete(struct pt_event *ev,
			     const struct pt_event_decoder *decoder)
{
	int err = ipt__evt_stamp(ev, &decoder->time);

	if (err < 0)
		return err;
	return ipt__evt_place(ev, &decoder->ip);
}

static int ipt__evt_reset(struct pt_event_decoder *decoder)
{
	/* The size stays: pt_evt_get_offset() still points at the packet
	 * that was current, e.g. at an OVF whose handling failed. */
	decoder->packet.type = ppt_invalid;
	decoder->status = -pte_nosync;
	decoder->event = NULL;
	decoder->enabled = 0;
	decoder->bound = 0;
	decoder->placed = 0;
	decoder->peeked_end = 0;
	decoder->no_time = 0;
	decoder->mode_exec_valid = 0;
	decoder->iflag = 0;
	decoder->csd = 0;
	decoder->csl = 0;
	ipt_last_ip_init(&decoder->ip);
	ipt_time_init(&decoder->time);
	ipt_tcal_init(&decoder->tcal);
	ipt__evq_init(&decoder->evq);
	return 0;
}

static IPT__UNUSED int
ipt__evt_decoder_init(struct pt_event_decoder *decoder,
		      const struct pt_config *uconfig)
{
	struct pt_config config;
	int err;

	if (!decoder)
		return -pte_internal;
	err = ipt__config_from_user(&config, uconfig);
	if (err < 0)
		return err;
	decoder->flags = config.flags;
	IPT_MEMSET(&config.flags, 0, sizeof(config.flags));
	decoder->packet.size = 0;
	err = ipt__pkt_init(&decoder->pacdec, &config);
	if (err < 0)
		return err;
	return ipt__evt_reset(decoder);
}

static IPT__UNUSED void ipt__evt_decoder_fini(struct pt_event_decoder *decoder)
{
	if (decoder)
		ipt__pkt_fini(&decoder->pacdec);
}

/* An event decoder as allocated (IPT__OWN). */
struct ipt__evt_box {
	struct pt_event_decoder decoder;
	struct ipt_allocator allocator;
};

IPT_DEF struct pt_event_decoder *
ipt_evt_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_allocator *allocator)
{
	struct ipt__evt_box *box = (struct ipt__evt_box *) ipt__own_alloc(
		allocator, IPT__OWN(struct ipt__evt_box));

	if (!box)
		return NULL;
	if (ipt__evt_decoder_init(&box->decoder, config) < 0) {
		ipt__own_free(box, IPT__OWN(struct ipt__evt_box));
		return NULL;
	}
	return &box->decoder;
}

IPT_DEF struct pt_event_decoder *
pt_evt_alloc_decoder(const struct pt_config *config)
{
	return ipt_evt_alloc_decoder_with(config, NULL);
}

IPT_DEF void pt_evt_free_decoder(struct pt_event_decoder *decoder)
{
	if (!decoder)
		return;
	ipt__evt_decoder_fini(decoder);
	ipt__own_free(decoder, IPT__OWN(struct ipt__evt_box));
}

/* Move on to the next packet, skipping PADs.  A packet-decoder error is
 * kept in status and shows as a ppt_invalid packet.  Always returns 0, so
 * that "return ipt__evt_next_packet(decoder);" ends a handler that made an
 * event. */
static IPT__INLINE int ipt__evt_next_packet(struct pt_event_decoder *decoder)
{
	int status;

	do {
		ipt__pkt_skip_pads(&decoder->pacdec);
		if (IPT__LIKELY(ipt__pkt_next_fast(&decoder->pacdec,
						   &decoder->packet)))
			continue;
		status = ipt__pkt_next_rest(&decoder->pacdec,
					    &decoder->packet,
					    sizeof(decoder->packet));
		if (status < 0) {
			decoder->packet.type = ppt_invalid;
			decoder->packet.size = 0;
			decoder->status = status;
			break;
		}
	} while (decoder->packet.type == ppt_pad);
	return 0;
}

/* Make ev the event of this call, stamped with the current time.  The
 * packet is done: move on. */
static int ipt__evt_publish_standalone(struct pt_event_decoder *decoder,
				       struct pt_event *ev)
{
	int err = ipt__evt_stamp(ev, &decoder->time);

	if (err < 0)
		return err;
	decoder->event = ev;
	return ipt__evt_next_packet(decoder);
}

/* ---- time packets ----
 * Configuration errors only make timing less precise: they are ignored
 * here and show as lost MTC/CYC in the time layer. */

static int ipt__evt_ok_or_cfg(int err)
{
	return (err < 0 && err != -pte_bad_config) ? err : 0;
}

/* An MTC through calibration, then time. */
static IPT__INLINE int ipt__evt_time_mtc(struct ipt_time *time,
					 struct ipt_time_cal *tcal,
					 uint8_t payload,
					 const struct pt_config *config)
{
	uint32_t ctc = ipt__time_mtc_ctc(payload, config);
	int err;

	err = ipt__evt_ok_or_cfg(ipt__tcal_mtc(tcal, ctc, config));
	if (err < 0)
		return err;
	return ipt__evt_ok_or_cfg(ipt__time_mtc(time, ctc, config));
}

/* A CYC through calibration, then time.  Without calibration yet, a zero
 * ratio makes the time layer count the CYC as lost. */
static IPT__INLINE int ipt__evt_time_cyc(struct ipt_time *time,
					 struct ipt_time_cal *tcal,
					 uint64_t cyc,
					 const struct pt_config *config)
{
	ipt__tcal_cyc(tcal, cyc);
	return ipt__evt_ok_or_cfg(ipt__time_cyc(
		time, cyc, config, ipt__tcal_have_fcr(tcal) ? tcal->fcr : 0));
}

static int ipt__evt_apply_time(struct ipt_time *time,
			       struct ipt_time_cal *tcal,
			       const struct pt_packet *packet,
			       const struct pt_config *config, int header)
{
	int err;

	switch (packet->type) {
	case ppt_tsc:
		err = header ? ipt_tcal_header_tsc(tcal, &packet->payload.tsc,
						   config)
			     : ipt_tcal_update_tsc(tcal, &packet->payload.tsc,
						   config);
		if ((err = ipt__evt_ok_or_cfg(err)) < 0)
			return err;
		return ipt__evt_ok_or_cfg(ipt_time_update_tsc(
			time, &packet->payload.tsc, config));

	case ppt_cbr:
		err = header ? ipt_tcal_header_cbr(tcal, &packet->payload.cbr,
						   config)
			     : ipt_tcal_update_cbr(tcal, &packet->payload.cbr,
						   config);
		if ((err = ipt__evt_ok_or_cfg(err)) < 0)
			return err;
		return ipt__evt_ok_or_cfg(ipt_time_update_cbr(
			time, &packet->payload.cbr, config));

	case ppt_tma:
		err = ipt_tcal_update_tma(tcal, &packet->payload.tma, config);
		if ((err = ipt__evt_ok_or_cfg(err)) < 0)
			return err;
		return ipt__evt_ok_or_cfg(ipt_time_update_tma(
			time, &packet->payload.tma, config));

	case ppt_mtc:
		return ipt__evt_time_mtc(time, tcal, packet->payload.mtc.ctc,
					 config);

	case ppt_cyc:
		return ipt__evt_time_cyc(time, tcal, packet->payload.cyc.value,
					 config);

	case ppt_invalid: case ppt_unknown: case ppt_pad: case ppt_psb:
	case ppt_psbend: case ppt_fup: case ppt_tip: case ppt_tip_pge:
	case ppt_tip_pgd: case ppt_tnt_8: case ppt_tnt_64: case ppt_mode:
	case ppt_pip: case ppt_vmcs: case ppt_stop: case ppt_ovf: case ppt_mnt:
	case ppt_exstop: case ppt_mwait: case ppt_pwre: case ppt_pwrx:
	case ppt_ptw: case ppt_cfe: case ppt_evd: case ppt_trig:
		break;
	}
	return -pte_internal;
}

static int ipt__evt_is_time_packet(enum pt_packet_type type)
{
	return type == ppt_tsc || type == ppt_cbr || type == ppt_tma ||
	       type == ppt_mtc || type == ppt_cyc;
}

/* A CBR outside PSB+ is an event of its own. */
static int ipt__evt_decode_cbr(struct pt_event_decoder *decoder)
{
	struct pt_event *ev;
	int err;

	err = ipt__evt_apply_time(&decoder->time, &decoder->tcal,
				  &decoder->packet, ipt__evt_config(decoder), 0);
	if (err < 0)
		return err;
	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_cbr;
	ev->variant.cbr.ratio = decoder->packet.payload.cbr.ratio;
	return ipt__evt_publish_standalone(decoder, ev);
}

/* ---- PSB+ ----
 * Inside PSB+ the packets state the current state in any order.  They all
 * bind to PSBEND (or to an OVF in its place) and come out as status
 * updates, after the enabled/disabled event the PSB opened. */

/* The MODE, PIP, VMCS, MNT, FUP and time packets of a PSB+. */
static int ipt__evt_header_packet(struct pt_event_decoder *decoder);

/* A look ahead stopped with @err: is it the end of the trace?  Then
 * what the look ahead decided may not hold for a longer trace. */
static int ipt__evt_peeked_end(struct pt_event_decoder *decoder, int err)
{
	if (err != -pte_eos && err != -ipt_pte_need_more)
		return 0;
	decoder->peeked_end = 1;
	return err == -pte_eos;
}

/* BDM70: a PSB+ may hold a FUP although tracing is off, when a TIP.PGE
 * follows the PSB+.  Returns 1 if one follows. */
static int ipt__evt_bdm70(struct pt_event_decoder *decoder)
{
	struct pt_packet_decoder pacdec;
	struct pt_packet packet;

	IPT__COPY(pacdec, decoder->pacdec);
	for (;;) {
		int err = pt_pkt_next(&pacdec, &packet, sizeof(packet));

		if (err < 0)
			return ipt__evt_peeked_end(decoder, err) ? 0 : err;
		switch (packet.type) {
		case ppt_tip_pge:
			return 1;
		case ppt_pad:
		case ppt_tsc:
		case ppt_cbr:
		case ppt_psbend:
		case ppt_pip:
		case ppt_mode:
		case ppt_vmcs:
		case ppt_tma:
		case ppt_mtc:
		case ppt_cyc:
		case ppt_mnt:
			continue;
		case ppt_invalid: case ppt_unknown: case ppt_psb: case ppt_fup:
		case ppt_tip: case ppt_tip_pgd: case ppt_tnt_8:
		case ppt_tnt_64: case ppt_stop: case ppt_ovf: case ppt_exstop:
		case ppt_mwait: case ppt_pwre: case ppt_pwrx: case ppt_ptw:
		case ppt_cfe: case ppt_evd: case ppt_trig:
			return 0;
		}
	}
}

/* Whether a PSB+'s MODE.EXEC @exec agrees with the state we know (any
 * does before we know one); the interrupt flag is only followed with
 * iflags events on. */
static int ipt__evt_exec_agrees(const struct pt_event_decoder *decoder,
				const struct pt_packet_mode_exec *exec)
{
	if (!decoder->mode_exec_valid)
		return 1;
	return (!decoder->flags.variant.event.enable_iflags_events ||
		decoder->iflag == exec->iflag) &&
	       decoder->csd == exec->csd && decoder->csl == exec->csl;
}

/* A PSB+'s MODE.EXEC @exec, which agrees: the state, if not known yet. */
static void ipt__evt_exec_know(struct pt_event_decoder *decoder,
			       const struct pt_packet_mode_exec *exec)
{
	if (decoder->mode_exec_valid)
		return;
	decoder->mode_exec_valid = 1;
	decoder->iflag = exec->iflag;
	decoder->csd = exec->csd;
	decoder->csl = exec->csl;
}

static int ipt__evt_header_packet(struct pt_event_decoder *decoder)
{
	const struct pt_packet *packet = &decoder->packet;
	const struct pt_config *config = ipt__evt_config(decoder);
	struct pt_event *ev;
	int err;

	switch (packet->type) {
	case ppt_fup: {
		unsigned int enabled =
			packet->payload.ip.ipc != pt_ipc_suppressed;

		if (config->errata.bdm70) {
			err = ipt__evt_bdm70(decoder);
			if (err < 0)
				return err;
			if (err)
				enabled = 0;
		}
		decoder->enabled = enabled;
		if (!enabled)
			return 0;
		return ipt_last_ip_update_ip(&decoder->ip, &packet->payload.ip,
					     config);
	}

	case ppt_mode:
		if (packet->payload.mode.leaf == pt_mol_tsx) {
			const struct pt_packet_mode_tsx *tsx =
				&packet->payload.mode.bits.tsx;

			ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_psbend);
			if (!ev)
				return -pte_nomem;
			ev->status_update = 1;
			ev->type = ptev_tsx;
			ev->variant.tsx.speculative = tsx->intx;
			ev->variant.tsx.aborted = tsx->abrt;
			return 0;
		} else if (packet->payload.mode.leaf == pt_mol_exec) {
			const struct pt_packet_mode_exec *exec =
				&packet->payload.mode.bits.exec;

			if (!ipt__evt_exec_agrees(decoder, exec))
				return -pte_bad_status_update;
			ipt__evt_exec_know(decoder, exec);
			ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_psbend);
			if (!ev)
				return -pte_nomem;
			ev->status_update = 1;
			ev->type = ptev_exec_mode;
			ev->variant.exec_mode.mode = pt_get_exec_mode(exec);
			if (decoder->flags.variant.event.enable_iflags_events) {
				ev = ipt__evq_enqueue(&decoder->evq,
						      ipt__evb_psbend);
				if (!ev)
					return -pte_nomem;
				ev->status_update = 1;
				ev->type = ptev_iflags;
				ev->variant.iflags.iflag = exec->iflag;
			}
			return 0;
		}
		return 0;

	case ppt_pip:
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_psbend);
		if (!ev)
			return -pte_nomem;
		ev->status_update = 1;
		ev->type = ptev_async_paging;
		ev->variant.async_paging.cr3 = packet->payload.pip.cr3;
		ev->variant.async_paging.non_root = packet->payload.pip.nr;
		return 0;

	case ppt_vmcs:
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_psbend);
		if (!ev)
			return -pte_nomem;
		ev->status_update = 1;
		ev->type = ptev_async_vmcs;
		ev->variant.async_vmcs.base = packet->payload.vmcs.base;
		return 0;

	case ppt_mnt:
		/* Maintenance is not state: no status_update. */
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_psbend);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_mnt;
		ev->variant.mnt.payload = packet->payload.mnt.payload;
		return 0;

	case ppt_cbr:
		err = ipt__evt_apply_time(&decoder->time, &decoder->tcal,
					  packet, config, 1);
		if (err < 0)
			return err;
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_psbend);
		if (!ev)
			return -pte_nomem;
		ev->status_update = 1;
		ev->type = ptev_cbr;
		ev->variant.cbr.ratio = packet->payload.cbr.ratio;
		return 0;

	case ppt_tsc:
	case ppt_tma:
	case ppt_mtc:
	case ppt_cyc:
		return ipt__evt_apply_time(&decoder->time, &decoder->tcal,
					   packet, config, 1);

	case ppt_pad:
		return 0;

	case ppt_invalid:
		return decoder->status;

	case ppt_unknown: case ppt_psb: case ppt_psbend: case ppt_tip:
	case ppt_tip_pge: case ppt_tip_pgd: case ppt_tnt_8: case ppt_tnt_64:
	case ppt_stop: case ppt_ovf: case ppt_exstop: case ppt_mwait:
	case ppt_pwre: case ppt_pwrx: case ppt_ptw: case ppt_cfe: case ppt_evd:
	case ppt_trig:
		break;
	}
	return -pte_bad_context;
}

/* Read a PSB+ from the PSB (the current packet) up to PSBEND or OVF.
 * Queues the status events; returns 1 with the PSBEND or OVF current. */
static int ipt__evt_decode_psb(struct pt_event_decoder *decoder)
{
	struct pt_event *ev;
	int err;

	/* Partial events must not cross a PSB. */
	err = ipt__evq_pending(&decoder->evq, ~(uint32_t) 0);
	if (err)
		return err < 0 ? err : -pte_bad_context;

	ipt_last_ip_init(&decoder->ip);
	decoder->enabled = 0;

	/* The enabled/disabled status comes first; which of the two it is
	 * we learn at the end. */
	ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_psbend);
	if (!ev)
		return -pte_nomem;
	ev->status_update = 1;

	for (;;) {
		ipt__evt_next_packet(decoder);
		switch (decoder->packet.type) {
		case ppt_psbend:
			if (decoder->enabled) {
				ev->type = ptev_enabled;
			} else {
				ev->type = ptev_disabled;
				ev->ip_suppressed = 1;
			}
			return 1;

		case ppt_ovf:
			/* An OVF ends the PSB+.  Without a FUP we drop the
			 * status event: the FUP may just have been lost. */
			if (decoder->enabled)
				ev->type = ptev_enabled;
			else if (ipt__evq_dequeue(&decoder->evq,
						  ipt__evb_psbend) != ev)
				return -pte_internal;
			return 1;

		case ppt_invalid: case ppt_unknown: case ppt_pad: case ppt_psb:
		case ppt_fup: case ppt_tip: case ppt_tip_pge: case ppt_tip_pgd:
		case ppt_tnt_8: case ppt_tnt_64: case ppt_mode: case ppt_pip:
		case ppt_vmcs: case ppt_cbr: case ppt_tsc: case ppt_tma:
		case ppt_mtc: case ppt_cyc: case ppt_stop: case ppt_mnt:
		case ppt_exstop: case ppt_mwait: case ppt_pwre: case ppt_pwrx:
		case ppt_ptw: case ppt_cfe: case ppt_evd: case ppt_trig:
			err = ipt__evt_header_packet(decoder);
			if (err < 0)
				return err;
		}
	}
}

/* PSBEND (or the OVF that ends a PSB+): report the queued status events
 * one per call, with the IP from the PSB+ FUP.  Returns 1 when none is
 * left. */
static int ipt__evt_decode_psbend(struct pt_event_decoder *decoder)
{
	struct pt_event *ev;
	int err;

	ev = ipt__evq_dequeue(&decoder->evq, ipt__evb_psbend);
	if (!ev) {
		decoder->placed = 0;
		return 1;
	}
	decoder->event = ev;

	switch (ev->type) {
	case ptev_enabled:
	case ptev_exec_mode:
	case ptev_iflags:
	case ptev_tsx:
	case ptev_async_paging:
	case ptev_async_vmcs:
		if (decoder->placed)
			break;
		err = ipt__evt_place(ev, &decoder->ip);
		if (err < 0)
			return err;
		break;
	case ptev_disabled:
	case ptev_cbr:
	case ptev_mnt:
		break;
	case ptev_async_disabled: case ptev_async_branch: case ptev_paging:
	case ptev_overflow: case ptev_stop: case ptev_vmcs: case ptev_exstop:
	case ptev_mwait: case ptev_pwre: case ptev_pwrx: case ptev_ptwrite:
	case ptev_tick: case ptev_tip: case ptev_tnt: case ptev_interrupt:
	case ptev_iret: case ptev_smi: case ptev_rsm: case ptev_sipi:
	case ptev_init: case ptev_vmentry: case ptev_vmexit:
	case ptev_shutdown: case ptev_uintr: case ptev_uiret: case ptev_trig:
	case ptev_swintr: case ptev_syscall:
		return -pte_bad_context;
	}
	return ipt__evt_stamp(ev, &decoder->time);
}

static int ipt__evt_start(struct pt_event_decoder *decoder)
{
	int err;

	decoder->status = 0;
	ipt__evt_next_packet(decoder);
	switch (decoder->packet.type) {
	case ppt_psb:
		err = ipt__evt_decode_psb(decoder);
		return err < 0 ? err : 0;
	case ppt_invalid:
		return decoder->status < 0 ? decoder->status : -pte_internal;
	case ppt_unknown: case ppt_pad: case ppt_psbend: case ppt_fup:
	case ppt_tip: case ppt_tip_pge: case ppt_tip_pgd: case ppt_tnt_8:
	case ppt_tnt_64: case ppt_mode: case ppt_pip: case ppt_vmcs:
	case ppt_cbr: case ppt_tsc: case ppt_tma: case ppt_mtc: case ppt_cyc:
	case ppt_stop: case ppt_ovf: case ppt_mnt: case ppt_exstop:
	case ppt_mwait: case ppt_pwre: case ppt_pwrx: case ppt_ptw:
	case ppt_cfe: case ppt_evd: case ppt_trig:
		break;
	}
	return -pte_nosync;
}

IPT_DEF int ipt_evt_set_ring(struct pt_event_decoder *decoder,
			     uint8_t *older, uint8_t *older_end,
			     uint8_t *newer, uint8_t *newer_end)
{
	int err;

	if (!decoder)
		return -pte_invalid;
	err = ipt_pkt_set_ring(&decoder->pacdec, older, older_end, newer,
			       newer_end);
	if (err < 0)
		return err;
	decoder->packet.size = 0;
	return ipt__evt_reset(decoder);
}

IPT_DEF int ipt_evt_set_buffer(struct pt_event_decoder *decoder,
			       uint8_t *begin, uint8_t *end)
{
	return ipt_evt_set_ring(decoder, begin, end, end, end);
}

static IPT__UNUSED int ipt__evt_more(const struct pt_event_decoder *decoder)
{
	return ipt__pkt_more(&decoder->pacdec);
}

/* The body of a public call of this decoder or one built on it (of
 * @type) that is undone if it needs more (ipt_*_extend): return @call's status.
 * guard(decoder, &save) says whether to keep @save, a copy of the decoder
 * before the call; settle(decoder, &save, status) undoes the call if it
 * needs more and returns what the caller gets. */
#define IPT__UNDOABLE(type, guard, settle, decoder, call)                    \
	do {                                                                 \
		type save_;                                                  \
		int status_;                                                 \
									     \
		if (!(decoder))                                              \
			return -pte_invalid;                                 \
		if (!guard((decoder), &save_))                               \
			return call;                                         \
		status_ = call;                                              \
		return settle((decoder), &save_, status_);                   \
	} while (0)

/* While more trace may come (ipt_evt_extend), a call that met the end,
 * even only reading ahead, is undone: it is made again once the end has
 * moved, and then finds what it would have found in the whole trace.
 * That holds for the syncs as well: one that finds a PSB+ cut by the end
 * waits for the rest, where the whole trace may show that PSB+ bad. */
static int ipt__evt_guard(const struct pt_event_decoder *decoder,
			  struct pt_event_decoder *save)
{
	if (IPT__LIKELY(!ipt__evt_more(decoder)))
		return 0;
	IPT__COPY(*save, *decoder);
	return 1;
}

static int ipt__evt_settle(struct pt_event_decoder *decoder,
			   const struct pt_event_decoder *save, int status)
{
	if (status != -ipt_pte_need_more &&
	    decoder->status != -ipt_pte_need_more)
		return status;
	IPT__COPY(*decoder, *save);
	return -ipt_pte_need_more;
}

/* Make the call @call on @decoder, undone if it needs more. */
#define IPT__EVT_GUARDED(decoder, call)                                      \
	IPT__UNDOABLE(struct pt_event_decoder, ipt__evt_guard,               \
		      ipt__evt_settle, decoder, call)

IPT_DEF int ipt_evt_extend(struct pt_event_decoder *decoder, uint8_t *end,
			   int more)
{
	int err;

	if (!decoder)
		return -pte_invalid;
	err = ipt_pkt_extend(&decoder->pacdec, end, more);
	if (err < 0)
		return err;

	/* The packet the trace ended in, or before: read it again. */
	if (decoder->packet.type == ppt_invalid &&
	    (decoder->status == -ipt_pte_need_more ||
	     decoder->status == -pte_eos)) {
		decoder->status = 0;
		return ipt__evt_next_packet(decoder);
	}
	return 0;
}

/* ---- starting from a state (ipt_*_start_at) ----
 * A start state is taken as a PSB+ stating it would be: the same status
 * events, made by the same code (ipt__evt_header_packet) from the packets
 * that PSB+ would hold, with the IP and the last IP apart, since mid-trace
 * the flow's IP is seldom the last IP packet's. */

/* How much of the caller's struct ipt_start_state there is to copy; 0
 * for a missing or unusable one. */
static size_t ipt__start_state_size(const struct ipt_start_state *ustate)
{
	if (!ustate || ustate->size < offsetof(struct ipt_start_state, mode))
		return 0;
	if (ustate->size < sizeof(*ustate))
		return ustate->size;
	return sizeof(*ustate);
}

/* Copy the caller's @ustate into @state: what lies past its size is
 * zero.  -pte_invalid for a missing or unusable state. */
static int ipt__start_state_in(struct ipt_start_state *state,
			       const struct ipt_start_state *ustate)
{
	size_t size = ipt__start_state_size(ustate);

	if (!size)
		return -pte_invalid;
	IPT_MEMSET(state, 0, sizeof(*state));
	IPT_MEMCPY(state, ustate, size);
	if (state->nret > ipt_start_max_ret)
		return -pte_invalid;
	return 0;
}

/* Give the caller @state, up to the size it set in @ustate. */
static int ipt__start_state_out(struct ipt_start_state *ustate,
				const struct ipt_start_state *state)
{
	size_t size = ipt__start_state_size(ustate);

	if (!size)
		return -pte_invalid;
	IPT_MEMCPY((uint8_t *) ustate + sizeof(size_t),
		   (const uint8_t *) state + sizeof(size_t),
		   size - sizeof(size_t));
	return 0;
}

/* Run @packet through the PSB+ header handling. */
static int ipt__evt_state_packet(struct pt_event_decoder *decoder,
				 const struct pt_packet *packet)
{
	IPT__COPY(decoder->packet, *packet);
	return ipt__evt_header_packet(decoder);
}

/* Queue @state's status events, in a PSB+'s order, and place them. */
static int ipt__evt_take_state(struct pt_event_decoder *decoder,
			       const struct ipt_start_state *state)
{
	struct ipt_last_ip at;
	struct pt_packet packet;
	struct pt_event *ev;
	uint8_t idx;
	int err = 0;

	ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_psbend);
	if (!ev)
		return -pte_nomem;
	ev->status_update = 1;
	ev->type = state->enabled ? ptev_enabled : ptev_disabled;
	ev->ip_suppressed = state->enabled ? 0 : 1;

	IPT_MEMSET(&packet, 0, sizeof(packet));
	if (state->has_cr3) {
		packet.type = ppt_pip;
		packet.payload.pip.cr3 = state->cr3;
		packet.payload.pip.nr = state->non_root;
		err = ipt__evt_state_packet(decoder, &packet);
	}
	if (err >= 0 && state->has_vmcs) {
		packet.type = ppt_vmcs;
		packet.payload.vmcs.base = state->vmcs;
		err = ipt__evt_state_packet(decoder, &packet);
	}
	if (err >= 0 && state->speculative) {
		packet.type = ppt_mode;
		packet.payload.mode.leaf = pt_mol_tsx;
		packet.payload.mode.bits.tsx.intx = 1;
		err = ipt__evt_state_packet(decoder, &packet);
	}
	if (err >= 0 && state->mode != ptem_unknown && !state->mode_stale) {
		packet.type = ppt_mode;
		packet.payload.mode.leaf = pt_mol_exec;
		packet.payload.mode.bits.exec = pt_set_exec_mode(state->mode);
		packet.payload.mode.bits.exec.iflag = state->iflag;
		err = ipt__evt_state_packet(decoder, &packet);
	}
	if (err < 0)
		return err;

	ipt_last_ip_init(&at);
	if (state->enabled) {
		at.ip = state->ip;
		at.have_ip = 1;
	}
	for (idx = decoder->evq.begin; idx != decoder->evq.end;
	     idx = ipt__evq_inc(idx)) {
		err = ipt__evt_place(&decoder->evq.queue[idx].event, &at);
		if (err < 0)
			return err;
	}
	decoder->placed = 1;
	return 0;
}

IPT_DEF int ipt_evt_start_at(struct pt_event_decoder *decoder,
			     uint64_t offset,
			     const struct ipt_start_state *ustate)
{
	struct ipt_start_state state;
	int err;

	if (!decoder)
		return -pte_invalid;
	err = ipt__start_state_in(&state, ustate);
	if (err < 0)
		return err;
	ipt__evt_reset(decoder);
	err = ipt__pkt_start_at(&decoder->pacdec, offset);
	if (err < 0)
		return err;

	decoder->status = 0;
	if (state.has_time) {
		IPT__COPY(decoder->time, state.time);
		IPT__COPY(decoder->tcal, state.tcal);
	}
	err = ipt__evt_take_state(decoder, &state);
	if (err < 0) {
		ipt__evt_reset(decoder);
		return err;
	}
	decoder->enabled = state.enabled;
	IPT__COPY(decoder->ip, state.last_ip);

	/* An empty PSBEND at @offset: it hands out the status events, then
	 * the decoder reads on at @offset. */
	IPT_MEMSET(&decoder->packet, 0, sizeof(decoder->packet));
	decoder->packet.type = ppt_psbend;
	return 0;
}

/* How many events wait in the queue: right after ipt_evt_start_at, the
 * status events of the state. */
static IPT__UNUSED uint32_t ipt__evt_queued(const struct pt_event_decoder *d)
{
	uint32_t n = 0;
	uint8_t idx;

	for (idx = d->evq.begin; idx != d->evq.end && n < ipt__evq_max;
	     idx = ipt__evq_inc(idx))
		n += 1;
	return n;
}

/* The state of a decoder that has used up its trace, but for what only
 * its user knows (the IP, address space, mode, return stack): 0, or
 * -pte_bad_context if events still wait for packets to come. */
static IPT__UNUSED int
ipt__evt_get_state(const struct pt_event_decoder *decoder, uint64_t *offset,
		   struct ipt_start_state *state)
{
	int err;

	if (decoder->packet.type != ppt_invalid ||
	    (decoder->status != -pte_eos &&
	     decoder->status != -ipt_pte_need_more) ||
	    decoder->evq.begin != decoder->evq.end || decoder->peeked_end)
		return -pte_bad_context;
	/* A packet the trace ends inside: an SKZ84 TMA taken as an invalid
	 * packet one byte longer than the TMA, as libipt takes it. */
	if (ipt__evt_pos(decoder) > ipt__evt_end(decoder))
		return -pte_bad_context;
	err = pt_evt_get_offset(decoder, offset);
	if (err < 0)
		return err;
	IPT__COPY(state->last_ip, decoder->ip);
	IPT__COPY(state->time, decoder->time);
	IPT__COPY(state->tcal, decoder->tcal);
	state->has_time = 1;
	state->iflag = decoder->iflag;
	state->mode_stale = !decoder->mode_exec_valid;
	return 0;
}

static int ipt__evt_sync_forward(struct pt_event_decoder *decoder)
{
	int err;

	ipt__evt_reset(decoder);
	err = pt_pkt_sync_forward(&decoder->pacdec);
	if (err < 0)
		return err;
	return ipt__evt_start(decoder);
}

IPT_DEF int pt_evt_sync_forward(struct pt_event_decoder *decoder)
{
	IPT__EVT_GUARDED(decoder, ipt__evt_sync_forward(decoder));
}

/* Right after synchronizing: whether the PSB+ status updates say tracing
 * is enabled (1, and where in *ip) or not (0), read on a copy of the
 * decoder so that its user still gets those events.  With no_time the
 * copy passes over MTC and CYC packets (ipt__evt_start_ip). */
static int ipt__evt_start_ip_as(const struct pt_event_decoder *decoder,
				uint64_t *ip, int no_time)
{
	struct pt_event_decoder evdec;
	struct pt_event ev;
	int err;

	IPT__COPY(evdec, *decoder);
	evdec.no_time = no_time ? 1 : 0;
	/* Only the events of this PSB+: they all come at the same
	 * position (its PSBEND), not those of an adjacent one. */
	while (ipt__evt_off(&evdec) == ipt__evt_off(decoder)) {
		err = pt_evt_next(&evdec, &ev, sizeof(ev));
		if (err < 0)
			return err == -pte_eos ? 0 : err;
		if (!ev.status_update)
			break;
		if (ev.type == ptev_enabled) {
			*ip = ev.variant.enabled.ip;
			return 1;
		}
	}
	return 0;
}

/* Behind a PSB+ that says tracing is disabled, the look ahead reads on to
 * the next event, often over many MTC and CYC packets.  Its answer is an
 * error, or an event's type and IP; its time is thrown away.  With
 * mtc_freq below 16 (IA32_RTIT_CTL's four bits) no MTC or CYC fails
 * whatever the time and calibration state: CTC values stay below
 * 2^(mtc_freq + 8), so no delta wraps twice and a fast-counter delta stays
 * below 2^55, and a missing cpuid 0x15 is ignored.  Nor does what they
 * change decide anything else: TSC, TMA and CBR fail or not by the TSC
 * and TMA flags and their own payload (an MTC sets have_mtc only when no
 * TSC waits for its TMA, the one case where a TMA looks at it), and an
 * event takes from the time only its stamp.  So passing them over gives
 * the same answer, for less work; t_evt_start checks it. */
static int ipt__evt_start_ip(const struct pt_event_decoder *decoder,
			     uint64_t *ip)
{
	return ipt__evt_start_ip_as(decoder, ip,
				    ipt__evt_config(decoder)->mtc_freq < 16);
}

/* The one backward synchronization, for pt_evt_, pt_qry_ and
 * pt_blk_sync_backward (and pt_insn_ through blk): step back PSB by PSB
 * from the current position (the trace's end if unsynchronized), start the
 * event decoder there and then the caller's decoder with start(ctx), until
 * a start ends before where we set out.  Passed over on the way: a PSB
 * whose start reaches our starting point (we would not move back), a PSB+
 * cut off by the end of the trace (-pte_eos), and a PSB from which the start
 * reads on into the next PSB+ (one cut short by an overflow, say): going
 * back to it would bring the decoder forward again, even to the PSB it set
 * out from, and never to the trace's start.  Returns what the start
 * returned, or the error of the packet decoder's backward search. */
static int ipt__evt_sync_backward(struct pt_event_decoder *decoder,
				  int (*start)(void *ctx), void *ctx)
{
	uint64_t from, sync, pos;
	int status;

	/* Offsets, not positions: in a ring, positions in different pieces
	 * do not compare. */
	from = ipt__evt_off(decoder);
	if (from == UINT64_MAX)
		from = ipt__pkt_size(&decoder->pacdec);

	sync = from;
	for (;;) {
		do {
			status = pt_pkt_sync_backward(&decoder->pacdec);
			if (status < 0)
				return status;
			pos = ipt__evt_off(decoder);
		} while (sync <= pos);
		sync = pos;

		ipt__evt_reset(decoder);
		status = ipt__evt_start(decoder);
		if (status >= 0 && start)
			status = start(ctx);
		pos = ipt__evt_off(decoder);
		if ((pos != UINT64_MAX && pos >= from) || status == -pte_eos)
			continue;
		if (status < 0)
			return status;
		if (ipt__pkt_sync_off(&decoder->pacdec) == sync)
			return status;
	}
}

IPT_DEF int pt_evt_sync_backward(struct pt_event_decoder *decoder)
{
	IPT__EVT_GUARDED(decoder, ipt__evt_sync_backward(decoder, NULL, NULL));
}

static int ipt__evt_sync_set(struct pt_event_decoder *decoder,
			     uint64_t offset)
{
	int err;

	ipt__evt_reset(decoder);
	err = pt_pkt_sync_set(&decoder->pacdec, offset);
	if (err < 0)
		return err;
	return ipt__evt_start(decoder);
}

IPT_DEF int pt_evt_sync_set(struct pt_event_decoder *decoder, uint64_t offset)
{
	IPT__EVT_GUARDED(decoder, ipt__evt_sync_set(decoder, offset));
}

/* The offset of the packet the decoder will look at next. */
IPT_DEF int pt_evt_get_offset(const struct pt_event_decoder *decoder,
			      uint64_t *offset)
{
	uint64_t pktoff;
	int err;

	if (!decoder || !offset)
		return -pte_invalid;
	err = pt_pkt_get_offset(&decoder->pacdec, &pktoff);
	if (err < 0)
		return err;
	*offset = pktoff - decoder->packet.size;
	return 0;
}

IPT_DEF int pt_evt_get_sync_offset(const struct pt_event_decoder *decoder,
				   uint64_t *offset)
{
	if (!decoder)
		return -pte_invalid;
	return pt_pkt_get_sync_offset(&decoder->pacdec, offset);
}

IPT_DEF const struct pt_config *
pt_evt_get_config(const struct pt_event_decoder *decoder)
{
	if (!decoder)
		return NULL;
	return pt_pkt_get_config(&decoder->pacdec);
}

/* ---- FUP ---- */

/* A FUP completes the events bound to it (their IP is the FUP's).  With
 * nothing bound it is the source of an asynchronous branch whose target
 * the next TIP gives (SDM: FUP + TIP pair). */
static int ipt__evt_decode_fup(struct pt_event_decoder *decoder)
{
	const struct pt_packet_ip *packet = &decoder->packet.payload.ip;
	struct pt_event *ev;
	int err;

	for (;;) {
		err = ipt_last_ip_update_ip(&decoder->ip, packet,
					    ipt__evt_config(decoder));
		if (err < 0)
			return err;

		err = ipt__evq_pending(&decoder->evq, ipt__evb_fup_bound);
		if (err < 0)
			return err;
		if (err)
			decoder->bound = 1;

		ev = ipt__evq_dequeue(&decoder->evq,
				      ipt__evb_fup | ipt__evb_fup_bound);
		if (!ev) {
			uint64_t from;

			if (decoder->bound)
				return 1;
			/* An asynchronous branch needs its source.  The
			 * event cannot say "source suppressed", so this is
			 * an error. */
			err = ipt_last_ip_query(&from, &decoder->ip);
			if (err < 0)
				return err;
			ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_tip);
			if (!ev)
				return -pte_nomem;
			ev->type = ptev_async_branch;
			ev->variant.async_branch.from = from;
			return 1;
		}

		if (ev->type != IPT__EV_IGNORE)
			break;
		/* A silently bound FUP: look again for the next one. */
	}
	decoder->event = ev;

	switch (ev->type) {
	case ptev_overflow:
		/* Keeps the time of the OVF: the gap to the next event shows
		 * how long the overflow lasted. */
		decoder->enabled = 1;
		return ipt__evt_place(ev, &decoder->ip);

	case ptev_rsm:
	case ptev_sipi:
		/* Those have no IP. */
		err = ipt__evt_stamp(ev, &decoder->time);
		if (err < 0)
			return err;
		return ev->ip_suppressed ? 0 : -pte_internal;

	case ptev_tsx:
	case ptev_exstop:
	case ptev_mwait:
	case ptev_ptwrite:
	case ptev_exec_mode:
	case ptev_iflags:
	case ptev_interrupt:
	case ptev_iret:
	case ptev_smi:
	case ptev_init:
	case ptev_vmentry:
	case ptev_vmexit:
	case ptev_shutdown:
	case ptev_uintr:
	case ptev_uiret:
	case ptev_trig:
	case ptev_swintr:
	case ptev_syscall:
		return ipt__evt_complete(ev, decoder);

	case ptev_enabled: case ptev_disabled: case ptev_async_disabled:
	case ptev_async_branch: case ptev_paging: case ptev_async_paging:
	case ptev_stop: case ptev_vmcs: case ptev_async_vmcs: case ptev_pwre:
	case ptev_pwrx: case ptev_tick: case ptev_cbr: case ptev_mnt:
	case ptev_tip: case ptev_tnt:
		break;
	}
	return -pte_bad_context;
}

/* ---- overflow ----
 * After an OVF the trace resumes at a FUP if the overflow resolved with
 * PacketEn set, otherwise at a later TIP.PGE.  Only timing packets may
 * come between OVF and that FUP. */

/* Look ahead for the FUP an OVF binds to.  Returns the distance from the
 * decoder's position to just after it, 0 if a packet shows that tracing
 * was off, or a negative error. */
static int ipt__evt_find_ovf_fup(const struct pt_packet_decoder *pacdec)
{
	struct pt_packet_decoder decoder;
	struct pt_packet packet;
	int offset = 0;

	IPT__COPY(decoder, *pacdec);
	for (;;) {
		int err = pt_pkt_next(&decoder, &packet, sizeof(packet));

		if (err < 0)
			return err;
		if (!packet.size)
			return -pte_bad_packet;
		offset += packet.size;
		if (offset < 0)
			return -pte_overflow;

		switch (packet.type) {
		case ppt_fup:
			return offset;

		case ppt_unknown:
		case ppt_pad:
		case ppt_mnt:
		case ppt_cbr:
		case ppt_tsc:
		case ppt_tma:
		case ppt_mtc:
		case ppt_cyc:
		case ppt_invalid:
			continue;

		case ppt_psbend:
		case ppt_tip:
		case ppt_tip_pgd:
		case ppt_tnt_8:
		case ppt_tnt_64:
			return -pte_bad_context;

		case ppt_psb: case ppt_tip_pge: case ppt_mode: case ppt_pip:
		case ppt_vmcs: case ppt_stop: case ppt_ovf: case ppt_exstop:
		case ppt_mwait: case ppt_pwre: case ppt_pwrx: case ppt_ptw:
		case ppt_cfe: case ppt_evd: case ppt_trig:
			return 0;
		}
	}
}

/* Find the FUP of a PSB+ that starts at pacdec's position (after the
 * PSB).  Returns 1 with the FUP in packet, 0 if the PSB+ has none. */
static int ipt__evt_find_header_fup(struct pt_packet *packet,
				    const struct pt_packet_decoder *pacdec)
{
	struct pt_packet_decoder decoder;

	IPT__COPY(decoder, *pacdec);
	for (;;) {
		int err = pt_pkt_next(&decoder, packet, sizeof(*packet));

		if (err < 0)
			return err;
		switch (packet->type) {
		case ppt_fup:
			return 1;
		case ppt_mode:
		case ppt_pip:
		case ppt_vmcs:
		case ppt_mnt:
		case ppt_tsc:
		case ppt_cbr:
		case ppt_tma:
		case ppt_mtc:
		case ppt_cyc:
		case ppt_pad:
		case ppt_invalid:
			continue;
		case ppt_psbend:
		case ppt_ovf:
			return 0;
		case ppt_unknown: case ppt_psb: case ppt_tip: case ppt_tip_pge:
		case ppt_tip_pgd: case ppt_tnt_8: case ppt_tnt_64:
		case ppt_stop: case ppt_exstop: case ppt_mwait: case ppt_pwre:
		case ppt_pwrx: case ppt_ptw: case ppt_cfe: case ppt_evd:
		case ppt_trig:
			return -pte_bad_context;
		}
	}
}

/* Resume after an overflow at a later IP: report the overflow there, with
 * the time of the OVF, and continue from pacdec/packet with the time read
 * up to there. */
static int ipt__evt_recover_at_ip(struct pt_event_decoder *decoder,
				  const struct pt_packet_decoder *pacdec,
				  const struct pt_packet *packet,
				  const struct pt_packet_ip *ip,
				  const struct ipt_time *time,
				  const struct ipt_time_cal *tcal)
{
	struct pt_event *ev;
	int err;

	err = ipt_last_ip_update_ip(&decoder->ip, ip,
				    ipt__evt_config(decoder));
	if (err < 0)
		return err;
	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_overflow;
	decoder->event = ev;
	err = ipt__evt_stamp(ev, &decoder->time);
	if (err < 0)
		return err;
	IPT__COPY(decoder->pacdec, *pacdec);
	IPT__COPY(decoder->packet, *packet);
	IPT__COPY(decoder->time, *time);
	IPT__COPY(decoder->tcal, *tcal);
	decoder->enabled = 1;
	return ipt__evt_place(ev, &decoder->ip);
}

/* Resume after an overflow with tracing off, from pacdec/packet. */
static int ipt__evt_recover_disabled(struct pt_event_decoder *decoder,
				     const struct pt_packet_decoder *pacdec,
				     const struct pt_packet *packet,
				     const struct ipt_time *time,
				     const struct ipt_time_cal *tcal)
{
	struct pt_event *ev;
	int err;

	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_overflow;
	ev->ip_suppressed = 1;
	decoder->event = ev;
	err = ipt__evt_stamp(ev, &decoder->time);
	if (err < 0)
		return err;
	IPT__COPY(decoder->pacdec, *pacdec);
	IPT__COPY(decoder->packet, *packet);
	IPT__COPY(decoder->time, *time);
	IPT__COPY(decoder->tcal, *tcal);
	return 0;
}

/* Resume after an overflow with tracing off, offset bytes ahead (just
 * after the FUP the overflow seemed to bind to); time packets on the way
 * still count. */
static int ipt__evt_recover_at_offset(struct pt_event_decoder *decoder,
				      uint64_t offset)
{
	const struct pt_packet *packet = &decoder->packet;
	struct pt_event *ev;
	int err;

	if (!offset)
		return -pte_internal;
	for (;;) {
		err = pt_pkt_next(&decoder->pacdec, &decoder->packet,
				  sizeof(decoder->packet));
		if (err < 0)
			return err;
		if (offset <= packet->size) {
			if (offset < packet->size)
				return -pte_internal;
			break;
		}
		offset -= packet->size;

		if (ipt__evt_is_time_packet(packet->type)) {
			err = ipt__evt_apply_time(&decoder->time,
						  &decoder->tcal, packet,
						  ipt__evt_config(decoder), 0);
			if (err < 0)
				return err;
			continue;
		}
		switch (packet->type) {
		case ppt_mode:
		case ppt_pip:
		case ppt_vmcs:
		case ppt_invalid:
		case ppt_unknown:
			/* The look-ahead would not have come this way. */
			return -pte_internal;
		case ppt_pad: case ppt_psb: case ppt_psbend: case ppt_fup:
		case ppt_tip: case ppt_tip_pge: case ppt_tip_pgd:
		case ppt_tnt_8: case ppt_tnt_64: case ppt_cbr: case ppt_tsc:
		case ppt_tma: case ppt_mtc: case ppt_cyc: case ppt_stop:
		case ppt_ovf: case ppt_mnt: case ppt_exstop: case ppt_mwait:
		case ppt_pwre: case ppt_pwrx: case ppt_ptw: case ppt_cfe:
		case ppt_evd: case ppt_trig:
			continue;
		}
	}

	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_overflow;
	ev->ip_suppressed = 1;
	return ipt__evt_publish_standalone(decoder, ev);
}

/* SKD010: after an OVF the FUP (or TIP.PGE) may be missing although the
 * overflow resolved with tracing on.  Look ahead for a sign: if tracing
 * is on, resume at the next IP we find; if we cannot tell, assume the
 * trace is right.  Returns 0 when an overflow event was made, > 0 if the
 * erratum does not apply, < 0 on error. */
static int ipt__evt_skd010(struct pt_event_decoder *decoder)
{
	struct pt_packet_decoder pacdec;
	struct ipt_time time;
	struct ipt_time_cal tcal;
	const struct pt_config *config = ipt__evt_config(decoder);
	unsigned int tsx_found = 0, tsx_intx = 0, tsx_abrt = 0;
	struct pt_packet packet;
	struct pt_event *ev;

	IPT__COPY(pacdec, decoder->pacdec);
	IPT__COPY(time, decoder->time);
	IPT__COPY(tcal, decoder->tcal);	int err;

	for (;;) {
		err = pt_pkt_next(&pacdec, &packet, sizeof(packet));
		if (err < 0)
			return ipt__evt_peeked_end(decoder, err) ? 1 : err;

		if (ipt__evt_is_time_packet(packet.type)) {
			err = ipt__evt_apply_time(&time, &tcal, &packet,
						  config, 0);
			if (err < 0)
				return err;
			continue;
		}

		switch (packet.type) {
		case ppt_tip_pge:
			return 1;

		case ppt_tip_pgd:
			/* Tracing was on: resume after the disable. */
			err = ipt__evt_recover_disabled(decoder, &pacdec,
							&packet, &time, &tcal);
			if (err < 0)
				return err;
			return ipt__evt_next_packet(decoder);

		case ppt_tnt_8:
		case ppt_tnt_64:
			/* Tracing was on, but there is no telling how many
			 * branches to skip before the next IP. */
			return 1;

		case ppt_pip:
		case ppt_vmcs:
			/* Changes lost like the ones inside the overflow. */
			continue;

		case ppt_mode:
			if (packet.payload.mode.leaf != pt_mol_tsx)
				continue;
			/* A second MODE.TSX means tracing was off. */
			if (tsx_found)
				return 1;
			tsx_found = 1;
			tsx_intx = packet.payload.mode.bits.tsx.intx;
			tsx_abrt = packet.payload.mode.bits.tsx.abrt;
			continue;

		case ppt_fup:
			/* Tracing was on: resume at this FUP, after the
			 * overflow and any MODE.TSX that binds to it. */
			decoder->packet = packet;
			if (tsx_found) {
				ev = ipt__evq_enqueue(&decoder->evq,
						      ipt__evb_fup_bound);
				if (!ev)
					return -pte_nomem;
				ev->type = ptev_tsx;
				ev->variant.tsx.speculative = tsx_intx;
				ev->variant.tsx.aborted = tsx_abrt;
			}
			return ipt__evt_recover_at_ip(decoder, &pacdec,
						      &packet,
						      &packet.payload.ip,
						      &time, &tcal);

		case ppt_tip:
			err = ipt__evt_recover_at_ip(decoder, &pacdec, &packet,
						     &packet.payload.ip, &time,
						     &tcal);
			if (err < 0)
				return err;
			return ipt__evt_next_packet(decoder);

		case ppt_psb: {
			struct pt_packet fup;

			/* Tracing is on iff the PSB+ has a FUP. */
			err = ipt__evt_find_header_fup(&fup, &pacdec);
			if (err <= 0)
				return err == -pte_eos ? 1 : (err ? err : 1);
			if (fup.type != ppt_fup)
				return -pte_internal;
			return ipt__evt_recover_at_ip(decoder, &pacdec,
						      &packet, &fup.payload.ip,
						      &time, &tcal);
		}

		case ppt_psbend:
			return -pte_bad_context;

		case ppt_ovf:
		case ppt_stop:
			return 1;

		case ppt_pad:
		case ppt_mnt:
		case ppt_pwre:
		case ppt_pwrx:
		case ppt_evd:
		case ppt_trig:
			continue;

		case ppt_exstop:
			if (!packet.payload.exstop.ip)
				continue;
			return 1;

		case ppt_ptw:
			if (!packet.payload.ptw.ip)
				continue;
			return 1;

		case ppt_cfe:
			if (!packet.payload.cfe.ip)
				continue;
			return 1;

		case ppt_invalid: case ppt_unknown: case ppt_cbr: case ppt_tsc:
		case ppt_tma: case ppt_mtc: case ppt_cyc: case ppt_mwait:
			/* MWAIT binds to a FUP we would have to skip too;
			 * unknown packets cannot be skipped. */
			return 1;
		}
	}
}

/* APL11: an OVF may be followed by a TIP.PGD that should not be there.
 * If a TIP.PGD comes before any sign of tracing being off, resume after
 * it with tracing off.  Same returns as ipt__evt_skd010(). */
static int ipt__evt_apl11(struct pt_event_decoder *decoder)
{
	struct pt_packet_decoder pacdec;
	struct ipt_time time;
	struct ipt_time_cal tcal;
	const struct pt_config *config = ipt__evt_config(decoder);
	struct pt_packet packet;
	int err;

	IPT__COPY(pacdec, decoder->pacdec);
	IPT__COPY(time, decoder->time);
	IPT__COPY(tcal, decoder->tcal);
	for (;;) {
		err = pt_pkt_next(&pacdec, &packet, sizeof(packet));
		if (err < 0) {
			ipt__evt_peeked_end(decoder, err);
			return err;
		}

		if (ipt__evt_is_time_packet(packet.type)) {
			err = ipt__evt_apply_time(&time, &tcal, &packet,
						  config, 0);
			if (err < 0)
				return err;
			continue;
		}

		switch (packet.type) {
		case ppt_tip_pgd:
			err = ipt__evt_recover_disabled(decoder, &pacdec,
							&packet, &time, &tcal);
			if (err < 0)
				return err;
			return ipt__evt_next_packet(decoder);

		case ppt_pad:
		case ppt_mnt:
		case ppt_cfe:
		case ppt_evd:
		case ppt_trig:
			continue;

		case ppt_invalid: case ppt_unknown: case ppt_psb:
		case ppt_psbend: case ppt_fup: case ppt_tip: case ppt_tip_pge:
		case ppt_tnt_8: case ppt_tnt_64: case ppt_mode: case ppt_pip:
		case ppt_vmcs: case ppt_cbr: case ppt_tsc: case ppt_tma:
		case ppt_mtc: case ppt_cyc: case ppt_stop: case ppt_ovf:
		case ppt_exstop: case ppt_mwait: case ppt_pwre: case ppt_pwrx:
		case ppt_ptw:
			return 1;
		}
	}
}

/* APL12: an OVF may be followed by a FUP although the overflow resolved
 * with tracing off.  offset is the distance to just after that FUP.  If a
 * later packet shows tracing was off, resume after the FUP with tracing
 * off.  Same returns as ipt__evt_skd010(). */
static int ipt__evt_apl12(struct pt_event_decoder *decoder, uint64_t offset)
{
	struct pt_packet_decoder pacdec;
	struct pt_packet packet;
	int err;

	IPT__COPY(pacdec, decoder->pacdec);
	if (ipt__pkt_skip(&pacdec, offset) < 0)
		return -pte_internal;

	for (;;) {
		err = pt_pkt_next(&pacdec, &packet, sizeof(packet));
		if (err < 0)
			return ipt__evt_peeked_end(decoder, err) ? 1 : err;

		switch (packet.type) {
		case ppt_tnt_8:
		case ppt_tnt_64:
		case ppt_tip:
		case ppt_tip_pgd:
			/* Only made with tracing on. */
			return 1;

		case ppt_psb:
			err = ipt__evt_find_header_fup(&packet, &pacdec);
			if (err != 0)
				return err == -pte_eos ? 1 : (err < 0 ? err : 1);
			return ipt__evt_recover_at_offset(decoder, offset);

		case ppt_stop:
		case ppt_tip_pge:
			return ipt__evt_recover_at_offset(decoder, offset);

		case ppt_psbend:
		case ppt_ovf:
		case ppt_unknown:
		case ppt_invalid:
			return 1;

		case ppt_pad: case ppt_fup: case ppt_mode: case ppt_pip:
		case ppt_vmcs: case ppt_cbr: case ppt_tsc: case ppt_tma:
		case ppt_mtc: case ppt_cyc: case ppt_mnt: case ppt_exstop:
		case ppt_mwait: case ppt_pwre: case ppt_pwrx: case ppt_ptw:
		case ppt_cfe: case ppt_evd: case ppt_trig:
			continue;
		}
	}
}

static int ipt__evt_decode_ovf(struct pt_event_decoder *decoder)
{
	const struct pt_config *config = ipt__evt_config(decoder);
	struct ipt_time time;
	struct ipt_time_cal tcal;
	struct pt_event *ev;
	int err, offset;

	/* An OVF ends a PSB+ like PSBEND does. */
	err = ipt__evt_decode_psbend(decoder);
	if (err <= 0)
		return err;

	/* With tracing off, events still waiting for their IP come out now
	 * without one.  With tracing on they are dropped: there is no
	 * telling where they belong. */
	while (!decoder->enabled) {
		ev = ipt__evq_dequeue(&decoder->evq,
				      ipt__evb_fup_bound | ipt__evb_fup |
					      ipt__evb_tip | ipt__evb_exstop |
					      ipt__evb_pwrx);
		if (!ev)
			break;
		switch (ev->type) {
		case ptev_exstop:
		case ptev_mwait:
		case ptev_ptwrite:
		case ptev_tsx:
		case ptev_exec_mode:
		case ptev_iflags:
		case ptev_interrupt:
		case ptev_iret:
		case ptev_smi:
		case ptev_init:
		case ptev_vmentry:
		case ptev_vmexit:
		case ptev_shutdown:
		case ptev_uintr:
		case ptev_uiret:
		case ptev_trig:
		case ptev_swintr:
		case ptev_syscall:
			ev->ip_suppressed = 1;
			decoder->event = ev;
			return 0;
		case ptev_pwre:
		case ptev_rsm:
		case ptev_sipi:
			decoder->event = ev;
			return 0;
		case ptev_enabled: case ptev_disabled:
		case ptev_async_disabled: case ptev_async_branch:
		case ptev_paging: case ptev_async_paging: case ptev_overflow:
		case ptev_stop: case ptev_vmcs: case ptev_async_vmcs:
		case ptev_pwrx: case ptev_tick: case ptev_cbr: case ptev_mnt:
		case ptev_tip: case ptev_tnt:
			continue;
		}
	}

	/* Start over, keeping the time; the calibration only if asked to. */
	IPT__COPY(time, decoder->time);
	IPT__COPY(tcal, decoder->tcal);
	ipt__evt_reset(decoder);
	IPT__COPY(decoder->time, time);
	if (decoder->flags.variant.event.keep_tcal_on_ovf) {
		err = ipt_tcal_update_ovf(&tcal, config);
		if (err < 0)
			return err;
		IPT__COPY(decoder->tcal, tcal);
	}

	/* A search that met the end of the trace for now decides nothing:
	 * the FUP may yet come, and the errata below must not judge the
	 * packets before it. */
	offset = ipt__evt_find_ovf_fup(&decoder->pacdec);
	if (offset == -ipt_pte_need_more)
		return offset;
	if (offset < 0)
		ipt__evt_peeked_end(decoder, (int) offset);
	if (offset <= 0) {
		if (config->errata.skd010) {
			err = ipt__evt_skd010(decoder);
			if (err <= 0)
				return err;
		}
		if (config->errata.apl11 && offset == -pte_bad_context) {
			err = ipt__evt_apl11(decoder);
			if (err <= 0)
				return err;
		}
		/* An overflow at the end of the trace stands alone. */
		if (offset < 0 && offset != -pte_eos)
			return offset;

		ev = ipt__evq_standalone(&decoder->evq);
		ev->type = ptev_overflow;
		ev->ip_suppressed = 1;
		return ipt__evt_publish_standalone(decoder, ev);
	}

	if (config->errata.apl12) {
		err = ipt__evt_apl12(decoder, (uint64_t) offset);
		if (err <= 0)
			return err;
	}

	ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_fup_bound);
	if (!ev)
		return -pte_nomem;
	ev->type = ptev_overflow;
	err = ipt__evt_stamp(ev, &decoder->time);
	if (err < 0)
		return err;
	return 1;
}

/* ---- TIP, TIP.PGE, TIP.PGD ---- */

/* The branch event of a TIP comes before the events bound to it, since
 * those bind to the branch target.  A pending FUP makes it asynchronous. */
static int ipt__evt_tip_branch(struct pt_event_decoder *decoder)
{
	struct pt_event *ev, *async;

	decoder->bound = 1;

	async = ipt__evq_find(&decoder->evq, ipt__evb_tip, ptev_async_branch);
	if (async) {
		/* The branch goes first: swap it with the first TIP-bound
		 * event.  Taking an event out may move the others, so look
		 * for the branch again afterwards (libipt swaps through the
		 * pointer found before and fails with -pte_internal when an
		 * event bound elsewhere, e.g. an MWAIT, comes first). */
		ev = ipt__evq_dequeue(&decoder->evq, ipt__evb_tip);
		if (!ev)
			return -pte_internal;
		if (ev->type != ptev_async_branch) {
			struct pt_event tmp;

			async = ipt__evq_find(&decoder->evq, ipt__evb_tip,
					      ptev_async_branch);
			if (!async)
				return -pte_internal;
			IPT__COPY(tmp, *async);
			IPT__COPY(*async, *ev);
			IPT__COPY(*ev, tmp);
		}
		decoder->event = ev;
		return ipt__evt_complete(ev, decoder);
	}

	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_tip;
	decoder->event = ev;
	return ipt__evt_complete(ev, decoder);
}

static int ipt__evt_decode_tip(struct pt_event_decoder *decoder)
{
	struct pt_event *ev;
	int err;

	if (!decoder->enabled)
		return -pte_bad_context;
	err = ipt_last_ip_update_ip(&decoder->ip, &decoder->packet.payload.ip,
				    ipt__evt_config(decoder));
	if (err < 0)
		return err;

	if (!decoder->bound)
		return ipt__evt_tip_branch(decoder);

	do {
		ev = ipt__evq_dequeue(&decoder->evq, ipt__evb_tip);
		if (!ev)
			return 1;
	} while (ev->type == IPT__EV_IGNORE);
	decoder->event = ev;

	switch (ev->type) {
	case ptev_exec_mode:
	case ptev_async_paging:
	case ptev_async_vmcs:
	case ptev_iflags:
		return ipt__evt_complete(ev, decoder);
	case ptev_async_branch:
		/* A second FUP before this TIP: the trace is broken (libipt
		 * reports -pte_internal here). */
		return -pte_bad_context;
	case ptev_enabled: case ptev_disabled: case ptev_async_disabled:
	case ptev_paging: case ptev_overflow: case ptev_tsx: case ptev_stop:
	case ptev_vmcs: case ptev_exstop: case ptev_mwait: case ptev_pwre:
	case ptev_pwrx: case ptev_ptwrite: case ptev_tick: case ptev_cbr:
	case ptev_mnt: case ptev_tip: case ptev_tnt: case ptev_interrupt:
	case ptev_iret: case ptev_smi: case ptev_rsm: case ptev_sipi:
	case ptev_init: case ptev_vmentry: case ptev_vmexit:
	case ptev_shutdown: case ptev_uintr: case ptev_uiret: case ptev_trig:
	case ptev_swintr: case ptev_syscall:
		break;
	}
	return -pte_bad_context;
}

/* The enable event comes first; MODE.EXEC events bound to the TIP.PGE
 * follow at its IP. */
static int ipt__evt_decode_tip_pge(struct pt_event_decoder *decoder)
{
	struct pt_event *ev;
	int err;

	err = ipt_last_ip_update_ip(&decoder->ip, &decoder->packet.payload.ip,
				    ipt__evt_config(decoder));
	if (err < 0)
		return err;

	if (!decoder->bound) {
		ev = ipt__evq_standalone(&decoder->evq);
		ev->type = ptev_enabled;
		decoder->event = ev;
		err = ipt__evt_place(ev, &decoder->ip);
		if (err < 0)
			return err;
		decoder->enabled = 1;
		decoder->bound = 1;
		return ipt__evt_stamp(ev, &decoder->time);
	}

	do {
		ev = ipt__evq_dequeue(&decoder->evq, ipt__evb_tip);
		if (!ev)
			return 1;
	} while (ev->type == IPT__EV_IGNORE);
	decoder->event = ev;

	switch (ev->type) {
	case ptev_exec_mode:
	case ptev_iflags:
		return ipt__evt_complete(ev, decoder);
	case ptev_enabled: case ptev_disabled: case ptev_async_disabled:
	case ptev_async_branch: case ptev_paging: case ptev_async_paging:
	case ptev_overflow: case ptev_tsx: case ptev_stop: case ptev_vmcs:
	case ptev_async_vmcs: case ptev_exstop: case ptev_mwait:
	case ptev_pwre: case ptev_pwrx: case ptev_ptwrite: case ptev_tick:
	case ptev_cbr: case ptev_mnt: case ptev_tip: case ptev_tnt:
	case ptev_interrupt: case ptev_iret: case ptev_smi: case ptev_rsm:
	case ptev_sipi: case ptev_init: case ptev_vmentry: case ptev_vmexit:
	case ptev_shutdown: case ptev_uintr: case ptev_uiret: case ptev_trig:
	case ptev_swintr: case ptev_syscall:
		break;
	}
	return -pte_bad_context;
}

/* A TIP.PGD alone is a synchronous disable (at a branch); after a FUP it
 * is an asynchronous one (SDM: FUP + TIP.PGD pair). */
static int ipt__evt_decode_tip_pgd(struct pt_event_decoder *decoder)
{
	struct pt_event *ev;
	int err;

	err = ipt_last_ip_update_ip(&decoder->ip, &decoder->packet.payload.ip,
				    ipt__evt_config(decoder));
	if (err < 0)
		return err;

	/* An unchanged MODE.EXEC binds here silently, as it does to TIP and
	 * TIP.PGE.  (libipt 2.3 fails such a TIP.PGD with -pte_bad_context;
	 * FUP, MODE.EXEC, TIP.PGD is a valid far transfer out of tracing.) */
	do {
		ev = ipt__evq_dequeue(&decoder->evq, ipt__evb_tip);
	} while (ev && ev->type == IPT__EV_IGNORE);
	if (!ev) {
		if (decoder->bound)
			return 1;
		ev = ipt__evq_standalone(&decoder->evq);
		ev->type = ptev_disabled;
		err = ipt__evt_place(ev, &decoder->ip);
		if (err < 0)
			return err;
		err = ipt__evt_stamp(ev, &decoder->time);
		if (err < 0)
			return err;
		decoder->event = ev;
		decoder->enabled = 0;
		return ipt__evt_next_packet(decoder);
	}
	decoder->event = ev;

	switch (ev->type) {
	case ptev_async_branch: {
		uint64_t at = ev->variant.async_branch.from;

		ev->type = ptev_async_disabled;
		ev->variant.async_disabled.at = at;
		ev->variant.async_disabled.ip = 0;
		err = ipt__evt_place(ev, &decoder->ip);
		decoder->enabled = 0;
		decoder->bound = 1;
		break;
	}

	case ptev_async_paging:
	case ptev_async_vmcs:
		/* These follow the async disable made above. */
		if (!decoder->bound)
			return -pte_internal;
		ev->ip_suppressed = 1;
		err = 0;
		break;

	case ptev_exec_mode:
		/* Tracing is off when these apply; the TIP.PGD target will
		 * not be reached with trace, so there is no right IP. */
		ev->ip_suppressed = 1;
		err = 0;
		break;

	case ptev_enabled: case ptev_disabled: case ptev_async_disabled:
	case ptev_paging: case ptev_overflow: case ptev_tsx: case ptev_stop:
	case ptev_vmcs: case ptev_exstop: case ptev_mwait: case ptev_pwre:
	case ptev_pwrx: case ptev_ptwrite: case ptev_tick: case ptev_cbr:
	case ptev_mnt: case ptev_tip: case ptev_tnt: case ptev_iflags:
	case ptev_interrupt: case ptev_iret: case ptev_smi: case ptev_rsm:
	case ptev_sipi: case ptev_init: case ptev_vmentry: case ptev_vmexit:
	case ptev_shutdown: case ptev_uintr: case ptev_uiret: case ptev_trig:
	case ptev_swintr: case ptev_syscall:
		return -pte_bad_context;
	}
	if (err < 0)
		return err;
	return ipt__evt_stamp(ev, &decoder->time);
}

/* ---- other packets ---- */

/* The fields of a TNT event that its packet gives. */
static void ipt__evt_fill_tnt(struct pt_event *ev,
			      const struct pt_packet_tnt *packet)
{
	ev->type = ptev_tnt;
	ev->variant.tnt.bits = packet->payload;
	ev->variant.tnt.size = packet->bit_size;
}

static int ipt__evt_decode_tnt(struct pt_event_decoder *decoder)
{
	struct pt_event *ev;

	if (!decoder->enabled)
		return -pte_bad_context;
	ev = ipt__evq_standalone(&decoder->evq);
	ipt__evt_fill_tnt(ev, &decoder->packet.payload.tnt);
	return ipt__evt_publish_standalone(decoder, ev);
}

/* MODE.EXEC says two things: the execution mode and IF.  Each change
 * becomes an event bound to the next TIP (or a FUP that binds); an
 * unchanged MODE.EXEC still binds, silently. */
static int ipt__evt_decode_mode_exec(struct pt_event_decoder *decoder,
				     const struct pt_packet_mode_exec *packet)
{
	const uint32_t evb = ipt__evb_tip | ipt__evb_fup_bound;
	struct pt_event *ev;
	int nevents = 0;

	if (!decoder->mode_exec_valid || decoder->csl != packet->csl ||
	    decoder->csd != packet->csd) {
		ev = ipt__evq_enqueue(&decoder->evq, evb);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_exec_mode;
		ev->variant.exec_mode.mode = pt_get_exec_mode(packet);
		decoder->csl = packet->csl;
		decoder->csd = packet->csd;
		nevents++;
	}
	if (decoder->flags.variant.event.enable_iflags_events &&
	    (!decoder->mode_exec_valid || decoder->iflag != packet->iflag)) {
		ev = ipt__evq_enqueue(&decoder->evq, evb);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_iflags;
		ev->variant.iflags.iflag = packet->iflag;
		decoder->iflag = packet->iflag;
		nevents++;
	}
	if (!nevents) {
		ev = ipt__evq_enqueue(&decoder->evq, evb);
		if (!ev)
			return -pte_nomem;
		ev->type = IPT__EV_IGNORE;
	}
	decoder->mode_exec_valid = 1;
	return 1;
}

/* MODE.TSX binds to a FUP while tracing is on: an abort is asynchronous,
 * a begin or commit belongs to the FUP that follows. */
static int ipt__evt_decode_mode_tsx(struct pt_event_decoder *decoder,
				    const struct pt_packet_mode_tsx *packet)
{
	struct pt_event *ev;

	if (decoder->enabled) {
		ev = ipt__evq_enqueue(&decoder->evq,
				      packet->abrt ? ipt__evb_fup
						   : ipt__evb_fup_bound);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_tsx;
		ev->variant.tsx.speculative = packet->intx;
		ev->variant.tsx.aborted = packet->abrt;
		return 1;
	}

	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_tsx;
	ev->variant.tsx.speculative = packet->intx;
	ev->variant.tsx.aborted = packet->abrt;
	ev->ip_suppressed = 1;
	return ipt__evt_publish_standalone(decoder, ev);
}

/* PIP binds to the TIP of a pending asynchronous branch (FUP, PIP, TIP),
 * otherwise it stands alone (MOV CR3). */
static int ipt__evt_decode_pip(struct pt_event_decoder *decoder)
{
	const struct pt_packet_pip *packet = &decoder->packet.payload.pip;
	struct pt_event *ev;

	if (ipt__evq_find(&decoder->evq, ipt__evb_tip, ptev_async_branch)) {
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_tip);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_async_paging;
		ev->variant.async_paging.cr3 = packet->cr3;
		ev->variant.async_paging.non_root = packet->nr;
		return 1;
	}

	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_paging;
	ev->variant.paging.cr3 = packet->cr3;
	ev->variant.paging.non_root = packet->nr;
	return ipt__evt_publish_standalone(decoder, ev);
}

/* VMCS binds like PIP; when both come, VMCS is reported first. */
static int ipt__evt_decode_vmcs(struct pt_event_decoder *decoder)
{
	const struct pt_packet_vmcs *packet = &decoder->packet.payload.vmcs;
	struct pt_event *ev;

	ev = ipt__evq_find(&decoder->evq, ipt__evb_tip, ptev_async_paging);
	if (ev) {
		struct pt_event *paging;

		/* The paging event moves to a new slot at the end and
		 * VMCS takes its place. */
		paging = ipt__evq_enqueue(&decoder->evq, ipt__evb_tip);
		if (!paging)
			return -pte_nomem;
		IPT__COPY(*paging, *ev);
		ev->type = ptev_async_vmcs;
		ev->variant.async_vmcs.base = packet->base;
		return 1;
	}

	if (ipt__evq_find(&decoder->evq, ipt__evb_tip, ptev_async_branch)) {
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_tip);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_async_vmcs;
		ev->variant.async_vmcs.base = packet->base;
		return 1;
	}

	/* VMPTRLD, VMLAUNCH or VMRESUME: higher layers place it. */
	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_vmcs;
	ev->variant.vmcs.base = packet->base;
	return ipt__evt_publish_standalone(decoder, ev);
}

static int ipt__evt_decode_mnt(struct pt_event_decoder *decoder)
{
	struct pt_event *ev = ipt__evq_standalone(&decoder->evq);

	ev->type = ptev_mnt;
	ev->variant.mnt.payload = decoder->packet.payload.mnt.payload;
	return ipt__evt_publish_standalone(decoder, ev);
}

static int ipt__evt_decode_stop(struct pt_event_decoder *decoder)
{
	struct pt_event *ev = ipt__evq_standalone(&decoder->evq);

	ev->type = ptev_stop;
	return ipt__evt_publish_standalone(decoder, ev);
}

/* EXSTOP with IP binds to the next FUP; an MWAIT before it binds along.
 * Without IP, both stand alone and come out one per call. */
static int ipt__evt_decode_exstop(struct pt_event_decoder *decoder)
{
	const struct pt_packet_exstop *packet = &decoder->packet.payload.exstop;
	struct pt_event *ev;

	ev = ipt__evq_dequeue(&decoder->evq, ipt__evb_exstop);
	if (ev) {
		if (ev->type != ptev_mwait)
			return -pte_internal;
		if (packet->ip) {
			/* Both bind to the FUP: the MWAIT first, the
			 * EXSTOP queued right behind it below. */
			if (!ipt__evq_requeue(&decoder->evq, ev,
					      ipt__evb_fup_bound))
				return -pte_nomem;
		} else {
			ev->variant.mwait.ip = 0;
			ev->ip_suppressed = 1;
			decoder->event = ev;
			return ipt__evt_stamp(ev, &decoder->time);
		}
	}

	if (packet->ip) {
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_fup_bound);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_exstop;
		return 1;
	}

	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_exstop;
	ev->ip_suppressed = 1;
	return ipt__evt_publish_standalone(decoder, ev);
}

static int ipt__evt_decode_mwait(struct pt_event_decoder *decoder)
{
	const struct pt_packet_mwait *packet = &decoder->packet.payload.mwait;
	struct pt_event *ev;

	ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_exstop);
	if (!ev)
		return -pte_nomem;
	ev->type = ptev_mwait;
	ev->variant.mwait.hints = packet->hints;
	ev->variant.mwait.ext = packet->ext;
	return 1;
}

/* PWRE waits for PWRX and is reported then, with the time of the PWRE. */
static int ipt__evt_decode_pwre(struct pt_event_decoder *decoder)
{
	const struct pt_packet_pwre *packet = &decoder->packet.payload.pwre;
	struct pt_event *ev;
	int err;

	ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_pwrx);
	if (!ev)
		return -pte_nomem;
	ev->type = ptev_pwre;
	ev->variant.pwre.state = packet->state;
	ev->variant.pwre.sub_state = packet->sub_state;
	ev->variant.pwre.hw = packet->hw ? 1 : 0;
	err = ipt__evt_stamp(ev, &decoder->time);
	return err < 0 ? err : 1;
}

static int ipt__evt_decode_pwrx(struct pt_event_decoder *decoder)
{
	const struct pt_packet_pwrx *packet = &decoder->packet.payload.pwrx;
	struct pt_event *ev;

	ev = ipt__evq_dequeue(&decoder->evq, ipt__evb_pwrx);
	if (ev) {
		if (ev->type != ptev_pwre)
			return -pte_internal;
		decoder->event = ev;
		return 0;
	}

	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_pwrx;
	ev->variant.pwrx.last = packet->last;
	ev->variant.pwrx.deepest = packet->deepest;
	ev->variant.pwrx.interrupt = packet->interrupt ? 1 : 0;
	ev->variant.pwrx.store = packet->store ? 1 : 0;
	ev->variant.pwrx.autonomous = packet->autonomous ? 1 : 0;
	return ipt__evt_publish_standalone(decoder, ev);
}

/* PTWRITE with IP binds to the next FUP, otherwise stands alone. */
static int ipt__evt_decode_ptw(struct pt_event_decoder *decoder)
{
	const struct pt_packet_ptw *packet = &decoder->packet.payload.ptw;
	struct pt_event *ev;
	int size = pt_ptw_size(packet->plc);

	if (size < 0)
		return size;
	if (packet->ip) {
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_fup_bound);
		if (!ev)
			return -pte_nomem;
	} else {
		ev = ipt__evq_standalone(&decoder->evq);
		ev->ip_suppressed = 1;
	}
	ev->type = ptev_ptwrite;
	ev->variant.ptwrite.size = (uint8_t) size;
	ev->variant.ptwrite.payload = packet->payload;
	if (packet->ip)
		return 1;
	return ipt__evt_publish_standalone(decoder, ev);
}

/* Where a CFE event goes: with CFE.IP to the next FUP; without, with
 * tracing on, to the FUP of an asynchronous event (if the type may be
 * asynchronous); otherwise it is reported now without IP. */
static int ipt__evt_cfe_bind(struct pt_event_decoder *decoder,
			     struct pt_event *ev, int ip, int may_async)
{
	if (ip || (may_async && decoder->enabled)) {
		if (!ipt__evq_requeue(&decoder->evq, ev,
				      ip ? ipt__evb_fup_bound : ipt__evb_fup))
			return -pte_nomem;
		return 1;
	}
	ev->ip_suppressed = 1;
	return ipt__evt_publish_standalone(decoder, ev);
}

/* CFE (control-flow event, Event Trace).  INTR and VMEXIT may complete an
 * event that EVD packets began; other types must not have one pending. */
static int ipt__evt_decode_cfe(struct pt_event_decoder *decoder)
{
	const struct pt_packet_cfe *packet = &decoder->packet.payload.cfe;
	struct pt_event *pending, *ev;
	int ip = packet->ip ? 1 : 0;

	pending = ipt__evq_dequeue(&decoder->evq, ipt__evb_cfe);

	switch (packet->type) {
	case pt_cfe_intr:
		if (pending && pending->type != ptev_interrupt)
			return -pte_bad_context;
		ev = pending ? pending : ipt__evq_standalone(&decoder->evq);
		ev->type = ptev_interrupt;
		ev->variant.interrupt.vector = packet->vector;
		return ipt__evt_cfe_bind(decoder, ev, ip, 1);

	case pt_cfe_vmexit:
	case pt_cfe_vmexit_intr:
		if (pending && pending->type != ptev_vmexit)
			return -pte_bad_context;
		ev = pending ? pending : ipt__evq_standalone(&decoder->evq);
		ev->type = ptev_vmexit;
		if (packet->type == pt_cfe_vmexit_intr) {
			ev->variant.vmexit.has_vector = 1;
			ev->variant.vmexit.vector = packet->vector;
		}
		return ipt__evt_cfe_bind(decoder, ev, ip, 1);

	default:
		break;
	}

	if (pending) {
		/* EVD only begins INTR and VMEXIT events. */
		switch (packet->type) {
		case pt_cfe_iret:
		case pt_cfe_smi:
		case pt_cfe_rsm:
		case pt_cfe_sipi:
		case pt_cfe_init:
		case pt_cfe_vmentry:
		case pt_cfe_shutdown:
		case pt_cfe_uintr:
		case pt_cfe_uiret:
		case pt_cfe_swintr:
		case pt_cfe_syscall:
			return -pte_bad_context;
		default:
			return -pte_internal;
		}
	}

	ev = ipt__evq_standalone(&decoder->evq);
	switch (packet->type) {
	case pt_cfe_iret:
		ev->type = ptev_iret;
		return ipt__evt_cfe_bind(decoder, ev, ip, 0);
	case pt_cfe_smi:
		ev->type = ptev_smi;
		return ipt__evt_cfe_bind(decoder, ev, ip, 1);
	case pt_cfe_rsm:
	case pt_cfe_sipi:
		/* No IP to give; CFE.IP is wrong here. */
		if (ip)
			return -pte_bad_packet;
		if (packet->type == pt_cfe_rsm) {
			ev->type = ptev_rsm;
		} else {
			ev->type = ptev_sipi;
			ev->variant.sipi.vector = packet->vector;
		}
		ev->ip_suppressed = 1;
		return ipt__evt_cfe_bind(decoder, ev, 0, 1);
	case pt_cfe_init:
		ev->type = ptev_init;
		return ipt__evt_cfe_bind(decoder, ev, ip, 1);
	case pt_cfe_vmentry:
		ev->type = ptev_vmentry;
		return ipt__evt_cfe_bind(decoder, ev, ip, 0);
	case pt_cfe_shutdown:
		ev->type = ptev_shutdown;
		return ipt__evt_cfe_bind(decoder, ev, ip, 0);
	case pt_cfe_uintr:
		ev->type = ptev_uintr;
		ev->variant.uintr.vector = packet->vector;
		return ipt__evt_cfe_bind(decoder, ev, ip, 1);
	case pt_cfe_uiret:
		ev->type = ptev_uiret;
		return ipt__evt_cfe_bind(decoder, ev, ip, 0);
	case pt_cfe_swintr:
		ev->type = ptev_swintr;
		ev->variant.swintr.vector = packet->vector;
		return ipt__evt_cfe_bind(decoder, ev, ip, 1);
	case pt_cfe_syscall:
		ev->type = ptev_syscall;
		return ipt__evt_cfe_bind(decoder, ev, ip, 0);
	default:
		break;
	}

	/* Unknown types add detail we can do without; a FUP they claim is
	 * bound silently. */
	if (ip) {
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_fup_bound);
		if (!ev)
			return -pte_nomem;
		ev->type = IPT__EV_IGNORE;
	}
	return 1;
}

/* EVD gives data for the CFE that follows: CR2 for an interrupt (page
 * fault), VMX qualification and reason for a VM exit. */
static int ipt__evt_decode_evd(struct pt_event_decoder *decoder)
{
	const struct pt_packet_evd *packet = &decoder->packet.payload.evd;
	struct pt_event *ev;

	ev = ipt__evq_find(&decoder->evq, ipt__evb_cfe, -1);

	switch (packet->type) {
	case pt_evd_cr2:
		if (ev)
			return -pte_bad_context;
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_cfe);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_interrupt;
		ev->variant.interrupt.has_cr2 = 1;
		ev->variant.interrupt.cr2 = packet->payload;
		return 1;

	case pt_evd_vmxq:
	case pt_evd_vmxr:
		if (!ev) {
			ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_cfe);
			if (!ev)
				return -pte_nomem;
			ev->type = ptev_vmexit;
		}
		if (ev->type != ptev_vmexit)
			return -pte_bad_context;
		if (packet->type == pt_evd_vmxq) {
			if (ev->variant.vmexit.has_vmxq)
				return -pte_bad_context;
			ev->variant.vmexit.has_vmxq = 1;
			ev->variant.vmexit.vmxq = packet->payload;
		} else {
			if (ev->variant.vmexit.has_vmxr)
				return -pte_bad_context;
			ev->variant.vmexit.has_vmxr = 1;
			ev->variant.vmexit.vmxr = packet->payload;
		}
		return 1;
	}

	/* Unknown EVD types are skipped. */
	return 1;
}

/* TRIG with IP takes the IP of the next FUP and then must not count
 * instructions; without, it stands alone, its IP given by ICNT. */
static int ipt__evt_decode_trig(struct pt_event_decoder *decoder)
{
	const struct pt_packet_trig *packet = &decoder->packet.payload.trig;
	struct pt_event *ev;

	if (packet->ip) {
		if (!packet->icntv || packet->icnt)
			return -pte_bad_packet;
		ev = ipt__evq_enqueue(&decoder->evq, ipt__evb_fup_bound);
		if (!ev)
			return -pte_nomem;
		ev->type = ptev_trig;
		ev->variant.trig.trbv = packet->trbv;
		ev->variant.trig.mult = packet->mult;
		return 1;
	}

	ev = ipt__evq_standalone(&decoder->evq);
	ev->type = ptev_trig;
	ev->variant.trig.trbv = packet->trbv;
	ev->variant.trig.mult = packet->mult;
	if (packet->icntv) {
		/* With tracing off, the IP would be given precisely. */
		if (packet->icnt && !decoder->enabled)
			return -pte_bad_packet;
		ev->variant.trig.icnt = packet->icnt;
	} else {
		ev->ip_suppressed = 1;
	}
	return ipt__evt_publish_standalone(decoder, ev);
}

static int ipt__evt_decode_packet(struct pt_event_decoder *decoder);

/* The current packet, an MTC or CYC, the per-packet way, and on to the
 * next: 1 if that is an MTC or CYC too, else 0; or an error. */
static IPT__INLINE int ipt__evt_time_step(struct pt_event_decoder *decoder)
{
	const struct pt_packet *packet = &decoder->packet;
	int err;

	if (packet->type == ppt_mtc)
		err = ipt__evt_time_mtc(&decoder->time, &decoder->tcal,
					packet->payload.mtc.ctc,
					ipt__evt_config(decoder));
	else
		err = ipt__evt_time_cyc(&decoder->time, &decoder->tcal,
					packet->payload.cyc.value,
					ipt__evt_config(decoder));
	if (err < 0)
		return err;
	ipt__evt_next_packet(decoder);
	return packet->type == ppt_mtc || packet->type == ppt_cyc;
}

/* ipt__evt_time_packets from the second packet of a run on, the current
 * one: the packets that the fast path decodes are read straight from the
 * trace (the current one again), MTCs through ipt__time_run_mtc where it
 * can take them, and the packet after the run stays as the fast path
 * decoded it.  Everything else goes one packet at a time. */
static IPT__NOINLINE int ipt__evt_time_loop(struct pt_event_decoder *decoder)
{
	const struct pt_config *config = ipt__evt_config(decoder);
	struct pt_packet_decoder *pacdec = &decoder->pacdec;
	struct pt_packet *packet = &decoder->packet;
	struct ipt__time_clk clk;
	struct ipt_time *time = &decoder->time;
	struct ipt_time_cal *tcal = &decoder->tcal;
	struct pt_packet pkt;
	const uint8_t *at, *start;
	uintptr_t begin = (uintptr_t) pacdec->config.begin;
	size_t fast = pacdec->fast;
	int err, size, skd007 = pacdec->config.errata.skd007, ready = -1;

	for (;;) {
		/* From the current packet, an MTC or CYC, on: the MTCs and
		 * CYCs, and PADs between, while the fast path decodes them
		 * and ipt__time_run_mtc takes the MTCs; then the packet
		 * after them, if decoded. */
		start = pacdec->pos - packet->size;
		for (at = start; ipt__pkt_in_fast(begin, fast, at);
		     at += size) {
			size = ipt__pkt_fast(at, &pkt, skd007, 1);
			if (!size)
				break;
			if (pkt.type == ppt_cyc) {
				err = ipt__evt_time_cyc(time, tcal,
							pkt.payload.cyc.value,
							config);
				if (err < 0) {
					/* Past it, as one at a time. */
					pacdec->pos = at + size;
					*packet = pkt;
					return err;
				}
			} else if (pkt.type == ppt_mtc) {
				if (ready < 0)
					ready = ipt__time_clk_init(&clk,
								   config) &&
						ipt__time_run_ready(time,
								    tcal);
				if (!ready ||
				    !ipt__time_run_mtc(time, tcal,
						       pkt.payload.mtc.ctc,
						       &clk))
					break;
			} else if (pkt.type != ppt_pad) {
				/* The packet after the run. */
				pacdec->pos = at + size;
				*packet = pkt;
				return 0;
			}
		}

		/* The packet the loop stopped at, one at a time. */
		ready = -1;
		if (at != start) {
			pacdec->pos = at;
			ipt__evt_next_packet(decoder);
			if (packet->type != ppt_mtc &&
			    packet->type != ppt_cyc)
				return 0;
		}
		err = ipt__evt_time_step(decoder);
		if (err <= 0)
			return err;
	}
}

/* MTC and CYC make up most of a cycle-accurate trace, and none makes an
 * event.  Nothing can look at the time between two events, so the run of
 * them that starts with the current packet is taken in one loop rather
 * than one round of ipt__evt_fetch_event each, leaving the packet after
 * the run current with nothing bound to it (ipt__evt_time_run then
 * handles it as that loop would).  Most runs are one CYC, taken here;
 * longer ones go on in ipt__evt_time_loop.  With no_time they are passed
 * over.  Returns 0, or an error. */
static IPT__INLINE int ipt__evt_time_packets(struct pt_event_decoder *decoder)
{
	struct pt_packet_decoder *pacdec = &decoder->pacdec;
	int err;

	if (decoder->no_time) {
		pacdec->pos = ipt__pkt_past_time(
			(uintptr_t) pacdec->config.begin, pacdec->fast,
			pacdec->pos, pacdec->config.errata.skd007);
		err = ipt__evt_next_packet(decoder);
	} else {
		err = ipt__evt_time_step(decoder);
		if (err > 0)
			err = ipt__evt_time_loop(decoder);
	}
	if (err < 0)
		return err;
	decoder->bound = 0;
	return 0;
}

static int ipt__evt_time_run(struct pt_event_decoder *decoder)
{
	int err = ipt__evt_time_packets(decoder);

	if (err < 0)
		return err;
	return ipt__evt_decode_packet(decoder);
}

/* Handle the current packet.  Returns 0 with decoder->event set, > 0 if
 * the next packet is needed, < 0 on error. */
static int ipt__evt_decode_packet(struct pt_event_decoder *decoder)
{
	const struct pt_packet *packet = &decoder->packet;
	int err;

	switch (packet->type) {
	case ppt_tnt_8:
	case ppt_tnt_64:
		return ipt__evt_decode_tnt(decoder);
	case ppt_fup:
		return ipt__evt_decode_fup(decoder);
	case ppt_tip:
		return ipt__evt_decode_tip(decoder);
	case ppt_tip_pge:
		return ipt__evt_decode_tip_pge(decoder);
	case ppt_tip_pgd:
		return ipt__evt_decode_tip_pgd(decoder);
	case ppt_cbr:
		return ipt__evt_decode_cbr(decoder);
	case ppt_mtc:
	case ppt_cyc:
		return ipt__evt_time_run(decoder);
	case ppt_tsc:
	case ppt_tma:
		err = ipt__evt_apply_time(&decoder->time, &decoder->tcal,
					  packet, ipt__evt_config(decoder), 0);
		return err < 0 ? err : 1;
	case ppt_mode:
		if (packet->payload.mode.leaf == pt_mol_exec)
			return ipt__evt_decode_mode_exec(
				decoder, &packet->payload.mode.bits.exec);
		if (packet->payload.mode.leaf == pt_mol_tsx)
			return ipt__evt_decode_mode_tsx(
				decoder, &packet->payload.mode.bits.tsx);
		return -pte_bad_opc;
	case ppt_pip:
		return ipt__evt_decode_pip(decoder);
	case ppt_vmcs:
		return ipt__evt_decode_vmcs(decoder);
	case ppt_ptw:
		return ipt__evt_decode_ptw(decoder);
	case ppt_psb:
		err = ipt__evt_decode_psb(decoder);
		if (err <= 0)
			return err;
		/* The PSBEND or OVF that ended the PSB+ is current now. */
		return ipt__evt_decode_packet(decoder);
	case ppt_psbend:
		return ipt__evt_decode_psbend(decoder);
	case ppt_exstop:
		return ipt__evt_decode_exstop(decoder);
	case ppt_mwait:
		return ipt__evt_decode_mwait(decoder);
	case ppt_pwre:
		return ipt__evt_decode_pwre(decoder);
	case ppt_pwrx:
		return ipt__evt_decode_pwrx(decoder);
	case ppt_ovf:
		return ipt__evt_decode_ovf(decoder);
	case ppt_stop:
		return ipt__evt_decode_stop(decoder);
	case ppt_mnt:
		return ipt__evt_decode_mnt(decoder);
	case ppt_cfe:
		return ipt__evt_decode_cfe(decoder);
	case ppt_evd:
		return ipt__evt_decode_evd(decoder);
	case ppt_trig:
		return ipt__evt_decode_trig(decoder);
	case ppt_pad:
	case ppt_unknown:
		return 1;
	case ppt_invalid:
		return decoder->status < 0 ? decoder->status : 1;
	}
	return -pte_bad_opc;
}

/* Feed packets to the handlers until one makes an event.  A packet a
 * handler passes on without an event was not bound by anything. */
static int ipt__evt_fetch_event(struct pt_event_decoder *decoder)
{
	for (;;) {
		int err = ipt__evt_decode_packet(decoder);

		if (err <= 0)
			return err;
		if (decoder->event)
			return -pte_internal;
		decoder->bound = 0;
		ipt__evt_next_packet(decoder);
	}
}

static int ipt__evt_next(struct pt_event_decoder *decoder,
			 struct pt_event *uev, size_t size);

IPT_DEF int pt_evt_next(struct pt_event_decoder *decoder,
			struct pt_event *uev, size_t size)
{
	/* The man page's too-small size, checked before decoding so that
	 * no event is lost. */
	if (!uev || size < offsetof(struct pt_event, variant))
		return -pte_invalid;
	IPT__EVT_GUARDED(decoder, ipt__evt_next(decoder, uev, size));
}

/* Clear the fields of a TNT or TIP event @ev that the other one uses. */
static IPT__INLINE void ipt__evt_clear_branch(struct pt_event *ev)
{
	ev->ip_suppressed = 0;
	ev->status_update = 0;
	ev->has_tsc = 0;
	IPT_MEMSET(&ev->variant, 0, sizeof(ev->variant.tnt));
}

/* The TIP that is the current packet, with nothing queued to bind to it,
 * as ipt__evt_decode_tip makes its event: the last IP updated, the packet
 * bound, so that the next call goes past it. */
static int ipt__evt_next_tip(struct pt_event_decoder *decoder,
			     struct pt_event *ev)
{
	int err;

	err = ipt__last_ip_update(&decoder->ip, &decoder->packet.payload.ip);
	if (err < 0)
		return err;
	decoder->bound = 1;
	ipt__evt_clear_branch(ev);
	ev->type = ptev_tip;
	err = ipt__evt_complete(ev, decoder);
	if (err < 0)
		/* pt_evt_next leaves its event in place after an error. */
		decoder->event = ipt__evq_standalone(&decoder->evq);
	return err < 0 ? err : 1;
}

/* The TIP.PGE or TIP.PGD that is the current packet, with nothing bound
 * to it and nothing queued, as ipt__evt_decode_tip_pge and
 * ipt__evt_decode_tip_pgd make their events: an enable bound to its
 * packet, or a disable that goes on past it. */
static int ipt__evt_next_pg(struct pt_event_decoder *decoder,
			    struct pt_event *ev, enum pt_packet_type type)
{
	int err;

	err = ipt__last_ip_update(&decoder->ip, &decoder->packet.payload.ip);
	if (err < 0)
		return err;
	ipt__evt_clear_branch(ev);
	if (type == ppt_tip_pge) {
		ev->type = ptev_enabled;
		err = ipt__evt_place(ev, &decoder->ip);
		if (err >= 0) {
			decoder->enabled = 1;
			decoder->bound = 1;
			err = ipt__evt_stamp(ev, &decoder->time);
		}
		if (err < 0)
			/* pt_evt_next leaves its event in place. */
			decoder->event = ipt__evq_standalone(&decoder->evq);
		return err < 0 ? err : 1;
	}
	ev->type = ptev_disabled;
	err = ipt__evt_place(ev, &decoder->ip);
	if (err < 0)
		return err;
	err = ipt__evt_stamp(ev, &decoder->time);
	if (err < 0)
		return err;
	decoder->enabled = 0;
	ipt__evt_next_packet(decoder);
	return 1;
}

/* Whether the short ways (ipt__evt_next_tnt, ipt__evt_tnt_ahead,
 * ipt__evt_tnt_fill) may take the TIP, TIP.PGE or TIP.PGD next: nothing is
 * bound to the current packet and nothing is queued. */
static IPT__INLINE int ipt__evt_tip_free(const struct pt_event_decoder *decoder)
{
	return !decoder->bound && decoder->evq.begin == decoder->evq.end;
}

/* A short way to the next event for a decoder above (>>blk) that holds a
 * TNT, TIP, enable or disable event it took from pt_evt_next() (or made
 * itself, for a disable) and has used up: when the next event is the TNT
 * of the current packet, or of the next one after a TIP (TIP.PGE) with
 * nothing bound to it, or a TIP, TIP.PGE or TIP.PGD that is the current
 * or that next packet with nothing bound to it and nothing queued, @ev
 * becomes that event in place, byte for byte what pt_evt_next() would
 * give, without building one in the queue and copying it out.  MTC and
 * CYC packets on the way are taken as ipt__evt_time_run takes them, and
 * stay taken if the short way then gives up.  These
 * events use no fields but the flags, the time and the start of the
 * variant (as long as variant.tnt), so clearing those leaves a zeroed
 * event.  The steps are ipt__evt_fetch_event's: ipt__evt_decode_tip
 * (ipt__evt_decode_tip_pge, ipt__evt_decode_tip_pgd) finding nothing
 * bound, then
 * ipt__evt_decode_tnt, ipt__evt_decode_tip, ipt__evt_decode_tip_pge or
 * ipt__evt_decode_tip_pgd.  A disable went past its TIP.PGD already.
 *
 * Returns 1 when @ev is the next event; 0 when the caller must ask
 * pt_evt_next() (which goes on from here); an error as pt_evt_next()
 * would. */
static int ipt__evt_next_tnt(struct pt_event_decoder *decoder,
			     struct pt_event *ev)
{
	enum pt_packet_type type, bound;
	int err;

	/* The packet that made @ev may still be current, bound: a TIP, for
	 * an enable (not a PSB+'s) its TIP.PGE, for an asynchronous disable
	 * its TIP.PGD. */
	if (ev->type == ptev_tnt || ev->type == ptev_tip)
		bound = ppt_tip;
	else if (ev->type == ptev_enabled && !ev->status_update)
		bound = ppt_tip_pge;
	else if (ev->type == ptev_disabled && !ev->status_update)
		bound = ppt_invalid;
	else if (ev->type == ptev_async_disabled)
		bound = ppt_tip_pgd;
	else
		return 0;
	if (ipt__pkt_more(&decoder->pacdec) ||
	    (bound == ppt_tip && !decoder->enabled))
		return 0;

	/* Its IP went into the last IP when it made @ev; the decoders'
	 * second update at the bound packet writes the same IP again (an
	 * update applied twice gives what it gave once), so it is left
	 * out. */
	if (decoder->packet.type == bound && decoder->bound &&
	    decoder->evq.begin == decoder->evq.end) {
		decoder->bound = 0;
		ipt__evt_next_packet(decoder);
	}

	/* MTC and CYC before it, as ipt__evt_time_run takes them. */
	type = decoder->packet.type;
	if (type == ppt_mtc || type == ppt_cyc) {
		err = ipt__evt_time_packets(decoder);
		if (err < 0)
			return err;
		type = decoder->packet.type;
	}
	if (type == ppt_tnt_8 || type == ppt_tnt_64) {
		if (!decoder->enabled)
			return 0;
		ipt__evt_clear_branch(ev);
		ipt__evt_fill_tnt(ev, &decoder->packet.payload.tnt);
		err = ipt__evt_stamp(ev, &decoder->time);
		if (err < 0)
			return err;
		ipt__evt_next_packet(decoder);
		return 1;
	}
	if (!ipt__evt_tip_free(decoder))
		return 0;
	if (type == ppt_tip)
		return decoder->enabled ? ipt__evt_next_tip(decoder, ev) : 0;
	if (type == ppt_tip_pge || type == ppt_tip_pgd)
		return ipt__evt_next_pg(decoder, ev, type);
	return 0;
}

/* A short way to the next event when a PSB or the PSBEND of a PSB+ is
 * current: the status event the PSB+ gives next, copied once into @ev,
 * byte for byte what pt_evt_next() would give.  The steps are
 * ipt__evt_fetch_event's for these packets (ipt__evt_decode_psb, then
 * ipt__evt_decode_psbend, and on to the next packet when the PSB+ has
 * no status event left), without going through ipt__evt_decode_packet
 * for each.  0 when another packet is current (pt_evt_next() goes on
 * from there: an OVF that ended a PSB+, say), or when more trace may
 * come (a step may need undoing then). */
static IPT__INLINE int ipt__evt_psb_status(struct pt_event_decoder *decoder,
					   struct pt_event *ev)
{
	struct pt_event *queued;
	int err;

	for (;;) {
		if (decoder->packet.type == ppt_psb) {
			err = ipt__evt_decode_psb(decoder);
			if (err < 0)
				return err;
			continue;
		}
		if (decoder->packet.type != ppt_psbend)
			return 0;
		err = ipt__evt_decode_psbend(decoder);
		if (err < 0)
			return err;
		if (!err)
			break;
		if (decoder->event)
			return -pte_internal;
		decoder->bound = 0;
		ipt__evt_next_packet(decoder);
	}
	queued = decoder->event;
	decoder->event = NULL;
	if (!queued)
		return -pte_internal;
	IPT__COPY(*ev, *queued);
	return 1;
}

static IPT__INLINE int ipt__evt_next_status(struct pt_event_decoder *decoder,
					    struct pt_event *ev)
{
	enum pt_packet_type type = decoder->packet.type;

	if ((type != ppt_psb && type != ppt_psbend) || ipt__evt_more(decoder))
		return 0;
	return ipt__evt_psb_status(decoder, ev);
}

/* ---- a PSB+ taken whole ----
 * A decoder above that takes a PSB+'s status events without reporting
 * them (>>blk for >>cov) needs only the state they state.  The PSB+ of a
 * trace with tracing off is the commonest: a PSB with nothing queued,
 * then no OVF, only PAD, MODE, PIP, VMCS and a CBR of a nonzero ratio,
 * each at most once, and no FUP but one BDM70 makes say nothing (with
 * the erratum, and a TIP.PGE right after the PSBEND, PADs aside: the
 * look ahead for it stops there).  Where the packet layer's fast path
 * decodes all of it, ipt__evt_psb_peek reads it into a struct
 * ipt__evt_psb, moving nothing; ipt__evt_psb_take then moves past it as
 * its events, all taken, would have left the decoder: the last IP
 * forgotten, tracing off, the MODE.EXEC state and the CBR's time taken
 * in, the packet after the PSBEND current.  Those events are a disable
 * (a status update) and one status update per packet but PAD, all with
 * their IP suppressed and the time after the CBR.  A MODE.EXEC that
 * disagrees with the state known is an error the general way reports:
 * ipt__evt_psb_peek says 0 then.  With tracing off the hardware writes
 * one PSB+ after another, mostly alike: the same bytes right behind a
 * PSB+ taken restate what it set, and ipt__evt_psb_again takes them by
 * their bytes alone. */

enum ipt__evt_psb_has {
	ipt__psb_tsx = 1 << 0,
	ipt__psb_exec = 1 << 1,
	ipt__psb_pip = 1 << 2,
	ipt__psb_vmcs = 1 << 3,
	ipt__psb_cbr = 1 << 4,
	ipt__psb_fup = 1 << 5
};

struct ipt__evt_psb {
	/* The ipt__psb_* packets it holds, and where it ends (past the
	 * PSBEND). */
	uint32_t has;
	const uint8_t *end;
	struct pt_packet_mode_tsx tsx;
	struct pt_packet_mode_exec exec;
	struct pt_packet_pip pip;
	struct pt_packet_vmcs vmcs;
	struct pt_packet cbr;
};

/* The last PSB+ ipt__evt_psb_peek read, if it holds no FUP: its bytes
 * after the PSB, up to its end (@len of them, at most
 * IPT__EVT_PSB_MEMO_BYTES; none yet if zero), and what it read there (but
 * @end).  The same bytes again are the same PSB+: only the decoder's
 * state is checked against it again (the MODE.EXEC's agreement).  In a
 * stretch of trace with tracing off the hardware writes one PSB+ after
 * another, mostly alike.  Once ipt__evt_psb_again has seen the same
 * bytes again, then PADs and the next PSB, the first @period bytes are
 * those, all of them (zero until then). */
enum { IPT__EVT_PSB_MEMO_BYTES = 64 };

struct ipt__evt_psb_memo {
	uint8_t bytes[2 * IPT__EVT_PSB_MEMO_BYTES];
	uint32_t len;
	uint32_t period;
	struct ipt__evt_psb psb;
};

/* Whether nothing of the current packet is under way: no event made of
 * it yet, none bound to it or placed, none queued. */
static IPT__UNUSED int
ipt__evt_settled(const struct pt_event_decoder *decoder)
{
	return !decoder->event && !decoder->bound && !decoder->placed &&
	       decoder->evq.begin == decoder->evq.end;
}

/* Whether a TIP.PGE is at @pos, PADs skipped, where the packet layer's
 * fast path decodes. */
static IPT__UNUSED int
ipt__evt_psb_pge_next(const struct pt_packet_decoder *pacdec,
		      const uint8_t *pos)
{
	uintptr_t begin = (uintptr_t) pacdec->config.begin;
	struct pt_packet packet;

	pos = ipt__pkt_past_pads(begin, pacdec->fast, pos);
	return ipt__pkt_in_fast(begin, pacdec->fast, pos) &&
	       ipt__pkt_fast(pos, &packet, pacdec->config.errata.skd007, 0) &&
	       packet.type == ppt_tip_pge;
}

static IPT__UNUSED int ipt__evt_psb_peek(const struct pt_event_decoder *decoder,
					 struct ipt__evt_psb *psb,
					 struct ipt__evt_psb_memo *memo)
{
	const struct pt_packet_decoder *pacdec = &decoder->pacdec;
	uintptr_t begin = (uintptr_t) pacdec->config.begin;
	const uint8_t *pos = pacdec->pos, *start = pos;
	struct pt_packet packet;

	if (decoder->packet.type != ppt_psb || !ipt__evt_settled(decoder) ||
	    ipt__pkt_more(pacdec))
		return 0;
	/* The PSB+ @memo holds, if its bytes are all where the fast path
	 * decodes (as far as the last, so all before it). */
	if (memo && memo->len &&
	    ipt__pkt_in_fast(begin, pacdec->fast, pos + memo->len - 1) &&
	    !IPT_MEMCMP(pos, memo->bytes, memo->len)) {
		IPT__COPY(*psb, memo->psb);
		psb->end = pos + memo->len;
		return !(psb->has & ipt__psb_exec) ||
		       ipt__evt_exec_agrees(decoder, &psb->exec);
	}
	psb->has = 0;
	for (;;) {
		uint32_t has;
		int size;

		pos = ipt__pkt_past_pads(begin, pacdec->fast, pos);
		if (!ipt__pkt_in_fast(begin, pacdec->fast, pos))
			return 0;
		size = ipt__pkt_fast(pos, &packet,
				     pacdec->config.errata.skd007, 0);
		if (!size)
			return 0;
		pos += size;
		switch (packet.type) {
		case ppt_pad:
			continue;
		case ppt_psbend:
			psb->end = pos;
			/* The memo holds this PSB+ or none: what follows a
			 * PSB+ taken may be compared with it (see
			 * ipt__evt_psb_again). */
			if (memo) {
				memo->len = 0;
				memo->period = 0;
			}
			if (psb->has & ipt__psb_fup)
				return ipt__evt_psb_pge_next(pacdec, pos);
			if (memo && (size_t) (pos - start) <=
					    IPT__EVT_PSB_MEMO_BYTES) {
				memo->len = (uint32_t) (pos - start);
				IPT_MEMCPY(memo->bytes, start, memo->len);
				IPT__COPY(memo->psb, *psb);
			}
			return 1;
		case ppt_fup:
			if (!pacdec->config.errata.bdm70)
				return 0;
			has = ipt__psb_fup;
			break;
		case ppt_mode:
			if (packet.payload.mode.leaf == pt_mol_tsx) {
				has = ipt__psb_tsx;
				psb->tsx = packet.payload.mode.bits.tsx;
			} else if (packet.payload.mode.leaf == pt_mol_exec) {
				has = ipt__psb_exec;
				psb->exec = packet.payload.mode.bits.exec;
				if (!ipt__evt_exec_agrees(decoder, &psb->exec))
					return 0;
			} else
				return 0;
			break;
		case ppt_pip:
			has = ipt__psb_pip;
			psb->pip = packet.payload.pip;
			break;
		case ppt_vmcs:
			has = ipt__psb_vmcs;
			psb->vmcs = packet.payload.vmcs;
			break;
		case ppt_cbr:
			if (!packet.payload.cbr.ratio)
				return 0;
			has = ipt__psb_cbr;
			psb->cbr = packet;
			break;
		default:
			return 0;
		}
		if (psb->has & has)
			return 0;
		psb->has |= has;
	}
}

/* Take the PSB+ @psb read; the time its events carry in @tsc, @lost_mtc
 * and @lost_cyc, and whether there is one. */
static IPT__UNUSED int ipt__evt_psb_take(struct pt_event_decoder *decoder,
					 const struct ipt__evt_psb *psb,
					 uint64_t *tsc, uint32_t *lost_mtc,
					 uint32_t *lost_cyc)
{
	ipt_last_ip_init(&decoder->ip);
	decoder->enabled = 0;
	if (psb->has & ipt__psb_exec)
		ipt__evt_exec_know(decoder, &psb->exec);
	/* A CBR of a nonzero ratio cannot fail. */
	if (psb->has & ipt__psb_cbr)
		(void) ipt__evt_apply_time(&decoder->time, &decoder->tcal,
					   &psb->cbr, ipt__evt_config(decoder),
					   1);
	decoder->pacdec.pos = psb->end;
	(void) ipt__evt_next_packet(decoder);
	return ipt_time_query_tsc(tsc, lost_mtc, lost_cyc, &decoder->time) >=
	       0;
}

/* Right after ipt__evt_psb_take of the PSB+ ipt__evt_psb_peek read last
 * into @memo (which holds that PSB+, or none): if the PSB now current is
 * followed by the same bytes, take that PSB+ too.  It states again what
 * the one before set (the same state, the same CBR: taking it changes
 * nothing but where the decoder is), so only the position moves.  With
 * the PADs and the PSB after it as the last time too (@memo's period),
 * the decoder moves past that PSB at once, synchronized at it, as the
 * packet layer would (ipt__pkt_next_rest): the packet current is the same
 * PSB.  Returns 1 if it did. */
static IPT__UNUSED int ipt__evt_psb_again(struct pt_event_decoder *decoder,
					  struct ipt__evt_psb_memo *memo)
{
	struct pt_packet_decoder *pacdec = &decoder->pacdec;
	uintptr_t begin = (uintptr_t) pacdec->config.begin;
	const uint8_t *pos = pacdec->pos;
	size_t period;

	if (decoder->packet.type != ppt_psb || !memo->len)
		return 0;
	if (memo->period &&
	    ipt__pkt_in_fast(begin, pacdec->fast, pos + memo->period - 1) &&
	    !IPT_MEMCMP(pos, memo->bytes, memo->period)) {
		ipt__pkt_sync_here(pacdec, pos + memo->period - IPT__PSB_SIZE);
		pacdec->pos = pos + memo->period;
		return 1;
	}
	if (!ipt__pkt_in_fast(begin, pacdec->fast, pos + memo->len - 1) ||
	    IPT_MEMCMP(pos, memo->bytes, memo->len))
		return 0;
	pacdec->pos = pos + memo->len;
	(void) ipt__evt_next_packet(decoder);
	/* Only PADs were skipped before the PSB now current, if it is one. */
	period = (size_t) (pacdec->pos - pos);
	if (decoder->packet.type == ppt_psb && period <= sizeof(memo->bytes) &&
	    ipt__pkt_in_fast(begin, pacdec->fast, pacdec->pos - 1)) {
		IPT_MEMCPY(memo->bytes + memo->len, pos + memo->len,
			   period - memo->len);
		memo->period = (uint32_t) period;
	}
	return 1;
}

/* ---- TNT and TIP packets in a row ----
 * Between two packets that are not TNT, TIP, TIP.PGD or TIP.PGE, a caller
 * holding a TNT event would get each next event from ipt__evt_next_tnt,
 * one per packet.  A caller that only wants the bits and the IPs reads
 * them ahead instead: the packet the decoder holds, then the packets
 * behind it (PADs skipped), decoded by the packet layer's fast path in
 * the region where it decodes.  A TIP (TIP.PGD, TIP.PGE) counts only with
 * nothing queued to bind to it and with an IP.  Nothing moves until the caller says how far
 * it got; then the decoder stands as after the ipt__evt_next_tnt call
 * that made the event of the last packet it took (a TNT; after a TIP or
 * TIP.PGE, as that call left it, bound, it stands past it), with the last
 * IP the TIPs it took left.  Those events would have
 * carried nothing but their bits or IP: no other packet, and so no
 * change of time, lies between them. */

/* TNT bits read ahead into a window of 64: @bits holds them, the oldest
 * highest, the low @n of them not taken yet (and nothing above those: a
 * reader keeps it so, its steps' memo keys take them as they are);
 * @lasts marks the last bit of
 * each packet in its place; @nread counts the bits ever read in, and
 * @ends[k % 64] is where the packet ends that k bits had been read in with
 * (the bits of the packet in hand when reading began are counted, its end
 * not kept). */
struct ipt__tnt_window {
	uint64_t bits;
	uint64_t lasts;
	uint32_t n;
	uint32_t nread;
	const uint8_t *ends[64];
};

/* Add a TNT packet of @size bits @payload ending at @end to @w. */
static IPT__INLINE void ipt__tnt_window_add(struct ipt__tnt_window *w,
					    uint64_t payload, uint32_t size,
					    const uint8_t *end)
{
	w->bits = (w->bits << size) | payload;
	w->lasts = (w->lasts << size) | 1;
	w->n += size;
	w->nread += size;
	w->ends[w->nread % 64] = end;
}

/* A packet read ahead (ipt__evt_tnt_ahead, ipt__evt_tnt_fill): its type
 * (zero: none), its payload and size as ipt__evt_tnt_ahead gives them,
 * and where it ends. */
struct ipt__tnt_packet {
	enum pt_packet_type type;
	uint32_t size;
	uint64_t payload;
	const uint8_t *end;
};

/* Read the one-byte TNTs (most packets) at *@pos (not NULL; PADs
 * skipped), where the packet layer's fast path decodes, into @w while it
 * holds at most @room bits (below 58).  Returns 1 when it holds more, 0
 * at any other packet, *@pos past what it read; that packet is in @p if
 * it is a TIP, TIP.PGD or TIP.PGE that ipt__evt_tnt_ahead would give with
 * @tip_free (@p's type zero otherwise: the caller reads it with that). */
static IPT__INLINE int ipt__evt_tnt_fill(const struct pt_event_decoder *decoder,
					 const uint8_t **pos,
					 struct ipt__tnt_window *w,
					 uint32_t room,
					 struct ipt__tnt_packet *p,
					 int tip_free)
{
	const struct pt_packet_decoder *pacdec = &decoder->pacdec;
	uintptr_t begin = (uintptr_t) pacdec->config.begin;
	size_t fast = pacdec->fast;
	const uint8_t *at = *pos;
	/* @w's fields but @ends in locals, added to as ipt__tnt_window_add
	 * does: the compiler keeps them in registers (@w's it loads and
	 * stores at each packet). */
	uint64_t bits = w->bits, lasts = w->lasts;
	uint32_t n = w->n, nread = w->nread;
	unsigned int kind, ipc;
	uint64_t ip;
	int size, full = 0;
	/* The first byte of the packet at @at if it is another one (not
	 * zero), read where the fast path decodes. */
	uint32_t other = 0;

	p->type = (enum pt_packet_type) 0;
	/* Where the fast region ends: @at is in it while below (it is
	 * from the first test on). */
	if (ipt__pkt_in_fast(begin, fast, at)) {
		uintptr_t end = begin + fast;

		do {
			/* As the packet layer decodes them. */
			uint32_t b = *at, nbits = ipt__tnt8[b].size;

			if (!nbits) {
				if (b) {
					other = b;
					break;
				}
				at = ipt__pkt_past_pads(begin, fast, at);
				continue;
			}
			at += 1;
			bits = (bits << nbits) | ipt__tnt8[b].bits;
			lasts = (lasts << nbits) | 1;
			n += nbits;
			nread += nbits;
			w->ends[nread % 64] = at;
			if (n > room) {
				full = 1;
				break;
			}
		} while ((uintptr_t) at < end);
	}
	w->bits = bits;
	w->lasts = lasts;
	w->n = n;
	w->nread = nread;
	*pos = at;
	if (!other)
		return full;

	/* The TIPs, as ipt__pkt_fast and ipt__evt_tnt_ahead take them. */
	kind = ipt__first_byte[other];
	if (kind - ppt_tip > ppt_tip_pgd - ppt_tip)
		return 0;
	size = ipt__pkt_fast_ip(at, &ip, &ipc);
	if (!size || ipc == pt_ipc_suppressed || !tip_free)
		return 0;
	p->type = (enum pt_packet_type) kind;
	p->payload = ip;
	p->size = ipc;
	p->end = at + size;
	return 0;
}

/* Whether a one-byte TNT is next at @pos (not NULL; PADs skipped), where
 * ipt__evt_tnt_fill reads it. */
static IPT__INLINE int ipt__evt_tnt8_next(const struct pt_event_decoder *decoder,
					  const uint8_t *pos)
{
	const struct pt_packet_decoder *pacdec = &decoder->pacdec;
	uintptr_t begin = (uintptr_t) pacdec->config.begin;

	pos = ipt__pkt_past_pads(begin, pacdec->fast, pos);
	return ipt__pkt_in_fast(begin, pacdec->fast, pos) &&
	       ipt__pkt_is_tnt8(*pos);
}

/* The TNT, TIP, TIP.PGD or TIP.PGE packet after the one at *@pos (NULL:
 * the event in hand): its type, and *@pos past it, with a TNT's bits (the
 * oldest highest) in @payload and their number in @size, or the IP
 * payload in @payload and its compression in @size; 0 if the next packet
 * is none of them, read this way (*@pos may have moved past PADs).
 * @tip_free is ipt__evt_tip_free(@decoder), which the caller finds once:
 * nothing in the decoder moves while it reads ahead. */
static IPT__INLINE enum pt_packet_type
ipt__evt_tnt_ahead(const struct pt_event_decoder *decoder, const uint8_t **pos,
		   uint64_t *payload, uint32_t *size, int tip_free)
{
	const struct pt_packet_decoder *pacdec = &decoder->pacdec;
	const struct pt_packet *packet;
	struct pt_packet local;
	const uint8_t *at = *pos;

	if (!at) {
		if (!decoder->enabled || ipt__pkt_more(pacdec))
			return (enum pt_packet_type) 0;
		packet = &decoder->packet;
		at = pacdec->pos;
	} else {
		at = ipt__pkt_past_pads((uintptr_t) pacdec->config.begin,
					pacdec->fast, at);
		*pos = at;
		if (!ipt__pkt_in_fast((uintptr_t) pacdec->config.begin,
				      pacdec->fast, at) ||
		    !ipt__pkt_fast(at, &local, pacdec->config.errata.skd007, 0))
			return (enum pt_packet_type) 0;
		packet = &local;
		at += local.size;
	}
	switch (packet->type) {
	case ppt_tnt_8:
	case ppt_tnt_64:
		*payload = packet->payload.tnt.payload;
		*size = packet->payload.tnt.bit_size;
		break;
	case ppt_tip:
	case ppt_tip_pgd:
	case ppt_tip_pge:
		if (packet->payload.ip.ipc == pt_ipc_suppressed || !tip_free)
			return (enum pt_packet_type) 0;
		*payload = packet->payload.ip.ip;
		*size = (uint32_t) packet->payload.ip.ipc;
		break;
	default:
		return (enum pt_packet_type) 0;
	}
	*pos = at;
	return packet->type;
}

/* The caller took the packets ahead up to @pos (as ipt__evt_tnt_ahead
 * left it), and the TIPs among them left the last IP @ip: the next
 * packet is the one after. */
static void ipt__evt_tnt_taken(struct pt_event_decoder *decoder,
			       const uint8_t *pos,
			       const struct ipt_last_ip *ip)
{
	IPT__COPY(decoder->ip, *ip);
	decoder->pacdec.pos = pos;
	(void) ipt__evt_next_packet(decoder);
}

/* The last IP, for a caller reading ahead. */
static IPT__INLINE const struct ipt_last_ip *
ipt__evt_last_ip(const struct pt_event_decoder *decoder)
{
	return &decoder->ip;
}

static int ipt__evt_next(struct pt_event_decoder *decoder,
			 struct pt_event *uev, size_t size)
{
	struct pt_event *ev;
	int err;

	err = ipt__evt_fetch_event(decoder);
	if (err < 0)
		return err;
	ev = decoder->event;
	decoder->event = NULL;
	if (!ev)
		return -pte_internal;

	/* A caller that knows a larger struct pt_event gets zeros past the
	 * end of ours; a smaller one gets what fits.  Ours, the common
	 * case, is copied inline. */
	if (IPT__LIKELY(size == sizeof(*ev))) {
		IPT__COPY(*uev, *ev);
		return 0;
	}
	if (size > sizeof(*ev)) {
		IPT_MEMSET((uint8_t *) uev + sizeof(*ev), 0,
			   size - sizeof(*ev));
		size = sizeof(*ev);
	}
	IPT_MEMCPY(uev, ev, size);
	return 0;
}

/* ---- guest or host ---- */

/* What a paging event (PIP, SDM 33.4.2.17 / 36.5.1) says: the CR3 it
 * switches to in *@cr3 (if not NULL), and of VMX 1 for a guest's CR3
 * (NR set: non-root), 0 for the host's; -1 for any other event.  The query
 * and block decoders tag what follows with it (ipt_*_in_guest); the block
 * decoder's CR3 filter compares the CR3. */
static IPT__UNUSED int ipt__evt_paging(const struct pt_event *ev,
				       uint64_t *cr3)
{
	uint64_t value;
	int nr;

	if (ev->type == ptev_paging) {
		value = ev->variant.paging.cr3;
		nr = ev->variant.paging.non_root;
	} else if (ev->type == ptev_async_paging) {
		value = ev->variant.async_paging.cr3;
		nr = ev->variant.async_paging.non_root;
	} else
		return -1;
	if (cr3)
		*cr3 = value;
	return nr;
}

/* Guest or host, as the paging events taken so far say; all zero: not
 * known (no PIP since synchronizing). */
struct ipt__vm_side {
	uint8_t known;
	uint8_t non_root;
};

/* A paging event said guest (@nr set) or host. */
static IPT__UNUSED void ipt__vm_side_set(struct ipt__vm_side *side,
					 uint32_t nr)
{
	side->known = 1;
	side->non_root = nr ? 1 : 0;
}

static IPT__UNUSED void ipt__vm_side_take(struct ipt__vm_side *side,
					  const struct pt_event *ev)
{
	int nr = ipt__evt_paging(ev, NULL);

	if (nr >= 0)
		ipt__vm_side_set(side, (uint32_t) nr);
}

/* What ipt_*_in_guest answers: 1 guest, 0 host, -pte_nosync. */
static IPT__UNUSED int ipt__vm_side_get(const struct ipt__vm_side *side)
{
	return side->known ? side->non_root : -pte_nosync;
}

/* ---- comparing decoders (for >>seg) ---- */

/* Events are made from zeroed memory (ipt__evq_clean, or a memset in
 * >>blk), so their bytes compare. */
static IPT__UNUSED int ipt__evt_same_event(const struct pt_event *a,
					   const struct pt_event *b)
{
	return !IPT_MEMCMP(a, b, sizeof(*a));
}

/* The queued events, from the oldest; the ring's position is no state.
 * The slot of the event taken out last and the standalone slot only live
 * during a call. */
static IPT__UNUSED int ipt__evq_same(const struct ipt__evq *a,
				     const struct ipt__evq *b)
{
	uint8_t ia = a->begin, ib = b->begin;

	if (ia >= ipt__evq_max || ib >= ipt__evq_max ||
	    a->end >= ipt__evq_max || b->end >= ipt__evq_max)
		return 0;
	for (;;) {
		if (ia == a->end || ib == b->end)
			return ia == a->end && ib == b->end;
		if (a->queue[ia].binding != b->queue[ib].binding ||
		    !ipt__evt_same_event(&a->queue[ia].event,
					 &b->queue[ib].event))
			return 0;
		ia = ipt__evq_inc(ia);
		ib = ipt__evq_inc(ib);
	}
}

/* The current packet is the one the packet decoder read last, from the
 * same bytes at the same position: its type and size say the rest. */
static IPT__UNUSED int ipt__evt_same(const struct pt_event_decoder *a,
				     const struct pt_event_decoder *b)
{
	return ipt__pkt_same(&a->pacdec, &b->pacdec) &&
	       !IPT_MEMCMP(&a->flags, &b->flags, sizeof(a->flags)) &&
	       a->packet.type == b->packet.type &&
	       a->packet.size == b->packet.size &&
	       ipt__last_ip_same(&a->ip, &b->ip) &&
	       ipt__time_same(&a->time, &b->time) &&
	       ipt__tcal_same(&a->tcal, &b->tcal) &&
	       ipt__evq_same(&a->evq, &b->evq) && !a->event && !b->event &&
	       a->status == b->status &&
	       a->mode_exec_valid == b->mode_exec_valid &&
	       a->iflag == b->iflag && a->csd == b->csd && a->csl == b->csl &&
	       a->enabled == b->enabled && a->bound == b->bound &&
	       a->placed == b->placed;
}

/* ==== >>qry  query decoder ===============================================
 * Answers "taken?", "where to?" and "which event?" on top of the event
 * decoder (>>evt), with the semantics of libipt 2.3's query decoder: it
 * reads one event ahead, keeps TNT bits in a cache, and hands every other
 * event to the caller through pt_qry_event().  It never looks at packets.
 *
 * Internal interface: ipt__qry_decoder_init / ipt__qry_decoder_fini, like
 * the event decoder's. */

/* TNT bits not asked for yet.  index marks the next bit; zero means
 * empty.  Bits of several TNT packets pile up, the oldest highest. */
struct ipt__tnt_cache {
	uint64_t tnt;
	uint64_t index;
};

struct pt_query_decoder {
	struct pt_event_decoder evdec;

	/* The caller's flags (the event decoder gets its event.* copy). */
	struct pt_conf_flags flags;

	struct ipt__tnt_cache tnt;

	/* The time at the last answer, before the decoder read ahead; what
	 * pt_qry_time() reports. */
	struct ipt_time last_time;

	/* The event read ahead; valid while status is not negative. */
	struct pt_event event;

	/* The event decoder's error, reported when the caller gets there. */
	int status;

	/* Guest or host, as of the events the caller got (ipt_qry_in_guest). */
	struct ipt__vm_side vm;
};

static void ipt__tnt_init(struct ipt__tnt_cache *cache)
{
	cache->tnt = 0;
	cache->index = 0;
}

static int ipt__tnt_empty(const struct ipt__tnt_cache *cache)
{
	return cache->index == 0;
}

/* The next bit: 1 taken, 0 not taken, -pte_bad_query if none. */
static int ipt__tnt_take(struct ipt__tnt_cache *cache)
{
	int taken;

	if (!cache->index)
		return -pte_bad_query;
	taken = (cache->tnt & cache->index) != 0;
	cache->index >>= 1;
	return taken;
}

/* Append the low size bits of tnt; -pte_overflow past 64 pending bits. */
static int ipt__tnt_add(struct ipt__tnt_cache *cache, uint64_t tnt,
			uint8_t size)
{
	uint64_t index;

	if (!size)
		return 0;
	if (size > 64)
		return -pte_internal;
	if (cache->index)
		index = (size < 64) ? cache->index << size : 0;
	else
		index = 1ull << (size - 1);
	if (!index)
		return -pte_overflow;
	cache->index = index;
	cache->tnt = (size < 64) ? cache->tnt << size : 0;
	cache->tnt |= (size < 64) ? tnt & ((1ull << size) - 1) : tnt;
	return 0;
}

static int ipt__qry_reset(struct pt_query_decoder *decoder)
{
	decoder->status = -pte_nosync;
	ipt__tnt_init(&decoder->tnt);
	ipt_time_init(&decoder->last_time);
	IPT_MEMSET(&decoder->vm, 0, sizeof(decoder->vm));
	return 0;
}

static IPT__UNUSED int
ipt__qry_decoder_init(struct pt_query_decoder *decoder,
		      const struct pt_config *uconfig)
{
	struct pt_config config;
	int err;

	if (!decoder)
		return -pte_invalid;
	err = ipt__config_from_user(&config, uconfig);
	if (err < 0)
		return err;
	decoder->flags = config.flags;
	IPT_MEMSET(&config.flags, 0, sizeof(config.flags));
	config.flags.variant.event.keep_tcal_on_ovf =
		decoder->flags.variant.query.keep_tcal_on_ovf;
	config.flags.variant.event.enable_iflags_events =
		decoder->flags.variant.query.enable_iflags_events;
	err = ipt__evt_decoder_init(&decoder->evdec, &config);
	if (err < 0)
		return err;
	IPT_MEMSET(&decoder->event, 0, sizeof(decoder->event));
	return ipt__qry_reset(decoder);
}

static IPT__UNUSED void ipt__qry_decoder_fini(struct pt_query_decoder *decoder)
{
	if (decoder)
		ipt__evt_decoder_fini(&decoder->evdec);
}

/* A query decoder as allocated (IPT__OWN). */
struct ipt__qry_box {
	struct pt_query_decoder decoder;
	struct ipt_allocator allocator;
};

IPT_DEF struct pt_query_decoder *
ipt_qry_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_allocator *allocator)
{
	struct ipt__qry_box *box = (struct ipt__qry_box *) ipt__own_alloc(
		allocator, IPT__OWN(struct ipt__qry_box));

	if (!box)
		return NULL;
	if (ipt__qry_decoder_init(&box->decoder, config) < 0) {
		ipt__own_free(box, IPT__OWN(struct ipt__qry_box));
		return NULL;
	}
	return &box->decoder;
}

IPT_DEF struct pt_query_decoder *
pt_qry_alloc_decoder(const struct pt_config *config)
{
	return ipt_qry_alloc_decoder_with(config, NULL);
}

IPT_DEF void pt_qry_free_decoder(struct pt_query_decoder *decoder)
{
	if (!decoder)
		return;
	ipt__qry_decoder_fini(decoder);
	ipt__own_free(decoder, IPT__OWN(struct ipt__qry_box));
}

/* TNT and TIP are answers to branch queries; anything else is an event
 * the caller must fetch. */
static int ipt__qry_is_event(const struct pt_event *ev)
{
	return ev->type != ptev_tnt && ev->type != ptev_tip;
}

/* The status flags of an answer.  Events and the end of the trace are
 * only announced once the cached TNT bits are used up: the caller has to
 * reach the right place in the code first. */
static int ipt__qry_status(const struct pt_query_decoder *decoder)
{
	if (!ipt__tnt_empty(&decoder->tnt))
		return 0;
	if (decoder->status == -pte_eos)
		return pts_eos;
	return ipt__qry_is_event(&decoder->event) ? pts_event_pending : 0;
}

/* Read the next event ahead, keeping an error for later. */
static void ipt__qry_read_ahead(struct pt_query_decoder *decoder)
{
	struct pt_event *ev = &decoder->event;
	int err = pt_evt_next(&decoder->evdec, ev, sizeof(*ev));

	if (err < 0) {
		decoder->status = err;
		/* Poison; its type counts as an event, as the error will
		 * be reported by pt_qry_event(). */
		IPT_MEMSET(ev, 0xff, sizeof(*ev));
		ev->type = IPT__EV_IGNORE;
	}
}

/* After synchronizing: the start IP from the PSB+ status events. */
static int ipt__qry_start(struct pt_query_decoder *decoder, uint64_t *ip)
{
	uint64_t start;
	int status, err;

	err = ipt__evt_start_ip(&decoder->evdec, &start);
	if (err < 0)
		return err;
	status = err ? 0 : pts_ip_suppressed;
	if (err && ip)
		*ip = start;

	decoder->status = 0;
	ipt__qry_read_ahead(decoder);
	return status | ipt__qry_status(decoder);
}

IPT_DEF int ipt_qry_set_ring(struct pt_query_decoder *decoder,
			     uint8_t *older, uint8_t *older_end,
			     uint8_t *newer, uint8_t *newer_end)
{
	int err;

	if (!decoder)
		return -pte_invalid;
	err = ipt_evt_set_ring(&decoder->evdec, older, older_end, newer,
			       newer_end);
	if (err < 0)
		return err;
	IPT_MEMSET(&decoder->event, 0, sizeof(decoder->event));
	return ipt__qry_reset(decoder);
}

IPT_DEF int ipt_qry_set_buffer(struct pt_query_decoder *decoder,
			       uint8_t *begin, uint8_t *end)
{
	return ipt_qry_set_ring(decoder, begin, end, end, end);
}

static int ipt__qry_sync_forward(struct pt_query_decoder *decoder,
				 uint64_t *ip)
{
	int err;

	ipt__qry_reset(decoder);
	err = pt_evt_sync_forward(&decoder->evdec);
	if (err < 0)
		return err;
	return ipt__qry_start(decoder, ip);
}

struct ipt__qry_start_ctx {
	struct pt_query_decoder *decoder;
	uint64_t *ip;
};

static int ipt__qry_restart(void *ctx)
{
	struct ipt__qry_start_ctx *qs = (struct ipt__qry_start_ctx *) ctx;

	ipt__qry_reset(qs->decoder);
	return ipt__qry_start(qs->decoder, qs->ip);
}

/* As libipt, 0 on success: the status of the start is not reported. */
static int ipt__qry_sync_backward(struct pt_query_decoder *decoder,
				  uint64_t *ip)
{
	struct ipt__qry_start_ctx qs;
	int err;

	qs.decoder = decoder;
	qs.ip = ip;
	err = ipt__evt_sync_backward(&decoder->evdec, ipt__qry_restart, &qs);
	return err < 0 ? err : 0;
}

static int ipt__qry_sync_set(struct pt_query_decoder *decoder, uint64_t *ip,
			     uint64_t offset)
{
	int err;

	ipt__qry_reset(decoder);
	err = pt_evt_sync_set(&decoder->evdec, offset);
	if (err < 0)
		return err;
	return ipt__qry_start(decoder, ip);
}

IPT_DEF int ipt_qry_start_at(struct pt_query_decoder *decoder, uint64_t *ip,
			     uint64_t offset,
			     const struct ipt_start_state *state)
{
	int err;

	if (!decoder)
		return -pte_invalid;
	ipt__qry_reset(decoder);
	err = ipt_evt_start_at(&decoder->evdec, offset, state);
	if (err < 0)
		return err;
	return ipt__qry_start(decoder, ip);
}

IPT_DEF int pt_qry_get_offset(const struct pt_query_decoder *decoder,
			      uint64_t *offset)
{
	if (!decoder)
		return -pte_invalid;
	return pt_evt_get_offset(&decoder->evdec, offset);
}

IPT_DEF int pt_qry_get_sync_offset(const struct pt_query_decoder *decoder,
				   uint64_t *offset)
{
	if (!decoder)
		return -pte_invalid;
	return pt_evt_get_sync_offset(&decoder->evdec, offset);
}

IPT_DEF const struct pt_config *
pt_qry_get_config(const struct pt_query_decoder *decoder)
{
	if (!decoder)
		return NULL;
	return pt_evt_get_config(&decoder->evdec);
}

/* If the event read ahead is a TNT, move its bits into the cache and read
 * on: TNT bits of consecutive packets are answered in one stream. */
static int ipt__qry_cache_tnt(struct pt_query_decoder *decoder)
{
	const struct pt_event *ev = &decoder->event;
	int err;

	if (decoder->status < 0)
		return decoder->status;
	if (ev->type != ptev_tnt)
		return 0;
	err = ipt__tnt_add(&decoder->tnt, ev->variant.tnt.bits,
			   ev->variant.tnt.size);
	if (err < 0)
		return err;
	ipt__qry_read_ahead(decoder);
	return 0;
}

static int ipt__qry_cond_branch(struct pt_query_decoder *decoder, int *taken)
{
	int query, err;

	if (!decoder || !taken)
		return -pte_invalid;

	query = ipt__tnt_take(&decoder->tnt);
	if (query < 0) {
		/* Out of bits: the next event may bring some.  The time is
		 * that of the TNT. */
		ipt__evt_save_time(&decoder->last_time, &decoder->evdec);
		err = ipt__qry_cache_tnt(decoder);
		if (err < 0)
			return err;
		query = ipt__tnt_take(&decoder->tnt);
		if (query < 0) {
			/* A decode error waited for the last bit. */
			if (decoder->status < 0)
				return decoder->status;
			return query;
		}
	}
	*taken = query;
	return ipt__qry_status(decoder);
}

static int ipt__qry_indirect_branch(struct pt_query_decoder *decoder,
				    uint64_t *addr)
{
	const struct pt_event *ev;
	int err, status = 0;

	if (!decoder || !addr)
		return -pte_invalid;
	ev = &decoder->event;
	if (decoder->status < 0)
		return decoder->status;

	if (ev->type != ptev_tip) {
		/* A TNT may stand before the TIP. */
		err = ipt__qry_cache_tnt(decoder);
		if (err < 0)
			return err;
		if (ev->type != ptev_tip)
			return decoder->status < 0 ? decoder->status
						   : -pte_bad_query;
	}

	if (ev->ip_suppressed)
		status |= pts_ip_suppressed;
	else
		*addr = ev->variant.tip.ip;

	ipt__evt_save_time(&decoder->last_time, &decoder->evdec);
	ipt__qry_read_ahead(decoder);
	return status | ipt__qry_status(decoder);
}

static int ipt__qry_event(struct pt_query_decoder *decoder,
			  struct pt_event *event, size_t size)
{
	if (!decoder || !event)
		return -pte_invalid;
	if (size < offsetof(struct pt_event, variant))
		return -pte_invalid;

	/* TNT bits come first. */
	if (!ipt__tnt_empty(&decoder->tnt))
		return -pte_bad_query;
	if (decoder->status < 0)
		return decoder->status;
	if (!ipt__qry_is_event(&decoder->event))
		return -pte_bad_query;

	/* A smaller struct pt_event gets what fits; a larger one is not
	 * written past ours. */
	if (size > sizeof(decoder->event))
		size = sizeof(decoder->event);
	IPT_MEMCPY(event, &decoder->event, size);
	ipt__vm_side_take(&decoder->vm, &decoder->event);

	ipt__evt_save_time(&decoder->last_time, &decoder->evdec);
	ipt__qry_read_ahead(decoder);
	return ipt__qry_status(decoder);
}

IPT_DEF int ipt_qry_in_guest(const struct pt_query_decoder *decoder)
{
	return decoder ? ipt__vm_side_get(&decoder->vm) : -pte_invalid;
}

/* ---- streaming ----
 * While more trace may come (ipt_qry_extend), a query that meets the end of
 * the trace, even only reading ahead, is undone and says -ipt_pte_need_more:
 * asked again once the end has moved, it finds what it would have found in
 * the whole trace.  The decoder is copied before each such query; it owns
 * no memory, so the copy is all there is to undo. */

/* Whether the query about to be made must be undone should it need more;
 * then @save holds the decoder as it was. */
static int ipt__qry_guard(const struct pt_query_decoder *decoder,
			  struct pt_query_decoder *save)
{
	if (IPT__LIKELY(!ipt__evt_more(&decoder->evdec)))
		return 0;
	IPT__COPY(*save, *decoder);
	return 1;
}

static int ipt__qry_settle(struct pt_query_decoder *decoder,
			   const struct pt_query_decoder *save, int status)
{
	if (status != -ipt_pte_need_more &&
	    decoder->status != -ipt_pte_need_more)
		return status;
	IPT__COPY(*decoder, *save);
	return -ipt_pte_need_more;
}

/* Make the query @call on @decoder, undone if it needs more. */
#define IPT__QRY_GUARDED(decoder, call)                                      \
	IPT__UNDOABLE(struct pt_query_decoder, ipt__qry_guard,               \
		      ipt__qry_settle, decoder, call)

IPT_DEF int pt_qry_sync_forward(struct pt_query_decoder *decoder, uint64_t *ip)
{
	IPT__QRY_GUARDED(decoder, ipt__qry_sync_forward(decoder, ip));
}

IPT_DEF int pt_qry_sync_backward(struct pt_query_decoder *decoder,
				 uint64_t *ip)
{
	IPT__QRY_GUARDED(decoder, ipt__qry_sync_backward(decoder, ip));
}

IPT_DEF int pt_qry_sync_set(struct pt_query_decoder *decoder, uint64_t *ip,
			    uint64_t offset)
{
	IPT__QRY_GUARDED(decoder, ipt__qry_sync_set(decoder, ip, offset));
}

IPT_DEF int pt_qry_cond_branch(struct pt_query_decoder *decoder, int *taken)
{
	IPT__QRY_GUARDED(decoder, ipt__qry_cond_branch(decoder, taken));
}

IPT_DEF int pt_qry_indirect_branch(struct pt_query_decoder *decoder,
				   uint64_t *addr)
{
	IPT__QRY_GUARDED(decoder, ipt__qry_indirect_branch(decoder, addr));
}

IPT_DEF int pt_qry_event(struct pt_query_decoder *decoder,
			 struct pt_event *event, size_t size)
{
	IPT__QRY_GUARDED(decoder, ipt__qry_event(decoder, event, size));
}

IPT_DEF int ipt_qry_extend(struct pt_query_decoder *decoder, uint8_t *end,
			   int more)
{
	int err;

	if (!decoder)
		return -pte_invalid;
	err = ipt_evt_extend(&decoder->evdec, end, more);
	if (err < 0)
		return err;

	/* The end was met reading ahead: read again.  Should that need
	 * more yet, every query says so until the end moves again. */
	if (decoder->status == -ipt_pte_need_more ||
	    decoder->status == -pte_eos) {
		decoder->status = 0;
		ipt__qry_read_ahead(decoder);
	}
	return 0;
}

IPT_DEF int pt_qry_time(struct pt_query_decoder *decoder, uint64_t *time,
			uint32_t *lost_mtc, uint32_t *lost_cyc)
{
	if (!decoder || !time)
		return -pte_invalid;
	return ipt_time_query_tsc(time, lost_mtc, lost_cyc,
				  &decoder->last_time);
}

IPT_DEF int pt_qry_core_bus_ratio(struct pt_query_decoder *decoder,
				  uint32_t *cbr)
{
	if (!decoder || !cbr)
		return -pte_invalid;
	return ipt_time_query_cbr(cbr, &decoder->last_time);
}

/* ==== >>img  image ========================================================
 * Code memory by address space: the read-memory callback, and in hosted
 * builds file sections and the image section cache on top of it.
 *
 * A read at an address asks the image's sections first and the callback
 * second, as libipt's pt_image_read does.  Sections never change their
 * bytes, so they are read straight from memory; what the callback gives is
 * kept in a page cache so that decoding a loop does not call it again and
 * again.  Every change to what the image would read bumps a generation
 * counter that the block decoder compares against its own caches.
 *
 * Internal interface, for the layers below:
 *
 *   int ipt__image_init(struct pt_image *, const char *name,
 *                       const struct ipt_allocator *);
 *   void ipt__image_fini(struct pt_image *);
 *       an image embedded in a decoder (its default image)
 *   int ipt__image_read(struct pt_image *image, int *isid, uint8_t *buffer,
 *                       uint16_t size, const struct pt_asid *asid,
 *                       uint64_t addr);
 *       up to size bytes at addr; the count, or -pte_nomap if neither a
 *       section nor the callback has addr, or another error.  A read stops
 *       at the end of a section (or where the callback stopped), so an
 *       instruction may need a second read.  *isid is the section's
 *       identifier, zero for the callback.
 *   uint64_t ipt__image_generation(const struct pt_image *);
 *        moves on whenever what the image reads may have changed;
 *        image must not be NULL (it is read on the decoders' hot path)
 *   uint32_t ipt__image_misses(const struct pt_image *,
 *                              struct ipt__miss *last);
 *       how many reads found nothing at their address so far, and (if
 *       last is not NULL) the last of them: what a decoder that stopped
 *       on -pte_nomap was missing
 *   int ipt__image_has_files(const struct pt_image *);
 *       whether the image has file sections (always 0 without stdio)
 *   int ipt__image_section_at(const struct pt_image *, const struct pt_asid *,
 *                             uint64_t addr, struct ipt__image_place *);
 *       the file section mapped at addr: where its mapping begins and
 *       ends, the section itself and addr's offset in it; -pte_nomap if
 *       no file section is mapped there (the callback does not count).
 *   int ipt__asid_from_user(struct pt_asid *, const struct pt_asid *user);
 *   int ipt__asid_to_user(struct pt_asid *user, const struct pt_asid *,
 *                         size_t size);
 *   int ipt__asid_match(const struct pt_asid *, const struct pt_asid *);
 *
 * Nothing here is locked: an image, or an image section cache together
 * with the images holding its sections, is for one thread at a time (libipt
 * locks sections and its cache; ipt.h has no threads), except an image
 * without sections or page cache, which reading does not change (see
 * >>api-img-ext).  The callback must not change the image it reads for. */

#ifndef IPT_IMAGE_CACHE_LIMIT
#define IPT_IMAGE_CACHE_LIMIT ((uint64_t) 16 << 20)
#endif

#define IPT__PAGE_SHIFT 12
#define IPT__PAGE_SIZE ((uint32_t) 1 << IPT__PAGE_SHIFT)
#define IPT__PAGE_MASK ((uint64_t) IPT__PAGE_SIZE - 1)

/* At most this many hash buckets, however large the limit: beyond it the
 * chains grow instead of the table. */
#define IPT__PAGE_BUCKETS_MAX ((uint32_t) 1 << 16)

/* ---- address spaces ---- */

/* Copies a caller's asid of any size: fields it lacks stay wildcards, fields
 * this library does not know are ignored.  Same rules as libipt's
 * pt_asid_from_user. */
static IPT__UNUSED int ipt__asid_from_user(struct pt_asid *asid,
					   const struct pt_asid *user)
{
	if (!asid)
		return -pte_internal;

	pt_asid_init(asid);
	if (user) {
		size_t size = user->size;

		if (sizeof(*asid) < size)
			size = sizeof(*asid);
		IPT_MEMCPY(asid, user, size);
		asid->size = sizeof(*asid);
	}
	return 0;
}

/* Gives a caller as much of asid as its size holds. */
static IPT__UNUSED int ipt__asid_to_user(struct pt_asid *user,
					 const struct pt_asid *asid, size_t size)
{
	if (!user || !asid)
		return -pte_internal;
	if (size < sizeof(asid->size))
		return -pte_invalid;
	if (sizeof(*asid) < size)
		size = sizeof(*asid);
	IPT_MEMCPY(user, asid, size);
	user->size = size;
	return 0;
}

static int ipt__key_match(uint64_t lcr3, uint64_t lvmcs, uint64_t rcr3,
			  uint64_t rvmcs)
{
	if (lcr3 != rcr3 && lcr3 != pt_asid_no_cr3 && rcr3 != pt_asid_no_cr3)
		return 0;
	if (lvmcs != rvmcs && lvmcs != pt_asid_no_vmcs &&
	    rvmcs != pt_asid_no_vmcs)
		return 0;
	return 1;
}

/* Two address spaces match unless both give a cr3 (or both a vmcs) and the
 * values differ: pt_asid_no_cr3 and pt_asid_no_vmcs match anything.
 * Returns 1 on a match, 0 otherwise. */
static IPT__UNUSED int ipt__asid_match(const struct pt_asid *lhs,
				       const struct pt_asid *rhs)
{
	if (!lhs || !rhs)
		return -pte_internal;
	return ipt__key_match(lhs->cr3, lhs->vmcs, rhs->cr3, rhs->vmcs);
}

static char *ipt__strdup(const struct ipt_allocator *a, const char *str,
			 size_t *psize)
{
	size_t size;
	char *copy;

	*psize = 0;
	if (!str)
		return NULL;
	for (size = 0; str[size]; ++size)
		;
	size += 1;
	copy = (char *) ipt__alloc(a, size);
	if (copy) {
		IPT_MEMCPY(copy, str, size);
		*psize = size;
	}
	return copy;
}

/* ---- the page cache of callback memory ----
 *
 * The callback may be slow (a ptrace peek, a core file lookup), and a
 * decoder reads the same code over and over, so what it gives is kept in
 * 4 KiB pages keyed by the exact cr3/vmcs the decoder asked with and the
 * page address.  The bound (IPT_IMAGE_CACHE_LIMIT, or
 * ipt_image_set_cache_limit) counts page data: limit / 4096 entries of a
 * little over 4 KiB each, plus a hash table that grows with them to at
 * most 64 Ki pointers (while it doubles, the old table is kept too).
 *
 * An entry holds one run [lo, hi) of a page.  A miss asks the callback for
 * the rest of the page from its start (mappings mostly start at page
 * boundaries), or from the missed address when there is nothing at the
 * start.  A callback giving less than asked has told where its mapping
 * ends: the run is "bounded" and a read reaching hi stops there, as the
 * callback itself would have.  To tell a mapping that ends exactly at the
 * page end from one that goes on, the callback is asked for one byte
 * more.  An unbounded run reaches the page end and a read goes on in the
 * next page.  Runs of one page never overlap: a new run replaces those it
 * covers.  So a read gives what one call of the callback would, for any
 * callback that behaves like a view of memory.
 *
 * Entries live in a hash table and on a list from most to least recently
 * used; at the limit the least recently used entry is taken for the next
 * miss, so a full cache allocates nothing more.  Errors are not cached:
 * each read of unmapped memory calls the callback.  Nor is the end of a
 * mapping where a read then found nothing: memory missing for now (a
 * guest page not yet copied out) may be there when asked again, so the
 * run below it is no longer bounded and a read reaching its end asks on
 * (ipt__pcache_unbound). */

struct ipt__page {
	/* The next entry in the hash bucket, or on the spare list. */
	struct ipt__page *chain;
	/* The neighbours on the recently-used list. */
	struct ipt__page *newer, *older;
	uint64_t cr3, vmcs, base;
	uint32_t lo, hi;
	uint32_t bounded;
	/* The page's bytes, and room for one byte of the next page: see
	 * ipt__pcache_fill. */
	uint8_t data[IPT__PAGE_SIZE + 1];
};

struct ipt__pcache {
	struct ipt__page **buckets;
	uint32_t nbuckets;
	struct ipt__page *newest, *oldest;
	/* Entries allocated but not holding anything. */
	struct ipt__page *spare;
	/* Entries allocated, in use or spare, and the most allowed. */
	uint64_t npages, max_pages;
	/* Statistics, for tests and tuning. */
	uint64_t hits, misses;
};

#ifndef IPT_NO_STDIO
struct ipt__section;
struct ipt__msec;
#endif

/* A read that found nothing: where, in which address space, how much. */
struct ipt__miss {
	uint64_t addr;
	uint64_t cr3;
	uint64_t vmcs;
	uint32_t size;
};

struct pt_image {
	char *name;
	size_t name_size;
#ifndef IPT_NO_STDIO
	/* The mapped file sections, most recently hit first. */
	struct ipt__msec *sections;
#endif
	read_memory_callback_t *callback;
	void *context;
	uint64_t generation;
	struct ipt__pcache pages;
	/* Reads that found nothing, and the last of them. */
	uint32_t misses;
	struct ipt__miss miss;
	/* Where all of the above comes from. */
	struct ipt_allocator allocator;
};

static uint32_t ipt__pcache_slot(const struct ipt__pcache *pc, uint64_t cr3,
				 uint64_t vmcs, uint64_t base)
{
	uint64_t h;

	h = (base >> IPT__PAGE_SHIFT) ^ (cr3 * 0x9e3779b97f4a7c15ull) ^
	    (vmcs * 0xc2b2ae3d27d4eb4full);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (uint32_t) h & (pc->nbuckets - 1);
}

static void ipt__pcache_lru_unlink(struct ipt__pcache *pc,
				   struct ipt__page *page)
{
	if (page->newer)
		page->newer->older = page->older;
	else
		pc->newest = page->older;
	if (page->older)
		page->older->newer = page->newer;
	else
		pc->oldest = page->newer;
	page->newer = page->older = NULL;
}

static void ipt__pcache_lru_push(struct ipt__pcache *pc,
				 struct ipt__page *page)
{
	page->newer = NULL;
	page->older = pc->newest;
	if (pc->newest)
		pc->newest->newer = page;
	else
		pc->oldest = page;
	pc->newest = page;
}

/* Takes page out of its bucket and off the recently-used list. */
static void ipt__pcache_unlink(struct ipt__pcache *pc, struct ipt__page *page)
{
	struct ipt__page **pp;

	pp = &pc->buckets[ipt__pcache_slot(pc, page->cr3, page->vmcs,
					   page->base)];
	for (; *pp; pp = &(*pp)->chain) {
		if (*pp == page) {
			*pp = page->chain;
			break;
		}
	}
	page->chain = NULL;
	ipt__pcache_lru_unlink(pc, page);
}

static void ipt__pcache_release(struct ipt__pcache *pc, struct ipt__page *page)
{
	page->chain = pc->spare;
	pc->spare = page;
}

static void ipt__pcache_free_spares(struct ipt__pcache *pc,
				    const struct ipt_allocator *a)
{
	while (pc->spare) {
		struct ipt__page *page = pc->spare;

		pc->spare = page->chain;
		ipt__free(a, page, sizeof(*page));
		pc->npages -= 1;
	}
}

/* Forgets everything; keeps the limit. */
static void ipt__pcache_clear(struct ipt__pcache *pc,
			      const struct ipt_allocator *a)
{
	while (pc->newest) {
		struct ipt__page *page = pc->newest;

		pc->newest = page->older;
		ipt__free(a, page, sizeof(*page));
		pc->npages -= 1;
	}
	pc->oldest = NULL;
	ipt__pcache_free_spares(pc, a);
	ipt__free(a, pc->buckets, pc->nbuckets * sizeof(*pc->buckets));
	pc->buckets = NULL;
	pc->nbuckets = 0;
}

static uint64_t ipt__pcache_pages(uint64_t bytes)
{
	return bytes >> IPT__PAGE_SHIFT;
}

/* The entry holding addr in the exact address space cr3/vmcs, or NULL. */
static struct ipt__page *ipt__pcache_find(struct ipt__pcache *pc, uint64_t cr3,
					  uint64_t vmcs, uint64_t addr)
{
	struct ipt__page *page;
	uint64_t base;
	uint32_t off;

	if (!pc->buckets)
		return NULL;
	base = addr & ~IPT__PAGE_MASK;
	off = (uint32_t) (addr & IPT__PAGE_MASK);
	page = pc->buckets[ipt__pcache_slot(pc, cr3, vmcs, base)];
	for (; page; page = page->chain) {
		if (page->base == base && page->cr3 == cr3 &&
		    page->vmcs == vmcs && page->lo <= off && off < page->hi)
			return page;
	}
	return NULL;
}

/* The hash table grows with the entries, a bucket for each, up to one
 * for each entry the limit allows (at most IPT__PAGE_BUCKETS_MAX): a
 * cache that holds a few pages zeroes a small table.  Moves the entries
 * to a table of n buckets; without memory for it, keeps the old one
 * (longer chains, the same entries).  Entries of one page never overlap,
 * so their order in a chain does not matter. */
static int ipt__pcache_rehash(struct ipt__pcache *pc,
			      const struct ipt_allocator *a, uint32_t n)
{
	struct ipt__page **buckets, *page;

	buckets = (struct ipt__page **) ipt__zalloc_cache(
		a, n * sizeof(*buckets));
	if (!buckets)
		return -pte_nomem;
	ipt__free(a, pc->buckets, pc->nbuckets * sizeof(*pc->buckets));
	pc->buckets = buckets;
	pc->nbuckets = n;
	for (page = pc->newest; page; page = page->older) {
		uint32_t slot = ipt__pcache_slot(pc, page->cr3, page->vmcs,
						 page->base);

		page->chain = buckets[slot];
		buckets[slot] = page;
	}
	return 0;
}

enum { IPT__PAGE_BUCKETS_MIN = 16 };

/* An entry to fill: a spare one, a new one within the limit, or the least
 * recently used one.  NULL if there is no memory for any. */
static struct ipt__page *ipt__pcache_take(struct ipt__pcache *pc,
					  const struct ipt_allocator *a)
{
	struct ipt__page *page;

	if (!pc->buckets &&
	    ipt__pcache_rehash(pc, a, IPT__PAGE_BUCKETS_MIN) < 0)
		return NULL;
	if (pc->npages >= pc->nbuckets && pc->nbuckets < pc->max_pages &&
	    pc->nbuckets < IPT__PAGE_BUCKETS_MAX)
		(void) ipt__pcache_rehash(pc, a, pc->nbuckets * 2);

	page = pc->spare;
	if (page) {
		pc->spare = page->chain;
		page->chain = NULL;
		return page;
	}

	if (pc->npages < pc->max_pages) {
		page = (struct ipt__page *) ipt__alloc_cache(a,
							     sizeof(*page));
		if (page) {
			pc->npages += 1;
			page->chain = page->newer = page->older = NULL;
			return page;
		}
	}

	page = pc->oldest;
	if (page)
		ipt__pcache_unlink(pc, page);
	return page;
}

/* Nothing could be read at @addr: the run that ends there no longer says
 * the mapping ends there, so that a read through it asks the callback at
 * @addr again (and finds what was missing, once it is there). */
static void ipt__pcache_unbound(struct ipt__pcache *pc, uint64_t cr3,
				uint64_t vmcs, uint64_t addr)
{
	struct ipt__page *page;

	if (!addr)
		return;
	page = ipt__pcache_find(pc, cr3, vmcs, addr - 1);
	if (page && page->base + page->hi == addr)
		page->bounded = 0;
}

/* Asks the callback for the bytes from addr to the end of its page and
 * caches them.  Returns the number of bytes and the entry in *ppage, zero or
 * the callback's error (nothing cached), or -pte_nomem if no entry could be
 * had (the caller then reads uncached).
 *
 * Mappings usually end at page boundaries, and a read across one must stop
 * there as the callback would.  So the callback is asked for one byte more
 * than the page holds: if it gives that byte, its mapping goes on into the
 * next page; if not, the run is bounded at the page end. */
static int ipt__pcache_fill(struct pt_image *image, const struct pt_asid *asid,
			    uint64_t cr3, uint64_t vmcs, uint64_t addr,
			    struct ipt__page **ppage)
{
	struct ipt__pcache *pc = &image->pages;
	struct ipt__page *page, **pp;
	uint64_t base;
	uint32_t off, want, ask, slot, bounded;
	int status;

	page = ipt__pcache_take(pc, &image->allocator);
	if (!page)
		return -pte_nomem;

	base = addr & ~IPT__PAGE_MASK;
	off = (uint32_t) (addr & IPT__PAGE_MASK);
	want = IPT__PAGE_SIZE - off;

	pc->misses += 1;
	/* No next page above the top of the address space. */
	ask = want + (base + IPT__PAGE_SIZE != 0);
	status = image->callback(page->data + off, ask, asid, addr,
				 image->context);
	if (status <= 0) {
		ipt__pcache_release(pc, page);
		if (status == -pte_nomap)
			ipt__pcache_unbound(pc, cr3, vmcs, addr);
		return status;
	}
	if ((uint32_t) status > ask)
		status = (int) ask;
	bounded = (uint32_t) status < ask;
	if ((uint32_t) status > want)
		status = (int) want;

	/* Runs of this page that the new one overlaps are stale or covered. */
	slot = ipt__pcache_slot(pc, cr3, vmcs, base);
	for (pp = &pc->buckets[slot]; *pp;) {
		struct ipt__page *old = *pp;

		if (old->base == base && old->cr3 == cr3 &&
		    old->vmcs == vmcs && old->lo < off + (uint32_t) status &&
		    off < old->hi) {
			*pp = old->chain;
			old->chain = NULL;
			ipt__pcache_lru_unlink(pc, old);
			ipt__pcache_release(pc, old);
			continue;
		}
		pp = &old->chain;
	}

	page->cr3 = cr3;
	page->vmcs = vmcs;
	page->base = base;
	page->lo = off;
	page->hi = off + (uint32_t) status;
	page->bounded = bounded;
	page->chain = pc->buckets[slot];
	pc->buckets[slot] = page;
	ipt__pcache_lru_push(pc, page);

	*ppage = page;
	return status;
}

/* Fills the page holding addr: from the page start first, since mappings
 * mostly start at page boundaries and a later read below addr then hits;
 * from addr itself if the callback has nothing at the page start or stops
 * before addr (each costs a call per miss, as do callback errors, which are
 * not cached).  Returns a positive number, or what ipt__pcache_fill does. */
static int ipt__pcache_miss(struct pt_image *image, const struct pt_asid *asid,
			    uint64_t cr3, uint64_t vmcs, uint64_t addr,
			    struct ipt__page **ppage)
{
	uint32_t off = (uint32_t) (addr & IPT__PAGE_MASK);

	/* Once the start of the page is cached, asking there again can't
	 * reach addr. */
	if (off && !ipt__pcache_find(&image->pages, cr3, vmcs, addr - off)) {
		int status;

		status = ipt__pcache_fill(image, asid, cr3, vmcs,
					  addr - off, ppage);
		if (status > 0 && off < (*ppage)->hi)
			return status;
		if (status == -pte_nomem)
			return status;
	}
	return ipt__pcache_fill(image, asid, cr3, vmcs, addr, ppage);
}

/* Reads through the callback, from the page cache where it can.  Same
 * result as one call of the callback for (addr, size), given a callback
 * that behaves like a view of memory (see >>api-img-ext). */
static int ipt__image_read_callback(struct pt_image *image, int *isid,
				    uint8_t *buffer, uint16_t size,
				    const struct pt_asid *asid, uint64_t addr)
{
	struct ipt__pcache *pc = &image->pages;
	uint64_t cr3, vmcs;
	uint32_t done;

	if (!image->callback)
		return -pte_nomap;
	*isid = 0;

	if (!pc->max_pages || !size)
		return image->callback(buffer, size, asid, addr,
				       image->context);

	cr3 = asid ? asid->cr3 : pt_asid_no_cr3;
	vmcs = asid ? asid->vmcs : pt_asid_no_vmcs;

	for (done = 0;;) {
		struct ipt__page *page;
		uint64_t at = addr + done;
		uint32_t off, n;

		/* Decoding mostly stays in the page it read last. */
		page = pc->newest;
		if (page && page->base == (at & ~IPT__PAGE_MASK) &&
		    page->cr3 == cr3 && page->vmcs == vmcs &&
		    page->lo <= (at & IPT__PAGE_MASK) &&
		    (at & IPT__PAGE_MASK) < page->hi)
			pc->hits += 1;
		else if ((page = ipt__pcache_find(pc, cr3, vmcs, at)) != NULL) {
			pc->hits += 1;
			ipt__pcache_lru_unlink(pc, page);
			ipt__pcache_lru_push(pc, page);
		} else {
			int status;

			status = ipt__pcache_miss(image, asid, cr3, vmcs, at,
						  &page);
			if (status == -pte_nomem) {
				status = image->callback(buffer + done,
							 size - done, asid, at,
							 image->context);
				if (status > 0) {
					if ((uint32_t) status > size - done)
						status = (int) (size - done);
					return (int) done + status;
				}
			}
			if (status <= 0)
				return done ? (int) done : status;
		}

		off = (uint32_t) (at & IPT__PAGE_MASK);
		n = page->hi - off;
		if (n > (uint32_t) size - done)
			n = (uint32_t) size - done;
		IPT_MEMCPY(buffer + done, page->data + off, n);
		done += n;

		/* Stop when done, where the callback stopped, or at the top
		 * of the address space. */
		if (done == size || page->bounded || at + n == 0)
			return (int) done;
	}
}

/* ---- file sections (hosted builds) ----
 *
 * A section is a range of a file, shared by reference between images and
 * the image section cache.  Its bytes are read in chunks of 16 KiB when
 * first needed, so a large file costs only what is decoded of it.  Images
 * map sections at an address in an address space; a mapping may cover only
 * part of its section when a newer mapping overlaid the rest.  The loaded
 * chunks of a section of an image section cache count against the cache's
 * limit; beyond it the least recently used sections are dropped and
 * reloaded on demand, and a section bigger than the limit is read from its
 * file at each access (as libipt maps it for each).  Other sections keep
 * what they loaded while referenced. */

#ifndef IPT_NO_STDIO
#include <limits.h>
#include <stdio.h>

#define IPT__CHUNK_SHIFT 14
#define IPT__CHUNK_SIZE ((uint64_t) 1 << IPT__CHUNK_SHIFT)

struct ipt__section {
	char *filename;
	size_t filename_size;
	/* The file range: where it starts and how many bytes it has. */
	uint64_t offset, size;
	/* Its bytes: nchunks chunks, each loaded or NULL; how many bytes are
	 * loaded. */
	uint8_t **chunks;
	size_t nchunks;
	uint64_t loaded;
	uint32_t ucount;
	/* Where the section and its chunks come from. */
	struct ipt_allocator allocator;
	/* The image section cache that owns the section, and the neighbours
	 * on its list of loaded sections (most recently used first). */
	struct pt_image_section_cache *iscache;
	struct ipt__section *newer, *older;
	uint8_t in_lru;
};

struct ipt__msec {
	struct ipt__msec *next;
	struct ipt__section *section;
	struct pt_asid asid;
	/* Mapped at vaddr: size bytes from offset in the section. */
	uint64_t vaddr, offset, size;
	int isid;
};

struct ipt__iscache_entry {
	struct ipt__section *section;
	uint64_t laddr;
};

struct pt_image_section_cache {
	char *name;
	size_t name_size;
	struct ipt__iscache_entry *entries;
	uint32_t nentries, capacity;
	struct ipt__section *newest, *oldest;
	uint64_t used, limit;
	/* Where the cache, its list and the sections it makes come from. */
	struct ipt_allocator allocator;
};

static int ipt__filename_eq(const char *a, const char *b)
{
	size_t i;

	for (i = 0; a[i] && a[i] == b[i]; ++i)
		;
	return a[i] == b[i];
}

/* The size of filename, or -pte_bad_file if it can't be opened and read. */
static int ipt__file_size(const char *filename, uint64_t *psize)
{
	FILE *file;
	long end;
	int status;

	file = fopen(filename, "rb");
	if (!file)
		return -pte_bad_file;
	status = fseek(file, 0, SEEK_END);
	end = status ? -1 : ftell(file);
	fclose(file);
	if (end < 0)
		return -pte_bad_file;
	*psize = (uint64_t) end;
	return 0;
}

/* Reads size bytes at offset from filename.  The file may have shrunk since
 * the section was made: that is -pte_bad_image. */
static int ipt__file_read(const char *filename, uint8_t *buffer, size_t size,
			  uint64_t offset)
{
	FILE *file;
	size_t got;

	if ((uint64_t) LONG_MAX < offset)
		return -pte_bad_image;
	file = fopen(filename, "rb");
	if (!file)
		return -pte_bad_image;
	if (fseek(file, (long) offset, SEEK_SET)) {
		fclose(file);
		return -pte_bad_image;
	}
	got = fread(buffer, 1, size, file);
	fclose(file);
	return got == size ? 0 : -pte_bad_image;
}

/* Makes a section for size bytes at offset of filename, truncated to the
 * file.  Errors as libipt's pt_mk_section: -pte_invalid for a name too long
 * or an offset at or past the end of the file, -pte_bad_file for a file that
 * can't be read. */
static int ipt__section_mk(struct ipt__section **psection,
			   const struct ipt_allocator *a,
			   const char *filename, uint64_t offset, uint64_t size)
{
	struct ipt__section *section;
	uint64_t fsize;
	size_t len;
	int errcode;

	for (len = 0; len < FILENAME_MAX && filename[len]; ++len)
		;
	if (FILENAME_MAX <= len)
		return -pte_invalid;

	errcode = ipt__file_size(filename, &fsize);
	if (errcode < 0)
		return errcode;
	if (fsize <= offset)
		return -pte_invalid;
	fsize -= offset;
	if (fsize < size)
		size = fsize;

	section = (struct ipt__section *) ipt__zalloc(a, sizeof(*section));
	if (!section)
		return -pte_nomem;
	section->allocator = *a;
	section->filename = ipt__strdup(a, filename, &section->filename_size);
	if (!section->filename) {
		ipt__free(a, section, sizeof(*section));
		return -pte_nomem;
	}
	section->offset = offset;
	section->size = size;
	section->ucount = 1;
	*psection = section;
	return 0;
}

/* The size of chunk index of section: a full chunk but for the last. */
static size_t ipt__chunk_size(const struct ipt__section *section,
			      size_t index)
{
	uint64_t begin = (uint64_t) index << IPT__CHUNK_SHIFT;
	uint64_t left = section->size - begin;

	return (size_t) (left < IPT__CHUNK_SIZE ? left : IPT__CHUNK_SIZE);
}

/* Drops what a section loaded, and takes it off its cache's list. */
static void ipt__section_unload(struct ipt__section *section)
{
	struct pt_image_section_cache *iscache = section->iscache;
	size_t i;

	if (iscache && section->in_lru) {
		if (section->newer)
			section->newer->older = section->older;
		else
			iscache->newest = section->older;
		if (section->older)
			section->older->newer = section->newer;
		else
			iscache->oldest = section->newer;
		section->newer = section->older = NULL;
		section->in_lru = 0;
		iscache->used -= section->loaded;
	}
	if (section->chunks) {
		for (i = 0; i < section->nchunks; ++i)
			ipt__free(&section->allocator, section->chunks[i],
				  ipt__chunk_size(section, i));
		ipt__free(&section->allocator, section->chunks,
			  section->nchunks * sizeof(*section->chunks));
	}
	section->chunks = NULL;
	section->nchunks = 0;
	section->loaded = 0;
}

static int ipt__section_get(struct ipt__section *section)
{
	if (!section)
		return -pte_internal;
	if (section->ucount == UINT32_MAX)
		return -pte_overflow;
	section->ucount += 1;
	return 0;
}

static void ipt__section_put(struct ipt__section *section)
{
	struct ipt_allocator a;

	if (!section)
		return;
	if (--section->ucount)
		return;
	ipt__section_unload(section);
	a = section->allocator;
	ipt__free(&a, section->filename, section->filename_size);
	ipt__free(&a, section, sizeof(*section));
}

/* Moves a loaded section of an image section cache to the front of its
 * list. */
static void ipt__section_touch(struct ipt__section *section)
{
	struct pt_image_section_cache *iscache = section->iscache;

	if (!iscache || !section->in_lru || iscache->newest == section)
		return;
	section->newer->older = section->older;
	if (section->older)
		section->older->newer = section->newer;
	else
		iscache->oldest = section->newer;
	section->newer = NULL;
	section->older = iscache->newest;
	iscache->newest->newer = section;
	iscache->newest = section;
}

/* Drops the least recently used sections of iscache beyond its limit, but
 * never keep (the one just loaded). */
static void ipt__iscache_prune(struct pt_image_section_cache *iscache,
			       const struct ipt__section *keep)
{
	while (iscache->limit < iscache->used && iscache->oldest &&
	       iscache->oldest != keep)
		ipt__section_unload(iscache->oldest);
}

/* The loaded chunk index of section, loading it if need be.  A section of
 * an image section cache that is bigger than the cache's limit is not
 * loaded: returns zero with *pdata NULL, and the caller reads the file. */
static int ipt__section_chunk(struct ipt__section *section, size_t index,
			      const uint8_t **pdata)
{
	struct pt_image_section_cache *iscache = section->iscache;
	uint8_t *data;
	size_t size;
	int errcode;

	*pdata = NULL;
	if (section->chunks && section->chunks[index]) {
		ipt__section_touch(section);
		*pdata = section->chunks[index];
		return 0;
	}
	if (iscache && iscache->limit < section->size)
		return 0;

	if (!section->chunks) {
		uint64_t n = (section->size + IPT__CHUNK_SIZE - 1) >>
			     IPT__CHUNK_SHIFT;

		if ((uint64_t) (size_t) n != n ||
		    (size_t) n > (size_t) -1 / sizeof(*section->chunks))
			return -pte_nomem;
		section->chunks = (uint8_t **) ipt__zalloc(
			&section->allocator,
			(size_t) n * sizeof(*section->chunks));
		if (!section->chunks)
			return -pte_nomem;
		section->nchunks = (size_t) n;
	}

	size = ipt__chunk_size(section, index);
	data = (uint8_t *) ipt__alloc(&section->allocator, size);
	if (!data)
		return -pte_nomem;
	errcode = ipt__file_read(section->filename, data, size,
				 section->offset +
					 ((uint64_t) index << IPT__CHUNK_SHIFT));
	if (errcode < 0) {
		ipt__free(&section->allocator, data, size);
		return errcode;
	}
	section->chunks[index] = data;
	section->loaded += size;

	if (iscache) {
		if (!section->in_lru) {
			section->newer = NULL;
			section->older = iscache->newest;
			if (iscache->newest)
				iscache->newest->newer = section;
			else
				iscache->oldest = section;
			iscache->newest = section;
			section->in_lru = 1;
		} else
			ipt__section_touch(section);
		iscache->used += size;
		ipt__iscache_prune(iscache, section);
	}
	*pdata = data;
	return 0;
}

/* Reads up to size bytes at offset in section, stopping at its end.
 * Returns the number of bytes, -pte_nomap if offset is past the end. */
static int ipt__section_read(struct ipt__section *section, uint8_t *buffer,
			     uint16_t size, uint64_t offset)
{
	uint64_t space;
	size_t done;

	if (section->size <= offset)
		return -pte_nomap;
	space = section->size - offset;
	if (space < size)
		size = (uint16_t) space;

	for (done = 0; done < size;) {
		uint64_t at = offset + done;
		size_t index = (size_t) (at >> IPT__CHUNK_SHIFT);
		size_t off = (size_t) (at & (IPT__CHUNK_SIZE - 1));
		size_t n = ipt__chunk_size(section, index) - off;
		const uint8_t *data;
		int errcode;

		if (n > size - done)
			n = size - done;
		errcode = ipt__section_chunk(section, index, &data);
		if (errcode < 0)
			return errcode;
		if (data)
			IPT_MEMCPY(buffer + done, data + off, n);
		else {
			errcode = ipt__file_read(section->filename,
						 buffer + done, n,
						 section->offset + at);
			if (errcode < 0)
				return errcode;
		}
		done += n;
	}
	return (int) size;
}

static struct ipt__msec *ipt__msec_mk(const struct ipt_allocator *a,
				      struct ipt__section *section,
				      const struct pt_asid *asid,
				      uint64_t vaddr, uint64_t offset,
				      uint64_t size, int isid)
{
	struct ipt__msec *msec;

	if (ipt__section_get(section) < 0)
		return NULL;
	msec = (struct ipt__msec *) ipt__zalloc(a, sizeof(*msec));
	if (!msec) {
		ipt__section_put(section);
		return NULL;
	}
	msec->section = section;
	msec->asid = *asid;
	msec->vaddr = vaddr;
	msec->offset = offset;
	msec->size = size;
	msec->isid = isid;
	return msec;
}

static void ipt__msec_free(const struct ipt_allocator *a,
			   struct ipt__msec *msec)
{
	ipt__section_put(msec->section);
	ipt__free(a, msec, sizeof(*msec));
}

static void ipt__msec_free_list(const struct ipt_allocator *a,
				struct ipt__msec *list)
{
	while (list) {
		struct ipt__msec *next = list->next;

		ipt__msec_free(a, list);
		list = next;
	}
}

/* Maps size bytes at offset of section at vaddr in asid.  The new mapping
 * hides what it overlaps in matching address spaces: those mappings are
 * removed and what is left of them at either side is mapped anew, after
 * libipt's pt_image_add.  On error the image is unchanged. */
static int ipt__image_add(struct pt_image *image, struct ipt__section *section,
			  const struct pt_asid *asid, uint64_t vaddr,
			  uint64_t offset, uint64_t size, int isid)
{
	struct ipt__msec **list, *next, *removed, *fresh;
	uint64_t begin, end;
	int errcode;

	begin = vaddr;
	end = begin + size;

	next = ipt__msec_mk(&image->allocator, section, asid, begin, offset,
			    size, isid);
	if (!next)
		return -pte_nomem;

	removed = NULL;
	errcode = 0;
	list = &image->sections;
	while (*list) {
		struct ipt__msec *cur = *list;
		uint64_t lbegin, lend;

		if (!ipt__asid_match(&cur->asid, asid)) {
			list = &cur->next;
			continue;
		}
		lbegin = cur->vaddr;
		lend = lbegin + cur->size;
		if (end <= lbegin || lend <= begin) {
			list = &cur->next;
			continue;
		}

		*list = cur->next;
		cur->next = removed;
		removed = cur;

		if (lbegin < begin) {
			fresh = ipt__msec_mk(&image->allocator, cur->section,
					     &cur->asid, lbegin, cur->offset,
					     begin - lbegin, cur->isid);
			if (!fresh) {
				errcode = -pte_nomem;
				break;
			}
			fresh->next = next;
			next = fresh;
		}
		if (end < lend) {
			fresh = ipt__msec_mk(&image->allocator, cur->section,
					     &cur->asid, end,
					     cur->offset + (end - lbegin),
					     lend - end, cur->isid);
			if (!fresh) {
				errcode = -pte_nomem;
				break;
			}
			fresh->next = next;
			next = fresh;
		}
	}

	if (errcode < 0) {
		ipt__msec_free_list(&image->allocator, next);
		for (; *list; list = &(*list)->next)
			;
		*list = removed;
		return errcode;
	}

	ipt__msec_free_list(&image->allocator, removed);
	*list = next;
	image->generation += 1;
	return 0;
}

/* Reads from the section mapped at addr in asid, and moves its mapping to
 * the front.  -pte_nomap if there is none. */
static int ipt__image_read_sections(struct pt_image *image, int *isid,
				    uint8_t *buffer, uint16_t size,
				    const struct pt_asid *asid, uint64_t addr)
{
	struct ipt__msec **list, *msec;
	uint64_t space;

	if (!asid)
		return -pte_internal;

	for (list = &image->sections; *list; list = &(*list)->next) {
		msec = *list;
		if (addr < msec->vaddr || addr - msec->vaddr >= msec->size)
			continue;
		if (!ipt__asid_match(&msec->asid, asid))
			continue;

		if (list != &image->sections) {
			*list = msec->next;
			msec->next = image->sections;
			image->sections = msec;
		}

		*isid = msec->isid;
		space = msec->size - (addr - msec->vaddr);
		if (space < size)
			size = (uint16_t) space;
		return ipt__section_read(msec->section, buffer, size,
					 msec->offset + (addr - msec->vaddr));
	}
	return -pte_nomap;
}
#endif /* IPT_NO_STDIO */

/* Where an address lies in the image's file sections. */
struct ipt__image_place {
	uint64_t begin, end;
	const void *section;
	uint64_t offset;
};

static IPT__UNUSED int ipt__image_has_files(const struct pt_image *image)
{
#ifndef IPT_NO_STDIO
	return image->sections != NULL;
#else
	(void) image;
	return 0;
#endif
}

static IPT__UNUSED int ipt__image_section_at(const struct pt_image *image,
					     const struct pt_asid *asid,
					     uint64_t addr,
					     struct ipt__image_place *place)
{
#ifndef IPT_NO_STDIO
	const struct ipt__msec *msec;

	for (msec = image->sections; msec; msec = msec->next) {
		if (addr < msec->vaddr || addr - msec->vaddr >= msec->size)
			continue;
		if (!ipt__asid_match(&msec->asid, asid))
			continue;

		place->begin = msec->vaddr;
		place->end = msec->vaddr + msec->size;
		place->section = msec->section;
		place->offset = msec->offset + (addr - msec->vaddr);
		return 0;
	}
#else
	(void) image;
	(void) asid;
	(void) addr;
	(void) place;
#endif
	return -pte_nomap;
}

/* ---- the image ---- */

static IPT__UNUSED int ipt__image_init(struct pt_image *image,
				       const char *name,
				       const struct ipt_allocator *a)
{
	if (!image)
		return -pte_internal;
	IPT_MEMSET(image, 0, sizeof(*image));
	image->allocator = *a;
	image->pages.max_pages = ipt__pcache_pages(IPT_IMAGE_CACHE_LIMIT);
	if (name) {
		image->name = ipt__strdup(a, name, &image->name_size);
		if (!image->name)
			return -pte_nomem;
	}
	return 0;
}

static IPT__UNUSED void ipt__image_fini(struct pt_image *image)
{
	if (!image)
		return;
#ifndef IPT_NO_STDIO
	ipt__msec_free_list(&image->allocator, image->sections);
#endif
	ipt__pcache_clear(&image->pages, &image->allocator);
	ipt__free(&image->allocator, image->name, image->name_size);
	IPT_MEMSET(image, 0, sizeof(*image));
}

static IPT__UNUSED inline uint64_t
ipt__image_generation(const struct pt_image *image)
{
	return image->generation;
}

static IPT__UNUSED uint32_t ipt__image_misses(const struct pt_image *image,
					       struct ipt__miss *last)
{
	if (!image)
		return 0;
	if (last)
		*last = image->miss;
	return image->misses;
}

static IPT__UNUSED int ipt__image_read(struct pt_image *image, int *isid,
				       uint8_t *buffer, uint16_t size,
				       const struct pt_asid *asid,
				       uint64_t addr)
{
	int status;

	if (!image || !isid || !buffer)
		return -pte_internal;
#ifndef IPT_NO_STDIO
	if (image->sections) {
		status = ipt__image_read_sections(image, isid, buffer, size,
						  asid, addr);
		if (status != -pte_nomap)
			return status;
	}
#endif
	status = ipt__image_read_callback(image, isid, buffer, size, asid,
					  addr);
	if (status == -pte_nomap) {
		image->misses += 1;
		image->miss.addr = addr;
		image->miss.cr3 = asid ? asid->cr3 : pt_asid_no_cr3;
		image->miss.vmcs = asid ? asid->vmcs : pt_asid_no_vmcs;
		image->miss.size = size;
	}
	return status;
}

IPT_DEF struct pt_image *
ipt_image_alloc_with(const char *name, const struct ipt_allocator *allocator)
{
	struct ipt_allocator a;
	struct pt_image *image;

	if (ipt__allocator_init(&a, allocator) < 0)
		return NULL;
	image = (struct pt_image *) ipt__alloc(&a, sizeof(*image));
	if (image && ipt__image_init(image, name, &a) < 0) {
		ipt__free(&a, image, sizeof(*image));
		image = NULL;
	}
	return image;
}

IPT_DEF struct pt_image *pt_image_alloc(const char *name)
{
	return ipt_image_alloc_with(name, NULL);
}

IPT_DEF void pt_image_free(struct pt_image *image)
{
	struct ipt_allocator a;

	if (!image)
		return;
	a = image->allocator;
	ipt__image_fini(image);
	ipt__free(&a, image, sizeof(*image));
}

IPT_DEF const char *pt_image_name(const struct pt_image *image)
{
	return image ? image->name : NULL;
}

IPT_DEF int pt_image_set_callback(struct pt_image *image,
				  read_memory_callback_t *callback,
				  void *context)
{
	if (!image)
		return -pte_invalid;
	image->callback = callback;
	image->context = context;
	/* What the old callback gave says nothing about the new one. */
	ipt__pcache_clear(&image->pages, &image->allocator);
	image->generation += 1;
	return 0;
}

IPT_DEF int ipt_image_invalidate(struct pt_image *image,
				 const struct pt_asid *uasid, uint64_t begin,
				 uint64_t end)
{
	struct ipt__pcache *pc;
	struct ipt__page *page, *older;
	struct pt_asid asid;

	if (!image || end < begin)
		return -pte_invalid;
	(void) ipt__asid_from_user(&asid, uasid);

	pc = &image->pages;
	image->generation += 1;
	if (begin == end)
		return 0;

	for (page = pc->newest; page; page = older) {
		older = page->older;
		if (page->base > end - 1 ||
		    page->base + IPT__PAGE_MASK < begin)
			continue;
		if (!ipt__key_match(page->cr3, page->vmcs, asid.cr3,
				    asid.vmcs))
			continue;
		ipt__pcache_unlink(pc, page);
		ipt__pcache_release(pc, page);
	}
	return 0;
}

IPT_DEF int ipt_image_set_cache_limit(struct pt_image *image, uint64_t bytes)
{
	if (!image)
		return -pte_invalid;
	/* Start over: the hash table is sized for the limit. */
	ipt__pcache_clear(&image->pages, &image->allocator);
	image->pages.max_pages = ipt__pcache_pages(bytes);
	return 0;
}

/* Copies src's mappings into image, each as it is mapped in src (the same
 * part of its section, at the same address, in the same address space), in
 * src's order, so that later ones hide earlier ones they overlap.  The
 * callback is not copied.  Returns the number of mappings that could not be
 * added. */
IPT_DEF int pt_image_copy(struct pt_image *image, const struct pt_image *src)
{
	int ignored = 0;

	if (!image || !src)
		return -pte_invalid;
	if (image == src)
		return 0;
#ifndef IPT_NO_STDIO
	{
		const struct ipt__msec *msec;

		for (msec = src->sections; msec; msec = msec->next) {
			if (ipt__image_add(image, msec->section, &msec->asid,
					   msec->vaddr, msec->offset,
					   msec->size, msec->isid) < 0)
				ignored += 1;
		}
	}
#endif
	image->generation += 1;
	return ignored;
}

IPT_DEF int pt_image_remove_by_filename(struct pt_image *image,
					const char *filename,
					const struct pt_asid *uasid)
{
	struct pt_asid asid;
	int removed = 0;

	if (!image || !filename)
		return -pte_invalid;
	(void) ipt__asid_from_user(&asid, uasid);
#ifndef IPT_NO_STDIO
	{
		struct ipt__msec **list;

		for (list = &image->sections; *list;) {
			struct ipt__msec *msec = *list;

			if (!ipt__asid_match(&msec->asid, &asid) ||
			    !ipt__filename_eq(msec->section->filename,
					      filename)) {
				list = &msec->next;
				continue;
			}
			*list = msec->next;
			ipt__msec_free(&image->allocator, msec);
			removed += 1;
		}
	}
#endif
	image->generation += 1;
	return removed;
}

IPT_DEF int pt_image_remove_by_asid(struct pt_image *image,
				    const struct pt_asid *uasid)
{
	struct pt_asid asid;
	int removed = 0;

	if (!image)
		return -pte_invalid;
	(void) ipt__asid_from_user(&asid, uasid);
#ifndef IPT_NO_STDIO
	{
		struct ipt__msec **list;

		for (list = &image->sections; *list;) {
			struct ipt__msec *msec = *list;

			if (!ipt__asid_match(&msec->asid, &asid)) {
				list = &msec->next;
				continue;
			}
			*list = msec->next;
			ipt__msec_free(&image->allocator, msec);
			removed += 1;
		}
	}
#endif
	image->generation += 1;
	return removed;
}

#ifndef IPT_NO_STDIO

IPT_DEF int pt_image_add_file(struct pt_image *image, const char *filename,
			      uint64_t offset, uint64_t size,
			      const struct pt_asid *uasid, uint64_t vaddr)
{
	struct ipt__section *section;
	struct pt_asid asid;
	int errcode;

	if (!image || !filename)
		return -pte_invalid;
	(void) ipt__asid_from_user(&asid, uasid);

	section = NULL;
	errcode = ipt__section_mk(&section, &image->allocator, filename,
				  offset, size);
	if (errcode < 0)
		return errcode;
	errcode = ipt__image_add(image, section, &asid, vaddr, 0,
				 section->size, 0);
	ipt__section_put(section);
	return errcode;
}

/* ---- the image section cache ----
 *
 * A list of (section, load address) entries; the section identifier is the
 * entry's index plus one.  Entries are never removed, so identifiers stay
 * valid for the cache's life.  A file range added twice shares one section;
 * added twice at the same address, it is the same entry. */

IPT_DEF struct pt_image_section_cache *
ipt_iscache_alloc_with(const char *name,
		       const struct ipt_allocator *allocator)
{
	struct pt_image_section_cache *iscache =
		(struct pt_image_section_cache *) ipt__own_alloc(
			allocator, IPT__OWN(struct pt_image_section_cache));

	if (!iscache)
		return NULL;
	iscache->limit = UINT64_MAX;
	if (name) {
		iscache->name = ipt__strdup(&iscache->allocator, name,
					    &iscache->name_size);
		if (!iscache->name) {
			ipt__own_free(iscache,
				      IPT__OWN(struct pt_image_section_cache));
			return NULL;
		}
	}
	return iscache;
}

IPT_DEF struct pt_image_section_cache *pt_iscache_alloc(const char *name)
{
	return ipt_iscache_alloc_with(name, NULL);
}

IPT_DEF void pt_iscache_free(struct pt_image_section_cache *iscache)
{
	struct ipt_allocator a;
	uint32_t i;

	if (!iscache)
		return;
	/* Images may still use the sections: they keep them, unloaded and
	 * no longer counted against any limit. */
	while (iscache->oldest)
		ipt__section_unload(iscache->oldest);
	for (i = 0; i < iscache->nentries; ++i) {
		struct ipt__section *section = iscache->entries[i].section;

		if (section->iscache == iscache)
			section->iscache = NULL;
		ipt__section_put(section);
	}
	a = iscache->allocator;
	ipt__free(&a, iscache->entries,
		  iscache->capacity * sizeof(*iscache->entries));
	ipt__free(&a, iscache->name, iscache->name_size);
	ipt__free(&a, iscache, sizeof(*iscache));
}

IPT_DEF const char *
pt_iscache_name(const struct pt_image_section_cache *iscache)
{
	return iscache ? iscache->name : NULL;
}

IPT_DEF int pt_iscache_set_limit(struct pt_image_section_cache *iscache,
				 uint64_t limit)
{
	if (!iscache)
		return -pte_invalid;
	iscache->limit = limit;
	ipt__iscache_prune(iscache, NULL);
	return 0;
}

/* The entry with a section for exactly this file range at laddr, else the
 * first entry with a section for it at another address, else nentries. */
static uint32_t ipt__iscache_find(const struct pt_image_section_cache *iscache,
				  const char *filename, uint64_t offset,
				  uint64_t size, uint64_t laddr)
{
	const struct ipt__section *section = NULL;
	uint32_t i, match = iscache->nentries;

	for (i = 0; i < iscache->nentries; ++i) {
		const struct ipt__iscache_entry *entry = &iscache->entries[i];
		const struct ipt__section *sec = entry->section;

		if (sec != section) {
			/* One section per file range: once found, others
			 * don't match. */
			if (section)
				continue;
			if (sec->offset != offset || sec->size != size ||
			    !ipt__filename_eq(sec->filename, filename))
				continue;
			section = sec;
			match = i;
		}
		if (entry->laddr == laddr)
			return i;
	}
	return match;
}

IPT_DEF int pt_iscache_add_file(struct pt_image_section_cache *iscache,
				const char *filename, uint64_t offset,
				uint64_t size, uint64_t vaddr)
{
	struct ipt__section *section, *fresh;
	uint32_t match;
	int errcode;

	if (!iscache || !filename)
		return -pte_invalid;

	fresh = NULL;
	match = ipt__iscache_find(iscache, filename, offset, size, vaddr);
	if (match == iscache->nentries) {
		errcode = ipt__section_mk(&fresh, &iscache->allocator,
					  filename, offset, size);
		if (errcode < 0)
			return errcode;

		/* The file may be shorter than size: look again for the
		 * range the section really has. */
		match = ipt__iscache_find(iscache, filename, offset,
					  fresh->size, vaddr);
	}
	if (match < iscache->nentries) {
		ipt__section_put(fresh);
		fresh = NULL;
		if (iscache->entries[match].laddr == vaddr)
			return (int) match + 1;
		section = iscache->entries[match].section;
	} else {
		section = fresh;
		section->iscache = iscache;
	}

	if (iscache->nentries == iscache->capacity) {
		struct ipt__iscache_entry *entries;
		uint32_t capacity = iscache->capacity + 8;

		errcode = -pte_nomem;
		if (capacity > UINT16_MAX + 1u)
			goto out;
		entries = (struct ipt__iscache_entry *) ipt__realloc(
			&iscache->allocator, iscache->entries,
			iscache->capacity * sizeof(*entries),
			capacity * sizeof(*entries));
		if (!entries)
			goto out;
		iscache->entries = entries;
		iscache->capacity = capacity;
	}
	errcode = ipt__section_get(section);
	if (errcode < 0)
		goto out;
	iscache->entries[iscache->nentries].section = section;
	iscache->entries[iscache->nentries].laddr = vaddr;
	iscache->nentries += 1;
	errcode = (int) iscache->nentries;

out:
	/* Drop the reference of a section we made; its entry holds one. */
	ipt__section_put(fresh);
	return errcode;
}

static int ipt__iscache_lookup(const struct pt_image_section_cache *iscache,
			       int isid, struct ipt__section **psection,
			       uint64_t *pladdr)
{
	if (isid <= 0 || (uint32_t) isid > iscache->nentries)
		return -pte_bad_image;
	*psection = iscache->entries[isid - 1].section;
	*pladdr = iscache->entries[isid - 1].laddr;
	return 0;
}

IPT_DEF int pt_iscache_read(struct pt_image_section_cache *iscache,
			    uint8_t *buffer, uint64_t size, int isid,
			    uint64_t vaddr)
{
	struct ipt__section *section;
	uint64_t laddr;
	int errcode;

	if (!iscache || !buffer || !size)
		return -pte_invalid;
	errcode = ipt__iscache_lookup(iscache, isid, &section, &laddr);
	if (errcode < 0)
		return errcode;
	if (vaddr < laddr)
		return -pte_nomap;
	if (UINT16_MAX < size)
		size = UINT16_MAX;
	return ipt__section_read(section, buffer, (uint16_t) size,
				 vaddr - laddr);
}

IPT_DEF int pt_image_add_cached(struct pt_image *image,
				struct pt_image_section_cache *iscache,
				int isid, const struct pt_asid *uasid)
{
	struct ipt__section *section;
	struct pt_asid asid;
	uint64_t laddr;
	int errcode;

	if (!image || !iscache)
		return -pte_invalid;
	errcode = ipt__iscache_lookup(iscache, isid, &section, &laddr);
	if (errcode < 0)
		return errcode;
	(void) ipt__asid_from_user(&asid, uasid);
	return ipt__image_add(image, section, &asid, laddr, 0, section->size,
			      isid);
}

#endif /* IPT_NO_STDIO */

/* ==== >>ild  instruction length and class =================================
 * Asks Zydis for an instruction's length and class.
 *
 * Zydis finds the length and the opcode, map, ModRM, prefixes and the
 * relative immediate; the rules below turn those into libipt's instruction
 * classes, with the same semantics as libipt 2.3's pt_ild.c and pt_insn.c.
 * Zydis runs in its minimal mode: no operands are decoded.
 *
 * Internal interface, for the block and instruction decoders:
 *
 *   enum ipt__inst_class                 IPT__INST_INVALID, IPT__INST_CALL_9A,
 *                                        ... IPT__INST_JMPABS, IPT__INST_LAST
 *   struct ipt__insn_ext {
 *       enum ipt__inst_class iclass;
 *       union { struct { int64_t displacement; uint8_t is_direct; }
 *               branch; } variant;
 *   };
 *
 *   int ipt__ild_decode(struct pt_insn *insn, struct ipt__insn_ext *iext);
 *       decodes insn->raw, at most insn->size bytes, in insn->mode; sets
 *       insn->size and insn->iclass.  0, or -pte_bad_insn (insn->size kept)
 *   struct ipt__ild_zydis;  void ipt__ild_zydis_init(struct ipt__ild_zydis *);
 *   int ipt__ild_decode_with(struct ipt__ild_zydis *, struct pt_insn *,
 *                            struct ipt__insn_ext *);
 *       the same, for many instructions in a row: Zydis is set up once
 *       per mode, and with a struct ipt__ild_memo at zd->memo (the
 *       caller's) asked only for bytes it has not decoded before
 *   int ipt__insn_decode(struct pt_insn *insn, struct ipt__insn_ext *iext,
 *                        struct pt_image *image, const struct pt_asid *asid);
 *       reads and decodes the instruction at insn->ip in insn->mode; sets
 *       raw, size, iclass, isid and truncated (set when the bytes came from
 *       more than one read: across sections, or past where the callback
 *       stopped).  0 on success; -pte_bad_insn, -pte_nomap, or an error
 *       of the image
 *   int ipt__insn_decode_with(struct ipt__ild_zydis *, ...);
 *       the same with that decoder
 *   int ipt__insn_changes_cpl(const struct pt_insn *,
 *                             const struct ipt__insn_ext *);
 *   int ipt__insn_changes_cr3(...);     int ipt__insn_is_branch(...);
 *   int ipt__insn_is_far_branch(...);   int ipt__insn_binds_to_pip(...);
 *   int ipt__insn_binds_to_vmcs(...);   int ipt__insn_is_ptwrite(...);
 *   int ipt__insn_is_iret(...);         int ipt__insn_is_vmentry(...);
 *   int ipt__insn_is_uiret(...);        int ipt__insn_is_swint(...);
 *   int ipt__insn_is_syscall(...);
 *       non-zero if so, zero if not or an argument is NULL
 *   uint64_t ipt__ip_in_mode(enum pt_exec_mode, uint64_t ip);
 *       ip as an IP in that mode: wrapped at 4 GiB in 16- and 32-bit mode
 *   int ipt__insn_next_ip(uint64_t *ip, const struct pt_insn *,
 *                         const struct ipt__insn_ext *);
 *       the next IP when it follows from the code alone: 0; else
 *       -pte_bad_query, -pte_bad_insn for ptic_error, -pte_internal
 *   int ipt__insn_range_is_contiguous(uint64_t begin, uint64_t end,
 *                                     enum pt_exec_mode mode,
 *                                     struct pt_image *image,
 *                                     const struct pt_asid *asid,
 *                                     size_t nsteps);
 *       1 if end is reached from begin within nsteps instructions without
 *       trace, 0 if not, or an error
 *
 * Notes:
 *  - ptic_indirect is never produced here; only the block layer reports it.
 *    MOV CR3 and VMPTRLD are ptic_other with their detailed class.
 *  - Outside 64-bit mode a linear address has 32 bits, so next IPs and
 *    branch targets wrap at 4 GiB (libipt lets them run past; the two
 *    differ only for code crossing the 4 GiB end).  IPs are linear
 *    addresses (CS base + IP), so a 16-bit IP can't be wrapped at 64 KiB
 *    without the CS base: it is not, as in libipt.
 *  - Bytes Zydis rejects are -pte_bad_insn, where libipt's table-driven
 *    length decoder may still find a length; valid code decodes alike.
 *  - Zydis 4.0 does not know ERETS (F2 0F 01 CA), ERETU (F3 0F 01 CA) or
 *    JMPABS (REX2 D5 with M0=W=0, then A1 and a 64-bit target; 64-bit mode
 *    only; a REX right before REX2 makes it #UD).  These fixed encodings,
 *    and MOV to CRn with REX2, are recognized here when Zydis rejects
 *    them; other REX2 (APX) instructions are -pte_bad_insn.  UIRET is
 *    Zydis'.  Other instructions newer than Zydis 4.0 are -pte_bad_insn
 *    too, where libipt decodes their length: e.g. WRMSRNS and
 *    RDMSRLIST/WRMSRLIST (0F 01 C6), CMPccXADD, RAO-INT (0F 38 FC) and
 *    the VEX forms of AVX-VNNI (VPDPBUSD etc.).
 *  - ptem_unknown decodes with 16-bit defaults, as libipt's decoder does
 *    (which also treats it as "not 64-bit" everywhere else), and like it
 *    without a displacement or SIB byte after a ModRM byte: libipt knows
 *    no addressing mode for an unknown mode and gives those none.
 */

/* Without stdio the implementation promises nothing of libc: Zydis'
 * headers are told so too (they leave out <assert.h>, <stdint.h> and
 * friends and use the compiler's own types). */
#if defined(IPT_NO_STDIO) && !defined(ZYAN_NO_LIBC)
#define ZYAN_NO_LIBC
#endif
#include <Zydis/Zydis.h>

enum ipt__inst_class {
	IPT__INST_INVALID,
	IPT__INST_CALL_9A,
	IPT__INST_CALL_FFr3,
	IPT__INST_CALL_FFr2,
	IPT__INST_CALL_E8,
	IPT__INST_INT,
	IPT__INST_INT3,
	IPT__INST_INT1,
	IPT__INST_INTO,
	IPT__INST_IRET,
	IPT__INST_JMP_E9,
	IPT__INST_JMP_EB,
	IPT__INST_JMP_EA,
	IPT__INST_JMP_FFr5,
	IPT__INST_JMP_FFr4,
	IPT__INST_JCC,
	IPT__INST_JrCXZ,
	IPT__INST_LOOP,
	IPT__INST_LOOPE,
	IPT__INST_LOOPNE,
	IPT__INST_MOV_CR3,
	IPT__INST_RET_C3,
	IPT__INST_RET_C2,
	IPT__INST_RET_CB,
	IPT__INST_RET_CA,
	IPT__INST_SYSCALL,
	IPT__INST_SYSENTER,
	IPT__INST_SYSEXIT,
	IPT__INST_SYSRET,
	IPT__INST_VMLAUNCH,
	IPT__INST_VMRESUME,
	IPT__INST_VMCALL,
	IPT__INST_VMPTRLD,
	IPT__INST_PTWRITE,
	IPT__INST_UIRET,
	IPT__INST_ERETS,
	IPT__INST_ERETU,
	IPT__INST_JMPABS,
	IPT__INST_LAST
};

struct ipt__insn_ext {
	/* The detailed class. */
	enum ipt__inst_class iclass;
	union {
		struct {
			/* For direct branches: the displacement from the next
			 * instruction's IP (for JMPABS, the target). */
			int64_t displacement;
			/* Non-zero for a direct near branch. */
			uint8_t is_direct;
		} branch;
	} variant;
};

/* What ipt__ild_classify needs of an instruction, from Zydis or from the
 * recognizer of the encodings Zydis 4.0 lacks. */
struct ipt__ild {
	uint8_t size;
	/* 0: one-byte map, 1: 0F map, 2: anything else (0F38, 0F3A, VEX,
	 * EVEX, XOP, 3DNow!), which holds nothing of interest. */
	uint8_t map;
	uint8_t opcode;
	uint8_t modrm;
	/* Prefixes: 66 seen, F3 seen, the last of F2/F3 (0 if none), REX.R,
	 * REX2. */
	uint8_t osz, f3, last_f2f3, rex_r, rex2, rex_w;
	/* Where the relative immediate is, and its size in bytes. */
	uint8_t disp_pos, disp_bytes;
};

static int ipt__ild_branch(struct ipt__insn_ext *iext, const uint8_t *raw,
			   const struct ipt__ild *ild)
{
	uint64_t value = 0;
	uint8_t i, n = ild->disp_bytes;

	if ((n != 1 && n != 2 && n != 4 && n != 8) ||
	    ild->size < ild->disp_pos + n)
		return -pte_bad_insn;
	for (i = 0; i < n; ++i)
		value |= (uint64_t) raw[ild->disp_pos + i] << (8 * i);
	if (n < 8 && (value >> (8 * n - 1)) & 1)
		value |= ~(uint64_t) 0 << (8 * n);

	iext->variant.branch.is_direct = 1;
	iext->variant.branch.displacement = (int64_t) value;
	return 0;
}

/* The class of an instruction: libipt's opcode rules. */
static int ipt__ild_classify(struct pt_insn *insn, struct ipt__insn_ext *iext,
			     const uint8_t *raw, const struct ipt__ild *ild)
{
	uint8_t opcode = ild->opcode;
	uint8_t reg = (ild->modrm >> 3) & 7;
	int m64 = insn->mode == ptem_64bit;

	iext->iclass = IPT__INST_INVALID;
	iext->variant.branch.displacement = 0;
	iext->variant.branch.is_direct = 0;
	insn->iclass = ptic_other;

	if (ild->map == 0) {
		if ((opcode & 0xf0) == 0x70) {
			if (ild->rex2)
				return 0;
			insn->iclass = ptic_cond_jump;
			iext->iclass = IPT__INST_JCC;
			return ipt__ild_branch(iext, raw, ild);
		}
		switch (opcode) {
		case 0x9a:
			if (!m64) {
				insn->iclass = ptic_far_call;
				iext->iclass = IPT__INST_CALL_9A;
			}
			return 0;
		case 0xff:
			if (reg == 2) {
				insn->iclass = ptic_call;
				iext->iclass = IPT__INST_CALL_FFr2;
			} else if (reg == 3) {
				insn->iclass = ptic_far_call;
				iext->iclass = IPT__INST_CALL_FFr3;
			} else if (reg == 4) {
				insn->iclass = ptic_jump;
				iext->iclass = IPT__INST_JMP_FFr4;
			} else if (reg == 5) {
				insn->iclass = ptic_far_jump;
				iext->iclass = IPT__INST_JMP_FFr5;
			}
			return 0;
		case 0xe8:
		case 0xe9:
		case 0xeb:
		case 0xe0:
		case 0xe1:
		case 0xe2:
		case 0xe3:
			if (ild->rex2)
				return 0;
			switch (opcode) {
			case 0xe8:
				insn->iclass = ptic_call;
				iext->iclass = IPT__INST_CALL_E8;
				break;
			case 0xe9:
				insn->iclass = ptic_jump;
				iext->iclass = IPT__INST_JMP_E9;
				break;
			case 0xeb:
				insn->iclass = ptic_jump;
				iext->iclass = IPT__INST_JMP_EB;
				break;
			case 0xe0:
				insn->iclass = ptic_cond_jump;
				iext->iclass = IPT__INST_LOOPNE;
				break;
			case 0xe1:
				insn->iclass = ptic_cond_jump;
				iext->iclass = IPT__INST_LOOPE;
				break;
			case 0xe2:
				insn->iclass = ptic_cond_jump;
				iext->iclass = IPT__INST_LOOP;
				break;
			default:
				insn->iclass = ptic_cond_jump;
				iext->iclass = IPT__INST_JrCXZ;
				break;
			}
			return ipt__ild_branch(iext, raw, ild);
		case 0xcd:
			insn->iclass = ptic_far_call;
			iext->iclass = IPT__INST_INT;
			return 0;
		case 0xcc:
			insn->iclass = ptic_far_call;
			iext->iclass = IPT__INST_INT3;
			return 0;
		case 0xce:
			if (!m64) {
				insn->iclass = ptic_far_call;
				iext->iclass = IPT__INST_INTO;
			}
			return 0;
		case 0xf1:
			insn->iclass = ptic_far_call;
			iext->iclass = IPT__INST_INT1;
			return 0;
		case 0xcf:
			insn->iclass = ptic_far_return;
			iext->iclass = IPT__INST_IRET;
			return 0;
		case 0xea:
			/* A far jump is indirect: its target comes in TIP. */
			if (!m64 && !ild->rex2) {
				insn->iclass = ptic_far_jump;
				iext->iclass = IPT__INST_JMP_EA;
			}
			return 0;
		case 0xc3:
			insn->iclass = ptic_return;
			iext->iclass = IPT__INST_RET_C3;
			return 0;
		case 0xc2:
			insn->iclass = ptic_return;
			iext->iclass = IPT__INST_RET_C2;
			return 0;
		case 0xcb:
			insn->iclass = ptic_far_return;
			iext->iclass = IPT__INST_RET_CB;
			return 0;
		case 0xca:
			insn->iclass = ptic_far_return;
			iext->iclass = IPT__INST_RET_CA;
			return 0;
		case 0xa1:
			/* JMPABS: direct, yet its target comes in TIP. */
			if (m64 && ild->rex2 && !ild->rex_w && !ild->osz) {
				insn->iclass = ptic_jump;
				iext->iclass = IPT__INST_JMPABS;
				return ipt__ild_branch(iext, raw, ild);
			}
			return 0;
		default:
			return 0;
		}
	}

	if (ild->map != 1)
		return 0;

	if ((opcode & 0xf0) == 0x80) {
		if (ild->rex2)
			return 0;
		insn->iclass = ptic_cond_jump;
		iext->iclass = IPT__INST_JCC;
		return ipt__ild_branch(iext, raw, ild);
	}
	switch (opcode) {
	case 0x22:
		if (reg == 3 && !ild->rex_r)
			iext->iclass = IPT__INST_MOV_CR3;
		return 0;
	case 0x05:
		insn->iclass = ptic_far_call;
		iext->iclass = IPT__INST_SYSCALL;
		return 0;
	case 0x34:
		if (!ild->rex2) {
			insn->iclass = ptic_far_call;
			iext->iclass = IPT__INST_SYSENTER;
		}
		return 0;
	case 0x35:
		if (!ild->rex2) {
			insn->iclass = ptic_far_return;
			iext->iclass = IPT__INST_SYSEXIT;
		}
		return 0;
	case 0x07:
		insn->iclass = ptic_far_return;
		iext->iclass = IPT__INST_SYSRET;
		return 0;
	case 0x01:
		switch (ild->modrm) {
		case 0xc1:
			insn->iclass = ptic_far_call;
			iext->iclass = IPT__INST_VMCALL;
			break;
		case 0xc2:
			insn->iclass = ptic_far_return;
			iext->iclass = IPT__INST_VMLAUNCH;
			break;
		case 0xc3:
			insn->iclass = ptic_far_return;
			iext->iclass = IPT__INST_VMRESUME;
			break;
		case 0xec:
			insn->iclass = ptic_far_return;
			iext->iclass = IPT__INST_UIRET;
			break;
		case 0xca:
			if (ild->last_f2f3 == 0xf2) {
				insn->iclass = ptic_far_return;
				iext->iclass = IPT__INST_ERETS;
			} else if (ild->last_f2f3 == 0xf3) {
				insn->iclass = ptic_far_return;
				iext->iclass = IPT__INST_ERETU;
			}
			break;
		default:
			break;
		}
		return 0;
	case 0xc7:
		if ((ild->modrm >> 6) != 3 && reg == 6)
			iext->iclass = IPT__INST_VMPTRLD;
		return 0;
	case 0xae:
		if (ild->f3 && !ild->osz && reg == 4) {
			insn->iclass = ptic_ptwrite;
			iext->iclass = IPT__INST_PTWRITE;
		}
		return 0;
	default:
		return 0;
	}
}

/* Fills ild from Zydis' view of the instruction. */
static void ipt__ild_from_zydis(struct ipt__ild *ild,
				const ZydisDecodedInstruction *z)
{
	uint8_t i, n;

	IPT_MEMSET(ild, 0, sizeof(*ild));
	ild->size = z->length;
	ild->opcode = z->opcode;
	if (z->encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY)
		ild->map = 2;
	else if (z->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT)
		ild->map = 0;
	else if (z->opcode_map == ZYDIS_OPCODE_MAP_0F)
		ild->map = 1;
	else
		ild->map = 2;
	if (z->attributes & ZYDIS_ATTRIB_HAS_MODRM)
		ild->modrm = (uint8_t) ((z->raw.modrm.mod << 6) |
					(z->raw.modrm.reg << 3) |
					z->raw.modrm.rm);
	/* ipt__ild_classify looks at the legacy prefixes only for 0F 01 and
	 * 0F AE (JMPABS, the third, never comes from Zydis). */
	n = ild->map == 1 && (ild->opcode == 0x01 || ild->opcode == 0xae) ?
		    z->raw.prefix_count : 0;
	for (i = 0; i < n && i < ZYDIS_MAX_INSTRUCTION_LENGTH; ++i) {
		switch (z->raw.prefixes[i].value) {
		case 0x66:
			ild->osz = 1;
			break;
		case 0xf3:
			ild->f3 = 1;
			ild->last_f2f3 = 0xf3;
			break;
		case 0xf2:
			ild->last_f2f3 = 0xf2;
			break;
		default:
			break;
		}
	}
	if (z->attributes & ZYDIS_ATTRIB_HAS_REX) {
		ild->rex_r = z->raw.rex.R;
		ild->rex_w = z->raw.rex.W;
	}
	if (z->raw.imm[0].is_relative) {
		ild->disp_pos = z->raw.imm[0].offset;
		ild->disp_bytes = (uint8_t) (z->raw.imm[0].size / 8);
	}
}

/* The size of the key of the instruction Zydis decoded to @z (see "Zydis'
 * answers, remembered by their bytes"): the bytes before its displacement
 * or immediate; all of them for 3DNow!. */
static uint32_t ipt__ild_key_size(const ZydisDecodedInstruction *z)
{
	uint32_t key = z->length;

	if (z->encoding == ZYDIS_INSTRUCTION_ENCODING_3DNOW)
		return key;
	if (z->raw.disp.size && z->raw.disp.offset < key)
		key = z->raw.disp.offset;
	if (z->raw.imm[0].size && z->raw.imm[0].offset < key)
		key = z->raw.imm[0].offset;
	return key;
}

/* How a ModRM byte's register fields are left out of a key: both (reg,
 * and rm too if mod is 3), or only rm if mod is 3. */
enum { IPT__ILD_UNREG_BOTH = 1, IPT__ILD_UNREG_RM = 2 };

/* Where the ModRM byte of the instruction Zydis decoded to @z is, if
 * fields of it are left out of its key (see "Zydis' answers, remembered
 * by their bytes"), and in *@how which; zero if none are, or if it lies
 * past the first seven bytes. */
static uint32_t ipt__ild_key_unreg(const ZydisDecodedInstruction *z,
				   uint32_t *how)
{
	uint32_t op = z->opcode, plain;

	*how = IPT__ILD_UNREG_BOTH;

	if (z->encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY ||
	    !(z->attributes & ZYDIS_ATTRIB_HAS_MODRM) ||
	    z->raw.modrm.offset > 6)
		return 0;
	switch (z->opcode_map) {
	case ZYDIS_OPCODE_MAP_DEFAULT:
		/* ADD to CMP, MOVSXD, IMUL, TEST, XCHG, MOV, LEA. */
		plain = (op < 0x40 && (op & 7) < 4) || op == 0x63 ||
			op == 0x69 || op == 0x6b ||
			(op >= 0x84 && op <= 0x8b) || op == 0x8d;
		if (op == 0x80 || op == 0x81 || op == 0x83 || op == 0xc0 ||
		    op == 0xc1 || (op >= 0xd0 && op <= 0xd3) || op == 0xf6 ||
		    op == 0xf7 || op == 0xfe || op == 0xff) {
			*how = IPT__ILD_UNREG_RM;
			plain = 1;
		}
		break;
	case ZYDIS_OPCODE_MAP_0F:
		/* CMOVcc, BT/BTS/BTR/BTC, SHLD/SHRD, IMUL, CMPXCHG,
		 * MOVZX/MOVSX, BSF/BSR, XADD. */
		plain = (op & 0xf0) == 0x40 || op == 0xa3 || op == 0xab ||
			op == 0xb3 || op == 0xbb || op == 0xa4 || op == 0xa5 ||
			op == 0xac || op == 0xad || op == 0xaf ||
			op == 0xb0 || op == 0xb1 || op == 0xb6 || op == 0xb7 ||
			op == 0xbc || op == 0xbd || op == 0xbe || op == 0xbf ||
			op == 0xc0 || op == 0xc1;
		break;
	default:
		plain = 0;
		break;
	}
	return plain ? z->raw.modrm.offset : 0;
}

/* The fixed encodings Zydis 4.0 lacks: ERETS, ERETU, JMPABS, and MOV CR
 * with a REX2 prefix (the only REX2 forms that matter for tracing; libipt
 * knows no more of them either).  Returns 1 and
 * fills ild if raw holds one, 0 if raw is too short to tell (it may be the
 * start of one), -pte_bad_insn otherwise. */
static int ipt__ild_late(struct ipt__ild *ild, const uint8_t *raw,
			 uint8_t max, enum pt_exec_mode mode)
{
	uint8_t i, osz = 0, asz = 0, f3 = 0, last = 0;

	for (i = 0; i < max; ++i) {
		uint8_t b = raw[i];

		if (b == 0x66)
			osz = 1;
		else if (b == 0x67)
			asz = 1;
		else if (b == 0xf2 || b == 0xf3) {
			last = b;
			f3 |= (b == 0xf3);
		} else if (b != 0x26 && b != 0x2e && b != 0x36 && b != 0x3e &&
			   b != 0x64 && b != 0x65 && b != 0xf0 &&
			   !(mode == ptem_64bit && (b & 0xf0) == 0x40))
			break;
	}
	if (i >= pt_max_insn_size)
		return -pte_bad_insn;
	if (i == max)
		return 0;

	IPT_MEMSET(ild, 0, sizeof(*ild));
	ild->osz = osz;
	ild->f3 = f3;
	ild->last_f2f3 = last;

	if (raw[i] == 0x0f && last) {
		static const uint8_t tail[] = { 0x0f, 0x01, 0xca };
		uint8_t k;

		for (k = 0; k < sizeof(tail); ++k) {
			if (i + k == max)
				return 0;
			if (raw[i + k] != tail[k])
				return -pte_bad_insn;
		}
		ild->size = (uint8_t) (i + 3);
		ild->map = 1;
		ild->opcode = 0x01;
		ild->modrm = 0xca;
		return 1;
	}

	if (raw[i] == 0xd5 && mode == ptem_64bit) {
		uint8_t payload;

		/* REX right before REX2 is #UD (a REX with a legacy prefix
		 * after it is ignored, as always). */
		if (i && (raw[i - 1] & 0xf0) == 0x40)
			return -pte_bad_insn;
		if (i + 1 == max)
			return 0;
		/* REX2 payload: M0 (bit 7) selects the map, R4 and R3 are
		 * bits 6 and 2, W is bit 3. */
		payload = raw[i + 1];
		if (payload & 0x80) {
			/* MOV to a control register: 0F 22 /r, mod ignored. */
			if (i + 2 == max)
				return 0;
			if (raw[i + 2] != 0x22)
				return -pte_bad_insn;
			if (i + 3 == max)
				return 0;
			ild->size = (uint8_t) (i + 4);
			ild->map = 1;
			ild->opcode = 0x22;
			ild->modrm = raw[i + 3];
			ild->rex2 = 1;
			ild->rex_r = (payload & 0x44) != 0;
			return 1;
		}
		if ((payload & 0x08) || osz || asz)
			return -pte_bad_insn;
		if (i + 2 == max)
			return 0;
		if (raw[i + 2] != 0xa1)
			return -pte_bad_insn;
		if (pt_max_insn_size < i + 11)
			return -pte_bad_insn;
		if (max < i + 11)
			return 0;
		ild->size = (uint8_t) (i + 11);
		ild->map = 0;
		ild->opcode = 0xa1;
		ild->rex2 = 1;
		ild->disp_pos = (uint8_t) (i + 3);
		ild->disp_bytes = 8;
		return 1;
	}
	return -pte_bad_insn;
}

/* ---- Zydis' answers, remembered by their bytes ----
 * What Zydis makes of an instruction depends on the mode and on the bytes
 * that decide what the instruction is (its key: prefixes, opcode, ModRM,
 * SIB), nothing else: x86 encodings are prefix-free, the key fixes the
 * sizes of the displacement and immediate that follow it, their values
 * only fill operands (the relative branch target, which
 * ipt__ild_classify reads from the bytes at hand), and Zydis looks at no
 * byte past the instruction's end.  So an instruction whose key was
 * decoded before, at any address and with any displacement and immediate,
 * has the same length and class again.  3DNow!, whose opcode comes last,
 * has all its bytes for a key.  Code repeats its instructions a lot
 * (register moves, pushes and pops, stack loads and stores, calls and
 * jumps by offset, returns): real programs' code seen for the first time
 * finds about half of its instructions here, each for a few loads instead
 * of a Zydis call of some 800 instructions.
 *
 * Where the ModRM byte's register fields only name registers (the
 * arithmetic and logic ops, TEST, XCHG, MOV, LEA, MOVSXD, IMUL, CMOVcc,
 * MOVZX/MOVSX, the bit tests and scans, SHLD/SHRD, CMPXCHG, XADD: no
 * group opcode, no VEX), they are no part of the key either: its reg
 * field, and its rm field too where mod says a register (no SIB and no
 * displacement follow then).  The other registers of a move change
 * neither its length nor its class, so one Zydis call answers for all of
 * them.  Where the reg field names the operation (the group opcodes
 * 80/81/83, C0/C1, D0 to D3, F6/F7, FE/FF, whose operations all take any
 * register), only the rm field is left out, where mod says a register.
 * The fields left out are left out of the set's hash as well
 * (with the ModRM byte second, the set is chosen by two bytes), so a
 * look-up that may meet such a key with the ModRM byte second or third
 * tries that set first; further on, the first three bytes hold no ModRM
 * byte and the usual sets find it.
 *
 * Instructions with one-byte keys (a push, a call by offset, a short
 * jump) are kept by that byte and the mode.  The others go to
 * IPT__ILD_MEMO_SETS sets of two entries, a set chosen by the mode and
 * the first two bytes (two-byte keys) or three (longer ones).  Not knowing
 * the key of the instruction it looks for, a look-up tries the one-byte
 * table and both sets; an entry matches if its key is the instruction's
 * first bytes, whichever way it came into the set.  Only
 * what Zydis decodes is kept (not the encodings recognized here without
 * it), and only in 16-, 32- and 64-bit mode.  Only two bitmaps of which
 * entries and sets hold something are cleared when the memo is made (a
 * set's other way is cleared with its first entry): small traces do not
 * pay for clearing a table they hardly use. */
enum {
	IPT__ILD_MEMO_BITS = 10,
	IPT__ILD_MEMO_SETS = 1 << IPT__ILD_MEMO_BITS,
	IPT__ILD_MEMO_WAYS = 2
};

struct ipt__ild_memo_entry {
	/* The key's bytes 0 to 7 and 7 to 14, zero past its end. */
	uint64_t lo, hi;
	struct ipt__ild ild;
	/* The mode plus one; zero if the entry is free. */
	uint8_t mode;
	/* The key's size in bytes (bits 0 to 3), where its ModRM byte is
	 * if fields of it are left out (bits 4 to 6; zero if none are),
	 * and whether that is only its rm field (bit 7). */
	uint8_t key;
};

struct ipt__ild_memo {
	/* Which entries of @one and which sets of @set are in use; the
	 * others are not even initialized. */
	uint64_t one_used[3 * 256 / 64];
	uint64_t set_used[IPT__ILD_MEMO_SETS / 64];
	/* By mode and the byte before the ModRM byte of a key without
	 * register fields (the opcode): how they were left out of the
	 * last such key put with the ModRM byte second (bits 0 and 1) and
	 * third (bits 2 and 3); zero if none.  A look-up tries such keys
	 * first, and only those. */
	uint8_t unreg_used[3][256];
	/* By mode (16-, 32-, 64-bit) and one-byte key. */
	struct ipt__ild one[3][256];
	struct ipt__ild_memo_entry set[IPT__ILD_MEMO_SETS][IPT__ILD_MEMO_WAYS];
};

/* Make @memo empty. */
static void ipt__ild_memo_init(struct ipt__ild_memo *memo)
{
	IPT_MEMSET(memo->one_used, 0, sizeof(memo->one_used));
	IPT_MEMSET(memo->set_used, 0, sizeof(memo->set_used));
	IPT_MEMSET(memo->unreg_used, 0, sizeof(memo->unreg_used));
}

static IPT__INLINE int ipt__ild_memo_bit(const uint64_t *bits, uint32_t i)
{
	return (int) ((bits[i / 64] >> (i % 64)) & 1);
}

/* For a key of 0 to 15 bytes: which of an instruction's bytes 0 to 7 (lo)
 * and 7 to 14 (hi) belong to it. */
static const uint64_t ipt__ild_memo_lo[16] = {
	0, 0xff, 0xffff, 0xffffff, 0xffffffffull, 0xffffffffffull,
	0xffffffffffffull, 0xffffffffffffffull, ~0ull, ~0ull, ~0ull, ~0ull,
	~0ull, ~0ull, ~0ull, ~0ull
};
static const uint64_t ipt__ild_memo_hi[16] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0xffff, 0xffffff, 0xffffffffull,
	0xffffffffffull, 0xffffffffffffull, 0xffffffffffffffull, ~0ull
};

/* @lo, an instruction's bytes 0 to 7, with the register fields of the
 * ModRM byte at @at (1 to 6) left out as @how says. */
static IPT__INLINE uint64_t ipt__ild_memo_unreg(uint64_t lo, uint32_t at,
						uint32_t how)
{
	uint64_t modrm = (lo >> (8 * at)) & 0xff, out;

	if (how == IPT__ILD_UNREG_RM)
		out = modrm >= 0xc0 ? 0x07 : 0;
	else
		out = modrm >= 0xc0 ? 0x3f : 0x38;
	return lo & ~(out << (8 * at));
}

/* The set for the key whose first two or three bytes (@key) are given, in
 * @mode. */
static IPT__INLINE uint32_t ipt__ild_memo_set(uint64_t key,
					      enum pt_exec_mode mode)
{
	uint64_t h;

	h = (key + (uint64_t) mode * 0x9e3779b97f4a7c15ull) *
	    0xff51afd7ed558ccdull;
	return (uint32_t) (h >> (64 - IPT__ILD_MEMO_BITS));
}

/* Whether set @i of @memo has the instruction with bytes @lo and @hi in
 * @mode (plus one, @m1), and where. */
static IPT__INLINE const struct ipt__ild *
ipt__ild_memo_in(const struct ipt__ild_memo *memo, uint32_t i, uint64_t lo,
		 uint64_t hi, uint8_t m1)
{
	const struct ipt__ild_memo_entry *set = memo->set[i];
	uint32_t way;

	if (!ipt__ild_memo_bit(memo->set_used, i))
		return NULL;
	for (way = 0; way < IPT__ILD_MEMO_WAYS; ++way) {
		const struct ipt__ild_memo_entry *e = &set[way];
		uint32_t key = e->key & 0xf, at = (e->key >> 4) & 7;
		uint64_t mine = at ? ipt__ild_memo_unreg(
					     lo, at, e->key >> 7 ?
						     IPT__ILD_UNREG_RM :
						     IPT__ILD_UNREG_BOTH) :
				     lo;

		if ((mine & ipt__ild_memo_lo[key]) == e->lo &&
		    (hi & ipt__ild_memo_hi[key]) == e->hi && e->mode == m1)
			return &e->ild;
	}
	return NULL;
}

/* The set of a key whose ModRM byte at @at (zero if none to leave out)
 * has its register fields left out in @lo, the key's first bytes, in
 * @mode: by two bytes with the ModRM byte second, else by three. */
static IPT__INLINE uint32_t ipt__ild_memo_set_of(uint64_t lo, uint32_t key,
						 uint32_t at,
						 enum pt_exec_mode mode)
{
	return ipt__ild_memo_set(lo & (key == 2 || at == 1 ? 0xffff : 0xffffff),
				 mode);
}

/* What the memo has for the instruction at @raw (pt_max_insn_size bytes
 * readable) in @mode (16-, 32- or 64-bit), or NULL. */
static const struct ipt__ild *
ipt__ild_memo_find(struct ipt__ild_memo *memo, const uint8_t *raw,
		   enum pt_exec_mode mode)
{
	uint32_t m = (uint32_t) (mode - ptem_16bit);
	const struct ipt__ild *ild;
	uint64_t lo, hi;
	uint32_t at;
	uint8_t m1 = (uint8_t) (mode + 1);

	if (ipt__ild_memo_bit(memo->one_used, m * 256 + raw[0]))
		return &memo->one[m][raw[0]];
	lo = ipt__read_le_var(raw, 8, 8);
	hi = ipt__read_le_var(raw + 7, 8, 8);
	for (at = 1; at <= 2; ++at) {
		uint32_t how = (memo->unreg_used[m][raw[at - 1]] >>
				(2 * (at - 1))) & 3;

		if (!how)
			continue;
		ild = ipt__ild_memo_in(
			memo,
			ipt__ild_memo_set_of(ipt__ild_memo_unreg(lo, at, how),
					     3, at, mode),
			lo, hi, m1);
		if (ild)
			return ild;
	}
	ild = ipt__ild_memo_in(memo, ipt__ild_memo_set(lo & 0xffffff, mode),
			       lo, hi, m1);
	if (ild)
		return ild;
	return ipt__ild_memo_in(memo, ipt__ild_memo_set(lo & 0xffff, mode),
				lo, hi, m1);
}

/* Remember that Zydis decoded the instruction at @raw in @mode, whose
 * first @key bytes are its key, less the register fields of the ModRM byte
 * at @at if not zero (1 to 6, within the key) as @how says, to @ild; it
 * takes the first way of its set, the one there moves to the second. */
static void ipt__ild_memo_put(struct ipt__ild_memo *memo, const uint8_t *raw,
			      enum pt_exec_mode mode, uint32_t key,
			      uint32_t at, uint32_t how,
			      const struct ipt__ild *ild)
{
	uint64_t lo = ipt__read_le_var(raw, 8, 8);
	uint64_t hi = ipt__read_le_var(raw + 7, 8, 8);
	uint32_t m = (uint32_t) (mode - ptem_16bit);
	uint32_t way, i;
	struct ipt__ild_memo_entry *set;

	if (!key || key > ild->size || ild->size > pt_max_insn_size ||
	    at > 6 || (at && at >= key) ||
	    (at && how != IPT__ILD_UNREG_BOTH && how != IPT__ILD_UNREG_RM))
		return;
	if (at)
		lo = ipt__ild_memo_unreg(lo, at, how);
	if (at == 1 || at == 2) {
		uint8_t *used = &memo->unreg_used[m][raw[at - 1]];
		uint32_t shift = 2 * (at - 1);

		*used = (uint8_t) ((*used & ~(3u << shift)) | (how << shift));
	}
	if (key == 1) {
		i = m * 256 + raw[0];
		memo->one_used[i / 64] |= 1ull << (i % 64);
		IPT__COPY(memo->one[m][raw[0]], *ild);
		return;
	}
	i = ipt__ild_memo_set_of(lo, key, at, mode);
	set = memo->set[i];
	if (ipt__ild_memo_bit(memo->set_used, i)) {
		for (way = IPT__ILD_MEMO_WAYS - 1; way; --way)
			IPT__COPY(set[way], set[way - 1]);
	} else {
		memo->set_used[i / 64] |= 1ull << (i % 64);
		IPT_MEMSET(&set[1], 0,
			   (IPT__ILD_MEMO_WAYS - 1) * sizeof(set[1]));
	}
	set[0].lo = lo & ipt__ild_memo_lo[key];
	set[0].hi = hi & ipt__ild_memo_hi[key];
	IPT__COPY(set[0].ild, *ild);
	set[0].mode = (uint8_t) (mode + 1);
	set[0].key = (uint8_t) (key | (at << 4) |
				((at && how == IPT__ILD_UNREG_RM) << 7));
}

/* A Zydis decoder, set up for @mode if @ready; with a memo if @memo is
 * not NULL (its owner's to allocate and free). */
struct ipt__ild_zydis {
	ZydisDecoder decoder;
	uint32_t mode;
	uint32_t ready;
	struct ipt__ild_memo *memo;
};

static void ipt__ild_zydis_init(struct ipt__ild_zydis *zd)
{
	zd->ready = 0;
	zd->memo = NULL;
}

/* Set @zd up for @mode. */
static IPT__NOINLINE int ipt__ild_zydis_setup(struct ipt__ild_zydis *zd,
					      enum pt_exec_mode mode)
{
	ZydisMachineMode machine;
	ZydisStackWidth stack;

	switch (mode) {
	case ptem_unknown:
	case ptem_16bit:
		machine = ZYDIS_MACHINE_MODE_LEGACY_16;
		stack = ZYDIS_STACK_WIDTH_16;
		break;
	case ptem_32bit:
		machine = ZYDIS_MACHINE_MODE_LEGACY_32;
		stack = ZYDIS_STACK_WIDTH_32;
		break;
	case ptem_64bit:
		machine = ZYDIS_MACHINE_MODE_LONG_64;
		stack = ZYDIS_STACK_WIDTH_64;
		break;
	default:
		return -pte_bad_insn;
	}
	zd->ready = 0;
	if (ZYAN_FAILED(ZydisDecoderInit(&zd->decoder, machine, stack)) ||
	    ZYAN_FAILED(ZydisDecoderEnableMode(
		    &zd->decoder, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE)))
		return -pte_internal;
	zd->mode = (uint32_t) mode;
	zd->ready = 1;
	return 0;
}

/* Set @zd up for @mode, unless it is already. */
static IPT__INLINE int ipt__ild_zydis_mode(struct ipt__ild_zydis *zd,
					   enum pt_exec_mode mode)
{
	if (zd->ready && zd->mode == (uint32_t) mode)
		return 0;
	return ipt__ild_zydis_setup(zd, mode);
}

/* Decodes @raw, have bytes of it, in insn->mode with @zd (insn->raw is
 * left alone).  Returns 0 with insn->size and the classes set, 1 if more
 * bytes might make an instruction, -pte_bad_insn if no more bytes can. */
static int ipt__ild_decode_bytes_with(struct ipt__ild_zydis *zd,
				      struct pt_insn *insn,
				      struct ipt__insn_ext *iext,
				      const uint8_t *raw, uint8_t have)
{
	ZydisDecodedInstruction z;
	ZyanStatus zs;
	struct ipt__ild ild;
	struct ipt__ild_memo *memo = NULL;
	int status;

	if (have > pt_max_insn_size)
		have = pt_max_insn_size;
	if (zd->memo && have == pt_max_insn_size &&
	    (insn->mode == ptem_16bit || insn->mode == ptem_32bit ||
	     insn->mode == ptem_64bit))
		memo = zd->memo;
	if (memo) {
		const struct ipt__ild *known;

		known = ipt__ild_memo_find(memo, raw, insn->mode);
		if (known) {
			IPT__COPY(ild, *known);
			goto classify;
		}
	}

	status = ipt__ild_zydis_mode(zd, insn->mode);
	if (status < 0)
		return status;

	zs = ZydisDecoderDecodeInstruction(&zd->decoder, NULL, raw, have, &z);
	if (ZYAN_SUCCESS(zs)) {
		ipt__ild_from_zydis(&ild, &z);
		if (insn->mode == ptem_unknown &&
		    (z.attributes & ZYDIS_ATTRIB_HAS_MODRM))
			ild.size = (uint8_t) (ild.size - z.raw.disp.size / 8 -
				((z.attributes & ZYDIS_ATTRIB_HAS_SIB) ? 1 : 0));
		if (memo) {
			uint32_t how, at = ipt__ild_key_unreg(&z, &how);

			ipt__ild_memo_put(memo, raw, insn->mode,
					  ipt__ild_key_size(&z), at, how,
					  &ild);
		}
	} else {
		status = ipt__ild_late(&ild, raw, have, insn->mode);
		if (status == 0)
			return have < pt_max_insn_size ? 1 : -pte_bad_insn;
		if (status < 0) {
			if (zs == ZYDIS_STATUS_NO_MORE_DATA &&
			    have < pt_max_insn_size)
				return 1;
			return -pte_bad_insn;
		}
	}

classify:
	status = ipt__ild_classify(insn, iext, raw, &ild);
	if (status < 0)
		return status;
	insn->size = ild.size;
	return 0;
}

static IPT__NOINLINE int ipt__ild_decode_bytes(struct pt_insn *insn,
					       struct ipt__insn_ext *iext,
					       uint8_t have)
{
	struct ipt__ild_zydis zd;

	ipt__ild_zydis_init(&zd);
	return ipt__ild_decode_bytes_with(&zd, insn, iext, insn->raw, have);
}

static IPT__UNUSED int ipt__ild_decode_with(struct ipt__ild_zydis *zd,
					    struct pt_insn *insn,
					    struct ipt__insn_ext *iext)
{
	int status;

	if (!zd || !insn || !iext)
		return -pte_internal;
	status = ipt__ild_decode_bytes_with(zd, insn, iext, insn->raw,
					    insn->size);
	return status > 0 ? -pte_bad_insn : status;
}

static IPT__UNUSED int ipt__ild_decode(struct pt_insn *insn,
				       struct ipt__insn_ext *iext)
{
	int status;

	if (!insn || !iext)
		return -pte_internal;
	status = ipt__ild_decode_bytes(insn, iext, insn->size);
	return status > 0 ? -pte_bad_insn : status;
}

/* ipt__insn_decode with @zd. */
static int ipt__insn_decode_with(struct ipt__ild_zydis *zd,
				 struct pt_insn *insn,
				 struct ipt__insn_ext *iext,
				 struct pt_image *image,
				 const struct pt_asid *asid)
{
	int size, isid, status;
	uint8_t have;

	if (!insn || !iext)
		return -pte_internal;

	insn->truncated = 0;
	size = ipt__image_read(image, &insn->isid, insn->raw,
			       sizeof(insn->raw), asid, insn->ip);
	if (size < 0)
		return size;
	if (size > (int) sizeof(insn->raw))
		size = (int) sizeof(insn->raw);
	have = (uint8_t) size;
	insn->size = have;

	for (;;) {
		status = ipt__ild_decode_bytes_with(zd, insn, iext, insn->raw,
						    have);
		if (status <= 0) {
			/* Decoded from more than one read: the instruction
			 * crosses the end of what the first read found, e.g.
			 * a section boundary.  isid stays the first byte's. */
			if (!status && have != (uint8_t) size)
				insn->truncated = 1;
			return status;
		}

		/* Too few bytes: read the rest where the first read stopped. */
		if (have >= sizeof(insn->raw))
			return -pte_bad_insn;
		status = ipt__image_read(image, &isid, &insn->raw[have],
					 (uint16_t) (sizeof(insn->raw) - have),
					 asid, insn->ip + have);
		if (status <= 0) {
			if (!status)
				return -pte_internal;
			return status == -pte_nomap ? -pte_bad_insn : status;
		}
		if (status > (int) (sizeof(insn->raw) - have))
			status = (int) (sizeof(insn->raw) - have);
		have = (uint8_t) (have + status);
		insn->size = have;
	}
}

static IPT__UNUSED int ipt__insn_decode(struct pt_insn *insn,
					struct ipt__insn_ext *iext,
					struct pt_image *image,
					const struct pt_asid *asid)
{
	struct ipt__ild_zydis zd;

	ipt__ild_zydis_init(&zd);
	return ipt__insn_decode_with(&zd, insn, iext, image, asid);
}

static IPT__UNUSED int ipt__insn_changes_cpl(const struct pt_insn *insn,
					     const struct ipt__insn_ext *iext)
{
	(void) insn;
	if (!iext)
		return 0;
	switch (iext->iclass) {
	case IPT__INST_INT:
	case IPT__INST_INT3:
	case IPT__INST_INT1:
	case IPT__INST_INTO:
	case IPT__INST_IRET:
	case IPT__INST_SYSCALL:
	case IPT__INST_SYSENTER:
	case IPT__INST_SYSEXIT:
	case IPT__INST_SYSRET:
		return 1;
	default:
		return 0;
	}
}

static IPT__UNUSED int ipt__insn_changes_cr3(const struct pt_insn *insn,
					     const struct ipt__insn_ext *iext)
{
	(void) insn;
	return iext && iext->iclass == IPT__INST_MOV_CR3;
}

static IPT__UNUSED int ipt__insn_is_branch(const struct pt_insn *insn,
					   const struct ipt__insn_ext *iext)
{
	(void) iext;
	if (!insn)
		return 0;
	switch (insn->iclass) {
	case ptic_call:
	case ptic_return:
	case ptic_jump:
	case ptic_cond_jump:
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
	case ptic_indirect:
		return 1;
	case ptic_unknown: case ptic_other: case ptic_ptwrite:
		break;
	}
	return 0;
}

static IPT__UNUSED int ipt__insn_is_far_branch(const struct pt_insn *insn,
					       const struct ipt__insn_ext *iext)
{
	(void) iext;
	if (!insn)
		return 0;
	switch (insn->iclass) {
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
		return 1;
	case ptic_unknown: case ptic_other: case ptic_call: case ptic_return:
	case ptic_jump: case ptic_cond_jump: case ptic_ptwrite:
	case ptic_indirect:
		break;
	}
	return 0;
}

/* A PIP packet binds to MOV CR3, VMLAUNCH, VMRESUME and far branches. */
static IPT__UNUSED int ipt__insn_binds_to_pip(const struct pt_insn *insn,
					      const struct ipt__insn_ext *iext)
{
	if (!iext)
		return 0;
	switch (iext->iclass) {
	case IPT__INST_MOV_CR3:
	case IPT__INST_VMLAUNCH:
	case IPT__INST_VMRESUME:
		return 1;
	default:
		return ipt__insn_is_far_branch(insn, iext);
	}
}

/* A VMCS packet binds to VMPTRLD, VMLAUNCH, VMRESUME and far branches. */
static IPT__UNUSED int ipt__insn_binds_to_vmcs(const struct pt_insn *insn,
					       const struct ipt__insn_ext *iext)
{
	if (!iext)
		return 0;
	switch (iext->iclass) {
	case IPT__INST_VMPTRLD:
	case IPT__INST_VMLAUNCH:
	case IPT__INST_VMRESUME:
		return 1;
	default:
		return ipt__insn_is_far_branch(insn, iext);
	}
}

static IPT__UNUSED int ipt__insn_is_ptwrite(const struct pt_insn *insn,
					    const struct ipt__insn_ext *iext)
{
	(void) iext;
	return insn && insn->iclass == ptic_ptwrite;
}

/* Returns from an interrupt or a system call. */
static IPT__UNUSED int ipt__insn_is_iret(const struct pt_insn *insn,
					 const struct ipt__insn_ext *iext)
{
	(void) insn;
	if (!iext)
		return 0;
	switch (iext->iclass) {
	case IPT__INST_IRET:
	case IPT__INST_SYSRET:
	case IPT__INST_SYSEXIT:
	case IPT__INST_ERETS:
	case IPT__INST_ERETU:
		return 1;
	default:
		return 0;
	}
}

static IPT__UNUSED int ipt__insn_is_vmentry(const struct pt_insn *insn,
					    const struct ipt__insn_ext *iext)
{
	(void) insn;
	return iext && (iext->iclass == IPT__INST_VMLAUNCH ||
			iext->iclass == IPT__INST_VMRESUME);
}

static IPT__UNUSED int ipt__insn_is_uiret(const struct pt_insn *insn,
					  const struct ipt__insn_ext *iext)
{
	(void) insn;
	return iext && iext->iclass == IPT__INST_UIRET;
}

static IPT__UNUSED int ipt__insn_is_swint(const struct pt_insn *insn,
					  const struct ipt__insn_ext *iext)
{
	(void) insn;
	if (!iext)
		return 0;
	switch (iext->iclass) {
	case IPT__INST_INT:
	case IPT__INST_INT3:
	case IPT__INST_INT1:
	case IPT__INST_INTO:
		return 1;
	default:
		return 0;
	}
}

static IPT__UNUSED int ipt__insn_is_syscall(const struct pt_insn *insn,
					    const struct ipt__insn_ext *iext)
{
	(void) insn;
	return iext && (iext->iclass == IPT__INST_SYSCALL ||
			iext->iclass == IPT__INST_SYSENTER);
}

/* EIP is 32 bits wide: in 16- and 32-bit mode, IPs wrap at 4 GiB.  In
 * 64-bit mode and in an unknown mode they do not, as in libipt. */
static IPT__UNUSED uint64_t ipt__ip_in_mode(enum pt_exec_mode mode,
					    uint64_t ip)
{
	return mode == ptem_16bit || mode == ptem_32bit ? ip & 0xffffffffull :
							  ip;
}

/* The IP after insn when the code alone says it: the next instruction, or
 * the target of a direct near call or jump.  Conditional branches, returns,
 * indirect and far transfers, and JMPABS (its target comes in a TIP) need
 * trace: -pte_bad_query. */
static IPT__UNUSED int ipt__insn_next_ip(uint64_t *pip,
					 const struct pt_insn *insn,
					 const struct ipt__insn_ext *iext)
{
	uint64_t ip;

	if (!insn || !iext)
		return -pte_internal;

	ip = insn->ip + insn->size;
	switch (insn->iclass) {
	case ptic_ptwrite:
	case ptic_other:
		break;
	case ptic_jump:
		if (iext->iclass == IPT__INST_JMPABS)
			return -pte_bad_query;
		if (!iext->variant.branch.is_direct)
			return -pte_bad_query;
		ip += (uint64_t) iext->variant.branch.displacement;
		break;
	case ptic_call:
		if (!iext->variant.branch.is_direct)
			return -pte_bad_query;
		ip += (uint64_t) iext->variant.branch.displacement;
		break;
	case ptic_unknown:
		return -pte_bad_insn;
	case ptic_return: case ptic_cond_jump: case ptic_far_call:
	case ptic_far_return: case ptic_far_jump: case ptic_indirect:
		return -pte_bad_query;
	}

	if (pip)
		*pip = ipt__ip_in_mode(insn->mode, ip);
	return 0;
}

static IPT__UNUSED int
ipt__insn_range_is_contiguous(uint64_t begin, uint64_t end,
			      enum pt_exec_mode mode, struct pt_image *image,
			      const struct pt_asid *asid, size_t nsteps)
{
	struct ipt__insn_ext iext;
	struct pt_insn insn;

	IPT_MEMSET(&insn, 0, sizeof(insn));
	insn.mode = mode;
	insn.ip = begin;

	while (insn.ip != end) {
		int errcode;

		if (!nsteps--)
			return 0;
		errcode = ipt__insn_decode(&insn, &iext, image, asid);
		if (errcode < 0)
			return errcode;
		errcode = ipt__insn_next_ip(&insn.ip, &insn, &iext);
		if (errcode < 0)
			return errcode;
	}
	return 1;
}

/* ==== >>blk  block decoder ===============================================
 * Follows the flow of execution from events and code, a block at a time.
 *
 * A block is a run of instructions that can be decoded without trace: it
 * ends at the first instruction whose successor needs trace (a conditional
 * branch, an indirect or far branch, a return), when the block would cross
 * image sections, when an event binds inside it, or when its 16-bit
 * instruction count would overflow.  The decoder keeps the current event
 * of the event decoder in hand and walks the code up to the place that
 * event binds to; events are indicated (pts_event_pending) before or after
 * the block they belong to, with the same rules and the same error codes
 * as libipt's block decoder.
 *
 * Speed comes from three caches, all owned by the decoder:
 *
 *   - the instruction cache maps (address space, mode, IP) to a decoded
 *     instruction, so that neither the image's read callback nor Zydis is
 *     asked twice for the same instruction while runs are being recorded
 *     or events walk the code; it has a fixed number of entries;
 *   - the run cache maps (address space, mode, IP) to the straight-line run
 *     of instructions starting there: how many, where the last one is, and
 *     what it needs (a TNT bit, a TIP, a return-stack pop, or nothing for a
 *     direct call or jump).  Steady-state decoding jumps from run to run.
 *     For the instruction decoder each run also keeps its bytes and, per
 *     instruction, size and class, so that handing out instructions reads
 *     neither the image nor the instruction cache;
 *   - the length map keeps the sizes of the ordinary instructions runs were
 *     recorded from, one slot per code byte, so that recording a run
 *     again mostly asks Zydis only for the instruction that ends it;
 *     and Zydis' answers are remembered by the bytes that decide an
 *     instruction, all but its displacement and immediate (see >>ild),
 *     so that code seen for the first time asks it only for instructions
 *     unlike any decoded before.
 *
 * The run cache is four-way set associative with 32-byte entries, a set to
 * two cache lines; an instruction decoder's sets carry the runs' text in
 * the next four.  A run's set follows its code: 16 bytes of code to a
 * set, the sets of a KiB of code one after the other, so that the runs of
 * a loop share cache lines and pages (see ipt__blk_set_of_salted).  A
 * lookup that records a run found in a later way moves it to the first,
 * so that the runs in use stay in the first ways.  Sets come in pairs
 * (2k, 2k + 1): a run pushed out of a full set moves to an empty way of
 * the other or, that one full too, of one of three sets hashed from its
 * IP alone, where ipt__blk_run_find looks before recording it anew, so
 * that busy sets, and code with more runs than a pair of sets holds, do
 * not lose their runs while the table has room.  It starts small and
 * doubles whenever it has had to push
 * runs out of full sets for a 128th of its entries, up to a limit (IPT_BLK_CACHE_LIMIT or
 * ipt_blk_set_cache_limit).  Growing keeps the runs: in place with the
 * allocator's realloc; else by moving them into the new table
 * while old and new fit the limit together (not with text), and otherwise
 * starts it over empty, the old table freed first: together they never
 * take more than the limit.  One that cannot grow keeps its size if memory
 * allows.
 *
 * Instruction cache entries are tagged with an epoch, runs with a context
 * number that stands for (address space, mode, epoch).  Changing the image,
 * or its generation counter moving (ipt_image_invalidate, adding or removing
 * sections), starts a new epoch and so drops every entry at once.
 *
 * Internal interface (for >>insn; struct pt_block_decoder is complete so
 * that it can be embedded):
 *
 *   int  ipt__blk_decoder_init(struct pt_block_decoder *decoder,
 *                              const struct pt_config *config,
 *                              uint32_t want_text);
 *        want_text: the runs keep their bytes and instruction sizes
 *   void ipt__blk_decoder_fini(struct pt_block_decoder *decoder);
 *   struct ipt_allocator *ipt__blk_allocator(struct pt_block_decoder *);
 *        the allocator the decoder (and its embedder) came from
 *   void ipt__blk_free_with(struct pt_block_decoder *, void *outer,
 *                           size_t size);
 *        free the decoder and the object holding it
 *   int  ipt__blk_next_own(struct pt_block_decoder *, struct pt_block *);
 *        pt_blk_next into a struct pt_block of this file's size
 *   int  ipt__blk_cache_current(const struct pt_block_decoder *);
 *   void ipt__blk_cache_sync(struct pt_block_decoder *);
 *        whether the caches describe the current image; make them so
 *   uint32_t ipt__blk_epoch(const struct pt_block_decoder *);
 *        changes whenever cached runs and their text become stale
 *   const struct ipt__blk_trail *
 *        ipt__blk_trail_at(const struct pt_block_decoder *, uint32_t at);
 *        the at-th run the last block went through whole, or NULL
 *   const struct ipt__blk_run *
 *        ipt__blk_run_find(struct pt_block_decoder *, uint64_t ip,
 *                          enum pt_exec_mode mode,
 *                          const struct ipt__blk_text **text);
 *        the run at ip (NULL if none), and its text
 *   int  ipt__blk_decode(struct pt_block_decoder *, struct pt_insn *,
 *                        struct ipt__insn_ext *);
 *        one instruction through the instruction cache
 *   int  ipt__blk_decode_watched(struct pt_block_decoder *, struct pt_insn *,
 *                                struct ipt__insn_ext *);
 *        the same as a call of its own: missing memory is its fault
 *   int  ipt__blk_fault(const struct pt_block_decoder *);
 *        whether the last call stopped at missing memory: 0 no, 1 walking
 *        the code (before the instruction it could not read), 2 looking
 *        ahead of the flow (ipt_blk_set_wait_for_code)
 *
 * and for >>cov:
 *
 *   int  ipt__blk_walk(struct pt_block_decoder *,
 *                      const struct ipt__blk_walk_ops *, void *context,
 *                      int *status);
 *        pt_blk_next's run-to-run walk, reporting branches and where the
 *        flow goes (see "walking runs for coverage")
 *   int  ipt__blk_trace_ended(const struct pt_block_decoder *);
 *   uint64_t ipt__blk_trace_size(const struct pt_block_decoder *);
 *   int  ipt__blk_trace_more(const struct pt_block_decoder *);
 *   void ipt__blk_set_run_hook(struct pt_block_decoder *, hook, context);
 *        a hook told of each run recorded in the run cache
 *   void ipt__blk_set_quiet_psb(struct pt_block_decoder *, int on);
 *        for a caller that reports no events: a PSB+ that only restates
 *        the state with tracing off is taken whole, and counted
 *   enum pt_packet_type ipt__blk_tnt_ahead(const struct pt_block_decoder *,
 *                                          const uint8_t **pos,
 *                                          uint64_t *payload,
 *                                          uint32_t *size, int tip_free);
 *   int  ipt__blk_tnt_fill(const struct pt_block_decoder *,
 *                          const uint8_t **pos, struct ipt__tnt_window *,
 *                          uint32_t room,
 *                          struct ipt__tnt_packet *, int tip_free);
 *   int  ipt__blk_tnt8_next(const struct pt_block_decoder *,
 *                           const uint8_t *pos);
 *   const struct ipt_last_ip *
 *        ipt__blk_last_ip(const struct pt_block_decoder *);
 *   void ipt__blk_tnt_taken(struct pt_block_decoder *, const uint8_t *pos,
 *                           uint64_t payload, uint32_t left,
 *                           uint32_t icnt, const struct ipt_last_ip *ip);
 *        for the walk's tnt hook: TNT and TIP packets read ahead, and
 *        taken
 *   void ipt__blk_set_icache_bits(struct pt_block_decoder *, uint32_t bits);
 *        beside a run cache, an instruction cache of 1 << bits entries
 *   int  ipt__blk_take_events(struct pt_block_decoder *,
 *                             void (*take)(void *, const struct pt_event *),
 *                             void *context, int *status);
 *        pt_blk_event for a caller that reports no events, while events
 *        are pending
 *
 * and for >>seg:
 *
 *   int  ipt__blk_same(const struct pt_block_decoder *a,
 *                      const struct pt_block_decoder *b);
 *        between two calls, will a go on as b does: 1, 2 if only b's
 *        return stack is a top part of a's, 0 if not certain (>>seg) */

/* The instruction cache's size, as a power of two number of entries. */
#ifndef IPT_BLK_ICACHE_BITS
#define IPT_BLK_ICACHE_BITS 11
#endif
/* The run cache's memory bound in bytes, text included. */
#ifndef IPT_BLK_CACHE_LIMIT
#define IPT_BLK_CACHE_LIMIT (2u << 20)
#endif
/* Every shortcut of the block and instruction decoders starts at a run
 * from the run cache; without runs, each block and instruction takes the
 * general path, one instruction at a time.  The status events of a PSB+
 * go the short way too (ipt__evt_next_status, ipt__blk_take_events);
 * that build takes them the general way, one pt_evt_next() and one
 * pt_blk_event() each. */
#ifdef IPT_BLK_GENERAL_PATH
#define IPT__BLK_RUNS 0
#define IPT__BLK_SHORT 0
#else
#define IPT__BLK_RUNS 1
#define IPT__BLK_SHORT 1
#endif

/* ---- return stack ----
 * Near calls push their return address; a compressed return (a taken TNT
 * bit on a RET) pops it.  The stack wraps: the oldest entry is dropped when
 * it is full, as the hardware's does.  One slot stays empty to tell a full
 * stack from an empty one. */

enum { IPT__RETSTACK_SIZE = 64 };

struct ipt__retstack {
	uint64_t stack[IPT__RETSTACK_SIZE + 1];
	uint8_t top;
	uint8_t bottom;
};

static void ipt__retstack_init(struct ipt__retstack *rs)
{
	rs->top = 0;
	rs->bottom = 0;
}

/* The slot after @i, and before it, as the stack wraps. */
static IPT__INLINE uint8_t ipt__retstack_next(uint8_t i)
{
	return (uint8_t) (i == IPT__RETSTACK_SIZE ? 0 : i + 1);
}

static IPT__INLINE uint8_t ipt__retstack_prev(uint8_t i)
{
	return (uint8_t) (i ? i - 1 : IPT__RETSTACK_SIZE);
}

/* Push @ip on @rs whose top and bottom are *@top and *@bottom, moved as
 * the push moves them: for a caller that keeps them in locals through
 * several operations. */
static IPT__INLINE void ipt__retstack_push_at(struct ipt__retstack *rs,
					      uint8_t *top, uint8_t *bottom,
					      uint64_t ip)
{
	rs->stack[*top] = ip;
	*top = ipt__retstack_next(*top);
	if (*top == *bottom)
		*bottom = ipt__retstack_next(*bottom);
}

static IPT__INLINE void ipt__retstack_push(struct ipt__retstack *rs,
					   uint64_t ip)
{
	uint8_t top = rs->top, bottom = rs->bottom;

	ipt__retstack_push_at(rs, &top, &bottom, ip);
	rs->top = top;
	rs->bottom = bottom;
}

static IPT__INLINE int ipt__retstack_empty(const struct ipt__retstack *rs)
{
	return rs->top == rs->bottom;
}

/* Pop into *@ip from @rs whose top and bottom are *@top and @bottom (see
 * ipt__retstack_push_at). */
static IPT__INLINE int ipt__retstack_pop_at(const struct ipt__retstack *rs,
					    uint8_t *top, uint8_t bottom,
					    uint64_t *ip)
{
	if (*top == bottom)
		return -pte_retstack_empty;

	*top = ipt__retstack_prev(*top);
	*ip = rs->stack[*top];
	return 0;
}

static int ipt__retstack_pop(struct ipt__retstack *rs, uint64_t *ip)
{
	uint8_t top = rs->top;
	int status = ipt__retstack_pop_at(rs, &top, rs->bottom, ip);

	rs->top = top;
	return status;
}

/* ---- caches ---- */

/* One decoded instruction.  The IP and mode are in @insn. */
struct ipt__blk_icache_entry {
	uint64_t cr3;
	uint64_t vmcs;
	uint32_t epoch;
	struct pt_insn insn;
	struct ipt__insn_ext iext;
};

/* What the last instruction of a cached run needs to continue. */
enum ipt__run_kind {
	/* A conditional branch: one TNT bit. */
	ipt__run_cond,
	/* A near return: a TNT bit (compressed) or a TIP. */
	ipt__run_ret,
	/* A near indirect call: push the return address, then a TIP. */
	ipt__run_icall,
	/* Any other branch that needs a TIP: indirect jumps, JMPABS, far
	 * transfers. */
	ipt__run_indirect,
	/* A direct near call: push (unless it calls the next instruction,
	 * the PIC idiom) and go on at the target. */
	ipt__run_dcall,
	/* A direct near jump: go on at the target. */
	ipt__run_djump,
	/* An ordinary instruction: go on at the next one.  The run stopped
	 * because the next instruction lies in another section, could not be
	 * decoded in one piece, or the run grew too long. */
	ipt__run_next
};

/* A straight-line run of instructions from @ip to @ip + @len, where its
 * last instruction starts.  All of them lie in the section @isid, all in
 * the mode of the context @ctx.  32 bytes, two to a set. */
struct ipt__blk_run {
	uint64_t ip;
	/* The context number; zero for an empty entry. */
	uint32_t ctx;
	/* The branch displacement of the last instruction, for the direct and
	 * conditional kinds. */
	int32_t disp;
	int32_t isid;
	uint16_t ninsn;
	uint16_t len;
	uint8_t kind;
	uint8_t iclass;
	uint8_t isize;
	/* Every instruction of the run is in libipt's block cache (see
	 * "libipt's block boundaries"), or the run is read through the
	 * callback, where libipt keeps no such cache. */
	uint8_t warm;
	uint8_t reserved[4];
};

/* The bytes of a run and, per instruction, its size (low nibble) and class
 * (high nibble), for the instruction decoder.  Runs recorded for it end
 * when their text is full.  Behind the code are zeros, so that a fixed
 * pt_max_insn_size bytes can be copied from any instruction. */
enum { IPT__TEXT_INSNS = 12, IPT__TEXT_BYTES = 36 };

struct ipt__blk_text {
	uint8_t code[IPT__TEXT_BYTES + pt_max_insn_size + 1];
	uint8_t info[IPT__TEXT_INSNS];
};

/* A run the current block went through whole, with its text, for the
 * instruction decoder: it starts at @ip, has @ninsn instructions and is
 * followed by @next, if the code says where that is. */
enum { IPT__BLK_TRAIL = 8 };

struct ipt__blk_trail {
	uint64_t ip;
	uint64_t next;
	uint32_t ninsn;
	struct ipt__blk_text text;
};

/* The address spaces and modes the decoder has recently been in, with the
 * context number their runs are tagged with. */
enum { IPT__BLK_NCTX = 8 };

struct ipt__blk_ctx {
	uint64_t cr3;
	uint64_t vmcs;
	uint32_t mode;
	uint32_t id;
};

/* The longest run the cache records.  Longer straight lines are chained:
 * the run ends in ipt__run_next and the next run continues. */
enum { IPT__RUN_MAX = 0x400 };

/* A place where not even one instruction makes a run (ipt__blk_run_fill),
 * with the image read in full: the IP and context number (zero: none).
 * A few are kept, by IP, so that code looping through such places (a
 * truncated instruction, say) is not read and decoded again at every
 * step; the context number ties each to its epoch. */
enum { IPT__BLK_NORUN = 4 };

struct ipt__blk_norun {
	uint64_t ip;
	uint32_t ctx;
};

/* ---- libipt's block boundaries ----
 * libipt's block decoder keeps a cache per file section that says, for
 * each instruction it has been through, where the straight line from there
 * goes.  It fills the cache as it goes, and filling ends the block: after
 * a near direct call, after a backward near direct jump, and after 0x400
 * instructions filled in a row.  Once an instruction is in the cache,
 * blocks go on past it.  So the first time through, a block ends after a
 * direct call; later it does not.  A block from a file section also ends
 * where the code leaves that section's mapping, before the next
 * instruction is even read.  In an unknown execution mode it caches
 * nothing, so there every time through is the first.
 *
 * Users see these boundaries (pt_block.ninsn, end_ip, --stat:blocks), so
 * the block decoder keeps a record of the instructions libipt would have
 * cached, by section and offset, and ends its blocks where libipt does.
 * Code read through the callback has no section and no such cache: there
 * blocks run on, in libipt as here.  An instruction decoder keeps it too:
 * it hands out the instructions of these blocks, and the offset and time
 * it reports before each move on block by block.  libipt's block decoder
 * gives a section its cache when it looks the section up; its instruction
 * decoder looks up the section of each instruction in the same one-entry
 * cache of mapped sections, without giving it a cache, so a section it
 * looked up first has none until the block decoder looks it up again.
 * libipt keeps its cache with the section, shared by all decoders, and
 * drops it when nothing maps the section any longer (an image section
 * cache keeps it, as in libipt's ptxed); ipt.h keeps the record per
 * decoder, for its lifetime. */

/* libipt's fill steps: the most instructions it caches in a row. */
enum { IPT__FILL_STEPS = 0x400 };

/* The record holds a bit per byte offset of a section, 64 offsets to an
 * entry: code comes in runs, so that an entry holds many instructions. */
enum { IPT__SEEN_SHIFT = 6 };

struct ipt__blk_seen {
	const void *section;
	/* The offset of its first byte, shifted right by IPT__SEEN_SHIFT. */
	uint64_t chunk;
	/* Bit n: the instruction at the chunk's byte n is cached. */
	uint64_t bits;
};

/* An instruction added to the record. */
struct ipt__blk_seen_note {
	const void *section;
	uint64_t offset;
};

/* Bits of pt_block_decoder.bound: an event of that kind already bound to
 * the postponed instruction, so the next one of its kind cannot. */
enum {
	IPT__BOUND_PAGING = 1 << 0,
	IPT__BOUND_VMCS = 1 << 1,
	IPT__BOUND_PTWRITE = 1 << 2,
	IPT__BOUND_IRET = 1 << 3,
	IPT__BOUND_VMENTRY = 1 << 4,
	IPT__BOUND_UIRET = 1 << 5,
	IPT__BOUND_SWINTR = 1 << 6,
	IPT__BOUND_SYSCALL = 1 << 7
};

struct pt_block_decoder {
	/* The event decoder, and the event it gave us last.  The event stays
	 * current until the block decoder has reached the place it binds to
	 * and the user has fetched it (or, for TNT and TIP, used it up). */
	struct pt_event_decoder evdec;
	struct pt_event event;

	/* Guest or host, as of the events taken (ipt_blk_in_guest). */
	struct ipt__vm_side vm;

	/* The CR3 the filter keeps (ipt_blk_set_cr3_filter), pt_asid_no_cr3
	 * for all; @held as @has_held says. */
	uint64_t cr3_filter;
	struct pt_event held;

	/* The flags the user configured (the event decoder gets its own). */
	struct pt_conf_flags flags;

	/* The image: the user's, or our own empty one. */
	struct pt_image *image;
	struct pt_image *default_image;

	/* The current address space. */
	struct pt_asid asid;

	struct ipt__retstack retstack;

	/* The instruction the last event bound to, while further events may
	 * bind to it too; valid if @process_insn.  We proceed past it once
	 * they are all indicated. */
	struct pt_insn insn;
	struct ipt__insn_ext iext;

	/* The start IP of the next block; with tracing disabled, where we
	 * expect tracing to resume. */
	uint64_t ip;

	/* Time as of the last event we consumed. */
	uint64_t tsc;
	uint32_t lost_mtc;
	uint32_t lost_cyc;

	uint32_t cbr;

	/* How far the decoder had got in the trace (sync offset and offset)
	 * when pt_blk_resync last found it further on than before, and how
	 * often it has been called since without the decoder getting
	 * further.  Untouched by resets, so that resynchronizing cannot go
	 * round in circles. */
	uint64_t resync_sync;
	uint64_t resync_at;
	uint32_t resync_stalls;

	/* Instructions since the last TRIG anchor IP, if @has_icnt. */
	uint32_t icnt;

	enum pt_exec_mode mode;

	/* The event decoder's last status; negative once it failed. */
	int status;

	/* IPT__BOUND_* bits for @insn. */
	uint32_t bound;

	/* The image's miss count when the current pt_blk_next call began,
	 * and, with @has_fault, the memory that call stopped at. */
	uint32_t misses;
	struct ipt__miss fault;

	uint32_t enabled:1;
	uint32_t speculative:1;
	uint32_t has_tsc:1;
	uint32_t has_cbr:1;
	uint32_t has_icnt:1;
	uint32_t process_insn:1;
	/* The event bound to the postponed instruction by its IP named an
	 * instruction of another kind: proceeding past it fails with
	 * -pte_bad_query, as in libipt's block decoder. */
	uint32_t mismatch:1;
	uint32_t has_fault:1;
	/* Set by ipt_blk_set_wait_for_code. */
	uint32_t wait_for_code:1;
	/* Set by ipt_blk_set_vm_tolerant. */
	uint32_t vm_tolerant:1;
	/* The CR3 filter (ipt_blk_set_cr3_filter) skips trace: CR3 is not
	 * the filter's, or it is again but no IP has come since. */
	uint32_t dark:1;
	/* The next event is the filter's disable, as the decoder leaves the
	 * filter's address space with tracing enabled. */
	uint32_t dark_leave:1;
	/* The current event is the filter's (a disable or an enable where
	 * the decoder stands, or the event that ends the skip): it binds
	 * right here, without walking code. */
	uint32_t filter_event:1;
	/* @held is the event after the current one, which the filter put
	 * behind its enable. */
	uint32_t has_held:1;
	/* The fault was met looking ahead of the flow, not walking it: what
	 * follows the block's last instruction is not known yet. */
	uint32_t fault_ahead:1;
	/* The event decoder has run out of trace (@status): @end_ip and
	 * @end_rs are where the flow stood then and its return stack, and
	 * @ahead counts the instructions reported since
	 * (ipt_blk_get_start_state). */
	uint32_t has_end:1;
	/* It ran out while events were bound to an instruction: @has_end
	 * waits until the decoder has proceeded past it. */
	uint32_t end_deferred:1;

	/* Where the caches and the default image come from: the allocator
	 * the decoder (or the instruction decoder holding it) was made with.
	 * Set before ipt__blk_decoder_init. */
	struct ipt_allocator allocator;

	uint64_t end_ip;
	uint32_t end_icnt;
	struct ipt__retstack end_rs;
	uint32_t ahead;
	/* The last instruction of the block when the trace ran out, if
	 * @has_end_last; as ipt_start_state.last_insn_ip. */
	uint64_t end_last;
	uint32_t has_end_last;
	/* Started with a last instruction (ipt_blk_start_at): until the first
	 * block, a TSX abort checks BDM64 against it. */
	uint64_t start_last;
	uint32_t has_start_last;
	/* The start state's status events not taken yet: they restate the
	 * state and give no TRIG anchor. */
	uint32_t start_status;
	/* The block the current pt_blk_next call builds, and how many
	 * instructions it held when the trace ran out. */
	const struct pt_block *cur_block;
	uint32_t end_ninsn;

	/* The caches and what they are valid for.  The instruction cache
	 * has 1 << @ibits entries; beside a run cache, 1 << @ibits_runs. */
	struct ipt__blk_icache_entry *icache;
	uint32_t ibits;
	uint32_t ibits_runs;
	const struct pt_image *cache_image;
	uint64_t cache_gen;
	uint32_t epoch;

	/* The run cache: @rsets sets of four runs at @runs, @rstride bytes
	 * apart, aligned within the allocation @rmem; with @want_text, each
	 * set's runs are followed by their text.  @rfills counts runs pushed out since the table
	 * last grew; @rlimit bounds its bytes. */
	struct ipt__blk_run *runs;
	void *rmem;
	size_t rmem_size;
	uint32_t rsets;
	uint32_t rstride;
	uint32_t rfills;
	/* Whether the sets are paired (ipt__blk_runs_sized). */
	uint32_t rpairs;
	uint64_t rlimit;
	uint32_t want_text;

	/* The length map (NULL until first needed): 1 << @lmap_bits slots
	 * for pieces of code, each NULL until first needed; @lmap_used of
	 * them hold one. */
	struct ipt__blk_lmap **lmap;
	uint32_t lmap_bits;
	uint32_t lmap_used;

	/* Zydis, as runs are recorded: set up again only when the mode
	 * changes. */
	struct ipt__ild_zydis zd;

	/* Where a run could not be recorded (see ipt__blk_run_miss). */
	struct ipt__blk_norun norun[IPT__BLK_NORUN];

	/* With @want_text, the first @ntrail runs of the last block. */
	uint32_t ntrail;
	struct ipt__blk_trail trail[IPT__BLK_TRAIL];

	/* The current context: its mode and number, valid while @ctx_id is
	 * not zero (whoever changes @asid clears it); and the recent ones. */
	uint32_t ctx_mode;
	uint32_t ctx_id;
	uint32_t ctx_next;
	uint32_t nctx;
	struct ipt__blk_ctx ctx[IPT__BLK_NCTX];
	/* ipt__blk_ctx_salt(@ctx_id), for the quickest look-up. */
	uint64_t ctx_salt;

	/* The instructions libipt would have cached: an
	 * open-addressed table of @seen_cap entries, @nseen in use; the
	 * offsets of the @nchain not yet cached that the current block
	 * walked in a row (@chain has room for IPT__FILL_STEPS); and the
	 * file section the current block started in (no @sec.section if
	 * none), valid while @sec_epoch is @epoch and @sec_asid @asid. */
	struct ipt__blk_seen *seen;
	uint32_t seen_cap;
	uint32_t nseen;
	uint64_t *chain;
	uint32_t nchain;
	uint32_t sec_epoch;
	struct pt_asid sec_asid;
	struct ipt__image_place sec;
	/* While @guards calls that may be undone are under way (streaming,
	 * see "undoing a call"), the instructions they added to @seen:
	 * @nadded of room for @added_cap. */
	struct ipt__blk_seen_note *added;
	uint32_t nadded;
	uint32_t added_cap;
	uint32_t guards;
	/* If set, told of each run recorded in the run cache: its first IP
	 * and the IP of its last instruction. */
	void (*run_hook)(void *context, uint64_t begin, uint64_t last);
	void *run_hook_context;
	/* If set, a PSB+ that only restates the state while tracing is off
	 * is taken whole (ipt__blk_set_quiet_psb) when it is read, maybe
	 * before the event that turned tracing off is handed out, and a PIP
	 * while tracing is off without its event; @quiet_psbs counts the
	 * PSB+s. */
	uint8_t quiet_psb;
	uint64_t quiet_psbs;
	/* The last PSB+ taken whole, to know the same bytes again. */
	struct ipt__evt_psb_memo quiet_memo;
};

/* Whether the caches describe the current image (a decoder always has
 * one). */
static IPT__INLINE int
ipt__blk_cache_current(const struct pt_block_decoder *decoder)
{
	const struct pt_image *image = decoder->image;

	return decoder->cache_image == image &&
	       decoder->cache_gen == ipt__image_generation(image);
}

/* A different image or a new generation of it starts a new epoch. */
static IPT__NOINLINE void ipt__blk_cache_renew(struct pt_block_decoder *decoder)
{
	uint64_t gen;

	gen = ipt__image_generation(decoder->image);
	decoder->cache_image = decoder->image;
	decoder->cache_gen = gen;
	decoder->epoch += 1;
	if (!decoder->epoch) {
		/* After 2^32 epochs, old tags could look current again. */
		if (decoder->icache)
			IPT_MEMSET(decoder->icache, 0,
				   sizeof(*decoder->icache) << decoder->ibits);
		decoder->epoch = 1;
	}

	/* New context numbers for everything. */
	decoder->ctx_id = 0;
	decoder->nctx = 0;
}

/* Make sure the caches describe the current image.  Called once per public
 * call and per run the instruction decoder takes, never per instruction. */
static IPT__INLINE void ipt__blk_cache_sync(struct pt_block_decoder *decoder)
{
	if (IPT__UNLIKELY(!ipt__blk_cache_current(decoder)))
		ipt__blk_cache_renew(decoder);
}

/* For >>insn: the epoch, so that it knows when a run's text it holds is
 * stale; the runs the last block went through whole; the allocator. */
static IPT__INLINE uint32_t
ipt__blk_epoch(const struct pt_block_decoder *decoder)
{
	return decoder->epoch;
}

static IPT__INLINE const struct ipt__blk_trail *
ipt__blk_trail_at(const struct pt_block_decoder *decoder, uint32_t at)
{
	return at < decoder->ntrail ? &decoder->trail[at] : NULL;
}

static struct ipt_allocator *
ipt__blk_allocator(struct pt_block_decoder *decoder)
{
	return &decoder->allocator;
}

/* The two instruction cache slots of @ip in @mode in the address space
 * (@cr3, @vmcs): the hash's top bits name the first, bits from its middle
 * where the second lies from it (the same slot in a cache of one). */
static void ipt__blk_islots(const struct pt_block_decoder *decoder,
			    uint64_t ip, uint64_t cr3, uint64_t vmcs,
			    enum pt_exec_mode mode, uint32_t slot[2])
{
	uint32_t mask = (1u << decoder->ibits) - 1;
	uint64_t h;

	h = ip ^ (cr3 * 0x9e3779b97f4a7c15ull) ^
	    (vmcs * 0xc2b2ae3d27d4eb4full) ^ (uint64_t) mode;
	h *= 0xff51afd7ed558ccdull;
	if (!mask) {
		slot[0] = slot[1] = 0;
		return;
	}
	slot[0] = (uint32_t) (h >> (64 - decoder->ibits));
	slot[1] = slot[0] ^ (((uint32_t) (h >> 24) & mask) | 1);
}

/* The instruction cache's size depends on the run table.  With one, runs
 * are recorded from the code itself (see ipt__blk_run_fill) and the cache
 * serves only the instructions that events and the end of the trace walk
 * one at a time: 1 << IPT__ICACHE_MIN_BITS entries do, and small code
 * never pays for (nor clears) more.  Without one (a run cache limit too
 * small for it, IPT_BLK_GENERAL_PATH) every instruction goes through the
 * cache: 1 << IPT_BLK_ICACHE_BITS entries.  (A coverage decoder meets
 * more of those walks: it asks for more, ipt__blk_set_icache_bits.)
 * Resizing frees the old cache
 * first, so that the two never take memory at once; without memory for
 * the new one, the old size again, or none. */
enum { IPT__ICACHE_MIN_BITS = 8 };

static uint32_t ipt__blk_icache_first_bits(const struct pt_block_decoder *decoder)
{
	if (!IPT__BLK_RUNS || !decoder->runs)
		return IPT_BLK_ICACHE_BITS;
	return IPT_BLK_ICACHE_BITS < decoder->ibits_runs ?
		       IPT_BLK_ICACHE_BITS : decoder->ibits_runs;
}

/* An empty instruction cache of 1 << @bits entries, from a cache's
 * allocation if @cache.  Only the epochs are cleared: an entry of another
 * epoch is looked at no further. */
static struct ipt__blk_icache_entry *
ipt__blk_icache_new(const struct pt_block_decoder *decoder, uint32_t bits,
		    int cache)
{
	struct ipt__blk_icache_entry *icache;
	size_t size = sizeof(*icache) << bits, i;

	icache = (struct ipt__blk_icache_entry *) (cache ?
		ipt__alloc_cache(&decoder->allocator, size) :
		ipt__alloc(&decoder->allocator, size));
	for (i = 0; icache && i < ((size_t) 1 << bits); ++i)
		icache[i].epoch = 0;
	return icache;
}

static void ipt__blk_icache_resize(struct pt_block_decoder *decoder,
				   uint32_t bits)
{
	const size_t entry = sizeof(*decoder->icache);
	uint32_t old = decoder->ibits;

	if (bits > IPT_BLK_ICACHE_BITS)
		bits = IPT_BLK_ICACHE_BITS;
	if (!decoder->icache || bits == old)
		return;
	ipt__free(&decoder->allocator, decoder->icache, entry << old);
	decoder->icache = ipt__blk_icache_new(decoder, bits, 1);
	if (decoder->icache) {
		decoder->ibits = bits;
		return;
	}
	decoder->icache = ipt__blk_icache_new(decoder, old, 1);
}

/* Beside a run cache, an instruction cache of 1 << @bits entries (the
 * coverage layer's asks for more; see IPT__COV_ICACHE_BITS). */
static IPT__UNUSED void
ipt__blk_set_icache_bits(struct pt_block_decoder *decoder, uint32_t bits)
{
	decoder->ibits_runs = bits;
	ipt__blk_icache_resize(decoder, ipt__blk_icache_first_bits(decoder));
}

/* Whether @entry holds the instruction at @insn->ip in @insn->mode in the
 * current address space and epoch. */
static IPT__INLINE int
ipt__blk_icache_has(const struct pt_block_decoder *decoder,
		    const struct ipt__blk_icache_entry *entry,
		    const struct pt_insn *insn)
{
	return entry->epoch == decoder->epoch && entry->insn.ip == insn->ip &&
	       entry->insn.mode == insn->mode &&
	       entry->cr3 == decoder->asid.cr3 &&
	       entry->vmcs == decoder->asid.vmcs;
}

/* Decode the instruction at @insn->ip in @insn->mode, from the instruction
 * cache when we can.  Leaves @insn->speculative alone.
 *
 * An instruction lives in one of two slots (ipt__blk_islots), so that a
 * few instructions that share a slot, such as a small loop walked one
 * instruction at a time, do not push each other out at every step.  A new
 * one takes its first slot; the one it finds there moves to its own
 * second slot if the first was its first too.
 *
 * Returns zero on success, a negative pte_* code as ipt__insn_decode. */
static int ipt__blk_decode(struct pt_block_decoder *decoder,
			   struct pt_insn *insn, struct ipt__insn_ext *iext)
{
	struct ipt__blk_icache_entry *entry, *other;
	uint32_t speculative, slot[2], old[2];
	int status;

	if (IPT__UNLIKELY(!decoder->icache))
		return ipt__insn_decode_with(&decoder->zd, insn, iext,
					     decoder->image, &decoder->asid);
	ipt__blk_islots(decoder, insn->ip, decoder->asid.cr3,
			decoder->asid.vmcs, insn->mode, slot);
	entry = &decoder->icache[slot[0]];
	other = &decoder->icache[slot[1]];
	speculative = insn->speculative;
	if (!ipt__blk_icache_has(decoder, entry, insn)) {
		if (!ipt__blk_icache_has(decoder, other, insn))
			goto miss;
		entry = other;
	}
	IPT__COPY(*insn, entry->insn);
	IPT__COPY(*iext, entry->iext);
	insn->speculative = speculative;
	return 0;

miss:
	status = ipt__insn_decode_with(&decoder->zd, insn, iext,
				       decoder->image, &decoder->asid);
	if (status < 0)
		return status;

	if (entry->epoch == decoder->epoch) {
		ipt__blk_islots(decoder, entry->insn.ip, entry->cr3,
				entry->vmcs, entry->insn.mode, old);
		if (old[0] == slot[0] && old[1] != slot[0])
			IPT__COPY(decoder->icache[old[1]], *entry);
	}

	/* A truncated instruction (put together from several reads) is kept
	 * too: like any other, it was read from the image of this epoch.
	 * Runs never hold one, so code that loops through it without trace
	 * comes back here at every step. */
	entry->cr3 = decoder->asid.cr3;
	entry->vmcs = decoder->asid.vmcs;
	entry->epoch = decoder->epoch;
	IPT__COPY(entry->insn, *insn);
	entry->insn.speculative = 0;
	IPT__COPY(entry->iext, *iext);
	return 0;
}

/* Decode the instruction at @ip in the decoder's mode into @insn and
 * @iext, as ipt__blk_decode. */
static int ipt__blk_decode_at(struct pt_block_decoder *decoder, uint64_t ip,
			      struct pt_insn *insn, struct ipt__insn_ext *iext)
{
	IPT_MEMSET(insn, 0, sizeof(*insn));
	IPT_MEMSET(iext, 0, sizeof(*iext));
	insn->mode = decoder->mode;
	insn->ip = ip;
	return ipt__blk_decode(decoder, insn, iext);
}

/* ---- the length map ----
 * The sizes of the ordinary instructions (ptic_other, in one piece) that
 * runs were recorded from, one slot per code byte as libipt's section
 * cache has, in pieces of 256 bytes (code is used sparsely: small pieces
 * cover more of it in the same memory), so that a run recorded again (after the run cache
 * dropped it or started over, or from a branch into the middle of a known
 * run) takes them from here instead of decoding them again.  Only the
 * instruction ending a run still goes through the instruction cache.
 *
 * A piece's map is tagged with its address and the context number of its
 * runs, so a new epoch or address space misses.  The slot of a piece is
 * chosen by hashing: up to IPT__LMAP_SLOTS slots, each allocated when
 * first used and taken over by the next piece hashed to it.  The slots
 * start few and grow fourfold whenever a new piece finds a quarter of them
 * in use, so that a decoder that records little code clears, scans and
 * frees little.  All sizes in a map come from one section, the first
 * recorded. */
enum {
	IPT__LMAP_SHIFT = 8,
	IPT__LMAP_FIRST_BITS = 4,
	IPT__LMAP_SLOT_BITS = 11,
	IPT__LMAP_SLOTS = 1 << IPT__LMAP_SLOT_BITS
};

struct ipt__blk_lmap {
	uint64_t base;
	/* The context number; zero for none. */
	uint32_t ctx;
	int32_t isid;
	/* Two sizes to a byte, the lower address in the low nibble; zero
	 * where none is known. */
	uint8_t size[(1u << IPT__LMAP_SHIFT) / 2];
};

/* The slot of the piece at @base in context @ctx among 1 << @bits. */
static IPT__INLINE uint32_t ipt__blk_lmap_hash(uint64_t base, uint32_t ctx,
					       uint32_t bits)
{
	uint64_t h;

	h = ((base >> IPT__LMAP_SHIFT) + ctx * 0x9e3779b97f4a7c15ull) *
	    0xff51afd7ed558ccdull;
	return (uint32_t) (h >> (64 - bits));
}

static IPT__INLINE struct ipt__blk_lmap **
ipt__blk_lmap_slot(const struct pt_block_decoder *decoder, uint64_t ip,
		   uint32_t ctx)
{
	return &decoder->lmap[ipt__blk_lmap_hash(ip, ctx, decoder->lmap_bits)];
}

/* The start of the piece holding @ip. */
static IPT__INLINE uint64_t ipt__blk_lmap_base(uint64_t ip)
{
	return ip & ~(uint64_t) ((1u << IPT__LMAP_SHIFT) - 1);
}

/* The map of the piece holding @ip in context @ctx; NULL if none. */
static IPT__INLINE struct ipt__blk_lmap *
ipt__blk_lmap_find(const struct pt_block_decoder *decoder, uint64_t ip,
		   uint32_t ctx)
{
	struct ipt__blk_lmap *map;

	if (!decoder->lmap)
		return NULL;
	map = *ipt__blk_lmap_slot(decoder, ip, ctx);
	if (!map || map->ctx != ctx || map->base != ipt__blk_lmap_base(ip))
		return NULL;
	return map;
}

/* The size of the ordinary instruction at @ip in @map, its piece, and its
 * section in *@isid; zero if not known. */
static IPT__INLINE uint8_t ipt__blk_lmap_size(const struct ipt__blk_lmap *map,
					      uint64_t ip, int *isid)
{
	uint32_t off = (uint32_t) (ip & ((1u << IPT__LMAP_SHIFT) - 1));

	*isid = map->isid;
	return (uint8_t) ((map->size[off >> 1] >> ((off & 1) * 4)) & 0xf);
}

/* Where a walk through code stands in the length map: the piece holding
 * the last IP looked at (NULL if none), found again only when an IP
 * leaves the piece at @base (1 at first: no piece starts there). */
struct ipt__blk_lmap_cursor {
	struct ipt__blk_lmap *piece;
	uint64_t base;
};

/* The size of the ordinary instruction at @ip in context @ctx as the
 * length map knows it, and its section in *@isid; zero if not known.
 * @at moves to the piece holding @ip. */
static IPT__INLINE uint8_t
ipt__blk_lmap_at(const struct pt_block_decoder *decoder,
		 struct ipt__blk_lmap_cursor *at, uint64_t ip, uint32_t ctx,
		 int *isid)
{
	if (ipt__blk_lmap_base(ip) != at->base) {
		at->piece = ipt__blk_lmap_find(decoder, ip, ctx);
		at->base = ipt__blk_lmap_base(ip);
	}
	return at->piece ? ipt__blk_lmap_size(at->piece, ip, isid) : 0;
}

/* Give the length map 1 << @bits slots, each piece moved to its slot
 * there; a piece whose slot another took is freed.  Nothing if memory runs
 * out: the map stays as it was. */
static void ipt__blk_lmap_resize(struct pt_block_decoder *decoder,
				 uint32_t bits)
{
	struct ipt__blk_lmap **slots, *map;
	uint32_t i, slot;

	slots = (struct ipt__blk_lmap **) ipt__zalloc_cache(
		&decoder->allocator, (size_t) sizeof(*slots) << bits);
	if (!slots)
		return;
	for (i = 0; decoder->lmap && i < 1u << decoder->lmap_bits; ++i) {
		map = decoder->lmap[i];
		if (!map)
			continue;
		slot = ipt__blk_lmap_hash(map->base, map->ctx, bits);
		if (slots[slot]) {
			ipt__free(&decoder->allocator, map, sizeof(*map));
			decoder->lmap_used -= 1;
		} else {
			slots[slot] = map;
		}
	}
	ipt__free(&decoder->allocator, decoder->lmap,
		  (size_t) sizeof(*slots) << decoder->lmap_bits);
	decoder->lmap = slots;
	decoder->lmap_bits = bits;
}

/* Note the ordinary instruction at @ip in context @ctx: @size bytes in
 * section @isid.  @map is ipt__blk_lmap_find's answer for @ip, if known.
 * Returns the map of the piece holding @ip now; NULL if memory runs out. */
static struct ipt__blk_lmap *
ipt__blk_lmap_put(struct pt_block_decoder *decoder,
		  struct ipt__blk_lmap *map, uint64_t ip, uint32_t ctx,
		  int isid, uint8_t size)
{
	struct ipt__blk_lmap **slot;
	uint32_t off = (uint32_t) (ip & ((1u << IPT__LMAP_SHIFT) - 1));

	if (map)
		goto note;
	if (!decoder->lmap) {
		ipt__blk_lmap_resize(decoder, IPT__LMAP_FIRST_BITS);
		if (!decoder->lmap)
			return NULL;
	}
	slot = ipt__blk_lmap_slot(decoder, ip, ctx);
	map = *slot;
	if ((!map || map->ctx != ctx || map->base != ip - off) &&
	    decoder->lmap_bits < IPT__LMAP_SLOT_BITS &&
	    decoder->lmap_used >= 1u << (decoder->lmap_bits - 2)) {
		uint32_t bits = decoder->lmap_bits + 2;

		ipt__blk_lmap_resize(decoder, bits < IPT__LMAP_SLOT_BITS ?
					      bits :
					      (uint32_t) IPT__LMAP_SLOT_BITS);
		slot = ipt__blk_lmap_slot(decoder, ip, ctx);
		map = *slot;
	}
	if (!map) {
		map = (struct ipt__blk_lmap *) ipt__alloc_cache(
			&decoder->allocator, sizeof(*map));
		if (!map)
			return NULL;
		map->ctx = 0;
		*slot = map;
		decoder->lmap_used += 1;
	}
	if (map->ctx != ctx || map->base != ip - off) {
		IPT_MEMSET(map->size, 0, sizeof(map->size));
		map->base = ip - off;
		map->ctx = ctx;
		map->isid = isid;
	}
note:
	if (map->isid == isid)
		map->size[off >> 1] = (uint8_t) ((map->size[off >> 1] &
						  (0xf0u >> ((off & 1) * 4))) |
						 ((uint32_t) size
						  << ((off & 1) * 4)));
	return map;
}

/* Forget every size: the context numbers start over. */
static void ipt__blk_lmap_clear(struct pt_block_decoder *decoder)
{
	uint32_t i;

	for (i = 0; decoder->lmap && i < 1u << decoder->lmap_bits; ++i)
		if (decoder->lmap[i])
			decoder->lmap[i]->ctx = 0;
}

static void ipt__blk_lmap_free(struct pt_block_decoder *decoder)
{
	uint32_t i;

	if (!decoder->lmap)
		return;
	for (i = 0; i < 1u << decoder->lmap_bits; ++i)
		ipt__free(&decoder->allocator, decoder->lmap[i],
			  sizeof(*decoder->lmap[i]));
	ipt__free(&decoder->allocator, decoder->lmap,
		  (size_t) sizeof(*decoder->lmap) << decoder->lmap_bits);
	decoder->lmap = NULL;
	decoder->lmap_bits = 0;
	decoder->lmap_used = 0;
}

/* ---- the run table ---- */

enum {
	/* The bytes a new run table starts with, if the limit allows: small,
	 * as clearing it is a fixed cost of every new decoder and the table
	 * doubles as code is met. */
	IPT__RUN_FIRST_BYTES = 4 << 10,
	IPT__RUN_ALIGN = 64
};

/* The ways of a set. */
enum { IPT__RUN_WAYS = 4 };

/* The bytes one set takes: its runs, two to a cache line, with the text of
 * each in a line of its own if the decoder wants it. */
typedef char ipt__blk_set_lines[2 * sizeof(struct ipt__blk_run) ==
				       IPT__RUN_ALIGN &&
			       sizeof(struct ipt__blk_text) == IPT__RUN_ALIGN ?
			       1 : -1];

static IPT__INLINE size_t ipt__blk_set_bytes_with(uint32_t want_text)
{
	return (size_t) IPT__RUN_WAYS * (want_text ? 3 : 1) * IPT__RUN_ALIGN /
	       2;
}

static size_t ipt__blk_set_bytes(const struct pt_block_decoder *decoder)
{
	return ipt__blk_set_bytes_with(decoder->want_text);
}

/* The runs of set @set, then (with text) their text. */
static IPT__INLINE struct ipt__blk_run *
ipt__blk_set(const struct pt_block_decoder *decoder, uint32_t set)
{
	return (struct ipt__blk_run *) ((uint8_t *) decoder->runs +
					(size_t) set * decoder->rstride);
}

/* The same where whether the decoder keeps text is known as @want_text,
 * a constant: the set's address is then a shift and an add from its
 * index, not a multiplication, on the way from one block's IP to the
 * next block's run (ipt__blk_next_fast). */
static IPT__INLINE struct ipt__blk_run *
ipt__blk_set_with(const struct pt_block_decoder *decoder, uint32_t set,
		  uint32_t want_text)
{
	return (struct ipt__blk_run *) ((uint8_t *) decoder->runs +
					(size_t) set *
					ipt__blk_set_bytes_with(want_text));
}

static IPT__INLINE struct ipt__blk_text *
ipt__blk_set_text(struct ipt__blk_run *set)
{
	return (struct ipt__blk_text *) (set + IPT__RUN_WAYS);
}

/* The most sets @decoder->rlimit allows, a power of two; zero if not even
 * one set fits. */
static uint32_t ipt__blk_max_sets(const struct pt_block_decoder *decoder)
{
	uint64_t nsets = decoder->rlimit / ipt__blk_set_bytes(decoder);
	uint32_t max = 1;

	if (!nsets)
		return 0;
	if (nsets > (1u << 24))
		nsets = 1u << 24;
	while ((uint64_t) max * 2 <= nsets)
		max *= 2;
	return max;
}

/* Forget the run table. */
static void ipt__blk_runs_free(struct pt_block_decoder *decoder)
{
	ipt__free(&decoder->allocator, decoder->rmem, decoder->rmem_size);
	decoder->rmem = NULL;
	decoder->rmem_size = 0;
	decoder->runs = NULL;
	decoder->rsets = 0;
	decoder->rfills = 0;
	decoder->rpairs = 0;
}

static IPT__INLINE uint64_t ipt__blk_ctx_salt(uint32_t ctx)
{
	return ctx * 0x9e3779b97f4a7c15ull;
}

/* Where runs go in the table.  Code is cut into pieces of
 * 1 << IPT__RUN_PIECE_SHIFT bytes; each piece has consecutive sets, one
 * for every 1 << IPT__RUN_GRAIN_SHIFT bytes of its code, from a start
 * hashed from the piece and the context.  So the runs of a loop or a
 * function lie near each other in the table, and the cache lines and
 * pages they take are shared by runs in use, where a hash of each IP
 * alone gave each run in use a line of its own, beside a run seldom used
 * (a line holds two).  Pieces start anywhere, so that code at the same
 * offset in two pieces does not share sets.  16 bytes hold a run or two of
 * most code; code denser in runs than a set and the one paired with it
 * hold spills to sets anywhere (ipt__blk_spill_of). */
enum { IPT__RUN_PIECE_SHIFT = 10, IPT__RUN_GRAIN_SHIFT = 4 };

/* The set of the run at @ip in the context whose ipt__blk_ctx_salt is
 * @salt.  In a table of twice the sets it is the same or @nsets more, as
 * ipt__blk_runs_grow_in_place needs. */
static IPT__INLINE uint32_t ipt__blk_set_of_salted(uint64_t ip, uint64_t salt,
						   uint32_t nsets)
{
	uint64_t h;
	uint32_t grain;

	h = ((ip >> IPT__RUN_PIECE_SHIFT) + salt) * 0xff51afd7ed558ccdull;
	grain = (uint32_t) (ip >> IPT__RUN_GRAIN_SHIFT) &
		((1u << (IPT__RUN_PIECE_SHIFT - IPT__RUN_GRAIN_SHIFT)) - 1);
	return ((uint32_t) (h >> 40) + grain) & (nsets - 1);
}

static IPT__INLINE uint32_t ipt__blk_set_of(uint64_t ip, uint32_t ctx,
					    uint32_t nsets)
{
	return ipt__blk_set_of_salted(ip, ipt__blk_ctx_salt(ctx), nsets);
}

/* The sets the run at @ip in context @ctx spills to when its own set and
 * the one paired with it are full: hashes of the IP alone (@k below
 * IPT__RUN_SPILLS), so that the runs of code dense in them spread over
 * the table, and seldom all into the sets of that same code. */
enum { IPT__RUN_SPILLS = 3 };

static IPT__INLINE uint32_t ipt__blk_spill_of(uint64_t ip, uint32_t ctx,
					      uint32_t nsets, uint32_t k)
{
	uint64_t h;

	h = (ip + ipt__blk_ctx_salt(ctx)) * 0xff51afd7ed558ccdull;
	return (uint32_t) (h >> (40 - 12 * k)) & (nsets - 1);
}

/* The sets a look for the run at @ip in context @ctx, in a table of @nsets
 * sets, may find it in, in the order it looks: its own, @home (callers
 * have ipt__blk_set_of's answer at hand), the one paired with it (its own
 * again in a table of one set), then those it spills to.  The first @n of
 * them (IPT__RUN_PAIR or IPT__RUN_REACH) go to @sets: a run spills only
 * from a full set, so the spills are not asked for where its own set has
 * room.  In a table of twice the sets each is the same or @nsets more, as
 * ipt__blk_runs_grow_in_place needs. */
enum { IPT__RUN_PAIR = 2, IPT__RUN_REACH = IPT__RUN_PAIR + IPT__RUN_SPILLS };

static IPT__INLINE void ipt__blk_run_sets(uint64_t ip, uint32_t ctx,
					  uint32_t nsets, uint32_t home,
					  uint32_t sets[IPT__RUN_REACH],
					  uint32_t n)
{
	uint32_t k;

	sets[0] = home;
	sets[1] = (home ^ 1) & (nsets - 1);
	if (n > IPT__RUN_PAIR)
		for (k = 0; k < IPT__RUN_SPILLS; ++k)
			sets[IPT__RUN_PAIR + k] =
				ipt__blk_spill_of(ip, ctx, nsets, k);
}

/* Whether a look for the run at @ip in context @ctx, in a table of @nsets
 * sets, finds it in set @idx.  Most runs are in their own set or the one
 * paired with it: those are looked at before the spills are hashed. */
static int ipt__blk_run_reaches(uint64_t ip, uint32_t ctx, uint32_t nsets,
				uint32_t idx)
{
	uint32_t sets[IPT__RUN_REACH], i;

	ipt__blk_run_sets(ip, ctx, nsets, ipt__blk_set_of(ip, ctx, nsets), sets,
			  IPT__RUN_PAIR);
	if (sets[0] == idx || sets[1] == idx)
		return 1;
	ipt__blk_run_sets(ip, ctx, nsets, sets[0], sets, IPT__RUN_REACH);
	for (i = IPT__RUN_PAIR; i < IPT__RUN_REACH; ++i)
		if (sets[i] == idx)
			return 1;
	return 0;
}

/* The table has its size: its sets are paired (see ipt__blk_run_place),
 * at its limit too: runs follow their code, so that sets of code dense in
 * runs may be full where others are empty. */
static void ipt__blk_runs_sized(struct pt_block_decoder *decoder)
{
	decoder->rpairs = decoder->rsets > 1;
}

/* Make room in the first way of @set: the runs before way @way (with
 * their text) move one way on, over the run in @way. */
static void ipt__blk_set_shift_to(struct ipt__blk_run *set, uint32_t way,
				  uint32_t want_text)
{
	struct ipt__blk_text *text = ipt__blk_set_text(set);

	for (; way > 0; --way) {
		if (!set[way - 1].ctx && !set[way].ctx)
			continue;
		IPT__COPY(set[way], set[way - 1]);
		if (want_text)
			IPT__COPY(text[way], text[way - 1]);
	}
	set[0].ctx = 0;
}

/* Make room in the first way of @set: the last way's run is dropped. */
static void ipt__blk_set_shift(struct ipt__blk_run *set, uint32_t want_text)
{
	ipt__blk_set_shift_to(set, IPT__RUN_WAYS - 1, want_text);
}

/* Where the run in way @way of set @idx can go if it has to leave: the
 * first of the sets a look finds it in (ipt__blk_run_sets) that is not
 * @idx and has an empty way, whose index is put in *@to, and that way;
 * IPT__RUN_WAYS if there is none, or the sets are not paired. */
static uint32_t ipt__blk_run_room(const struct pt_block_decoder *decoder,
				  uint32_t idx, uint32_t way, uint32_t *to)
{
	const struct ipt__blk_run *run = &ipt__blk_set(decoder, idx)[way];
	const struct ipt__blk_run *set;
	uint32_t sets[IPT__RUN_REACH], i, w;

	if (!decoder->rpairs)
		return IPT__RUN_WAYS;
	ipt__blk_run_sets(run->ip, run->ctx, decoder->rsets,
			  ipt__blk_set_of(run->ip, run->ctx, decoder->rsets),
			  sets, IPT__RUN_REACH);
	for (i = 0; i < IPT__RUN_REACH; ++i) {
		if (sets[i] == idx)
			continue;
		set = ipt__blk_set(decoder, sets[i]);
		for (w = 0; w < IPT__RUN_WAYS && set[w].ctx; ++w)
			;
		if (w < IPT__RUN_WAYS) {
			*to = sets[i];
			return w;
		}
	}
	return IPT__RUN_WAYS;
}

/* Put @run (with @text, if the decoder keeps text) in the first way of
 * set @idx, the others one way on.  The run that leaves the last way
 * moves where it has room (ipt__blk_run_room); else it is dropped.
 * Returns where @run is now. */
static IPT__INLINE struct ipt__blk_run *
ipt__blk_run_place(struct pt_block_decoder *decoder, uint32_t idx,
		   const struct ipt__blk_run *run,
		   const struct ipt__blk_text *text)
{
	struct ipt__blk_run *set = ipt__blk_set(decoder, idx), *other;
	uint32_t last = IPT__RUN_WAYS - 1, to = idx, way;

	if (set[last].ctx) {
		way = ipt__blk_run_room(decoder, idx, last, &to);
		if (way < IPT__RUN_WAYS) {
			other = ipt__blk_set(decoder, to);
			IPT__COPY(other[way], set[last]);
			if (decoder->want_text)
				IPT__COPY(ipt__blk_set_text(other)[way],
					  ipt__blk_set_text(set)[last]);
		}
	}
	ipt__blk_set_shift(set, decoder->want_text);
	IPT__COPY(set[0], *run);
	if (decoder->want_text)
		IPT__COPY(ipt__blk_set_text(set)[0], *text);
	return set;
}

/* Make @mem, @size bytes, the table: @nsets empty sets, aligned. */
/* Empty the @nsets sets of @stride bytes at @first.  Only the tags are
 * cleared (an entry is looked at no further unless its IP and context
 * match), so that a new table's text is not touched before it is used. */
static void ipt__blk_sets_empty(uint8_t *first, uint32_t nsets, size_t stride)
{
	uint32_t i, way;

	for (i = 0; i < nsets; ++i) {
		struct ipt__blk_run *set =
			(struct ipt__blk_run *) (first + (size_t) i * stride);

		for (way = 0; way < IPT__RUN_WAYS; ++way) {
			set[way].ip = 0;
			set[way].ctx = 0;
		}
	}
}

static void ipt__blk_runs_take(struct pt_block_decoder *decoder, void *mem,
			       size_t size, uint32_t nsets)
{
	size_t stride = ipt__blk_set_bytes(decoder);
	uintptr_t base;

	base = ((uintptr_t) mem + IPT__RUN_ALIGN - 1) &
	       ~(uintptr_t) (IPT__RUN_ALIGN - 1);
	ipt__blk_sets_empty((uint8_t *) base, nsets, stride);

	decoder->rmem = mem;
	decoder->rmem_size = size;
	decoder->runs = (struct ipt__blk_run *) base;
	decoder->rstride = (uint32_t) stride;
	decoder->rsets = nsets;
	ipt__blk_runs_sized(decoder);
}

/* Make an empty table of @nsets sets.  The old one goes first, so that
 * the two never take memory at the same time: its runs are recorded again
 * as they come.  Returns zero on success; -pte_nomem if there is no
 * memory, and then the table has its old size again if memory allows, or
 * the decoder goes on without one. */
static int ipt__blk_runs_resize(struct pt_block_decoder *decoder,
				uint32_t nsets)
{
	size_t size, stride = ipt__blk_set_bytes(decoder);
	uint32_t old = decoder->rsets;
	void *mem;

	ipt__blk_runs_free(decoder);

	size = (size_t) nsets * stride + IPT__RUN_ALIGN;
	mem = ipt__alloc_cache(&decoder->allocator, size);
	if (!mem) {
		if (old && old != nsets)
			(void) ipt__blk_runs_resize(decoder, old);
		return -pte_nomem;
	}
	ipt__blk_runs_take(decoder, mem, size, nsets);
	return 0;
}

/* Move @n bytes from @src to @dst, which may overlap, through a buffer
 * (IPT_MEMCPY promises nothing for overlapping copies). */
static void ipt__blk_move(uint8_t *dst, const uint8_t *src, size_t n)
{
	uint8_t buf[256];
	size_t done, k;

	for (done = 0; done < n; done += k) {
		k = n - done < sizeof(buf) ? n - done : sizeof(buf);
		if (dst < src) {
			IPT_MEMCPY(buf, src + done, k);
			IPT_MEMCPY(dst + done, buf, k);
		} else {
			IPT_MEMCPY(buf, src + n - done - k, k);
			IPT_MEMCPY(dst + n - done - k, buf, k);
		}
	}
}

/* Double the table with the allocator's realloc: set i of the old table
 * splits into sets i and i + old of the new one (a run stays where a look
 * in the new table finds it, else it is found in the other: every set
 * a run may be in is the same or old more), each keeping its runs in
 * order, so none is lost and the
 * decoder never holds the two tables at once.  Returns zero on success;
 * -pte_nomem if there is no memory, and the table is as it was. */
static int ipt__blk_runs_grow_in_place(struct pt_block_decoder *decoder)
{
	size_t stride = ipt__blk_set_bytes(decoder), size, from, to;
	uint32_t old = decoder->rsets, nsets = old * 2, i, way;
	uint32_t want_text = decoder->want_text;
	uint8_t *mem;

	size = (size_t) nsets * stride + IPT__RUN_ALIGN;
	mem = (uint8_t *) ipt__realloc(&decoder->allocator, decoder->rmem,
				       decoder->rmem_size, size);
	if (!mem)
		return -pte_nomem;

	/* The runs stay where they were within the block; the block may
	 * have moved, and the table's start be misaligned now. */
	from = (size_t) ((uint8_t *) decoder->runs - (uint8_t *) decoder->rmem);
	to = (size_t) ((((uintptr_t) mem + IPT__RUN_ALIGN - 1) &
			~(uintptr_t) (IPT__RUN_ALIGN - 1)) - (uintptr_t) mem);
	if (from != to)
		ipt__blk_move(mem + to, mem + from, (size_t) old * stride);
	ipt__blk_sets_empty(mem + to + (size_t) old * stride, old, stride);
	decoder->rmem = mem;
	decoder->rmem_size = size;
	decoder->runs = (struct ipt__blk_run *) (mem + to);
	decoder->rsets = nsets;
	ipt__blk_runs_sized(decoder);

	for (i = 0; i < old; ++i) {
		struct ipt__blk_run *set = ipt__blk_set(decoder, i);
		struct ipt__blk_run *high = ipt__blk_set(decoder, i + old);
		struct ipt__blk_run stay[IPT__RUN_WAYS];
		struct ipt__blk_text *text = ipt__blk_set_text(set);
		struct ipt__blk_text stay_text[IPT__RUN_WAYS];
		uint32_t nstay = 0, nhigh = 0;

		for (way = 0; way < IPT__RUN_WAYS; ++way) {
			if (!set[way].ctx)
				continue;
			/* A set where a look finds it. */
			if (ipt__blk_run_reaches(set[way].ip, set[way].ctx,
						 nsets, i)) {
				IPT__COPY(stay[nstay], set[way]);
				if (want_text)
					IPT__COPY(stay_text[nstay], text[way]);
				nstay += 1;
				continue;
			}
			IPT__COPY(high[nhigh], set[way]);
			if (want_text)
				IPT__COPY(ipt__blk_set_text(high)[nhigh],
					  text[way]);
			nhigh += 1;
		}
		IPT_MEMSET(set, 0, stride);
		for (way = 0; way < nstay; ++way) {
			IPT__COPY(set[way], stay[way]);
			if (want_text)
				IPT__COPY(text[way], stay_text[way]);
		}
	}
	return 0;
}

/* Double the table.  With the allocator's realloc it grows in place,
 * keeping its runs (ipt__blk_runs_grow_in_place).  Else, while the old
 * table and the new one fit the limit together, the old runs move over
 * (none is lost, see below); else it starts over empty
 * (ipt__blk_runs_resize).  A table with text starts over too: three times
 * the bytes a set, and where memory is tighter (an instruction decoder's
 * runs end sooner, and are quicker to record again).  Returns as
 * ipt__blk_runs_resize does. */
static int ipt__blk_runs_grow(struct pt_block_decoder *decoder)
{
	size_t stride = ipt__blk_set_bytes(decoder), size;
	uint32_t old = decoder->rsets, nsets = old * 2, i, way;
	struct ipt__blk_run *runs = decoder->runs;
	void *omem = decoder->rmem;
	size_t osize = decoder->rmem_size;
	void *mem;

	if (decoder->allocator.realloc &&
	    ipt__blk_runs_grow_in_place(decoder) == 0)
		return 0;
	size = (size_t) nsets * stride + IPT__RUN_ALIGN;
	if (decoder->want_text ||
	    (uint64_t) osize + size > decoder->rlimit + IPT__RUN_ALIGN)
		return ipt__blk_runs_resize(decoder, nsets);
	mem = ipt__alloc_cache(&decoder->allocator, size);
	if (!mem)
		return ipt__blk_runs_resize(decoder, nsets);
	ipt__blk_runs_take(decoder, mem, size, nsets);

	/* The last way first, so that each set keeps its order.  The runs
	 * of a pair of old sets that are theirs go to two pairs of new sets,
	 * the ones in each new pair no more than it holds: none is lost;
	 * runs that had spilled to other sets spill again where they find
	 * room. */
	for (i = 0; i < old; ++i) {
		struct ipt__blk_run *from;

		from = (struct ipt__blk_run *) ((uint8_t *) runs +
						(size_t) i * stride);
		for (way = IPT__RUN_WAYS; way-- > 0;)
			if (from[way].ctx)
				(void) ipt__blk_run_place(
					decoder,
					ipt__blk_set_of(from[way].ip,
							from[way].ctx, nsets),
					&from[way],
					ipt__blk_set_text(from) + way);
	}
	ipt__free(&decoder->allocator, omem, osize);
	return 0;
}

static void ipt__blk_memo_free(struct pt_block_decoder *decoder)
{
	ipt__free(&decoder->allocator, decoder->zd.memo,
		  sizeof(*decoder->zd.memo));
	decoder->zd.memo = NULL;
}

/* Start the run table over: its first size under the current limit. */
static void ipt__blk_runs_reset(struct pt_block_decoder *decoder)
{
	uint32_t nsets = ipt__blk_max_sets(decoder);

	ipt__blk_runs_free(decoder);
	ipt__blk_lmap_free(decoder);
	/* Zydis' answers stay true; without runs nothing asks for them.
	 * The memo comes before the table, which may then grow in place. */
	if (!nsets) {
		ipt__blk_memo_free(decoder);
	} else if (!decoder->zd.memo) {
		decoder->zd.memo = (struct ipt__ild_memo *) ipt__alloc_cache(
			&decoder->allocator, sizeof(*decoder->zd.memo));
		if (decoder->zd.memo)
			ipt__ild_memo_init(decoder->zd.memo);
	}
	while (nsets > 1 &&
	       (uint64_t) nsets * ipt__blk_set_bytes(decoder) >
		       IPT__RUN_FIRST_BYTES)
		nsets /= 2;
	if (nsets)
		(void) ipt__blk_runs_resize(decoder, nsets);
	ipt__blk_icache_resize(decoder, ipt__blk_icache_first_bits(decoder));
}

/* The context number of the address space and @mode: the current one, a
 * recent one, or a new one. */
static IPT__NOINLINE uint32_t
ipt__blk_ctx_switch(struct pt_block_decoder *decoder, uint32_t mode)
{
	const struct pt_asid *asid = &decoder->asid;
	struct ipt__blk_ctx *ctx;
	uint32_t i, id;

	for (i = 0; i < decoder->nctx; ++i) {
		ctx = &decoder->ctx[i];
		if (ctx->cr3 == asid->cr3 && ctx->vmcs == asid->vmcs &&
		    ctx->mode == mode)
			goto found;
	}

	id = decoder->ctx_next + 1;
	if (!id) {
		/* After 2^32 contexts, old tags could look current again. */
		if (decoder->runs)
			IPT_MEMSET(decoder->runs, 0, (size_t) decoder->rsets *
				   decoder->rstride);
		ipt__blk_lmap_clear(decoder);
		IPT_MEMSET(decoder->norun, 0, sizeof(decoder->norun));
		decoder->nctx = 0;
		id = 1;
	}
	decoder->ctx_next = id;

	if (decoder->nctx < IPT__BLK_NCTX)
		ctx = &decoder->ctx[decoder->nctx++];
	else
		ctx = &decoder->ctx[id % IPT__BLK_NCTX];
	ctx->cr3 = asid->cr3;
	ctx->vmcs = asid->vmcs;
	ctx->mode = mode;
	ctx->id = id;

found:
	decoder->ctx_mode = ctx->mode;
	decoder->ctx_id = ctx->id;
	decoder->ctx_salt = ipt__blk_ctx_salt(ctx->id);
	return ctx->id;
}

static IPT__INLINE uint32_t ipt__blk_ctx_of(struct pt_block_decoder *decoder,
					    enum pt_exec_mode mode)
{
	if (IPT__LIKELY(decoder->ctx_id && decoder->ctx_mode == (uint32_t) mode))
		return decoder->ctx_id;
	return ipt__blk_ctx_switch(decoder, (uint32_t) mode);
}

/* ---- state ---- */

/* The TRIG anchor: a TRIG packet counts instructions from the last IP the
 * trace gave us (from a TIP, FUP, ...).  After each event we learn whether
 * it provides such an anchor.  Events from packets without IP leave the
 * anchor alone; disables drop it. */
static IPT__INLINE int
ipt__blk_update_trig_anchor(struct pt_block_decoder *decoder,
			    const struct pt_event *ev)
{
	/* TNT and TIP, nearly all events, anchor the count (below). */
	if (IPT__LIKELY((ev->type == ptev_tnt || ev->type == ptev_tip) &&
			!ev->ip_suppressed && !ev->status_update)) {
		decoder->has_icnt = 1;
		decoder->icnt = 0;
		return 0;
	}

	/* A start state's status events: the count goes on across. */
	if (decoder->start_status && ev->status_update) {
		decoder->start_status -= 1;
		return 0;
	}

	switch (ev->type) {
	case ptev_paging:
	case ptev_sipi:
	case ptev_cbr:
	case ptev_mnt:
	case ptev_stop:
	case ptev_vmcs:
	case ptev_mwait:
	case ptev_pwre:
	case ptev_pwrx:
		return 0;

	case ptev_enabled:
	case ptev_async_branch:
	case ptev_tip:
	case ptev_tnt:
		/* These always come with an IP. */
		if (ev->ip_suppressed)
			return -pte_internal;
		break;

	case ptev_disabled:
	case ptev_async_disabled:
		decoder->has_icnt = 0;
		decoder->icnt = 0;
		return 0;

	case ptev_overflow:
		if (ev->ip_suppressed) {
			decoder->has_icnt = 0;
			decoder->icnt = 0;
			return 0;
		}
		break;

	case ptev_exec_mode:
	case ptev_tsx:
	case ptev_async_paging:
	case ptev_async_vmcs:
	case ptev_exstop:
	case ptev_ptwrite:
	case ptev_tick:
	case ptev_iflags:
	case ptev_interrupt:
	case ptev_iret:
	case ptev_smi:
	case ptev_rsm:
	case ptev_init:
	case ptev_vmentry:
	case ptev_vmexit:
	case ptev_shutdown:
	case ptev_uintr:
	case ptev_uiret:
	case ptev_trig:
	case ptev_swintr:
	case ptev_syscall:
		if (ev->ip_suppressed)
			return 0;
		break;
	}

	decoder->has_icnt = 1;
	decoder->icnt = 0;
	return 0;
}

/* The event decoder ran out of trace (or failed): note where the flow
 * stands now, before the decoder walks on without trace, for
 * ipt_blk_get_start_state. */
static void ipt__blk_note_end(struct pt_block_decoder *decoder)
{
	if (decoder->has_end)
		return;
	/* Events bound to the instruction at @ip are all taken: where the
	 * flow stands is past it, once we have proceeded there. */
	if (decoder->process_insn) {
		decoder->end_deferred = 1;
		return;
	}
	decoder->end_deferred = 0;
	decoder->has_end = 1;
	decoder->end_ip = decoder->ip;
	decoder->end_icnt = decoder->icnt;
	IPT__COPY(decoder->end_rs, decoder->retstack);
	decoder->end_ninsn = decoder->cur_block ? decoder->cur_block->ninsn : 0;
	decoder->has_end_last = decoder->end_ninsn ? 1 : 0;
	decoder->end_last = decoder->end_ninsn ? decoder->cur_block->end_ip : 0;
	decoder->ahead = 0;
}

static int ipt__blk_quiet_psb(struct pt_block_decoder *decoder);
static int ipt__blk_quiet_pip(struct pt_block_decoder *decoder);

/* The next event from the event decoder into @decoder->event.  An error
 * is kept in @status and reported when we get to it. */
static void ipt__blk_next_event(struct pt_block_decoder *decoder)
{
	struct pt_event *ev = &decoder->event;
	int status;

	status = ipt__evt_next_tnt(&decoder->evdec, ev);
	if (!status && IPT__BLK_SHORT) {
		while (decoder->quiet_psb &&
		       ((decoder->evdec.packet.type == ppt_psb &&
			 ipt__blk_quiet_psb(decoder)) ||
			(decoder->evdec.packet.type == ppt_pip &&
			 ipt__blk_quiet_pip(decoder))))
			;
		status = ipt__evt_next_status(&decoder->evdec, ev);
	}
	if (!status)
		status = pt_evt_next(&decoder->evdec, ev, sizeof(*ev));
	if (status < 0) {
		decoder->status = status;
		IPT_MEMSET(ev, 0xff, sizeof(*ev));
		ipt__blk_note_end(decoder);
	}
}

/* ---- the CR3 filter (ipt_blk_set_cr3_filter) ----
 * Another address space's stretch of trace is skipped event by event, and
 * no code is walked for it: the decoder is disabled through it.  What the
 * skipped events say of the decoder's state (CR3, VMCS, mode, TSX, core:bus
 * ratio) is taken in silently, so that the decoder knows it when it comes
 * back.  Coming back takes a paging event with the filter's CR3 and then
 * the first IP the trace gives: the decoder enables itself there, as
 * hardware CR3 filtering (IA32_RTIT_CR3_MATCH) would have with TIP.PGE. */

static void ipt__blk_change_asid(struct pt_block_decoder *decoder,
				 const struct pt_event *ev);
static uint64_t ipt__blk_event_ip(const struct pt_event *ev);

static int ipt__blk_filter_keeps(const struct pt_block_decoder *decoder,
				 uint64_t cr3)
{
	return decoder->cr3_filter == pt_asid_no_cr3 ||
	       cr3 == decoder->cr3_filter;
}

/* A new CR3 or VMCS in the address space: the context is found again. */
static void ipt__blk_set_cr3(struct pt_block_decoder *decoder, uint64_t cr3)
{
	decoder->asid.cr3 = cr3;
	decoder->ctx_id = 0;
}

static void ipt__blk_set_vmcs(struct pt_block_decoder *decoder, uint64_t vmcs)
{
	decoder->asid.vmcs = vmcs;
	decoder->ctx_id = 0;
}

static void ipt__blk_set_cbr(struct pt_block_decoder *decoder, uint32_t ratio)
{
	decoder->has_cbr = 1;
	decoder->cbr = ratio;
}

/* A skipped event's state, taken in without reporting it. */
static void ipt__blk_dark_apply(struct pt_block_decoder *decoder,
				const struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_paging:
	case ptev_async_paging:
	case ptev_vmcs:
	case ptev_async_vmcs:
		ipt__blk_change_asid(decoder, ev);
		break;
	case ptev_exec_mode:
		decoder->mode = ev->variant.exec_mode.mode;
		break;
	case ptev_tsx:
		decoder->speculative = ev->variant.tsx.speculative;
		break;
	case ptev_cbr:
		ipt__blk_set_cbr(decoder, ev->variant.cbr.ratio);
		break;
	default:
		break;
	}
}

/* A paging event the decoder takes (reported, or skipped resynchronizing):
 * into an address space the filter leaves out, the decoder goes dark, and
 * reports a disable first if tracing was enabled. */
static void ipt__blk_take_paging(struct pt_block_decoder *decoder,
				 const struct pt_event *ev)
{
	ipt__blk_change_asid(decoder, ev);
	if (!decoder->dark &&
	    !ipt__blk_filter_keeps(decoder, decoder->asid.cr3)) {
		decoder->dark = 1;
		decoder->dark_leave = decoder->enabled;
	}
}

/* Whether the block decoder may take packets with tracing off without
 * their events (for a caller that reports none): tracing off, no
 * instruction postponed, no CR3 filter at work or about to be, no start
 * state's events pending. */
static IPT__INLINE int
ipt__blk_quiet_now(const struct pt_block_decoder *decoder)
{
	return !decoder->enabled && !decoder->process_insn && !decoder->dark &&
	       !decoder->dark_leave && !decoder->has_held &&
	       !decoder->start_status;
}

/* For a caller that reports no events (ipt__blk_set_quiet_psb): take the
 * PSB+ whose PSB is current whole if it only restates the state with
 * tracing off (see "a PSB+ taken whole"), as its events would have been
 * taken one by one (ipt__blk_event_take, ipt__blk_event_done), when
 * ipt__blk_quiet_now says so.  Returns 1 if it did. */
static int ipt__blk_quiet_psb(struct pt_block_decoder *decoder)
{
	struct ipt__evt_psb psb;

	if (!ipt__blk_quiet_now(decoder) ||
	    !ipt__evt_psb_peek(&decoder->evdec, &psb, &decoder->quiet_memo))
		return 0;
	if ((psb.has & ipt__psb_pip) &&
	    !ipt__blk_filter_keeps(decoder, psb.pip.cr3))
		return 0;

	if (psb.has & ipt__psb_tsx)
		decoder->speculative = psb.tsx.intx;
	if (psb.has & ipt__psb_exec)
		decoder->mode = pt_get_exec_mode(&psb.exec);
	if (psb.has & ipt__psb_pip) {
		ipt__vm_side_set(&decoder->vm, psb.pip.nr);
		ipt__blk_set_cr3(decoder, psb.pip.cr3);
	}
	if (psb.has & ipt__psb_vmcs)
		ipt__blk_set_vmcs(decoder, psb.vmcs.base);
	if (psb.has & ipt__psb_cbr)
		ipt__blk_set_cbr(decoder, psb.cbr.payload.cbr.ratio);
	/* The disable drops the TRIG anchor; the others keep it. */
	decoder->has_icnt = 0;
	decoder->icnt = 0;
	decoder->has_tsc = ipt__evt_psb_take(&decoder->evdec, &psb,
					     &decoder->tsc, &decoder->lost_mtc,
					     &decoder->lost_cyc) ?
				   1 :
				   0;
	decoder->quiet_psbs += 1;
	while (ipt__evt_psb_again(&decoder->evdec, &decoder->quiet_memo))
		decoder->quiet_psbs += 1;
	return 1;
}

/* For a caller that reports no events, as ipt__blk_quiet_psb: take the
 * PIP that is current with tracing off (a MOV CR3, a VM entry or exit
 * while disabled) as its paging event would have been taken, standing
 * alone: the CR3 and the side (guest or host) set, the time as the event
 * would carry it, the packet after it current.  Only when
 * ipt__blk_quiet_now says so, nothing is queued for the PIP to bind to
 * and the CR3 filter keeps the address space.  Returns 1 if it did. */
static int ipt__blk_quiet_pip(struct pt_block_decoder *decoder)
{
	struct pt_event_decoder *evd = &decoder->evdec;
	const struct pt_packet_pip *pip = &evd->packet.payload.pip;

	if (!ipt__blk_quiet_now(decoder) || evd->enabled ||
	    !ipt__evt_settled(evd) || !ipt__blk_filter_keeps(decoder, pip->cr3))
		return 0;
	ipt__vm_side_set(&decoder->vm, pip->nr);
	ipt__blk_set_cr3(decoder, pip->cr3);
	decoder->has_tsc = ipt_time_query_tsc(&decoder->tsc,
					      &decoder->lost_mtc,
					      &decoder->lost_cyc,
					      &evd->time) >= 0;
	(void) ipt__evt_next_packet(evd);
	return 1;
}

/* Make @ev an enable at @ip, keeping its time; the filter's own event. */
static void ipt__blk_filter_enable(struct pt_block_decoder *decoder,
				   struct pt_event *ev, uint64_t ip)
{
	ev->type = ptev_enabled;
	ev->ip_suppressed = 0;
	ev->status_update = 0;
	IPT_MEMSET(&ev->variant, 0, sizeof(ev->variant));
	ev->variant.enabled.ip = ip;
	decoder->filter_event = 1;
	decoder->dark = 0;
}

/* The IP at which @ev, back in the filter's address space, lets the flow
 * go on after it: 1 and @ip if it has one, else 0. */
static int ipt__blk_dark_ip(const struct pt_event *ev, uint64_t *ip)
{
	if (ev->ip_suppressed)
		return 0;
	switch (ev->type) {
	case ptev_async_branch:
		*ip = ev->variant.async_branch.from;
		return 1;
	case ptev_async_paging:
	case ptev_async_vmcs:
	case ptev_exec_mode:
	case ptev_tsx:
		*ip = ipt__blk_event_ip(ev);
		return 1;
	default:
		return 0;
	}
}

/* Skip events while dark: up to a paging event into the filter's address
 * space, then up to the first IP.  @decoder->event is the first event not
 * skipped, or the error that ended the trace. */
static void ipt__blk_dark(struct pt_block_decoder *decoder)
{
	struct pt_event *ev = &decoder->event;
	uint64_t cr3, ip;

	for (; decoder->status >= 0; ipt__blk_next_event(decoder)) {
		if (ipt__evt_paging(ev, &cr3) < 0)
			cr3 = decoder->asid.cr3;
		else if (ev->type == ptev_paging &&
			 ipt__blk_filter_keeps(decoder, cr3))
			/* Back, at an IP the trace does not say: indicated
			 * while disabled, the skip goes on. */
			return;
		if (!ipt__blk_filter_keeps(decoder, cr3)) {
			ipt__blk_dark_apply(decoder, ev);
			continue;
		}

		switch (ev->type) {
		case ptev_tip:
			if (ev->ip_suppressed)
				break;
			ipt__blk_filter_enable(decoder, ev,
					       ev->variant.tip.ip);
			return;

		case ptev_enabled:
			ev->status_update = 0;
			decoder->filter_event = 1;
			decoder->dark = 0;
			return;

		case ptev_overflow:
			if (ev->ip_suppressed)
				break;
			decoder->filter_event = 1;
			decoder->dark = 0;
			return;

		default:
			if (ipt__blk_dark_ip(ev, &ip)) {
				IPT__COPY(decoder->held, *ev);
				decoder->has_held = 1;
				ipt__blk_filter_enable(decoder, ev, ip);
				return;
			}
			if (ev->type == ptev_async_paging)
				/* Back with tracing disabled. */
				return;
			break;
		}
		ipt__blk_dark_apply(decoder, ev);
	}
}

/* We are done with the current event: remember its time, and whether it
 * anchors TRIG counts. */
static IPT__INLINE int ipt__blk_leave_event(struct pt_block_decoder *decoder)
{
	const struct pt_event *ev = &decoder->event;

	decoder->tsc = ev->tsc;
	decoder->has_tsc = ev->has_tsc;
	decoder->lost_mtc = ev->lost_mtc;
	decoder->lost_cyc = ev->lost_cyc;
	/* The commonest: a TNT or TIP with its IP anchors the count. */
	if (IPT__LIKELY((ev->type == ptev_tnt || ev->type == ptev_tip) &&
			!ev->ip_suppressed && !ev->status_update)) {
		decoder->has_icnt = 1;
		decoder->icnt = 0;
		return 0;
	}
	return ipt__blk_update_trig_anchor(decoder, ev);
}

/* We are done with the current event: remember its time and get the next
 * one.  An event decoder error is kept in @status and reported when we
 * get to it. */
static IPT__INLINE int ipt__blk_fetch_event(struct pt_block_decoder *decoder)
{
	struct pt_event *ev = &decoder->event;
	int status;

	status = ipt__blk_leave_event(decoder);
	if (status < 0)
		return status;

	decoder->filter_event = 0;
	if (IPT__UNLIKELY(decoder->dark_leave)) {
		/* Leaving the filter's address space: tracing is disabled
		 * from here, as the paging event says. */
		decoder->dark_leave = 0;
		ev->type = ptev_disabled;
		ev->ip_suppressed = 1;
		ev->status_update = 0;
		IPT_MEMSET(&ev->variant, 0, sizeof(ev->variant));
		decoder->filter_event = 1;
		return 0;
	}
	if (IPT__UNLIKELY(decoder->has_held)) {
		decoder->has_held = 0;
		IPT__COPY(*ev, decoder->held);
		return 0;
	}

	ipt__blk_next_event(decoder);
	if (IPT__UNLIKELY(decoder->dark))
		ipt__blk_dark(decoder);
	return 0;
}

/* The status bits for the user: tracing disabled reads as a suppressed IP;
 * the event decoder having run out of trace as end of stream. */
static int ipt__blk_status(const struct pt_block_decoder *decoder, int flags)
{
	if (!decoder->enabled)
		flags |= pts_ip_suppressed;
	if (decoder->status == -pte_eos)
		flags |= pts_eos;
	return flags;
}

static void ipt__blk_reset(struct pt_block_decoder *decoder)
{
	decoder->tsc = 0;
	decoder->lost_mtc = 0;
	decoder->lost_cyc = 0;
	decoder->cbr = 0;
	decoder->icnt = 0;
	decoder->mode = ptem_unknown;
	decoder->ip = 0;
	decoder->status = -pte_nosync;
	decoder->bound = 0;
	decoder->enabled = 0;
	decoder->speculative = 0;
	decoder->has_tsc = 0;
	decoder->has_cbr = 0;
	decoder->has_icnt = 0;
	decoder->process_insn = 0;
	decoder->mismatch = 0;
	decoder->has_fault = 0;
	IPT_MEMSET(&decoder->vm, 0, sizeof(decoder->vm));
	decoder->dark = 0;
	decoder->dark_leave = 0;
	decoder->filter_event = 0;
	decoder->has_held = 0;
	decoder->has_end = 0;
	decoder->end_deferred = 0;
	decoder->ahead = 0;
	decoder->has_end_last = 0;
	decoder->has_start_last = 0;
	decoder->start_status = 0;
	decoder->cur_block = NULL;
	decoder->ntrail = 0;
	IPT_MEMSET(&decoder->event, 0xff, sizeof(decoder->event));
	ipt__retstack_init(&decoder->retstack);
	pt_asid_init(&decoder->asid);
	decoder->ctx_id = 0;
}

/* As a new decoder on its trace: nothing decoded, resynchronizing never
 * tried. */
static void ipt__blk_as_new(struct pt_block_decoder *decoder)
{
	decoder->resync_sync = UINT64_MAX;
	decoder->resync_at = 0;
	decoder->resync_stalls = 0;
	ipt__blk_reset(decoder);
}

/* The event decoder gets the flags that concern it. */
static void ipt__blk_evt_flags(const struct pt_block_decoder *decoder,
			       struct pt_config *config)
{
	IPT_MEMSET(&config->flags, 0, sizeof(config->flags));
	config->flags.variant.event.keep_tcal_on_ovf =
		decoder->flags.variant.block.keep_tcal_on_ovf;
	config->flags.variant.event.enable_iflags_events =
		decoder->flags.variant.block.enable_iflags_events;
}

static int ipt__blk_decoder_init(struct pt_block_decoder *decoder,
				 const struct pt_config *uconfig,
				 uint32_t want_text)
{
	struct pt_config config;
	int status;

	status = ipt__config_from_user(&config, uconfig);
	if (status < 0)
		return status;

	decoder->flags = config.flags;
	ipt__blk_evt_flags(decoder, &config);

	status = ipt__evt_decoder_init(&decoder->evdec, &config);
	if (status < 0)
		return status;

	decoder->want_text = want_text;
	ipt__ild_zydis_init(&decoder->zd);
	decoder->rlimit = IPT_BLK_CACHE_LIMIT;
	decoder->cr3_filter = pt_asid_no_cr3;
	decoder->ibits_runs = IPT__ICACHE_MIN_BITS;
	decoder->default_image = ipt_image_alloc_with(NULL,
						      &decoder->allocator);
	ipt__blk_runs_reset(decoder);
	decoder->ibits = ipt__blk_icache_first_bits(decoder);
	decoder->icache = ipt__blk_icache_new(decoder, decoder->ibits, 0);
	if (!decoder->default_image || !decoder->icache ||
	    ((!decoder->runs || !decoder->zd.memo) &&
	     ipt__blk_max_sets(decoder))) {
		pt_image_free(decoder->default_image);
		ipt__free(&decoder->allocator, decoder->icache,
			  sizeof(*decoder->icache) << decoder->ibits);
		ipt__blk_runs_free(decoder);
		ipt__blk_memo_free(decoder);
		ipt__evt_decoder_fini(&decoder->evdec);
		return -pte_nomem;
	}

	decoder->image = decoder->default_image;
	decoder->cache_image = NULL;
	decoder->cache_gen = 0;
	decoder->epoch = 1;
	ipt__blk_as_new(decoder);
	return 0;
}

IPT_DEF int ipt_blk_set_ring(struct pt_block_decoder *decoder,
			     uint8_t *older, uint8_t *older_end,
			     uint8_t *newer, uint8_t *newer_end)
{
	int err;

	if (!decoder)
		return -pte_invalid;
	err = ipt_evt_set_ring(&decoder->evdec, older, older_end, newer,
			       newer_end);
	if (err < 0)
		return err;
	ipt__blk_as_new(decoder);
	return 0;
}

IPT_DEF int ipt_blk_set_buffer(struct pt_block_decoder *decoder,
			       uint8_t *begin, uint8_t *end)
{
	return ipt_blk_set_ring(decoder, begin, end, end, end);
}

static void ipt__blk_decoder_fini(struct pt_block_decoder *decoder)
{
	ipt__free(&decoder->allocator, decoder->seen,
		  (size_t) decoder->seen_cap * sizeof(*decoder->seen));
	ipt__free(&decoder->allocator, decoder->added,
		  (size_t) decoder->added_cap * sizeof(*decoder->added));
	ipt__free(&decoder->allocator, decoder->chain,
		  IPT__FILL_STEPS * sizeof(*decoder->chain));
	ipt__blk_runs_free(decoder);
	ipt__blk_lmap_free(decoder);
	ipt__blk_memo_free(decoder);
	ipt__free(&decoder->allocator, decoder->icache,
		  sizeof(*decoder->icache) << decoder->ibits);
	pt_image_free(decoder->default_image);
	ipt__evt_decoder_fini(&decoder->evdec);
}

IPT_DEF struct pt_block_decoder *
ipt_blk_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_allocator *allocator)
{
	struct pt_block_decoder *decoder;
	struct ipt_allocator a;

	if (ipt__allocator_init(&a, allocator) < 0)
		return NULL;
	decoder = (struct pt_block_decoder *) ipt__zalloc(&a,
							 sizeof(*decoder));
	if (!decoder)
		return NULL;
	decoder->allocator = a;

	if (ipt__blk_decoder_init(decoder, config, 0) < 0) {
		ipt__free(&a, decoder, sizeof(*decoder));
		return NULL;
	}
	return decoder;
}

IPT_DEF struct pt_block_decoder *
pt_blk_alloc_decoder(const struct pt_config *config)
{
	return ipt_blk_alloc_decoder_with(config, NULL);
}

/* Free a block decoder and the object of @size bytes at @outer holding
 * it (or the decoder itself), all from the decoder's allocator. */
static void ipt__blk_free_with(struct pt_block_decoder *decoder, void *outer,
			       size_t size)
{
	struct ipt_allocator a = decoder->allocator;

	ipt__blk_decoder_fini(decoder);
	ipt__free(&a, outer, size);
}

IPT_DEF void pt_blk_free_decoder(struct pt_block_decoder *decoder)
{
	if (decoder)
		ipt__blk_free_with(decoder, decoder, sizeof(*decoder));
}

/* ---- using trace ---- */

/* We used up a TIP or the last bit of a TNT.  With tick events enabled and
 * a new timestamp on that event, turn it into a tick at @ip; otherwise get
 * the next event. */
static int ipt__blk_tick(struct pt_block_decoder *decoder, uint64_t ip)
{
	struct pt_event *ev = &decoder->event;

	if (decoder->flags.variant.block.enable_tick_events &&
	    ev->tsc != decoder->tsc) {
		ev->type = ptev_tick;
		ev->variant.tick.ip = ip;
		return 0;
	}
	return ipt__blk_fetch_event(decoder);
}

/* Take the destination of an indirect branch from the trace.
 *
 * With deferred TIPs, a TIP may sit behind a TNT that is still in use: look
 * ahead on a copy of the event decoder and, if the next event is that TIP,
 * take its IP and keep the TNT current.
 *
 * Returns zero on success; -pte_bad_query if the trace has no TIP here;
 * -pte_bad_packet for a TIP without IP. */
static int ipt__blk_proceed_indirect(struct pt_block_decoder *decoder)
{
	struct pt_event *ev = &decoder->event;

	if (ev->type == ptev_tip) {
		uint64_t from = decoder->ip;

		if (ev->ip_suppressed)
			return -pte_bad_packet;

		decoder->ip = ev->variant.tip.ip;
		return ipt__blk_tick(decoder, from);
	}

	if (ev->type == ptev_tnt) {
		struct pt_event_decoder saved;
		struct pt_event tnt;
		int status;

		IPT__COPY(saved, decoder->evdec);
		IPT__COPY(tnt, *ev);

		/* The trace may not tell yet (ipt_blk_extend). */
		status = pt_evt_next(&decoder->evdec, ev, sizeof(*ev));
		if (status < 0 || ev->type != ptev_tip) {
			IPT__COPY(decoder->evdec, saved);
			IPT__COPY(*ev, tnt);
			return status == -ipt_pte_need_more ? status :
							      -pte_bad_query;
		}

		/* No tick for this TIP: the TNT must stay current. */
		decoder->ip = ev->variant.tip.ip;
		IPT__COPY(*ev, tnt);
		return 0;
	}

	return -pte_bad_query;
}

/* Take one TNT bit.
 *
 * Returns 1 for taken, 0 for not taken, -pte_bad_query without a TNT.
 * An emptied TNT stays current so that a one-bit TNT can still yield a
 * tick event; the trailing-event logic moves on. */
static int ipt__blk_cond_branch(struct pt_block_decoder *decoder)
{
	struct pt_event *ev = &decoder->event;
	uint8_t size;

	if (ev->type != ptev_tnt)
		return -pte_bad_query;

	size = ev->variant.tnt.size;
	if (!size)
		return -pte_internal;

	size -= 1;
	ev->variant.tnt.size = size;
	return (int) ((ev->variant.tnt.bits >> size) & 1);
}

/* A near return: a taken TNT bit means a compressed return to the address
 * on top of the return stack, a not-taken bit is an error, and no TNT at
 * all means the destination comes in a TIP. */
static int ipt__blk_proceed_return(struct pt_block_decoder *decoder)
{
	int taken;

	taken = ipt__blk_cond_branch(decoder);
	if (taken > 0)
		return ipt__retstack_pop(&decoder->retstack, &decoder->ip);
	if (taken == -pte_bad_query)
		return ipt__blk_proceed_indirect(decoder);
	return taken ? taken : -pte_bad_retcomp;
}

/* We could not get past @insn without trace: use trace for this last step,
 * which ends the block and gives the next block's start IP.  Near calls
 * have already been pushed on the return stack. */
static int ipt__blk_proceed_with_trace(struct pt_block_decoder *decoder,
				       const struct pt_insn *insn,
				       const struct ipt__insn_ext *iext)
{
	switch (insn->iclass) {
	case ptic_cond_jump: {
		uint64_t ip = insn->ip + insn->size;
		int taken;

		taken = ipt__blk_cond_branch(decoder);
		if (taken < 0)
			return taken;
		if (taken)
			ip += (uint64_t) iext->variant.branch.displacement;

		decoder->ip = ip;
		return 0;
	}

	case ptic_return:
		return ipt__blk_proceed_return(decoder);

	case ptic_jump:
		/* JMPABS is direct but its target comes in a TIP. */
		if (iext->iclass == IPT__INST_JMPABS)
			break;
		/* fall through */
	case ptic_call:
		if (iext->variant.branch.is_direct)
			return -pte_internal;
		break;

	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
	case ptic_indirect:
		break;

	case ptic_ptwrite:
	case ptic_other:
		return -pte_internal;

	case ptic_unknown:
		return -pte_bad_insn;
	}

	return ipt__blk_proceed_indirect(decoder);
}

/* ---- walking the code, one instruction at a time ---- */

static int ipt__blk_block_is_empty(const struct pt_block *block)
{
	return !block->ninsn;
}

/* Note a near call's return address for return compression; a direct
 * call to the next instruction (the PIC idiom) returns nowhere. */
static void ipt__blk_log_call(struct pt_block_decoder *decoder,
			      const struct pt_insn *insn,
			      const struct ipt__insn_ext *iext)
{
	if (insn->iclass != ptic_call)
		return;
	if (iext->variant.branch.is_direct &&
	    !iext->variant.branch.displacement)
		return;
	ipt__retstack_push(&decoder->retstack, insn->ip + insn->size);
}

/* Add the instruction at @decoder->ip to @block and return it in @insn.
 *
 * Returns 1 if it was added; 0 if it does not fit (the block is full, ends
 * in a truncated instruction, or the instruction lies in another section);
 * a negative pte_* code if it cannot be read or decoded. */
static int ipt__blk_proceed_one_insn(struct pt_block_decoder *decoder,
				     struct pt_block *block,
				     struct pt_insn *insn,
				     struct ipt__insn_ext *iext)
{
	uint16_t ninsn;
	int status;

	ninsn = (uint16_t) (block->ninsn + 1);
	if (!ninsn || block->truncated)
		return 0;

	status = ipt__blk_decode_at(decoder, decoder->ip, insn, iext);
	if (status < 0)
		return status;

	if (insn->isid != block->isid) {
		if (!ipt__blk_block_is_empty(block))
			return 0;
		block->isid = insn->isid;
	}

	/* An instruction read from more than one section: give its bytes to
	 * the user with the block.  It ends the block. */
	if (insn->truncated) {
		IPT_MEMCPY(block->raw, insn->raw, insn->size);
		block->size = insn->size;
		block->truncated = 1;
	}

	ipt__blk_log_call(decoder, insn, iext);

	block->iclass = insn->iclass;
	block->end_ip = insn->ip;
	block->ninsn = ninsn;

	if (decoder->has_icnt) {
		uint32_t icnt = decoder->icnt + 1;

		if (!icnt)
			return -pte_overflow;
		decoder->icnt = icnt;
	}
	return 1;
}

typedef int (*ipt__blk_insn_pred)(const struct pt_insn *insn,
				  const struct ipt__insn_ext *iext);

static int ipt__blk_insn_false(const struct pt_insn *insn,
			       const struct ipt__insn_ext *iext)
{
	(void) insn;
	(void) iext;
	return 0;
}

/* The user asked to end blocks after near calls or near jumps. */
static int ipt__blk_end_on_branch(const struct pt_block_decoder *decoder,
				  const struct pt_insn *insn)
{
	return (decoder->flags.variant.block.end_on_call &&
		insn->iclass == ptic_call) ||
	       (decoder->flags.variant.block.end_on_jump &&
		insn->iclass == ptic_jump);
}

/* Walk the code without trace until an instruction satisfies @pred.
 *
 * On 1, @insn is that instruction and @decoder->ip still points at it.
 * On 0, the block ended (full, section change, or a call or jump the user
 * wants blocks to end on) and @decoder->ip is the next IP.
 * On -pte_bad_query, @insn needs trace and @decoder->ip points at it.
 * Other negative codes are errors. */
static int ipt__blk_proceed_to_insn(struct pt_block_decoder *decoder,
				    struct pt_block *block,
				    struct pt_insn *insn,
				    struct ipt__insn_ext *iext,
				    ipt__blk_insn_pred pred)
{
	int status;

	for (;;) {
		status = ipt__blk_proceed_one_insn(decoder, block, insn, iext);
		if (status <= 0)
			return status;

		status = pred(insn, iext);
		if (status)
			return status;

		status = ipt__insn_next_ip(&decoder->ip, insn, iext);
		if (status < 0)
			return status;

		if (ipt__blk_end_on_branch(decoder, insn))
			return 0;
	}
}

static const struct ipt__blk_run *
ipt__blk_run_cached(struct pt_block_decoder *decoder, uint64_t ip,
		    enum pt_exec_mode mode);

static const struct ipt__blk_run *
ipt__blk_run_find(struct pt_block_decoder *decoder, uint64_t ip,
		  enum pt_exec_mode mode, const struct ipt__blk_text **text);

/* Add the run the run cache has at @decoder->ip to @block at once, as
 * walking it one instruction at a time would, if @ip does not lie inside
 * it and its last instruction needs no trace: the instructions before
 * the last one are ordinary ones, so only that one is decoded.  Returns 1
 * if it did, with @insn and @iext that instruction and @decoder->ip after
 * it; 0 if the caller goes one instruction at a time (the same result,
 * errors included).  A run found that needs trace at its end or holds
 * @ip sets *@plast to the IP of its last instruction: the runs at the IPs
 * the caller walks through up to there could not be added either (they
 * end with the same instruction, or later, and need that trace or hold
 * @ip too), so it need not look for them. */
static int ipt__blk_skip_run(struct pt_block_decoder *decoder,
			     struct pt_block *block, struct pt_insn *insn,
			     struct ipt__insn_ext *iext, uint64_t ip,
			     uint64_t *plast)
{
	const struct ipt__blk_run *run;
	uint64_t last, next;
	uint32_t ninsn;

	if (decoder->want_text || block->truncated)
		return 0;
	/* Recording a run reads code ahead of @ip: not while waiting for
	 * missing code, where a read that fails is a fault. */
	if (decoder->wait_for_code)
		run = ipt__blk_run_cached(decoder, decoder->ip, decoder->mode);
	else
		run = ipt__blk_run_find(decoder, decoder->ip, decoder->mode,
					NULL);
	if (!run)
		return 0;
	last = run->ip + run->len;
	switch ((enum ipt__run_kind) run->kind) {
	case ipt__run_next:
	case ipt__run_djump:
	case ipt__run_dcall:
		break;
	default:
		*plast = last;
		return 0;
	}
	if (run->ip < ip && ip <= last) {
		*plast = last;
		return 0;
	}

	ninsn = (uint32_t) block->ninsn + run->ninsn;
	if (ninsn > UINT16_MAX ||
	    (run->isid != block->isid && !ipt__blk_block_is_empty(block)) ||
	    (decoder->has_icnt && decoder->icnt + run->ninsn < decoder->icnt))
		return 0;
	if (ipt__blk_decode_at(decoder, last, insn, iext) < 0 ||
	    insn->truncated || insn->isid != run->isid ||
	    ipt__insn_next_ip(&next, insn, iext) < 0)
		return 0;

	ipt__blk_log_call(decoder, insn, iext);
	block->isid = run->isid;
	block->iclass = insn->iclass;
	block->end_ip = last;
	block->ninsn = (uint16_t) ninsn;
	if (decoder->has_icnt)
		decoder->icnt += run->ninsn;
	decoder->ip = next;
	return 1;
}

/* Walk the code without trace until @decoder->ip reaches @ip, a run from
 * the run cache at a time where that is the same.
 *
 * On 1, @decoder->ip == @ip and @insn is the instruction before it, if we
 * moved at all.  Otherwise as ipt__blk_proceed_to_insn. */
static int ipt__blk_proceed_to_ip(struct pt_block_decoder *decoder,
				  struct pt_block *block,
				  struct pt_insn *insn,
				  struct ipt__insn_ext *iext, uint64_t ip)
{
	uint64_t first = 0, last = 0;
	int status;

	for (;;) {
		if (decoder->ip == ip)
			return 1;

		/* Inside the last run found, not at its start. */
		if (first < decoder->ip && decoder->ip <= last)
			status = 0;
		else {
			first = decoder->ip;
			last = 0;
			status = ipt__blk_skip_run(decoder, block, insn, iext,
						   ip, &last);
		}
		if (!status) {
			status = ipt__blk_proceed_one_insn(decoder, block,
							   insn, iext);
			if (status <= 0)
				return status;

			status = ipt__insn_next_ip(&decoder->ip, insn, iext);
			if (status < 0)
				return status;
		}

		/* The branch that ends the block may have reached @ip. */
		if (ipt__blk_end_on_branch(decoder, insn))
			return decoder->ip == ip ? 1 : 0;
	}
}

/* Erratum SKL014: a TIP.PGD without IP may also come from a direct near
 * jump or call that leaves the filter region.  Such a branch, or a MOV to
 * CR3, is where the disable binds. */
static int ipt__blk_insn_skl014(const struct pt_insn *insn,
				const struct ipt__insn_ext *iext)
{
	switch (insn->iclass) {
	case ptic_jump:
		if (iext->iclass == IPT__INST_JMPABS)
			return 0;
		/* fall through */
	case ptic_call:
		return iext->variant.branch.is_direct;

	case ptic_other:
		return ipt__insn_changes_cr3(insn, iext);

	case ptic_unknown: case ptic_return: case ptic_cond_jump:
	case ptic_far_call: case ptic_far_return: case ptic_far_jump:
	case ptic_ptwrite: case ptic_indirect:
		break;
	}
	return 0;
}

/* Reach a disable without IP under SKL014: the disabling branch is the
 * first direct branch whose target the address filter does not trace (or
 * a CR3 change).  Returns as ipt__blk_proceed_to_insn. */
static int ipt__blk_proceed_skl014(struct pt_block_decoder *decoder,
				   struct pt_block *block,
				   struct pt_insn *insn,
				   struct ipt__insn_ext *iext)
{
	const struct pt_config *config;
	int status;

	config = pt_evt_get_config(&decoder->evdec);
	if (!config)
		return -pte_internal;

	for (;;) {
		uint64_t target;

		status = ipt__blk_proceed_to_insn(decoder, block, insn, iext,
						  ipt__blk_insn_skl014);
		if (status <= 0)
			return status;

		if (ipt__insn_changes_cr3(insn, iext))
			return status;

		status = ipt__insn_next_ip(&target, insn, iext);
		if (status < 0)
			return status;

		/* A target outside the traced regions is our branch. */
		status = ipt__filter_addr_check(&config->addr_filter, target);
		if (status <= 0)
			return status ? status : 1;

		decoder->ip = target;
		if (ipt__blk_end_on_branch(decoder, insn))
			return 0;
	}
}

/* Reach a synchronous disable.  With an IP, that is where it binds.
 * Without, it binds to the next CR3 change, or to the next branch needing
 * trace (far branches and CPL changes need trace, too): the caller sees
 * -pte_bad_query for those. */
static int ipt__blk_proceed_to_disabled(struct pt_block_decoder *decoder,
					struct pt_block *block,
					struct pt_insn *insn,
					struct ipt__insn_ext *iext,
					const struct pt_event *ev)
{
	const struct pt_config *config;

	if (!ev->ip_suppressed)
		return ipt__blk_proceed_to_ip(decoder, block, insn, iext,
					      ev->variant.disabled.ip);

	config = pt_evt_get_config(&decoder->evdec);
	if (!config)
		return -pte_internal;

	/* Without a filter configuration we assume no filtering and thus no
	 * SKL014; we would otherwise disable too early. */
	if (config->addr_filter.config.addr_cfg && config->errata.skl014)
		return ipt__blk_proceed_skl014(decoder, block, insn, iext);

	return ipt__blk_proceed_to_insn(decoder, block, insn, iext,
					ipt__insn_changes_cr3);
}

/* After a synchronous disable @decoder->ip still points at the instruction
 * it bound to, of @iclass at @ip, @size bytes long.  Tracing will likely
 * resume after a call returns; after anything else we cannot guess. */
static void ipt__blk_set_disable_resume_ip(struct pt_block_decoder *decoder,
					   enum pt_insn_class iclass,
					   uint64_t ip, uint8_t size)
{
	if (iclass == ptic_call || iclass == ptic_far_call)
		decoder->ip = ip + size;
	else
		decoder->ip = 0;
}

/* Reach an instruction-bound event that takes effect after its instruction
 * (PTWRITE, IRET, VM entry, UIRET): the next instruction satisfying @pred,
 * or, if the event has an IP, the instruction at that IP.  Either way, add
 * the instruction to the block.  Returns as ipt__blk_proceed_to_insn, with
 * @insn the bound instruction on 1. */
static int ipt__blk_proceed_past(struct pt_block_decoder *decoder,
				 struct pt_block *block, struct pt_insn *insn,
				 struct ipt__insn_ext *iext,
				 const struct pt_event *ev, ipt__blk_insn_pred pred,
				 uint64_t ip)
{
	int status;

	if (ev->ip_suppressed)
		return ipt__blk_proceed_to_insn(decoder, block, insn, iext,
						pred);

	status = ipt__blk_proceed_to_ip(decoder, block, insn, iext, ip);
	if (status <= 0)
		return status;

	/* This may still overflow the block; both instruction and event then
	 * go to the next block. */
	return ipt__blk_proceed_one_insn(decoder, block, insn, iext);
}

/* Code looked at ahead of the flow (by an erratum workaround, or to check
 * the instruction an event names) could not be read: the check does not
 * apply, as in libipt, unless the user waits for missing code
 * (ipt_blk_set_wait_for_code); then the error stops the decoder where it
 * is, and it looks again on the next call. */
static int ipt__blk_lookahead_failed(struct pt_block_decoder *decoder,
				     int status)
{
	if (decoder->wait_for_code &&
	    (status == -pte_nomap || status == -pte_bad_insn)) {
		decoder->fault_ahead = 1;
		return status;
	}
	return 0;
}

/* An event named its instruction (a software interrupt or a system call)
 * by the IP we are at, before we walked any code: the instruction there is
 * the one to postpone.  Returns 1 if it is of another kind (proceeding
 * past it will fail, as in libipt's block decoder); 0 if it is of the kind
 * (then it is in @insn and @iext) or cannot be read or decoded (the walk
 * on reports that); a negative pte_* code if it cannot be read and the
 * user waits for missing code: nothing has changed yet, so the next call
 * looks again, as a decode with the code there would have. */
static int ipt__blk_event_insn(struct pt_block_decoder *decoder,
			       ipt__blk_insn_pred pred, struct pt_insn *insn,
			       struct ipt__insn_ext *iext)
{
	struct ipt__insn_ext at_ext;
	struct pt_insn at;
	int status;

	status = ipt__blk_decode_at(decoder, decoder->ip, &at, &at_ext);
	if (status < 0)
		return ipt__blk_lookahead_failed(decoder, status);
	if (!pred(&at, &at_ext))
		return 1;
	IPT__COPY(*insn, at);
	IPT__COPY(*iext, at_ext);
	return 0;
}

/* Give a TRIG event its anchor IP if it has none: our current IP, with the
 * instructions we counted since the anchor taken off its count. */
static int ipt__blk_provide_trig_anchor(struct pt_block_decoder *decoder,
					struct pt_event *ev)
{
	if (ev->type != ptev_trig || ev->ip_suppressed)
		return -pte_internal;

	if (ev->variant.trig.ip)
		return 0;

	if (!decoder->has_icnt)
		return -pte_bad_packet;
	if (ev->variant.trig.icnt < decoder->icnt)
		return -pte_bad_packet;

	ev->variant.trig.icnt = (uint16_t) (ev->variant.trig.icnt -
					    decoder->icnt);
	ev->variant.trig.ip = decoder->ip;
	return 0;
}

/* Reach a TRIG event: its anchor IP, then as many instructions as it
 * counts.  The progress is kept in the event itself, so a full block just
 * continues in the next one. */
static int ipt__blk_proceed_to_trig(struct pt_block_decoder *decoder,
				    struct pt_block *block,
				    struct pt_insn *insn,
				    struct ipt__insn_ext *iext,
				    struct pt_event *ev)
{
	int status;

	if (ev->ip_suppressed)
		return 1;

	status = ipt__blk_provide_trig_anchor(decoder, ev);
	if (status < 0)
		return status;

	/* With tracing disabled the event decoder gives the exact IP. */
	if (!decoder->enabled)
		return ev->variant.trig.icnt ? 1 : -pte_internal;

	status = ipt__blk_proceed_to_ip(decoder, block, insn, iext,
					ev->variant.trig.ip);
	if (status <= 0)
		return status;

	while (ev->variant.trig.icnt) {
		status = ipt__blk_proceed_one_insn(decoder, block, insn, iext);
		if (status <= 0)
			return status;

		status = ipt__insn_next_ip(&decoder->ip, insn, iext);
		if (status < 0)
			return status;

		ev->variant.trig.ip = decoder->ip;
		ev->variant.trig.icnt -= 1;
	}
	return 1;
}

/* Erratum SKD022: a VMLAUNCH or VMRESUME that disables tracing may send a
 * bogus FUP, which makes the disable look asynchronous.  Turn such an
 * async disable into a synchronous one.
 *
 * Returns 1 if the event was changed, 0 if the erratum does not apply. */
static int ipt__blk_handle_skd022(struct pt_block_decoder *decoder,
				  struct pt_event *ev)
{
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	int status;

	status = ipt__blk_decode_at(decoder, ev->variant.async_disabled.at,
				    &insn, &iext);
	if (status < 0)
		return ipt__blk_lookahead_failed(decoder, status);

	if (iext.iclass != IPT__INST_VMLAUNCH &&
	    iext.iclass != IPT__INST_VMRESUME)
		return 0;

	ev->type = ptev_disabled;
	ev->variant.disabled.ip = ev->variant.async_disabled.ip;
	return 1;
}

static int ipt__blk_skd022_applies(struct pt_block_decoder *decoder,
				   struct pt_event *ev)
{
	const struct pt_config *config;

	config = pt_evt_get_config(&decoder->evdec);
	if (!config)
		return -pte_internal;
	if (!config->errata.skd022)
		return 0;
	return ipt__blk_handle_skd022(decoder, ev);
}

/* Keep @insn: more events may bind to it.  We proceed past it once they
 * have all been indicated. */
static int ipt__blk_postpone_insn(struct pt_block_decoder *decoder,
				  const struct pt_insn *insn,
				  const struct ipt__insn_ext *iext)
{
	if (decoder->process_insn)
		return -pte_internal;

	decoder->process_insn = 1;
	IPT__COPY(decoder->insn, *insn);
	IPT__COPY(decoder->iext, *iext);
	return ipt__blk_status(decoder, pts_event_pending);
}

static void ipt__blk_clear_postponed_insn(struct pt_block_decoder *decoder)
{
	decoder->process_insn = 0;
	decoder->mismatch = 0;
	decoder->bound = 0;
	if (decoder->end_deferred)
		ipt__blk_note_end(decoder);
}

/* Proceed past a postponed instruction, with trace if it needs it. */
static int ipt__blk_proceed_postponed_insn(struct pt_block_decoder *decoder)
{
	int status;

	if (!decoder->process_insn)
		return 0;

	if (decoder->enabled) {
		/* The trace said the postponed instruction was another. */
		if (decoder->mismatch)
			return -pte_bad_query;

		status = ipt__insn_next_ip(&decoder->ip, &decoder->insn,
					   &decoder->iext);
		if (status < 0) {
			if (status != -pte_bad_query)
				return status;

			status = ipt__blk_proceed_with_trace(decoder,
							     &decoder->insn,
							     &decoder->iext);
			if (status < 0)
				return status;
		}
	}

	ipt__blk_clear_postponed_insn(decoder);
	return 0;
}

/* Events that bind to a kind of instruction: the predicate and the bound
 * bit, or NULL. */
static ipt__blk_insn_pred ipt__blk_binding(enum pt_event_type type,
					   uint32_t *bit)
{
	switch (type) {
	case ptev_paging:
		*bit = IPT__BOUND_PAGING;
		return ipt__insn_binds_to_pip;
	case ptev_vmcs:
		*bit = IPT__BOUND_VMCS;
		return ipt__insn_binds_to_vmcs;
	case ptev_ptwrite:
		*bit = IPT__BOUND_PTWRITE;
		return ipt__insn_is_ptwrite;
	case ptev_iret:
		*bit = IPT__BOUND_IRET;
		return ipt__insn_is_iret;
	case ptev_vmentry:
		*bit = IPT__BOUND_VMENTRY;
		return ipt__insn_is_vmentry;
	case ptev_uiret:
		*bit = IPT__BOUND_UIRET;
		return ipt__insn_is_uiret;
	case ptev_swintr:
		*bit = IPT__BOUND_SWINTR;
		return ipt__insn_is_swint;
	case ptev_syscall:
		*bit = IPT__BOUND_SYSCALL;
		return ipt__insn_is_syscall;
	case ptev_enabled: case ptev_disabled: case ptev_async_disabled:
	case ptev_async_branch: case ptev_async_paging: case ptev_overflow:
	case ptev_exec_mode: case ptev_tsx: case ptev_stop:
	case ptev_async_vmcs: case ptev_exstop: case ptev_mwait:
	case ptev_pwre: case ptev_pwrx: case ptev_tick: case ptev_cbr:
	case ptev_mnt: case ptev_tip: case ptev_tnt: case ptev_iflags:
	case ptev_interrupt: case ptev_smi: case ptev_rsm: case ptev_sipi:
	case ptev_init: case ptev_vmexit: case ptev_shutdown: case ptev_uintr:
	case ptev_trig:
		break;
	}
	*bit = 0;
	return NULL;
}

/* The IP an event happens at, for the event types that carry one. */
static uint64_t ipt__blk_event_ip(const struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_enabled:
		return ev->variant.enabled.ip;
	case ptev_disabled:
		return ev->variant.disabled.ip;
	case ptev_async_disabled:
		return ev->variant.async_disabled.at;
	case ptev_async_branch:
		return ev->variant.async_branch.from;
	case ptev_async_paging:
		return ev->variant.async_paging.ip;
	case ptev_async_vmcs:
		return ev->variant.async_vmcs.ip;
	case ptev_overflow:
		return ev->variant.overflow.ip;
	case ptev_exec_mode:
		return ev->variant.exec_mode.ip;
	case ptev_tsx:
		return ev->variant.tsx.ip;
	case ptev_exstop:
		return ev->variant.exstop.ip;
	case ptev_mwait:
		return ev->variant.mwait.ip;
	case ptev_ptwrite:
		return ev->variant.ptwrite.ip;
	case ptev_tick:
		return ev->variant.tick.ip;
	case ptev_tip:
		return ev->variant.tip.ip;
	case ptev_iflags:
		return ev->variant.iflags.ip;
	case ptev_interrupt:
		return ev->variant.interrupt.ip;
	case ptev_iret:
		return ev->variant.iret.ip;
	case ptev_smi:
		return ev->variant.smi.ip;
	case ptev_rsm:
		return ev->variant.rsm.ip;
	case ptev_init:
		return ev->variant.init.ip;
	case ptev_vmentry:
		return ev->variant.vmentry.ip;
	case ptev_vmexit:
		return ev->variant.vmexit.ip;
	case ptev_shutdown:
		return ev->variant.shutdown.ip;
	case ptev_uintr:
		return ev->variant.uintr.ip;
	case ptev_uiret:
		return ev->variant.uiret.ip;
	case ptev_trig:
		return ev->variant.trig.ip;
	case ptev_swintr:
		return ev->variant.swintr.ip;
	case ptev_syscall:
		return ev->variant.syscall.ip;
	case ptev_paging: case ptev_stop: case ptev_vmcs: case ptev_pwre:
	case ptev_pwrx: case ptev_cbr: case ptev_mnt: case ptev_tnt:
	case ptev_sipi:
		break;
	}
	return 0;
}

/* ---- reaching the current event ---- */

/* Walk the code up to where the current event binds and indicate it.
 *
 * On the way the block may run full or need trace; then the event waits
 * for the next block and we return 0, which is what ipt__blk_status would
 * say too: no end of stream while events are pending, and tracing is
 * enabled.
 *
 * Returns pt_status_flag bits, or a negative pte_* code. */
static int ipt__blk_proceed_event(struct pt_block_decoder *decoder,
				  struct pt_block *block)
{
	struct pt_event *ev = &decoder->event;
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	ipt__blk_insn_pred pred;
	uint32_t bit, mismatch;
	int status;

	IPT_MEMSET(&insn, 0, sizeof(insn));
	IPT_MEMSET(&iext, 0, sizeof(iext));

	/* The CR3 filter's events bind where the decoder stands. */
	if (decoder->filter_event)
		return ipt__blk_status(decoder, pts_event_pending);

	switch (ev->type) {
	case ptev_enabled:
	case ptev_overflow:
	case ptev_stop:
	case ptev_pwre:
	case ptev_pwrx:
	case ptev_tick:
	case ptev_cbr:
	case ptev_mnt:
	case ptev_rsm:
	case ptev_sipi:
		break;

	case ptev_tip:
	case ptev_tnt:
		return -pte_internal;

	case ptev_disabled:
		if (ev->status_update)
			break;

		status = ipt__blk_proceed_to_disabled(decoder, block, &insn,
						      &iext, ev);
		if (status <= 0) {
			/* A disable also binds to the next branch that
			 * needs trace. */
			if (status != -pte_bad_query)
				return status;
			ipt__blk_set_disable_resume_ip(decoder, insn.iclass,
						       insn.ip, insn.size);
		}
		break;

	case ptev_async_disabled:
		status = ipt__blk_proceed_to_ip(decoder, block, &insn, &iext,
						ev->variant.async_disabled.at);
		if (status <= 0)
			return status;

		status = ipt__blk_skd022_applies(decoder, ev);
		if (status < 0)
			return status;
		if (status)
			/* Now a synchronous disable: start over. */
			return ipt__blk_proceed_event(decoder, block);
		break;

	case ptev_async_branch:
		status = ipt__blk_proceed_to_ip(decoder, block, &insn, &iext,
						ev->variant.async_branch.from);
		if (status <= 0)
			return status;
		break;

	case ptev_paging:
	case ptev_vmcs:
		/* PIP and VMCS bind to the next instruction that may load
		 * CR3 or the VMCS pointer. */
		if (!decoder->enabled)
			break;

		pred = ipt__blk_binding(ev->type, &bit);
		status = ipt__blk_proceed_to_insn(decoder, block, &insn, &iext,
						  pred);
		if (status <= 0)
			return status;

		decoder->bound |= bit;
		return ipt__blk_postpone_insn(decoder, &insn, &iext);

	case ptev_ptwrite:
	case ptev_iret:
	case ptev_vmentry:
	case ptev_uiret:
		/* These are indicated after their instruction. */
		if (!decoder->enabled)
			break;

		pred = ipt__blk_binding(ev->type, &bit);
		status = ipt__blk_proceed_past(decoder, block, &insn, &iext, ev,
					       pred, ipt__blk_event_ip(ev));
		if (status <= 0)
			return status;

		decoder->bound |= bit;
		return ipt__blk_postpone_insn(decoder, &insn, &iext);

	case ptev_swintr:
	case ptev_syscall:
		/* These are indicated at their instruction: an async branch
		 * or a TIP at that IP may follow. */
		if (!decoder->enabled)
			break;

		pred = ipt__blk_binding(ev->type, &bit);
		if (ev->ip_suppressed)
			status = ipt__blk_proceed_to_insn(decoder, block, &insn,
							  &iext, pred);
		else
			status = ipt__blk_proceed_to_ip(decoder, block, &insn,
							&iext,
							ipt__blk_event_ip(ev));
		if (status <= 0)
			return status;

		/* With the IP, the instruction we postpone is the last one
		 * we walked to get there, as in libipt; if we walked none,
		 * it is the one at the IP. */
		mismatch = 0;
		if (!ev->ip_suppressed && !insn.size) {
			status = ipt__blk_event_insn(decoder, pred, &insn,
						     &iext);
			if (status < 0)
				return status;
			mismatch = (uint32_t) status;
		}

		decoder->bound |= bit;
		status = ipt__blk_postpone_insn(decoder, &insn, &iext);
		decoder->mismatch = mismatch;
		return status;

	case ptev_async_paging:
	case ptev_async_vmcs:
	case ptev_exec_mode:
	case ptev_tsx:
	case ptev_iflags:
	case ptev_interrupt:
	case ptev_smi:
	case ptev_init:
	case ptev_vmexit:
	case ptev_shutdown:
	case ptev_uintr:
		if (ev->ip_suppressed)
			break;

		status = ipt__blk_proceed_to_ip(decoder, block, &insn, &iext,
						ipt__blk_event_ip(ev));
		if (status <= 0)
			return status;
		break;

	case ptev_exstop:
	case ptev_mwait:
		if (!decoder->enabled || ev->ip_suppressed)
			break;

		status = ipt__blk_proceed_to_ip(decoder, block, &insn, &iext,
						ipt__blk_event_ip(ev));
		if (status <= 0)
			return status;
		break;

	case ptev_trig:
		status = ipt__blk_proceed_to_trig(decoder, block, &insn, &iext,
						  ev);
		if (status <= 0)
			return status;
		break;
	}

	return ipt__blk_status(decoder, pts_event_pending);
}

/* ---- walking the code, a run at a time ---- */

/* No event binds before the next branch that needs trace: walk there one
 * instruction at a time, then take that branch with trace.  This is the
 * way for everything the run cache does not hold. */
static int ipt__blk_proceed_no_event_uncached(struct pt_block_decoder *decoder,
					      struct pt_block *block)
{
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	int status;

	IPT_MEMSET(&insn, 0, sizeof(insn));
	IPT_MEMSET(&iext, 0, sizeof(iext));

	status = ipt__blk_proceed_to_insn(decoder, block, &insn, &iext,
					  ipt__blk_insn_false);
	if (status == -pte_bad_query)
		return ipt__blk_proceed_with_trace(decoder, &insn, &iext);
	return status < 0 ? status : 0;
}

/* The code a run is recorded from, read in one piece: @len bytes from
 * @ip, in section @isid. */
enum { IPT__BLK_WINDOW = 64 };

struct ipt__blk_window {
	uint64_t ip;
	uint32_t len;
	int isid;
	uint8_t code[IPT__BLK_WINDOW];
};

/* The bytes at @ip, at least pt_max_insn_size of them, from @win; it
 * reads again at @ip if it has fewer.  NULL if the image has fewer (a
 * section ends, the callback stops, or an error): the instruction is then
 * decoded the long way, which knows what to make of that.  Where the
 * window has them, a read at @ip would have given the same bytes from the
 * same section. */
static const uint8_t *ipt__blk_window(struct pt_block_decoder *decoder,
				      struct ipt__blk_window *win,
				      uint64_t ip)
{
	int status;

	/* Without overflow: @ip may lie within an instruction's size of
	 * the end of the address space. */
	if (ip < win->ip || ip - win->ip > win->len ||
	    win->len - (ip - win->ip) < pt_max_insn_size) {
		status = ipt__image_read(decoder->image, &win->isid,
					 win->code, sizeof(win->code),
					 &decoder->asid, ip);
		win->ip = ip;
		win->len = status > 0 ? (uint32_t) status : 0;
		if (win->len > sizeof(win->code))
			win->len = 0;
		if (win->len < pt_max_insn_size)
			return NULL;
	}
	return &win->code[ip - win->ip];
}

/* Record the run starting at @ip in @mode in @run, and its text in @text
 * if not NULL.
 *
 * The run follows the code while the next IP is known without trace, up to
 * and including the first instruction that needs trace or is a direct near
 * call or jump (those update the return stack or may end the block on the
 * user's request).  It stops early, before an instruction in a different
 * section, one that cannot be decoded in one piece, or one that does not
 * fit the text; after IPT__RUN_MAX instructions, or where the IP wraps.
 *
 * Returns @run, or NULL if not even the first instruction qualifies: the
 * caller then walks instruction by instruction, which reports errors. */
static const struct ipt__blk_run *
ipt__blk_run_fill(struct pt_block_decoder *decoder, struct ipt__blk_run *run,
		  struct ipt__blk_text *text, uint64_t start,
		  enum pt_exec_mode mode, uint32_t ctx)
{
	struct ipt__blk_window win;
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	struct ipt__blk_lmap_cursor at = { NULL, 1 };
	uint64_t ip = start;
	uint32_t max = IPT__RUN_MAX, len = 0;
	uint16_t ninsn = 0;
	uint8_t kind;

	win.ip = 0;
	win.len = 0;
	if (text)
		max = IPT__TEXT_INSNS;
	insn.mode = mode;

	for (;;) {
		const uint8_t *code = NULL;
		uint64_t next;
		int status = -1, isid = 0;
		uint8_t known;

		/* An ordinary instruction seen before: its size, and its
		 * bytes if the text wants them.  Else decode it from the
		 * window, or the long way (through the instruction cache)
		 * where the window has no whole instruction or the
		 * decoder reports an error.  Only that way sets more of
		 * @insn than its IP, mode, size, class and section. */
		known = ipt__blk_lmap_at(decoder, &at, ip, ctx, &isid);
		if (!known || text)
			code = ipt__blk_window(decoder, &win, ip);
		if (known && text && (!code || isid != win.isid))
			known = 0;
		insn.ip = ip;
		if (known) {
			if (ninsn && isid != run->isid)
				break;
			insn.size = known;
			insn.isid = isid;
			insn.iclass = ptic_other;
		} else {
			if (code) {
				insn.isid = win.isid;
				status = ipt__ild_decode_bytes_with(
					&decoder->zd, &insn, &iext, code,
					pt_max_insn_size);
			}
			if (status) {
				IPT_MEMSET(&insn, 0, sizeof(insn));
				IPT_MEMSET(&iext, 0, sizeof(iext));
				insn.mode = mode;
				insn.ip = ip;
				status = ipt__blk_decode(decoder, &insn,
							 &iext);
				if (status < 0)
					break;
				if (insn.truncated)
					break;
				code = insn.raw;
			}
			if (ninsn && insn.isid != run->isid)
				break;
		}

		if (text) {
			if (len + insn.size > IPT__TEXT_BYTES)
				break;
			/* With the bytes that follow it, a copy of fixed
			 * size: the next instruction's copy starts at its
			 * end, zeros follow the last one. */
			IPT_MEMCPY(&text->code[len], code, pt_max_insn_size);
			text->info[ninsn] = (uint8_t) (insn.size |
						       (insn.iclass << 4));
		}

		if (insn.iclass == ptic_other) {
			next = ipt__ip_in_mode(mode, ip + insn.size);
			if (!known && next == ip + insn.size)
				at.piece = ipt__blk_lmap_put(decoder, at.piece,
							     ip, ctx, insn.isid,
							     insn.size);
			status = 0;
		} else {
			status = ipt__insn_next_ip(&next, &insn, &iext);
			if (status < 0 && status != -pte_bad_query)
				break;
		}

		run->isid = insn.isid;
		run->len = (uint16_t) len;
		run->iclass = (uint8_t) insn.iclass;
		run->isize = insn.size;
		run->disp = 0;
		ninsn += 1;

		kind = ipt__run_next;
		if (status < 0) {
			kind = ipt__run_indirect;
			switch (insn.iclass) {
			case ptic_cond_jump:
				kind = ipt__run_cond;
				break;
			case ptic_return:
				kind = ipt__run_ret;
				break;
			case ptic_call:
				kind = ipt__run_icall;
				break;
			case ptic_unknown: case ptic_other: case ptic_jump:
			case ptic_far_call: case ptic_far_return:
			case ptic_far_jump: case ptic_ptwrite:
			case ptic_indirect:
				break;
			}
		} else if (insn.iclass == ptic_call) {
			kind = ipt__run_dcall;
		} else if (insn.iclass == ptic_jump) {
			kind = ipt__run_djump;
		}
		if (kind != ipt__run_next) {
			run->disp = (int32_t) iext.variant.branch.displacement;
			goto done;
		}

		len += insn.size;
		if (ninsn == max || next != ip + insn.size) {
			kind = ipt__run_next;
			goto done;
		}
		ip = next;
	}

	/* The instruction at @ip does not belong to the run. */
	if (!ninsn)
		return NULL;
	kind = ipt__run_next;

done:
	run->ip = start;
	run->ninsn = ninsn;
	run->kind = kind;
	run->warm = 0;
	run->ctx = ctx;
	if (text)
		IPT_MEMSET(&text->code[run->len + run->isize], 0,
			   pt_max_insn_size);
	if (decoder->run_hook)
		decoder->run_hook(decoder->run_hook_context, start,
				  start + run->len);
	return run;
}

/* The way of @set that holds the run at @ip in context @ctx;
 * IPT__RUN_WAYS if none. */
static IPT__INLINE uint32_t ipt__blk_way_of(const struct ipt__blk_run *set,
					    uint64_t ip, uint32_t ctx)
{
	uint32_t way;

	for (way = 0; way < IPT__RUN_WAYS; ++way)
		if (set[way].ip == ip && set[way].ctx == ctx)
			break;
	return way;
}

/* A miss in the set @idx: record the run at @ip there.  If that pushes a
 * run out and the table has pushed runs out that way for a 128th of its
 * entries, it is too small for the code: grow it first, if the limit and
 * memory allow.
 *
 * Where no run can be had, nothing is pushed out, and the place is noted
 * unless the image missed memory on the way (the caller may supply it
 * without a new epoch: a fault is tried again). */
static IPT__NOINLINE const struct ipt__blk_run *
ipt__blk_run_miss(struct pt_block_decoder *decoder, uint32_t idx, uint64_t ip,
		  enum pt_exec_mode mode, uint32_t ctx,
		  const struct ipt__blk_text **ptext)
{
	struct ipt__blk_norun *norun =
		&decoder->norun[ip & (IPT__BLK_NORUN - 1)];
	struct ipt__blk_text *text = NULL, new_text;
	struct ipt__blk_run *set, run;
	uint32_t misses;

	if (norun->ip == ip && norun->ctx == ctx)
		return NULL;
	misses = ipt__image_misses(decoder->image, NULL);
	IPT_MEMSET(&run, 0, sizeof(run));
	if (!ipt__blk_run_fill(decoder, &run,
			       decoder->want_text ? &new_text : NULL, ip,
			       mode, ctx)) {
		if (ipt__image_misses(decoder->image, NULL) == misses) {
			norun->ip = ip;
			norun->ctx = ctx;
		}
		return NULL;
	}

	set = ipt__blk_set(decoder, idx);
	if (set[IPT__RUN_WAYS - 1].ctx)
		decoder->rfills += 1;
	if (decoder->rfills > decoder->rsets * IPT__RUN_WAYS / 128 &&
	    decoder->rsets < ipt__blk_max_sets(decoder)) {
		if (ipt__blk_runs_grow(decoder) < 0) {
			decoder->rlimit = (uint64_t) decoder->rsets *
					  ipt__blk_set_bytes(decoder);
			ipt__blk_runs_sized(decoder);
		}
		/* Without memory even for the old size, go on without. */
		if (!decoder->runs)
			return NULL;
		decoder->rfills = 0;
		idx = ipt__blk_set_of(ip, ctx, decoder->rsets);
	}

	set = ipt__blk_run_place(decoder, idx, &run, &new_text);
	if (decoder->want_text)
		text = ipt__blk_set_text(set);
	if (ptext)
		*ptext = text;
	return &set[0];
}

/* The run at @ip in context @ctx, whose set is @idx, if it is in the set
 * paired with it or, its own set full, one it spills to (see
 * ipt__blk_run_place): back in the first way of its own set, the run
 * leaving that set's last way moving to where it has room, such as the
 * way it left.  NULL if it is in none of them (or in a set it spilled to
 * while its own set is no longer full, which costs the run recorded
 * again, not a wrong one).  Only a look that records comes here: one that does not
 * leaves the table as it is, and a run it misses is found by the next. */
static const struct ipt__blk_run *
ipt__blk_run_paired(struct pt_block_decoder *decoder, uint32_t idx,
		    uint64_t ip, uint32_t ctx,
		    const struct ipt__blk_text **ptext)
{
	uint32_t sets[IPT__RUN_REACH], way, i, n;
	struct ipt__blk_run *from, *set, run;
	struct ipt__blk_text keep;

	if (!decoder->rpairs)
		return NULL;
	n = ipt__blk_set(decoder, idx)[IPT__RUN_WAYS - 1].ctx ?
		    (uint32_t) IPT__RUN_REACH : (uint32_t) IPT__RUN_PAIR;
	ipt__blk_run_sets(ip, ctx, decoder->rsets, idx, sets, n);
	/* Its own set (sets[0], @idx) has been looked in. */
	for (i = 1; i < n; ++i) {
		if (sets[i] == idx)
			continue;
		from = ipt__blk_set(decoder, sets[i]);
		way = ipt__blk_way_of(from, ip, ctx);
		if (way < IPT__RUN_WAYS)
			goto found;
	}
	return NULL;

found:
	IPT__COPY(run, from[way]);
	if (decoder->want_text)
		IPT__COPY(keep, ipt__blk_set_text(from)[way]);
	from[way].ctx = 0;
	set = ipt__blk_run_place(decoder, idx, &run, &keep);
	if (ptext)
		*ptext = decoder->want_text ? ipt__blk_set_text(set) : NULL;
	return &set[0];
}

/* The run at @ip is in neither of the first two ways of the set @idx:
 * look in the others.  Found there, it moves to the first way if @record
 * (the others move one way on), so that the runs in use stay in the ways
 * looked at first; else, if @record, it is looked for in the paired set
 * (ipt__blk_run_paired) and, not there either, recorded
 * (ipt__blk_run_miss).  NULL if there is none, as ipt__blk_run_get. */
static IPT__NOINLINE const struct ipt__blk_run *
ipt__blk_run_far(struct pt_block_decoder *decoder, uint32_t idx, uint64_t ip,
		 enum pt_exec_mode mode, uint32_t ctx,
		 const struct ipt__blk_text **ptext, int record)
{
	struct ipt__blk_run *set = ipt__blk_set(decoder, idx), run;
	const struct ipt__blk_run *paired;
	struct ipt__blk_text *text = ipt__blk_set_text(set), keep;
	uint32_t way;

	way = ipt__blk_way_of(set, ip, ctx);
	if (way >= IPT__RUN_WAYS) {
		if (!record)
			return NULL;
		paired = ipt__blk_run_paired(decoder, idx, ip, ctx, ptext);
		if (paired)
			return paired;
		return ipt__blk_run_miss(decoder, idx, ip, mode, ctx, ptext);
	}
	if (record) {
		IPT__COPY(run, set[way]);
		if (decoder->want_text)
			IPT__COPY(keep, text[way]);
		ipt__blk_set_shift_to(set, way, decoder->want_text);
		IPT__COPY(set[0], run);
		if (decoder->want_text)
			IPT__COPY(text[0], keep);
		way = 0;
	}
	if (ptext)
		*ptext = decoder->want_text ? &text[way] : NULL;
	return &set[way];
}

/* The run starting at @ip in @mode in the current address space if the
 * table has it; NULL if not (nothing is recorded). */
static const struct ipt__blk_run *
ipt__blk_run_cached(struct pt_block_decoder *decoder, uint64_t ip,
		    enum pt_exec_mode mode)
{
	struct ipt__blk_run *set;
	uint32_t ctx, way;

	if (!IPT__BLK_RUNS || !decoder->runs)
		return NULL;
	ctx = ipt__blk_ctx_of(decoder, mode);
	set = ipt__blk_set(decoder, ipt__blk_set_of(ip, ctx, decoder->rsets));
	way = ipt__blk_way_of(set, ip, ctx);
	return way < IPT__RUN_WAYS ? &set[way] : NULL;
}

/* The run starting at @ip in @mode in the current address space, from the
 * table or, if @record, recorded now; NULL if there is none (see
 * ipt__blk_run_fill).
 * With @ptext, also its text (NULL if the decoder keeps none). */
static IPT__INLINE const struct ipt__blk_run *
ipt__blk_run_get(struct pt_block_decoder *decoder, uint64_t ip,
		 enum pt_exec_mode mode, const struct ipt__blk_text **ptext,
		 int record)
{
	struct ipt__blk_run *set;
	uint32_t ctx, idx, way = 0;

	if (IPT__UNLIKELY(!IPT__BLK_RUNS || !decoder->runs))
		return NULL;

	ctx = ipt__blk_ctx_of(decoder, mode);
	idx = ipt__blk_set_of(ip, ctx, decoder->rsets);
	set = ipt__blk_set(decoder, idx);
	if (set[0].ip != ip || set[0].ctx != ctx) {
		if (set[1].ip != ip || set[1].ctx != ctx)
			return ipt__blk_run_far(decoder, idx, ip, mode, ctx,
						ptext, record);
		way = 1;
	}

	if (ptext)
		*ptext = decoder->want_text ?
			 &ipt__blk_set_text(set)[way] : NULL;
	return &set[way];
}

static IPT__INLINE const struct ipt__blk_run *
ipt__blk_run_find(struct pt_block_decoder *decoder, uint64_t ip,
		  enum pt_exec_mode mode, const struct ipt__blk_text **ptext)
{
	return ipt__blk_run_get(decoder, ip, mode, ptext, 1);
}

/* The run at @ip in @mode if the table has it, recording none: the table
 * stays as it is, and so do the runs found before. */
static IPT__INLINE const struct ipt__blk_run *
ipt__blk_run_peek(struct pt_block_decoder *decoder, uint64_t ip,
		  enum pt_exec_mode mode, const struct ipt__blk_text **ptext)
{
	return ipt__blk_run_get(decoder, ip, mode, ptext, 0);
}

/* Note @run with @text in the trail of the current block; @next is the IP
 * after its last instruction. */
static IPT__INLINE void ipt__blk_trail_add(struct pt_block_decoder *decoder,
					   const struct ipt__blk_run *run,
					   const struct ipt__blk_text *text,
					   uint64_t next)
{
	struct ipt__blk_trail *trail;

	if (decoder->ntrail >= IPT__BLK_TRAIL)
		return;

	trail = &decoder->trail[decoder->ntrail++];
	trail->ip = run->ip;
	trail->ninsn = run->ninsn;
	trail->next = next;
	if (run->kind == ipt__run_dcall || run->kind == ipt__run_djump)
		trail->next = ipt__ip_in_mode(decoder->mode, next +
					       (uint64_t) (int64_t) run->disp);
	IPT_MEMCPY(&trail->text, text, sizeof(*text));
}

/* The block that starts with @run (with @text), a warm run, while tracing
 * is on with a TNT or a TIP (with its IP) in hand: runs ending in direct
 * calls and jumps (and long straight lines) followed to the run they lead
 * to, as long as the table has it and it is warm, up to IPT__BLK_CHAIN
 * runs, ending in a conditional branch or a compressed return (a taken
 * TNT bit and the return stack), in an indirect branch, call or return
 * with the TIP, or where the general way ends the block without trace (a
 * call or jump with end_on_call or end_on_jump, a run in another
 * section, code that leaves the file section the block is in).  The
 * general way would take the same steps; the runs are looked at before
 * anything changes, so that on any other way the block goes, nothing has
 * (but the file section looked up, as the general way looks it up
 * first: ipt__blk_walk_begin).  In a file section, blocks follow
 * libipt's cache: all the runs are warm there, so they go on as they do
 * outside.
 *
 * Returns 1 if the block took the TIP (the decoder is at its IP, and the
 * event is used up), zero if done otherwise, -1 if not such a block. */
enum { IPT__BLK_CHAIN = 8 };

static int ipt__blk_walk_begin(struct pt_block_decoder *decoder);
static int ipt__blk_in_section(const struct pt_block_decoder *decoder,
			       uint64_t ip);
/* A chain's instruction count fits the block's 16-bit ninsn. */
typedef char ipt__blk_chain_fits[IPT__BLK_CHAIN * IPT__RUN_MAX <= UINT16_MAX
				 ? 1 : -1];

static IPT__NOINLINE int ipt__blk_next_chain(struct pt_block_decoder *decoder,
					     struct pt_block *block,
					     const struct ipt__blk_run *run,
					     const struct ipt__blk_text *text)
{
	const struct ipt__blk_run *runs[IPT__BLK_CHAIN];
	const struct ipt__blk_text *texts[IPT__BLK_CHAIN];
	struct pt_event *ev = &decoder->event;
	enum pt_exec_mode mode = decoder->mode;
	uint64_t next[IPT__BLK_CHAIN], ip;
	uint32_t n = 0, i, ninsn = 0, npush = 0, icnt;
	uint8_t size;
	int walk = 0;

	/* In a file section with a cache, the block is where libipt's
	 * would be as long as every run is warm (libipt has cached all
	 * their instructions) and the code stays in the section. */
	if (ipt__image_has_files(decoder->image)) {
		walk = ipt__blk_walk_begin(decoder);
		if (walk < 0)
			return -1;
	}

	for (;;) {
		runs[n] = run;
		texts[n] = text;
		next[n] = ipt__ip_in_mode(mode, run->ip + run->len +
					  run->isize);
		ninsn += run->ninsn;
		ip = next[n++];

		switch ((enum ipt__run_kind) run->kind) {
		case ipt__run_cond:
			if (ev->type != ptev_tnt)
				return -1;
			goto done;

		case ipt__run_ret:
			goto done;

		case ipt__run_icall:
		case ipt__run_indirect:
			if (ev->type != ptev_tip)
				return -1;
			goto done;

		case ipt__run_dcall:
		case ipt__run_djump:
			ip = ipt__ip_in_mode(mode, ip + (uint64_t)
					     (int64_t) run->disp);
			if (run->kind == ipt__run_djump) {
				if (decoder->flags.variant.block.end_on_jump)
					goto done;
				break;
			}
			if (run->disp)
				npush += 1;
			if (decoder->flags.variant.block.end_on_call)
				goto done;
			break;

		case ipt__run_next:
			break;

		default:
			return -1;
		}

		if (n == IPT__BLK_CHAIN)
			return -1;
		/* libipt ends a block where the code leaves its section. */
		if (walk && !ipt__blk_in_section(decoder, ip))
			goto done;
		run = ipt__blk_run_peek(decoder, ip, mode,
					decoder->want_text ? &text : NULL);
		if (!run || !run->warm)
			return -1;
		/* Blocks do not cross sections: this one ends before. */
		if (run->isid != runs[0]->isid)
			goto done;
	}

done:
	run = runs[n - 1];
	if (run->kind == ipt__run_ret && ev->type == ptev_tnt &&
	    (!((ev->variant.tnt.bits >> (ev->variant.tnt.size - 1)) & 1) ||
	     (!npush && ipt__retstack_empty(&decoder->retstack))))
		return -1;
	icnt = decoder->icnt + ninsn;
	if (decoder->has_icnt) {
		if (icnt < decoder->icnt)
			return -1;
		decoder->icnt = icnt;
	}

	/* The walk holds: take its steps. */
	for (i = 0; i < n; ++i) {
		if (texts[i])
			ipt__blk_trail_add(decoder, runs[i], texts[i], next[i]);
		if (runs[i]->kind == ipt__run_dcall && runs[i]->disp)
			ipt__retstack_push(&decoder->retstack, next[i]);
	}
	block->isid = runs[0]->isid;
	block->ninsn = (uint16_t) ninsn;
	block->end_ip = run->ip + run->len;
	block->iclass = (enum pt_insn_class) run->iclass;

	if (ev->type == ptev_tip &&
	    (run->kind == ipt__run_ret || run->kind == ipt__run_icall ||
	     run->kind == ipt__run_indirect)) {
		if (run->kind == ipt__run_icall)
			ipt__retstack_push(&decoder->retstack, next[n - 1]);
		decoder->ip = ev->variant.tip.ip;
		return 1;
	}
	if (run->kind == ipt__run_cond || run->kind == ipt__run_ret) {
		size = (uint8_t) (ev->variant.tnt.size - 1);
		ev->variant.tnt.size = size;
		if (run->kind == ipt__run_ret)
			(void) ipt__retstack_pop(&decoder->retstack, &ip);
		else if ((ev->variant.tnt.bits >> size) & 1)
			ip = ipt__ip_in_mode(mode, ip + (uint64_t)
					     (int64_t) run->disp);
	}
	decoder->ip = ip;
	return 0;
}

/* Whether the common block may be taken: tracing is on, nothing waits,
 * and the event in hand is a TNT with bits to spare after this block. */
static IPT__INLINE int ipt__blk_fast_ok(const struct pt_block_decoder *decoder)
{
	const struct pt_event *ev = &decoder->event;

	return decoder->status >= 0 && ev->type == ptev_tnt &&
	       ev->variant.tnt.size >= 2 && decoder->enabled &&
	       !decoder->process_insn &&
	       !decoder->flags.variant.block.enable_tick_events;
}

/* The common block, once its run (with @text) ends in a conditional
 * branch and its instructions are counted (ipt__blk_count): that run is
 * the block; the next TNT bit decides where the next one starts. */
static IPT__INLINE void ipt__blk_take_cond(struct pt_block_decoder *decoder,
					   struct pt_block *block,
					   const struct ipt__blk_run *run,
					   const struct ipt__blk_text *text)
{
	struct pt_event *ev = &decoder->event;
	uint64_t end_ip, next;
	uint8_t size;

	end_ip = run->ip + run->len;
	block->isid = run->isid;
	block->ninsn = run->ninsn;
	block->end_ip = end_ip;
	block->iclass = (enum pt_insn_class) run->iclass;

	next = ipt__ip_in_mode(decoder->mode, end_ip + run->isize);
	if (text)
		ipt__blk_trail_add(decoder, run, text, next);

	size = (uint8_t) (ev->variant.tnt.size - 1);
	ev->variant.tnt.size = size;
	if ((ev->variant.tnt.bits >> size) & 1)
		next = ipt__ip_in_mode(decoder->mode, next +
					(uint64_t) (int64_t) run->disp);
	decoder->ip = next;
}

/* Count @run's instructions since the TRIG anchor.  Returns zero; -1,
 * counting nothing, if the count would overflow. */
static IPT__INLINE int ipt__blk_count(struct pt_block_decoder *decoder,
				      const struct ipt__blk_run *run)
{
	uint32_t icnt = decoder->icnt + run->ninsn;

	if (decoder->has_icnt) {
		if (IPT__UNLIKELY(icnt < decoder->icnt))
			return -1;
		decoder->icnt = icnt;
	}
	return 0;
}

/* Whether a return may take the TNT in hand as a compressed return: its
 * next bit says taken and the return stack holds where to. */
static IPT__INLINE int ipt__blk_ret_ok(const struct pt_block_decoder *decoder)
{
	const struct pt_event *ev = &decoder->event;

	return ((ev->variant.tnt.bits >> (ev->variant.tnt.size - 1)) & 1) &&
	       !ipt__retstack_empty(&decoder->retstack);
}

/* The block of @run (with @text) ending in a compressed return, as
 * ipt__blk_take_cond's, then back to the address on the return stack. */
static IPT__INLINE void ipt__blk_take_ret(struct pt_block_decoder *decoder,
					  struct pt_block *block,
					  const struct ipt__blk_run *run,
					  const struct ipt__blk_text *text)
{
	ipt__blk_take_cond(decoder, block, run, text);
	(void) ipt__retstack_pop(&decoder->retstack, &decoder->ip);
}

/* The most common block, in one piece (ipt__blk_fast_ok), with the run at
 * the IP from the run cache: a run that ends in a conditional branch is
 * the block (ipt__blk_take_cond), others may chain (ipt__blk_next_chain).
 *
 * Returns zero if done, -1 if this is not such a block: nothing but the
 * run cache (and the file section looked up, as the general way does
 * first) has changed and the general way takes over. */
static IPT__INLINE int ipt__blk_next_any(struct pt_block_decoder *decoder,
					 struct pt_block *block)
{
	const struct ipt__blk_text *text = NULL;
	const struct ipt__blk_run *run;

	if (!ipt__blk_fast_ok(decoder))
		return -1;

	run = ipt__blk_run_find(decoder, decoder->ip, decoder->mode,
				decoder->want_text ? &text : NULL);
	if (!run || !run->warm)
		return -1;
	if (run->kind != ipt__run_cond)
		return ipt__blk_next_chain(decoder, block, run, text);
	if (ipt__blk_count(decoder, run) < 0)
		return -1;
	ipt__blk_take_cond(decoder, block, run, text);
	return 0;
}

/* ---- libipt's block boundaries: the walk ---- */

/* The slot of @set for @section's entry @chunk: where it is, or the empty
 * one where it would go. */
static uint32_t ipt__blk_seen_slot(const struct ipt__blk_seen *set,
				   uint32_t cap, const void *section,
				   uint64_t chunk)
{
	uint64_t h;
	uint32_t idx;

	h = (chunk ^ ((uint64_t) (uintptr_t) section *
		      0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
	idx = (uint32_t) (h >> 32) & (cap - 1);
	while (set[idx].section &&
	       (set[idx].section != section || set[idx].chunk != chunk))
		idx = (idx + 1) & (cap - 1);
	return idx;
}

/* The record's key for "libipt's block decoder has given the section a
 * cache": an offset no instruction has. */
#define IPT__BLK_HAS_CACHE (UINT64_MAX - 1)

static int ipt__blk_seen_at(const struct pt_block_decoder *decoder,
			    const void *section, uint64_t offset)
{
	const struct ipt__blk_seen *entry;

	if (!decoder->seen)
		return 0;
	entry = &decoder->seen[ipt__blk_seen_slot(
		decoder->seen, decoder->seen_cap, section,
		offset >> IPT__SEEN_SHIFT)];
	return entry->section &&
	       ((entry->bits >> (offset & 63u)) & 1u);
}

/* Whether libipt would have cached the instruction at @offset in the
 * current block's section.  Its cache entries hold the execution mode, and
 * one with an unknown mode counts as empty: in an unknown mode, nothing is
 * ever cached. */
static int ipt__blk_seen(const struct pt_block_decoder *decoder,
			 uint64_t offset)
{
	if (decoder->mode == ptem_unknown)
		return 0;
	return ipt__blk_seen_at(decoder, decoder->sec.section, offset);
}

/* Twice the room, without the entries whose instructions were all taken
 * out again (calls undone). */
static int ipt__blk_seen_grow(struct pt_block_decoder *decoder)
{
	struct ipt__blk_seen *set, *old = decoder->seen;
	uint32_t cap, idx, oldcap = decoder->seen_cap, n = 0;

	/* At most 2^26 entries: 1.5 GiB, which a 32-bit size_t still
	 * holds. */
	cap = oldcap ? oldcap * 2 : 1024;
	if (cap > ((uint32_t) 1 << 26))
		return -pte_nomem;
	set = (struct ipt__blk_seen *)
		ipt__zalloc(&decoder->allocator, (size_t) cap * sizeof(*set));
	if (!set)
		return -pte_nomem;

	for (idx = 0; idx < oldcap; ++idx)
		if (old[idx].section && old[idx].bits) {
			set[ipt__blk_seen_slot(set, cap, old[idx].section,
					       old[idx].chunk)] = old[idx];
			n += 1;
		}
	ipt__free(&decoder->allocator, old, (size_t) oldcap * sizeof(*old));
	decoder->seen = set;
	decoder->seen_cap = cap;
	decoder->nseen = n;
	return 0;
}

/* Make room to note one more instruction added while a call may be
 * undone. */
static int ipt__blk_seen_log(struct pt_block_decoder *decoder)
{
	struct ipt__blk_seen_note *log;
	uint32_t cap;

	if (decoder->nadded < decoder->added_cap)
		return 0;
	/* No more than the record itself can hold. */
	cap = decoder->added_cap ? decoder->added_cap * 2 : 256;
	if (cap > ((uint32_t) 1 << 27))
		return -pte_nomem;
	log = (struct ipt__blk_seen_note *)
		ipt__realloc(&decoder->allocator, decoder->added,
			     (size_t) decoder->added_cap * sizeof(*log),
			     (size_t) cap * sizeof(*log));
	if (!log)
		return -pte_nomem;
	decoder->added = log;
	decoder->added_cap = cap;
	return 0;
}

static int ipt__blk_seen_add(struct pt_block_decoder *decoder,
			     const void *section, uint64_t offset)
{
	struct ipt__blk_seen *entry = NULL;
	uint64_t chunk = offset >> IPT__SEEN_SHIFT;
	uint64_t bit = (uint64_t) 1 << (offset & 63u);

	if (decoder->seen) {
		entry = &decoder->seen[ipt__blk_seen_slot(
			decoder->seen, decoder->seen_cap, section, chunk)];
		if (entry->section && (entry->bits & bit))
			return 0;
	}
	if (decoder->guards) {
		int status = ipt__blk_seen_log(decoder);

		if (status < 0)
			return status;
	}
	if (!entry || !entry->section) {
		/* A new entry, in the empty slot found, or in a grown
		 * table's. */
		if ((decoder->nseen + 1) * 2 > decoder->seen_cap) {
			int status = ipt__blk_seen_grow(decoder);

			if (status < 0)
				return status;
			entry = &decoder->seen[ipt__blk_seen_slot(
				decoder->seen, decoder->seen_cap, section,
				chunk)];
		}
		entry->section = section;
		entry->chunk = chunk;
		decoder->nseen += 1;
	}
	entry->bits |= bit;
	if (decoder->guards) {
		decoder->added[decoder->nadded].section = section;
		decoder->added[decoder->nadded].offset = offset;
		decoder->nadded += 1;
	}
	return 0;
}

/* The instructions walked in a row reached the end of libipt's fill: it
 * has cached them now. */
static int ipt__blk_fill_done(struct pt_block_decoder *decoder)
{
	uint32_t idx;

	if (decoder->mode == ptem_unknown)
		decoder->nchain = 0;
	for (idx = 0; idx < decoder->nchain; ++idx) {
		int status = ipt__blk_seen_add(decoder, decoder->sec.section,
					       decoder->chain[idx]);

		if (status < 0)
			return status;
	}
	decoder->nchain = 0;
	return 0;
}

/* libipt's block and instruction decoders share one mapped section, the
 * one the last look-up found: @decoder->sec.  Whether it holds @ip. */
static int ipt__blk_sec_holds(const struct pt_block_decoder *decoder,
			      uint64_t ip)
{
	return decoder->sec_epoch == decoder->epoch && decoder->sec.section &&
	       decoder->sec.begin <= ip && ip < decoder->sec.end &&
	       ((decoder->sec_asid.cr3 == decoder->asid.cr3 &&
		 decoder->sec_asid.vmcs == decoder->asid.vmcs) ||
		ipt__asid_match(&decoder->sec_asid, &decoder->asid) > 0);
}

/* Look up the section at @ip into @decoder->sec, as libipt does where the
 * mapped section does not hold @ip.  Returns 1 if there is one, 0 if
 * not. */
static int ipt__blk_sec_fill(struct pt_block_decoder *decoder, uint64_t ip)
{
	struct ipt__image_place place;

	if (ipt__image_section_at(decoder->image, &decoder->asid, ip,
				  &place) < 0) {
		decoder->sec.section = NULL;
		return 0;
	}
	/* Keep the offset of the mapping's start. */
	place.offset -= ip - place.begin;
	decoder->sec = place;
	decoder->sec_epoch = decoder->epoch;
	decoder->sec_asid = decoder->asid;
	return 1;
}

/* The instruction decoder on top reads the instruction at @ip: libipt's
 * looks its section up, without giving it a block cache. */
static void ipt__blk_sec_touch(struct pt_block_decoder *decoder, uint64_t ip)
{
	if (!ipt__blk_sec_holds(decoder, ip))
		(void) ipt__blk_sec_fill(decoder, ip);
}

/* The block starts at @decoder->ip: find the file section it starts in.
 * libipt's block decoder gives a section a cache when it looks the section
 * up itself; one that the instruction decoder on top looked up first has
 * none until then.  Returns 1 if the block starts in a section with a
 * cache (blocks follow libipt's cache there), 0 if not, a negative pte_*
 * code if we cannot keep the record. */
static int ipt__blk_walk_begin(struct pt_block_decoder *decoder)
{
	uint64_t ip = decoder->ip;

	decoder->nchain = 0;
	if (!ipt__blk_sec_holds(decoder, ip)) {
		int status;

		if (!ipt__blk_sec_fill(decoder, ip))
			return 0;
		status = ipt__blk_seen_add(decoder, decoder->sec.section,
					   IPT__BLK_HAS_CACHE);
		if (status < 0)
			return status;
	}
	if (!ipt__blk_seen_at(decoder, decoder->sec.section,
			      IPT__BLK_HAS_CACHE))
		return 0;

	if (!decoder->chain) {
		decoder->chain = (uint64_t *)
			ipt__alloc(&decoder->allocator,
				   IPT__FILL_STEPS * sizeof(*decoder->chain));
		if (!decoder->chain)
			return -pte_nomem;
	}
	return 1;
}

static int ipt__blk_in_section(const struct pt_block_decoder *decoder,
			       uint64_t ip)
{
	return decoder->sec.begin <= ip && ip < decoder->sec.end;
}

/* Whether libipt would start a new block at @ip after filling its cache
 * for 0x400 instructions in a row: unless it has cached @ip before, or
 * @ip leaves the section (which ends the block anyway). */
static int ipt__blk_fill_stops(const struct pt_block_decoder *decoder,
			       uint64_t ip)
{
	return decoder->nchain == IPT__FILL_STEPS &&
	       ipt__blk_in_section(decoder, ip) &&
	       !ipt__blk_seen(decoder, decoder->sec.offset +
					(ip - decoder->sec.begin));
}

/* One instruction of a block in a file section, as libipt's fill sees it:
 * at @ip, going on at @next without trace, of @kind: ipt__run_next for an
 * instruction that is no branch, ipt__run_dcall or ipt__run_djump (with
 * @disp) for a direct call or jump, any other kind for a branch that needs
 * trace (which ends the fill, and the block anyway).  Clears *@seen_all
 * if libipt had not cached it before.
 *
 * Returns 1 if libipt's fill ends the block after it, 0 if not, a negative
 * pte_* code on errors. */
static int ipt__blk_walk_one(struct pt_block_decoder *decoder, uint64_t ip,
			     uint64_t next, enum ipt__run_kind kind,
			     int32_t disp, uint32_t *seen_all)
{
	uint64_t offset = decoder->sec.offset + (ip - decoder->sec.begin);
	int stop = 0, done = 0;

	if (ipt__blk_seen(decoder, offset))
		return ipt__blk_fill_done(decoder);

	*seen_all = 0;
	if (decoder->nchain >= IPT__FILL_STEPS)
		return -pte_internal;
	decoder->chain[decoder->nchain++] = offset;

	switch (kind) {
	case ipt__run_dcall:
		stop = 1;
		break;
	case ipt__run_djump:
		stop = disp < 0 || decoder->flags.variant.block.end_on_jump;
		break;
	case ipt__run_next:
		break;
	default:
		done = 1;
		break;
	}
	if (!stop && !done)
		stop = ipt__blk_fill_stops(decoder, next);
	if (stop || done) {
		int status = ipt__blk_fill_done(decoder);

		if (status < 0)
			return status;
	}
	return stop;
}

/* Walk @run an instruction at a time, as libipt's block decoder would go
 * through its cache, and note what it would cache.
 *
 * Returns how many of the run's instructions go into the block: all of
 * them, unless libipt's fill ends the block inside the run; then
 * @last->ip is the last of them, @last->size its size and @last->iclass
 * its class.  Sets *@stop if the block ends after them.  A negative
 * pte_* code on errors. */
static int ipt__blk_walk_run(struct pt_block_decoder *decoder,
			     struct ipt__blk_run *run, int *stop,
			     struct pt_insn *last)
{
	struct ipt__blk_lmap_cursor at = { NULL, 1 };
	struct ipt__insn_ext iext;
	uint64_t ip = run->ip, end_ip = run->ip + run->len;
	uint32_t idx, seen_all = 1;
	int status;

	*stop = 0;
	for (idx = 1;; ++idx) {
		enum ipt__run_kind kind = ipt__run_next;
		uint8_t size = run->isize;
		uint64_t next;

		/* All but the last instruction of a run are ordinary ones:
		 * the length map knows the size of most, as the run was
		 * recorded. */
		if (ip != end_ip) {
			int isid = 0;

			size = ipt__blk_lmap_at(decoder, &at, ip, run->ctx,
						&isid);
			if (size && isid == run->isid) {
				last->ip = ip;
				last->size = size;
				last->iclass = ptic_other;
			} else {
				status = ipt__blk_decode_at(decoder, ip, last,
							    &iext);
				if (status < 0)
					return status;
				size = last->size;
			}
		} else
			kind = (enum ipt__run_kind) run->kind;

		next = ipt__ip_in_mode(decoder->mode, ip + size);
		if (kind == ipt__run_djump)
			next = ipt__ip_in_mode(decoder->mode, next +
						(uint64_t) (int64_t) run->disp);

		status = ipt__blk_walk_one(decoder, ip, next, kind, run->disp,
					   &seen_all);
		if (status < 0)
			return status;
		if (status) {
			*stop = 1;
			if (ip != end_ip)
				return (int) idx;
		}
		if (ip == end_ip)
			break;
		ip = next;
	}

	/* A call that may be undone could take the entries out again. */
	if (seen_all && !decoder->guards)
		run->warm = 1;
	return (int) run->ninsn;
}

/* The block in a file section goes on an instruction at a time (there is
 * no run for where it is), as ipt__blk_proceed_no_event_uncached does but
 * ending where libipt's fill ends it.
 *
 * Returns zero on success, a negative pte_* code otherwise. */
static int ipt__blk_proceed_walking(struct pt_block_decoder *decoder,
				    struct pt_block *block)
{
	for (;;) {
		enum ipt__run_kind kind = ipt__run_next;
		struct ipt__insn_ext iext;
		struct pt_insn insn;
		uint32_t seen_all;
		uint64_t next = 0;
		int status, stop;

		status = ipt__blk_proceed_one_insn(decoder, block, &insn,
						   &iext);
		if (status <= 0)
			return status;

		status = ipt__insn_next_ip(&next, &insn, &iext);
		if (status < 0 && status != -pte_bad_query)
			return status;
		if (status < 0)
			kind = ipt__run_indirect;
		else if (insn.iclass == ptic_call)
			kind = ipt__run_dcall;
		else if (insn.iclass == ptic_jump)
			kind = ipt__run_djump;

		stop = ipt__blk_walk_one(decoder, insn.ip, next, kind,
					 (int32_t) iext.variant.branch
						 .displacement,
					 &seen_all);
		if (stop < 0)
			return stop;
		if (status < 0)
			return ipt__blk_proceed_with_trace(decoder, &insn,
							   &iext);

		decoder->ip = next;
		if (stop || ipt__blk_end_on_branch(decoder, &insn))
			return 0;

		/* libipt ends a block where the code leaves its section, and
		 * after an instruction read from more than one. */
		if (!ipt__blk_in_section(decoder, next) || block->truncated)
			return ipt__blk_fill_done(decoder);
	}
}

/* No event binds before the next branch that needs trace: go there run by
 * run, then take that branch with trace.  This also proceeds to the start
 * IP of the next block.  Blocks in a file section end where libipt's do
 * (see "libipt's block boundaries"), under an instruction decoder too:
 * libipt's sits on its block decoder.
 *
 * Returns zero on success, a negative pte_* code otherwise. */
static int ipt__blk_proceed_no_event(struct pt_block_decoder *decoder,
				     struct pt_block *block)
{
	int walk;

	walk = ipt__blk_walk_begin(decoder);
	if (walk < 0)
		return walk;

	for (;;) {
		const struct ipt__blk_text *text = NULL;
		struct ipt__blk_run *run;
		struct pt_insn last;
		uint64_t next, end_ip;
		uint32_t ninsn, nrun;
		int stop = 0;

		run = (struct ipt__blk_run *)
			ipt__blk_run_find(decoder, decoder->ip, decoder->mode,
					  decoder->want_text ? &text : NULL);
		if (!run)
			return walk ? ipt__blk_proceed_walking(decoder, block) :
				      ipt__blk_proceed_no_event_uncached(decoder,
									 block);

		/* Blocks do not cross sections. */
		if (run->isid != block->isid) {
			if (!ipt__blk_block_is_empty(block))
				return 0;
			block->isid = run->isid;
		}

		nrun = run->ninsn;
		if (!walk) {
			/* Code outside file sections is never cached. */
			if (!decoder->sec.section)
				run->warm = 1;
		} else if (run->warm) {
			int status = ipt__blk_fill_done(decoder);

			if (status < 0)
				return status;
		} else {
			int status = ipt__blk_walk_run(decoder, run, &stop,
						       &last);

			if (status < 0)
				return status;
			nrun = (uint32_t) status;
		}

		/* A run that does not fit ends the block; it will fit into
		 * the next, empty one. */
		ninsn = (uint32_t) block->ninsn + nrun;
		if (ninsn > UINT16_MAX)
			return 0;

		if (decoder->has_icnt) {
			uint32_t icnt = decoder->icnt + nrun;

			if (icnt < decoder->icnt)
				return -pte_overflow;
			decoder->icnt = icnt;
		}

		/* libipt's fill ended the block inside the run. */
		if (nrun < run->ninsn) {
			block->ninsn = (uint16_t) ninsn;
			block->end_ip = last.ip;
			block->iclass = last.iclass;
			decoder->ip = ipt__ip_in_mode(decoder->mode,
						       last.ip + last.size);
			return 0;
		}

		end_ip = run->ip + run->len;
		block->ninsn = (uint16_t) ninsn;
		block->end_ip = end_ip;
		block->iclass = (enum pt_insn_class) run->iclass;

		next = ipt__ip_in_mode(decoder->mode, end_ip + run->isize);
		decoder->ip = end_ip;

		if (text)
			ipt__blk_trail_add(decoder, run, text, next);

		switch ((enum ipt__run_kind) run->kind) {
		case ipt__run_cond: {
			int taken = ipt__blk_cond_branch(decoder);

			if (taken < 0)
				return taken;
			if (taken)
				next = ipt__ip_in_mode(decoder->mode, next +
					(uint64_t) (int64_t) run->disp);
			decoder->ip = next;
			return 0;
		}

		case ipt__run_ret:
			return ipt__blk_proceed_return(decoder);

		case ipt__run_icall:
			ipt__retstack_push(&decoder->retstack, next);
			return ipt__blk_proceed_indirect(decoder);

		case ipt__run_indirect:
			return ipt__blk_proceed_indirect(decoder);

		case ipt__run_dcall:
			if (run->disp)
				ipt__retstack_push(&decoder->retstack, next);
			decoder->ip = ipt__ip_in_mode(decoder->mode, next +
				(uint64_t) (int64_t) run->disp);
			if (decoder->flags.variant.block.end_on_call)
				return 0;
			break;

		case ipt__run_djump:
			decoder->ip = ipt__ip_in_mode(decoder->mode, next +
				(uint64_t) (int64_t) run->disp);
			if (decoder->flags.variant.block.end_on_jump)
				return 0;
			break;

		case ipt__run_next:
			decoder->ip = next;
			break;

		default:
			return -pte_internal;
		}

		if (stop)
			return 0;

		/* libipt ends a block where the code leaves its section. */
		if (walk && !ipt__blk_in_section(decoder, decoder->ip))
			return ipt__blk_fill_done(decoder);
	}
}

/* Proceed to the next event or the next branch that needs trace.
 *
 * Returns pt_status_flag bits, or a negative pte_* code. */
static int ipt__blk_proceed_trailing_event(struct pt_block_decoder *decoder,
					   struct pt_block *block);

static int ipt__blk_proceed(struct pt_block_decoder *decoder,
			    struct pt_block *block)
{
	int status;

	status = decoder->status;
	if (status < 0) {
		if (status != -pte_eos)
			return status;

		/* Out of trace, the user may still proceed as long as no
		 * trace is needed, e.g. to stitch adjacent PSB segments;
		 * every block says the end is near. */
		if (!decoder->enabled)
			return -pte_eos;

		status = ipt__blk_proceed_no_event(decoder, block);
		if (status < 0)
			return status;
		return pts_eos;
	}

	switch (decoder->event.type) {
	case ptev_tnt:
	case ptev_tip:
		if (!decoder->enabled)
			return -pte_no_enable;

		status = ipt__blk_proceed_no_event(decoder, block);
		if (status < 0)
			return status;
		return ipt__blk_proceed_trailing_event(decoder, block);

	case ptev_enabled: case ptev_disabled: case ptev_async_disabled:
	case ptev_async_branch: case ptev_paging: case ptev_async_paging:
	case ptev_overflow: case ptev_exec_mode: case ptev_tsx: case ptev_stop:
	case ptev_vmcs: case ptev_async_vmcs: case ptev_exstop:
	case ptev_mwait: case ptev_pwre: case ptev_pwrx: case ptev_ptwrite:
	case ptev_tick: case ptev_cbr: case ptev_mnt: case ptev_iflags:
	case ptev_interrupt: case ptev_iret: case ptev_smi: case ptev_rsm:
	case ptev_sipi: case ptev_init: case ptev_vmentry: case ptev_vmexit:
	case ptev_shutdown: case ptev_uintr: case ptev_uiret: case ptev_trig:
	case ptev_swintr: case ptev_syscall:
		break;
	}
	return ipt__blk_proceed_event(decoder, block);
}

/* ---- events at the end of a block ---- */

enum {
	/* How far we look for an abort's IP when checking for BDM64. */
	IPT__BDM64_MAX_STEPS = 0x100
};

/* Erratum BDM64: a TSX abort right after a branch that produced trace may
 * have corrupted that branch's trace.  If the abort's IP cannot be reached
 * from where that branch took us, assume the erratum hit and that the
 * branch went to the abort IP.
 *
 * Returns 1 if handled, 0 if it does not seem to apply, a negative pte_*
 * code if we cannot tell. */
static int ipt__blk_handle_bdm64(struct pt_block_decoder *decoder,
				 const struct pt_block *block,
				 const struct pt_event *ev)
{
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	int status;

	if (!ev->variant.tsx.aborted || ipt__blk_block_is_empty(block))
		return 0;

	IPT_MEMSET(&insn, 0, sizeof(insn));
	IPT_MEMSET(&iext, 0, sizeof(iext));
	insn.mode = block->mode;
	insn.ip = block->end_ip;

	status = ipt__blk_decode(decoder, &insn, &iext);
	if (status < 0)
		return ipt__blk_lookahead_failed(decoder, status);
	if (!ipt__insn_is_branch(&insn, &iext))
		return 0;

	status = ipt__insn_range_is_contiguous(decoder->ip, ev->variant.tsx.ip,
					       decoder->mode, decoder->image,
					       &decoder->asid,
					       IPT__BDM64_MAX_STEPS);
	if (status > 0)
		return status;
	if (status < 0 && ipt__blk_lookahead_failed(decoder, status) < 0)
		return status;

	decoder->ip = ev->variant.tsx.ip;
	return 1;
}

/* Does a TSX event with an IP wait for a later block?  Returns 1 if so, 0
 * if it applies here, a negative pte_* code on error. */
static int ipt__blk_postpone_trailing_tsx(struct pt_block_decoder *decoder,
					  const struct pt_block *block,
					  const struct pt_event *ev)
{
	struct pt_block start;

	if (ev->ip_suppressed)
		return 0;

	/* Right after a start, the block before is the state's last
	 * instruction. */
	if (!block && decoder->has_start_last) {
		IPT_MEMSET(&start, 0, sizeof(start));
		start.ip = decoder->start_last;
		start.end_ip = decoder->start_last;
		start.mode = decoder->mode;
		start.ninsn = 1;
		block = &start;
	}

	if (block) {
		const struct pt_config *config;

		config = pt_evt_get_config(&decoder->evdec);
		if (!config)
			return -pte_internal;

		if (config->errata.bdm64) {
			int status = ipt__blk_handle_bdm64(decoder, block, ev);

			if (status < 0)
				return status;
		}
	}

	return decoder->ip != ev->variant.tsx.ip ? 1 : 0;
}

/* Indicate the events that apply at @decoder->ip.
 *
 * Called after synchronizing, after a block ended (@block is that block),
 * and after each event the user fetched (@block is NULL).  Proceeds past a
 * postponed instruction once no further event binds to it.
 *
 * Returns pt_status_flag bits, or a negative pte_* code. */
static int ipt__blk_proceed_trailing_event(struct pt_block_decoder *decoder,
					   struct pt_block *block)
{
	struct pt_event *ev = &decoder->event;
	ipt__blk_insn_pred pred;
	uint32_t bit;
	int status;

	for (;;) {
		status = decoder->status;
		if (status < 0) {
			int errcode;

			errcode = ipt__blk_proceed_postponed_insn(decoder);
			if (errcode < 0)
				return errcode;

			/* A decode error is an event for the upper layers
			 * to query; the end of the trace is just a flag. */
			return ipt__blk_status(decoder, status != -pte_eos ?
					       pts_event_pending : 0);
		}

		if (ev->type != ptev_tnt)
			break;

		/* A tick on the first TNT bit used with a new timestamp, if
		 * the user wants ticks, during normal decode, once. */
		if (decoder->flags.variant.block.enable_tick_events && block &&
		    ev->has_tsc && ev->tsc != decoder->tsc) {
			/* Not if the block ended before the TNT's branch. */
			if (block->iclass != ptic_cond_jump &&
			    block->iclass != ptic_return)
				goto none;
			return ipt__blk_status(decoder, pts_event_pending);
		}

		if (ev->variant.tnt.size)
			goto none;

		/* The TNT is used up: the next event may apply here. */
		status = ipt__blk_fetch_event(decoder);
		if (status < 0)
			return status;
	}

	/* The CR3 filter's events bind where the decoder stands; its
	 * disable to a postponed MOV CR3 as TIP.PGD would. */
	if (IPT__UNLIKELY(decoder->filter_event)) {
		if (ev->type != ptev_disabled) {
			status = ipt__blk_proceed_postponed_insn(decoder);
			if (status < 0)
				return status;
		}
		return ipt__blk_status(decoder, pts_event_pending);
	}

	switch (ev->type) {
	case ptev_tip:
		break;

	case ptev_tick:
	case ptev_enabled:
	case ptev_overflow:
	case ptev_stop:
	case ptev_pwre:
	case ptev_pwrx:
	case ptev_cbr:
	case ptev_mnt:
		/* Not bound to an instruction. */
		status = ipt__blk_proceed_postponed_insn(decoder);
		if (status < 0)
			return status;
		return ipt__blk_status(decoder, pts_event_pending);

	case ptev_disabled:
		if (!decoder->process_insn) {
			/* Normally indicated on the event flow, except for
			 * status updates. */
			if (ev->status_update)
				return ipt__blk_status(decoder,
						       pts_event_pending);
			break;
		}

		/* It may bind to the postponed instruction if that changes
		 * CR3, ... */
		if (ev->ip_suppressed &&
		    ipt__insn_changes_cr3(&decoder->insn, &decoder->iext))
			return ipt__blk_status(decoder, pts_event_pending);

		/* ... or if getting past it needs trace. */
		status = ipt__insn_next_ip(&decoder->ip, &decoder->insn,
					   &decoder->iext);
		if (status < 0) {
			if (status != -pte_bad_query)
				return status;
			ipt__blk_set_disable_resume_ip(decoder,
						       decoder->insn.iclass,
						       decoder->insn.ip,
						       decoder->insn.size);
			return ipt__blk_status(decoder, pts_event_pending);
		}

		ipt__blk_clear_postponed_insn(decoder);

		if (!ev->ip_suppressed &&
		    decoder->ip == ev->variant.disabled.ip)
			return ipt__blk_status(decoder, pts_event_pending);
		break;

	case ptev_async_disabled:
		status = ipt__blk_proceed_postponed_insn(decoder);
		if (status < 0)
			return status;

		if (decoder->ip != ev->variant.async_disabled.at)
			break;

		/* Under SKD022 the event becomes a synchronous disable that
		 * the next block reaches. */
		status = ipt__blk_skd022_applies(decoder, ev);
		if (status < 0)
			return status;
		if (status)
			break;
		return ipt__blk_status(decoder, pts_event_pending);

	case ptev_async_branch:
		status = ipt__blk_proceed_postponed_insn(decoder);
		if (status < 0)
			return status;

		if (decoder->ip != ev->variant.async_branch.from)
			break;
		return ipt__blk_status(decoder, pts_event_pending);

	case ptev_async_paging:
	case ptev_async_vmcs:
		status = ipt__blk_proceed_postponed_insn(decoder);
		if (status < 0)
			return status;

		if (!ev->ip_suppressed &&
		    decoder->ip != ipt__blk_event_ip(ev))
			break;
		return ipt__blk_status(decoder, pts_event_pending);

	case ptev_exec_mode:
	case ptev_exstop:
	case ptev_mwait:
	case ptev_iflags:
	case ptev_interrupt:
	case ptev_smi:
	case ptev_init:
	case ptev_vmexit:
	case ptev_shutdown:
	case ptev_uintr:
		/* With tracing disabled (e.g. outside the filter region, or
		 * with event tracing) these apply right away. */
		status = ipt__blk_proceed_postponed_insn(decoder);
		if (status < 0)
			return status;

		if (decoder->enabled && !ev->ip_suppressed &&
		    decoder->ip != ipt__blk_event_ip(ev))
			break;
		return ipt__blk_status(decoder, pts_event_pending);

	case ptev_tsx:
		status = ipt__blk_proceed_postponed_insn(decoder);
		if (status < 0)
			return status;

		status = ipt__blk_postpone_trailing_tsx(decoder, block, ev);
		if (status < 0)
			return status;
		if (status)
			break;
		return ipt__blk_status(decoder, pts_event_pending);

	case ptev_rsm:
	case ptev_sipi:
		status = ipt__blk_proceed_postponed_insn(decoder);
		if (status < 0)
			return status;

		if (!ev->ip_suppressed)
			return -pte_internal;
		return ipt__blk_status(decoder, pts_event_pending);

	case ptev_trig:
		status = ipt__blk_proceed_postponed_insn(decoder);
		if (status < 0)
			return status;

		if (!decoder->enabled || ev->ip_suppressed)
			return ipt__blk_status(decoder, pts_event_pending);

		status = ipt__blk_provide_trig_anchor(decoder, ev);
		if (status < 0)
			return status;

		/* Counting instructions is for the next block. */
		if (ev->variant.trig.icnt)
			break;

		if (ev->variant.trig.ip != decoder->ip)
			return -pte_bad_packet;
		return ipt__blk_status(decoder, pts_event_pending);

	case ptev_paging:
	case ptev_vmcs:
	case ptev_ptwrite:
	case ptev_iret:
	case ptev_vmentry:
	case ptev_uiret:
	case ptev_swintr:
	case ptev_syscall:
		/* With tracing disabled, they apply right away. */
		if (!decoder->enabled)
			return ipt__blk_status(decoder, pts_event_pending);

		/* Normally indicated on the event flow, unless they bind to
		 * the postponed instruction, one of each kind at most. */
		pred = ipt__blk_binding(ev->type, &bit);
		if (!decoder->process_insn || (decoder->bound & bit))
			break;

		/* Those with an IP bind on the event flow. */
		if (ev->type != ptev_paging && ev->type != ptev_vmcs &&
		    !ev->ip_suppressed)
			break;

		if (!pred(&decoder->insn, &decoder->iext))
			break;

		decoder->bound |= bit;
		return ipt__blk_status(decoder, pts_event_pending);

	case ptev_tnt:
		return -pte_internal;
	}

none:
	/* Nothing applies here.  Proceed past any postponed instruction. */
	status = ipt__blk_proceed_postponed_insn(decoder);
	if (status < 0)
		return status;
	return ipt__blk_status(decoder, 0);
}

/* ---- walking runs for coverage ----
 * While the event in hand is a TNT or a TIP, pt_blk_next only goes from
 * run to run of the run cache, taking a TNT bit at each conditional
 * branch and compressed return and a TIP at each indirect branch; while
 * it is a disable with an IP, to the branch that needs trace or the IP
 * the flow reaches first, where the disable binds.  The coverage layer
 * wants exactly that and nothing of the blocks, so ipt__blk_walk makes
 * the walk itself, leaving the decoder as pt_blk_next would (IP, TNT
 * bits, return stack, instruction count), and where the trace in hand
 * is used up applies the trailing-event rules to the next event, as
 * pt_blk_next does after a block. */

/* The longest chain of runs the walk follows without using trace; code
 * that loops without trace is left to pt_blk_next. */
enum { IPT__BLK_WALK_CHAIN = 0x100 };

/* What the walk tells its caller: @branch when a branch used trace (it is
 * at @from, in @iclass, the IP after it is @next, and for a near call the
 * class is ptic_call), @reach when the flow is seen at @ip (a run starts
 * there).  A branch's destination is where the flow is next reached,
 * unless an event (the caller's business) says otherwise first. */
struct ipt__blk_walk_ops {
	void (*branch)(void *context, uint64_t from, uint64_t next,
		       enum pt_insn_class iclass);
	void (*reach)(void *context, uint64_t ip);
	/* If set, asked at each @ip the walk goes on at while a TNT is in
	 * hand and *@idle is zero: it may take TNT bits in bulk, also from
	 * the TNT packets that follow, and the TIPs between them at the
	 * branches that take them (ipt__blk_tnt_ahead,
	 * ipt__blk_tnt_taken), but not the last bit of the last TNT
	 * unless a TIP.PGD with an IP is next (for the walk, after that
	 * bit the trailing-event rules only fetch the disable, which binds
	 * later, where the walk finds it: ipt__blk_tnt_taken fetches it
	 * the same), leaving the decoder as the walk would have after a
	 * bit (a run at @ip still to find, no run chained since) and
	 * reporting as the walk would.  Returns where the flow went on,
	 * @ip if it took nothing. */
	uint64_t (*tnt)(void *context, struct pt_block_decoder *decoder,
			uint64_t ip, enum pt_exec_mode mode);
	/* The caller's count of instructions since the flow last used
	 * trace (see IPT_COV_IDLE_MAX): the walk adds the instructions of
	 * each run it takes, and leaves a run that would take the count
	 * above @idle_max to pt_blk_next; the caller sets it to zero in
	 * @branch.  @tnt is asked only while it is zero (its steps end
	 * right after a use of the trace, where it is zero again). */
	uint64_t *idle;
	uint64_t idle_max;
};

/* Where the branch ending @run goes when it is taken (conditional) or
 * always (direct): @next, the IP after it, plus its displacement. */
static IPT__INLINE uint64_t ipt__blk_run_target(const struct ipt__blk_run *run,
						enum pt_exec_mode mode,
						uint64_t next)
{
	return ipt__ip_in_mode(mode, next + (uint64_t) (int64_t) run->disp);
}

/* The walk goes on at @ip: let @ops take TNT bits in bulk first, right
 * after a use of the trace. */
static IPT__INLINE uint64_t
ipt__blk_walk_tnt(struct pt_block_decoder *decoder,
		  const struct ipt__blk_walk_ops *ops, void *context,
		  uint64_t ip, enum pt_exec_mode mode)
{
	const struct pt_event *ev = &decoder->event;

	if (ops->tnt && !*ops->idle && ev->type == ptev_tnt &&
	    ev->variant.tnt.size)
		return ops->tnt(context, decoder, ip, mode);
	return ip;
}

/* For ops->tnt: the TNT and TIP packets after the event in hand, read
 * ahead (see ipt__evt_tnt_ahead), and the last IP they go on from. */
static IPT__INLINE enum pt_packet_type
ipt__blk_tnt_ahead(const struct pt_block_decoder *decoder, const uint8_t **pos,
		   uint64_t *payload, uint32_t *size, int tip_free)
{
	return ipt__evt_tnt_ahead(&decoder->evdec, pos, payload, size,
				  tip_free);
}

static IPT__INLINE int ipt__blk_tnt8_next(const struct pt_block_decoder *decoder,
					  const uint8_t *pos)
{
	return ipt__evt_tnt8_next(&decoder->evdec, pos);
}

static IPT__INLINE int ipt__blk_tnt_fill(const struct pt_block_decoder *decoder,
					 const uint8_t **pos,
					 struct ipt__tnt_window *w,
					 uint32_t room,
					 struct ipt__tnt_packet *p,
					 int tip_free)
{
	return ipt__evt_tnt_fill(&decoder->evdec, pos, w, room, p, tip_free);
}

static IPT__INLINE const struct ipt_last_ip *
ipt__blk_last_ip(const struct pt_block_decoder *decoder)
{
	return ipt__evt_last_ip(&decoder->evdec);
}

/* ops->tnt took the packets read ahead up to @pos, and the TIPs among
 * them left the last IP @ip: the event in hand becomes the last of them,
 * a TNT with @left of its bits @payload to go and @icnt instructions
 * walked since it was fetched, as if each packet's event had been used up
 * in turn and the next fetched.  With @left zero the last was a TIP (or a
 * TIP.PGD, TIP.PGE pair) with a plain TIP or a TIP.PGD behind it, or a
 * TNT used up with a TIP.PGD behind it: that one is fetched, its
 * trailing-event rules having nothing to do (a TIP is in hand, or a
 * disable with an IP, which binds where the walk finds it; a used-up
 * TNT's rules fetch the next event, as here). */
static void ipt__blk_tnt_taken(struct pt_block_decoder *decoder,
			       const uint8_t *pos, uint64_t payload,
			       uint32_t left, uint32_t icnt,
			       const struct ipt_last_ip *ip)
{
	struct pt_event *ev = &decoder->event;

	/* A TNT has its IP: it cannot fail. */
	(void) ipt__blk_leave_event(decoder);
	decoder->icnt = icnt;
	ev->variant.tnt.bits = payload;
	ev->variant.tnt.size = (uint8_t) left;
	ipt__evt_tnt_taken(&decoder->evdec, pos, ip);
	if (!left)
		(void) ipt__blk_fetch_event(decoder);
}

/* The block the walk just ended with @run, for the trailing-event
 * rules. */
static void ipt__blk_run_block(struct pt_block *block,
			       const struct ipt__blk_run *run,
			       enum pt_exec_mode mode)
{
	IPT_MEMSET(block, 0, sizeof(*block));
	block->ip = run->ip;
	block->end_ip = run->ip + run->len;
	block->isid = run->isid;
	block->mode = mode;
	block->iclass = (enum pt_insn_class) run->iclass;
	block->ninsn = run->ninsn;
}

/* The walk's block ended with the trace in hand used up: fetch the next
 * event if that is a used-up TNT, as the trailing-event rules would.
 * Returns 0 if the walk goes on with a TNT or TIP in hand, the rules
 * having nothing else to do; 1 if they are to be applied. */
static IPT__INLINE int
ipt__blk_walk_next_event(struct pt_block_decoder *decoder)
{
	const struct pt_event *ev = &decoder->event;

	if (decoder->status >= 0 && ev->type == ptev_tnt &&
	    !ev->variant.tnt.size && ipt__blk_fetch_event(decoder) < 0)
		return 1;
	return decoder->status < 0 ||
	       (ev->type == ptev_tnt ? !ev->variant.tnt.size :
				      ev->type != ptev_tip);
}

static void ipt__blk_watch(struct pt_block_decoder *decoder);
static void ipt__blk_note_fault(struct pt_block_decoder *decoder, int status);

/* Whether the walk goes on with @ev in hand: a TNT or a TIP, or a disable
 * with an IP, which it walks to as pt_blk_next would (the run it binds
 * in, and the event itself, are pt_blk_next's and pt_blk_event's). */
static IPT__INLINE int ipt__blk_walk_event(const struct pt_event *ev)
{
	return ev->type == ptev_tnt || ev->type == ptev_tip ||
	       (ev->type == ptev_disabled && !ev->ip_suppressed &&
		!ev->status_update);
}

/* Walk the run cache from the decoder's IP.  Returns 0 where pt_blk_next
 * takes over (a run is missing, or needs what the walk does not do: a TIP
 * behind a TNT, an error to report); otherwise 1 with the status
 * pt_blk_next would have returned in @status. */
static IPT__INLINE int ipt__blk_walk(struct pt_block_decoder *decoder,
				     const struct ipt__blk_walk_ops *ops,
				     void *context, int *status)
{
	struct pt_event *ev = &decoder->event;
	const struct ipt__blk_run *run;
	enum pt_exec_mode mode;
	struct pt_block block;
	uint32_t chain = 0;
	uint64_t ip;

	if (decoder->status < 0 || !decoder->enabled ||
	    decoder->process_insn ||
	    decoder->flags.variant.block.enable_tick_events ||
	    !ipt__blk_walk_event(ev))
		return 0;

	ipt__blk_cache_sync(decoder);
	ipt__blk_watch(decoder);
	ip = decoder->ip;
	mode = decoder->mode;

	ip = ipt__blk_walk_tnt(decoder, ops, context, ip, mode);
	run = ipt__blk_run_find(decoder, ip, mode, NULL);
	if (!run) {
		decoder->ip = ip;
		return 0;
	}
	ops->reach(context, ip);

	for (;;) {
		uint64_t end_ip, next, to;
		uint32_t icnt;
		uint8_t size;

		/* A disable's IP inside the run: pt_blk_next finds where
		 * it binds. */
		if (ev->type == ptev_disabled &&
		    ev->variant.disabled.ip - run->ip <= run->len)
			goto out_at;

		/* Instructions since the last TRIG anchor, as pt_blk_next
		 * counts them (meaningless, and reset at the next anchor,
		 * while it does not). */
		icnt = decoder->icnt + run->ninsn;
		if (icnt < decoder->icnt ||
		    *ops->idle + run->ninsn > ops->idle_max)
			goto out_at;
		decoder->icnt = icnt;
		*ops->idle += run->ninsn;

		end_ip = run->ip + run->len;
		next = ipt__ip_in_mode(mode, end_ip + run->isize);

		switch ((enum ipt__run_kind) run->kind) {
		case ipt__run_cond:
			if (ev->type != ptev_tnt)
				goto out;
			size = (uint8_t) (ev->variant.tnt.size - 1);
			ev->variant.tnt.size = size;
			to = next;
			if ((ev->variant.tnt.bits >> size) & 1)
				to = ipt__blk_run_target(run, mode, next);
			ops->branch(context, end_ip, next, ptic_cond_jump);
			goto tnt_used;

		case ipt__run_ret:
			if (ev->type == ptev_tip)
				goto tip;
			if (ev->type == ptev_disabled)
				goto disabled;
			/* A compressed return; anything else pt_blk_next
			 * reports. */
			size = ev->variant.tnt.size;
			if (!((ev->variant.tnt.bits >> (size - 1)) & 1) ||
			    ipt__retstack_pop(&decoder->retstack, &to) < 0)
				goto out;
			size -= 1;
			ev->variant.tnt.size = size;
			ops->branch(context, end_ip, next, ptic_return);
			goto tnt_used;

		case ipt__run_icall:
		case ipt__run_indirect:
			if (ev->type == ptev_disabled)
				goto disabled;
			/* A TIP behind a TNT is pt_blk_next's. */
			if (ev->type != ptev_tip)
				goto out;
		tip:
			if (ev->ip_suppressed)
				goto out;
			if (run->kind == ipt__run_icall)
				ipt__retstack_push(&decoder->retstack, next);
			ops->branch(context, end_ip, next,
				    (enum pt_insn_class) run->iclass);
			decoder->ip = ev->variant.tip.ip;
			*status = ipt__blk_tick(decoder, end_ip);
			if (*status < 0)
				goto done;
			goto block_end;

		case ipt__run_dcall:
			if (run->disp)
				ipt__retstack_push(&decoder->retstack, next);
			/* fall through */
		case ipt__run_djump:
			to = ipt__blk_run_target(run, mode, next);
			goto chained;

		case ipt__run_next:
			to = next;
			goto chained;

		default:
			goto out;
		}

	disabled:
		/* The disable binds to the first branch that needs trace. */
		ipt__blk_set_disable_resume_ip(decoder,
					       (enum pt_insn_class) run->iclass,
					       end_ip, run->isize);
		if (run->kind == ipt__run_icall)
			ipt__retstack_push(&decoder->retstack, next);
		ops->branch(context, end_ip, next,
			    (enum pt_insn_class) run->iclass);
		*status = ipt__blk_status(decoder, pts_event_pending);
		goto done;

	tnt_used:
		chain = 0;
		if (size)
			goto next_run;
		decoder->ip = to;

	block_end:
		/* The trace in hand is used up: the block ends here.  With
		 * a TNT or a TIP next, the trailing-event rules only fetch
		 * it (the walk has no ticks and no postponed instruction):
		 * done here at once. */
		if (ipt__blk_walk_next_event(decoder)) {
			ipt__blk_run_block(&block, run, mode);
			*status = ipt__blk_proceed_trailing_event(decoder,
								  &block);
			if (*status != 0 || !ipt__blk_walk_event(ev))
				goto done;
		} else {
			*status = ipt__blk_status(decoder, 0);
		}
		chain = 0;
		ip = ipt__blk_walk_tnt(decoder, ops, context, decoder->ip,
				       mode);
		decoder->ip = ip;
		run = ipt__blk_run_find(decoder, ip, mode, NULL);
		if (!run)
			return 1;
		ops->reach(context, ip);
		continue;

	chained:
		if (++chain > IPT__BLK_WALK_CHAIN) {
			ip = to;
			goto out_at;
		}
		/* A disable at the IP a direct branch (or the next run) goes
		 * to binds there. */
		if (ev->type == ptev_disabled &&
		    to == ev->variant.disabled.ip) {
			decoder->ip = to;
			*status = ipt__blk_status(decoder, pts_event_pending);
			goto done;
		}
	next_run:
		ip = ipt__blk_walk_tnt(decoder, ops, context, to, mode);
		if (ip != to)
			chain = 0;
		run = ipt__blk_run_find(decoder, ip, mode, NULL);
		if (!run)
			goto out_at;
		ops->reach(context, ip);
	}

out:
	/* pt_blk_next takes the run at @ip, and counts it. */
	decoder->icnt -= run->ninsn;
	*ops->idle -= run->ninsn;
out_at:
	decoder->ip = ip;
	return 0;

done:
	/* As pt_blk_next: did it stop at missing code? */
	ipt__blk_note_fault(decoder, *status);
	return 1;
}

/* Whether the event decoder has run out of trace. */
static IPT__UNUSED int
ipt__blk_trace_ended(const struct pt_block_decoder *decoder)
{
	return decoder->status == -pte_eos;
}

/* The trace's size in bytes (a ring's pieces together); whether more
 * may come after its end (ipt_blk_extend). */
static IPT__UNUSED uint64_t
ipt__blk_trace_size(const struct pt_block_decoder *decoder)
{
	return ipt__evt_size(&decoder->evdec);
}

static IPT__UNUSED int
ipt__blk_trace_more(const struct pt_block_decoder *decoder)
{
	return ipt__evt_more(&decoder->evdec);
}

/* For a caller that reports no events: take a PSB+ that only restates
 * the state with tracing off whole, and a PIP with tracing off without
 * its event, if @on (else event by event). */
static IPT__UNUSED void
ipt__blk_set_quiet_psb(struct pt_block_decoder *decoder, int on)
{
	decoder->quiet_psb = on ? 1 : 0;
}

/* Tell @hook of each run recorded in the run cache (NULL: nobody). */
static IPT__UNUSED void
ipt__blk_set_run_hook(struct pt_block_decoder *decoder,
		      void (*hook)(void *context, uint64_t begin,
				   uint64_t last),
		      void *context)
{
	decoder->run_hook = hook;
	decoder->run_hook_context = context;
}

/* ---- synchronization ---- */

/* The event decoder's position as a trace offset; for comparisons. */
static uint64_t ipt__blk_evt_offset(const struct pt_event_decoder *evdec)
{
	uint64_t offset;

	if (pt_evt_get_offset(evdec, &offset) < 0)
		return UINT64_MAX;
	return offset;
}

/* A public call begins: note the image's misses so far. */
static void ipt__blk_watch(struct pt_block_decoder *decoder)
{
	decoder->misses = ipt__image_misses(decoder->image, NULL);
	decoder->fault_ahead = 0;
}

/* Did the call that began at @decoder->misses and ends with @status stop
 * at memory the image could not read?  The walk stops at its first error,
 * so the last miss is the one that stopped it.  Walking the code is all a
 * block decoder did before it reads an instruction, so the decoder stands
 * right before the one it could not read and the next call tries again. */
static void ipt__blk_note_fault(struct pt_block_decoder *decoder, int status)
{
	decoder->has_fault = 0;
	if (status != -pte_nomap && status != -pte_bad_insn)
		return;
	if (ipt__image_misses(decoder->image, &decoder->fault) !=
	    decoder->misses)
		decoder->has_fault = 1;
}

/* ---- undoing a call ----
 * While more trace may come (ipt_blk_extend), a call that meets the end of
 * the trace is undone and says -ipt_pte_need_more: made again once the end
 * has moved, it finds what it would have found in the whole trace.  Before
 * such a call the decoder is copied; undoing it copies back all but the
 * caches, which stay as the call left them (what they hold does not depend
 * on where in the trace we are), and takes out of the record of libipt's
 * block cache what the call added: the call made again adds it anew, and
 * would end its blocks elsewhere if the record already held it.  Runs are
 * not marked warm meanwhile, as warmth rests on that record.  The most
 * common block (ipt__blk_next_fast) takes no trace and needs no copy. */

/* Whether the call about to be made must be undone should it need more;
 * then @save holds the decoder as it was. */
static int ipt__blk_guard(struct pt_block_decoder *decoder,
			  struct pt_block_decoder *save)
{
	if (IPT__LIKELY(!ipt__evt_more(&decoder->evdec)))
		return 0;
	IPT__COPY(*save, *decoder);
	decoder->guards += 1;
	return 1;
}

/* Undo the call @save was taken before. */
static void ipt__blk_undo(struct pt_block_decoder *decoder,
			  struct pt_block_decoder *save)
{
	uint32_t idx;

	for (idx = save->nadded; idx < decoder->nadded; ++idx) {
		const struct ipt__blk_seen_note *gone = &decoder->added[idx];
		struct ipt__blk_seen *entry;

		entry = &decoder->seen[ipt__blk_seen_slot(
			decoder->seen, decoder->seen_cap, gone->section,
			gone->offset >> IPT__SEEN_SHIFT)];
		if (entry->section)
			entry->bits &= ~((uint64_t) 1 << (gone->offset & 63u));
	}

	/* The caches as they are now; the context is found again. */
	save->icache = decoder->icache;
	save->ibits = decoder->ibits;
	save->ibits_runs = decoder->ibits_runs;
	save->cache_image = decoder->cache_image;
	save->cache_gen = decoder->cache_gen;
	save->epoch = decoder->epoch;
	save->runs = decoder->runs;
	save->rmem = decoder->rmem;
	save->rmem_size = decoder->rmem_size;
	save->rsets = decoder->rsets;
	save->rstride = decoder->rstride;
	save->rfills = decoder->rfills;
	save->rpairs = decoder->rpairs;
	save->rlimit = decoder->rlimit;
	save->lmap = decoder->lmap;
	save->lmap_bits = decoder->lmap_bits;
	save->lmap_used = decoder->lmap_used;
	save->ctx_id = 0;
	save->ctx_next = decoder->ctx_next;
	save->nctx = decoder->nctx;
	IPT_MEMCPY(save->ctx, decoder->ctx, sizeof(save->ctx));
	save->seen = decoder->seen;
	save->seen_cap = decoder->seen_cap;
	save->nseen = decoder->nseen;
	save->chain = decoder->chain;
	save->added = decoder->added;
	save->added_cap = decoder->added_cap;
	IPT__COPY(*decoder, *save);
}

/* The call guarded by ipt__blk_guard ended with @status: undo it if it
 * needs more. */
static int ipt__blk_settle(struct pt_block_decoder *decoder,
			   struct pt_block_decoder *save, int status)
{
	decoder->guards -= 1;
	if (status != -ipt_pte_need_more &&
	    decoder->status != -ipt_pte_need_more) {
		if (!decoder->guards)
			decoder->nadded = 0;
		return status;
	}
	ipt__blk_undo(decoder, save);
	return -ipt_pte_need_more;
}

/* Make the call @call on @decoder, undone if it needs more. */
#define IPT__BLK_GUARDED(decoder, call)                                      \
	IPT__UNDOABLE(struct pt_block_decoder, ipt__blk_guard,               \
		      ipt__blk_settle, decoder, call)

static int ipt__blk_event(struct pt_block_decoder *decoder,
			  struct pt_event *uevent, size_t size);
static int ipt__blk_start_at(struct pt_block_decoder *decoder);
static int ipt__blk_resync(struct pt_block_decoder *decoder);

/* What ipt__blk_whole does. */
enum ipt__blk_whole_op {
	ipt__blk_op_start,
	ipt__blk_op_event,
	ipt__blk_op_resync
};

/* Take the next event into @uevent (ipt__blk_op_event), the PSB+ just
 * synchronized onto (ipt__blk_op_start) or a place to go on from after an
 * error (ipt__blk_op_resync), together with the events that bind where
 * the decoder then stands.  Finding those may need code ahead of the flow
 * (the SKD022 workaround).  A user waiting for missing code
 * (ipt_blk_set_wait_for_code) gets the error with nothing taken: the same
 * call, once the code is there, does it all (after a sync, pt_blk_sync_set
 * to the sync offset): the call is undone as one that needs more trace
 * is (ipt__blk_undo). */
static int ipt__blk_whole(struct pt_block_decoder *decoder,
			  enum ipt__blk_whole_op op, struct pt_event *uevent,
			  size_t size)
{
	const struct pt_config *config;
	struct pt_block_decoder save;
	struct ipt__miss fault;
	uint32_t ahead;
	int status = -pte_internal, keep;

	ipt__blk_cache_sync(decoder);
	config = pt_evt_get_config(&decoder->evdec);
	keep = decoder->wait_for_code &&
	       ((config && config->errata.skd022) || op == ipt__blk_op_resync);
	if (keep)
		IPT__COPY(save, *decoder);

	ipt__blk_watch(decoder);
	switch (op) {
	case ipt__blk_op_start:
		status = ipt__blk_start_at(decoder);
		break;
	case ipt__blk_op_event:
		status = ipt__blk_event(decoder, uevent, size);
		break;
	case ipt__blk_op_resync:
		status = ipt__blk_resync(decoder);
		break;
	}
	ipt__blk_note_fault(decoder, status);
	if (keep && decoder->has_fault) {
		IPT__COPY(fault, decoder->fault);
		ahead = decoder->fault_ahead;
		ipt__blk_undo(decoder, &save);
		IPT__COPY(decoder->fault, fault);
		decoder->has_fault = 1;
		decoder->fault_ahead = ahead;
	}
	return status;
}

/* We just synchronized.  Learn from the PSB+ status updates whether tracing
 * is enabled and where, then fetch the first event. */
static int ipt__blk_start_at(struct pt_block_decoder *decoder)
{
	int status;

	ipt__blk_cache_sync(decoder);

	status = ipt__evt_start_ip(&decoder->evdec, &decoder->ip);
	if (status < 0)
		return status;
	if (status)
		decoder->enabled = 1;

	decoder->status = pt_evt_next(&decoder->evdec, &decoder->event,
				      sizeof(decoder->event));
	if (decoder->status < 0)
		ipt__blk_note_end(decoder);
	return ipt__blk_proceed_trailing_event(decoder, NULL);
}

/* Synchronized: take in the PSB+ and the events that bind right there. */
static int ipt__blk_start(struct pt_block_decoder *decoder)
{
	return ipt__blk_whole(decoder, ipt__blk_op_start, NULL, 0);
}

static int ipt__blk_sync_forward(struct pt_block_decoder *decoder)
{
	int status;

	ipt__blk_reset(decoder);
	status = pt_evt_sync_forward(&decoder->evdec);
	if (status < 0)
		return status;
	return ipt__blk_start(decoder);
}

static int ipt__blk_restart(void *ctx)
{
	struct pt_block_decoder *decoder = (struct pt_block_decoder *) ctx;

	ipt__blk_reset(decoder);
	return ipt__blk_start(decoder);
}

/* As libipt, 0 on success: the status of the start is not reported. */
static int ipt__blk_sync_backward(struct pt_block_decoder *decoder)
{
	int status;

	status = ipt__evt_sync_backward(&decoder->evdec, ipt__blk_restart,
					decoder);
	return status < 0 ? status : 0;
}

static int ipt__blk_sync_set(struct pt_block_decoder *decoder,
			     uint64_t offset)
{
	int status;

	ipt__blk_reset(decoder);
	status = pt_evt_sync_set(&decoder->evdec, offset);
	if (status < 0)
		return status;
	return ipt__blk_start(decoder);
}

/* What only the block decoder knows of a start state: the return stack,
 * and where tracing stopped if it is disabled.  The rest comes as the
 * status events of the start (ipt_evt_start_at). */
IPT_DEF int ipt_blk_start_at(struct pt_block_decoder *decoder,
			     uint64_t offset,
			     const struct ipt_start_state *ustate)
{
	struct ipt_start_state state;
	uint32_t n;
	int status;

	if (!decoder)
		return -pte_invalid;
	status = ipt__start_state_in(&state, ustate);
	if (status < 0)
		return status;

	ipt__blk_reset(decoder);
	status = ipt_evt_start_at(&decoder->evdec, offset, &state);
	if (status < 0)
		return status;
	if (state.mode_stale)
		decoder->mode = state.mode;
	decoder->has_icnt = state.has_icnt;
	decoder->icnt = state.icnt;
	decoder->start_status = ipt__evt_queued(&decoder->evdec);
	decoder->has_start_last = state.has_last_insn ? 1 : 0;
	decoder->start_last = state.last_insn_ip;
	for (n = 0; n < state.nret; ++n)
		ipt__retstack_push(&decoder->retstack, state.ret[n]);
	if (!state.enabled)
		decoder->ip = state.ip;
	return ipt__blk_start(decoder);
}

static int ipt__blk_get_state(const struct pt_block_decoder *decoder,
			      uint64_t *offset, struct ipt_start_state *state)
{
	const struct ipt__retstack *rs = &decoder->retstack;
	uint8_t idx;
	int err;

	if (decoder->status == -pte_nosync)
		return -pte_nosync;
	if (decoder->process_insn || decoder->end_deferred ||
	    decoder->dark || decoder->dark_leave || decoder->has_held ||
	    (decoder->status != -pte_eos &&
	     decoder->status != -ipt_pte_need_more))
		return -pte_bad_context;
	err = ipt__evt_get_state(&decoder->evdec, offset, state);
	if (err < 0)
		return err;

	state->ip = decoder->has_end ? decoder->end_ip : decoder->ip;
	state->repeat = decoder->ahead;
	state->has_last_insn = decoder->has_end && decoder->has_end_last;
	state->last_insn_ip = state->has_last_insn ? decoder->end_last : 0;
	state->has_icnt = decoder->has_icnt;
	state->icnt = decoder->has_end ? decoder->end_icnt : decoder->icnt;
	if (decoder->has_end)
		rs = &decoder->end_rs;
	state->enabled = decoder->enabled;
	state->mode = decoder->mode;
	state->speculative = decoder->speculative;
	state->has_cr3 = decoder->asid.cr3 != pt_asid_no_cr3;
	state->cr3 = state->has_cr3 ? decoder->asid.cr3 : 0;
	state->non_root = ipt__vm_side_get(&decoder->vm) == 1;
	state->has_vmcs = decoder->asid.vmcs != pt_asid_no_vmcs;
	state->vmcs = state->has_vmcs ? decoder->asid.vmcs : 0;
	for (idx = rs->bottom; idx != rs->top;
	     idx = (uint8_t) ((idx + 1) % (IPT__RETSTACK_SIZE + 1)))
		state->ret[state->nret++] = rs->stack[idx];
	return 0;
}

IPT_DEF int ipt_blk_get_start_state(const struct pt_block_decoder *decoder,
				    uint64_t *offset,
				    struct ipt_start_state *ustate)
{
	struct ipt_start_state state;
	int err;

	if (!decoder || !offset || !ustate)
		return -pte_invalid;
	IPT_MEMSET(&state, 0, sizeof(state));
	state.size = sizeof(state);
	err = ipt__blk_get_state(decoder, offset, &state);
	if (err < 0)
		return err;
	return ipt__start_state_out(ustate, &state);
}

IPT_DEF int pt_blk_sync_forward(struct pt_block_decoder *decoder)
{
	IPT__BLK_GUARDED(decoder, ipt__blk_sync_forward(decoder));
}

IPT_DEF int pt_blk_sync_backward(struct pt_block_decoder *decoder)
{
	IPT__BLK_GUARDED(decoder, ipt__blk_sync_backward(decoder));
}

IPT_DEF int pt_blk_sync_set(struct pt_block_decoder *decoder, uint64_t offset)
{
	IPT__BLK_GUARDED(decoder, ipt__blk_sync_set(decoder, offset));
}

IPT_DEF int ipt_blk_extend(struct pt_block_decoder *decoder, uint8_t *end,
			   int more)
{
	if (!decoder)
		return -pte_invalid;
	return ipt_evt_extend(&decoder->evdec, end, more);
}

IPT_DEF int pt_blk_get_offset(const struct pt_block_decoder *decoder,
			      uint64_t *offset)
{
	if (!decoder)
		return -pte_invalid;
	return pt_evt_get_offset(&decoder->evdec, offset);
}

IPT_DEF int pt_blk_get_sync_offset(const struct pt_block_decoder *decoder,
				   uint64_t *offset)
{
	if (!decoder)
		return -pte_invalid;
	return pt_evt_get_sync_offset(&decoder->evdec, offset);
}

/* See the declaration in >>api-blk-ext. */
IPT_DEF int ipt_blk_set_cache_limit(struct pt_block_decoder *decoder,
				    uint64_t bytes)
{
	if (!decoder)
		return -pte_invalid;

	decoder->rlimit = bytes;
	ipt__blk_runs_reset(decoder);
	return 0;
}

IPT_DEF struct pt_image *pt_blk_get_image(struct pt_block_decoder *decoder)
{
	return decoder ? decoder->image : NULL;
}

IPT_DEF int pt_blk_set_image(struct pt_block_decoder *decoder,
			     struct pt_image *image)
{
	if (!decoder)
		return -pte_invalid;
	decoder->image = image ? image : decoder->default_image;

	/* Even the same image pointer may be a different image now. */
	decoder->cache_image = NULL;
	return 0;
}

IPT_DEF const struct pt_config *
pt_blk_get_config(const struct pt_block_decoder *decoder)
{
	return decoder ? pt_evt_get_config(&decoder->evdec) : NULL;
}

IPT_DEF int pt_blk_time(struct pt_block_decoder *decoder, uint64_t *time,
			uint32_t *lost_mtc, uint32_t *lost_cyc)
{
	if (!decoder || !time || !lost_mtc || !lost_cyc)
		return -pte_invalid;

	*time = decoder->tsc;
	*lost_mtc = decoder->lost_mtc;
	*lost_cyc = decoder->lost_cyc;
	return decoder->has_tsc ? 0 : -pte_no_time;
}

IPT_DEF int pt_blk_core_bus_ratio(struct pt_block_decoder *decoder,
				  uint32_t *cbr)
{
	if (!decoder || !cbr)
		return -pte_invalid;
	if (!decoder->has_cbr)
		return -pte_no_cbr;
	*cbr = decoder->cbr;
	return 0;
}

IPT_DEF int pt_blk_asid(const struct pt_block_decoder *decoder,
			struct pt_asid *asid, size_t size)
{
	if (!decoder || !asid)
		return -pte_invalid;

	/* The caller's struct may be older or newer than ours. */
	if (size < sizeof(asid->size))
		return -pte_invalid;
	if (size > sizeof(*asid))
		size = sizeof(*asid);
	IPT_MEMCPY(asid, &decoder->asid, size);
	asid->size = size;
	return 0;
}

/* ---- blocks ---- */

/* Copy @block to the user's, who may know a smaller or larger struct. */
static void ipt__blk_block_to_user(struct pt_block *ublock, size_t size,
				   const struct pt_block *block)
{
	if (ublock == block)
		return;

	if (size > sizeof(*block)) {
		IPT_MEMSET((uint8_t *) ublock + sizeof(*block), 0,
			   size - sizeof(*block));
		size = sizeof(*block);
	}
	IPT_MEMCPY(ublock, block, size);
}

static IPT__UNUSED int ipt__blk_fault(const struct pt_block_decoder *decoder)
{
	if (!decoder->has_fault)
		return 0;
	return decoder->fault_ahead ? 2 : 1;
}

static IPT__UNUSED int
ipt__blk_decode_watched(struct pt_block_decoder *decoder, struct pt_insn *insn,
			struct ipt__insn_ext *iext)
{
	int status;

	ipt__blk_watch(decoder);
	status = ipt__blk_decode(decoder, insn, iext);
	if (status < 0)
		ipt__blk_note_fault(decoder, status);
	return status;
}

/* Start @block where the last call left us; events may still change it. */
static IPT__INLINE void ipt__blk_begin(struct pt_block_decoder *decoder,
				       struct pt_block *block)
{
	IPT_MEMSET(block, 0, sizeof(*block));
	block->ip = decoder->ip;
	block->mode = decoder->mode;
	if (decoder->speculative)
		block->speculative = 1;
	decoder->ntrail = 0;
	decoder->has_start_last = 0;
}

/* A call has taken its step with @block, ending in @status: did it stop
 * at missing code, and how far past the end of the trace did the block
 * go (@had_end: the end was reached before)? */
static IPT__INLINE void ipt__blk_stepped(struct pt_block_decoder *decoder,
					 const struct pt_block *block,
					 int status, uint32_t had_end)
{
	ipt__blk_note_fault(decoder, status);
	if (had_end)
		decoder->ahead += block->ninsn;
	else if (decoder->has_end)
		decoder->ahead += block->ninsn - decoder->end_ninsn;
}

/* pt_blk_next past the common block (ipt__blk_next_fast) or for another
 * size of struct pt_block; @begun if @ublock is begun already. */
static IPT__NOINLINE int ipt__blk_next(struct pt_block_decoder *decoder,
				       struct pt_block *ublock, size_t size,
				       int begun)
{
	struct pt_block_decoder save;
	struct pt_block local, *block;
	uint32_t had_end;
	int status, guarded;

	block = size == sizeof(local) ? ublock : &local;
	if (!begun) {
		ipt__blk_cache_sync(decoder);
		ipt__blk_begin(decoder, block);
	}

	guarded = ipt__blk_guard(decoder, &save);
	ipt__blk_watch(decoder);
	had_end = decoder->has_end;
	decoder->cur_block = block;
	status = ipt__blk_proceed(decoder, block);
	decoder->cur_block = NULL;
	ipt__blk_stepped(decoder, block, status, had_end);
	if (guarded) {
		status = ipt__blk_settle(decoder, &save, status);
		/* Undone: no block yet. */
		if (status == -ipt_pte_need_more)
			ipt__blk_begin(decoder, block);
	}

	ipt__blk_block_to_user(ublock, size, block);
	return status;
}

/* pt_blk_next for a struct pt_block of our size and current caches, past
 * the quickest case (ipt__blk_next_fast). */
static IPT__INLINE int ipt__blk_next_done(struct pt_block_decoder *decoder,
					  struct pt_block *block, int status)
{
	if (IPT__UNLIKELY(status < 0))
		return ipt__blk_next(decoder, block, sizeof(*block), 1);
	decoder->has_fault = 0;
	return 0;
}

/* The block of a single run, @run with @text, that uses up the trace in
 * hand (ipt__blk_next_last): with a TNT, a conditional branch or a
 * compressed return; with a TIP, an indirect branch, call or return.  As
 * ipt__blk_next_chain would take it, without the bookkeeping of a chain.
 *
 * Returns as ipt__blk_next_chain. */
static IPT__INLINE int ipt__blk_take_last(struct pt_block_decoder *decoder,
					  struct pt_block *block,
					  const struct ipt__blk_run *run,
					  const struct ipt__blk_text *text)
{
	const struct pt_event *ev = &decoder->event;
	uint64_t end_ip, next;

	switch ((enum ipt__run_kind) run->kind) {
	case ipt__run_cond:
		if (ev->type != ptev_tnt)
			return -1;
		break;

	case ipt__run_ret:
		if (ev->type == ptev_tnt && !ipt__blk_ret_ok(decoder))
			return -1;
		break;

	case ipt__run_icall:
	case ipt__run_indirect:
		if (ev->type != ptev_tip)
			return -1;
		break;

	default:
		return -1;
	}
	if (ipt__blk_count(decoder, run) < 0)
		return -1;

	if (ev->type == ptev_tnt) {
		if (run->kind == ipt__run_ret)
			ipt__blk_take_ret(decoder, block, run, text);
		else
			ipt__blk_take_cond(decoder, block, run, text);
		return 0;
	}

	end_ip = run->ip + run->len;
	next = ipt__ip_in_mode(decoder->mode, end_ip + run->isize);
	block->isid = run->isid;
	block->ninsn = run->ninsn;
	block->end_ip = end_ip;
	block->iclass = (enum pt_insn_class) run->iclass;
	if (text)
		ipt__blk_trail_add(decoder, run, text, next);
	if (run->kind == ipt__run_icall)
		ipt__retstack_push(&decoder->retstack, next);
	decoder->ip = ev->variant.tip.ip;
	return 1;
}

/* Whether the begun block may use up the trace in hand, the last bit of
 * the TNT or the TIP, by the runs of the run cache: where no call can be
 * undone, with neither a postponed instruction nor ticks. */
static IPT__INLINE int ipt__blk_last_ok(const struct pt_block_decoder *decoder)
{
	const struct pt_event *ev = &decoder->event;

	return decoder->status >= 0 && decoder->enabled &&
	       !decoder->process_insn &&
	       !decoder->flags.variant.block.enable_tick_events &&
	       (ev->type == ptev_tnt ? ev->variant.tnt.size == 1 :
		ev->type == ptev_tip && !ev->ip_suppressed) &&
	       !ipt__evt_more(&decoder->evdec);
}

/* ipt__blk_proceed_trailing_event where its commonest case is plain to
 * see: a TNT with bits left or a TIP in hand, nothing postponed, no tick
 * wanted, no error and no event of the CR3 filter: nothing applies here. */
static IPT__INLINE int
ipt__blk_proceed_trailing_quick(struct pt_block_decoder *decoder,
				struct pt_block *block)
{
	const struct pt_event *ev = &decoder->event;

	if (decoder->status >= 0 && !decoder->process_insn &&
	    !decoder->filter_event &&
	    !decoder->flags.variant.block.enable_tick_events &&
	    (ev->type == ptev_tip ||
	     (ev->type == ptev_tnt && ev->variant.tnt.size)))
		return ipt__blk_status(decoder, 0);
	return ipt__blk_proceed_trailing_event(decoder, block);
}

/* The begun block that uses up the trace in hand (ipt__blk_last_ok) from
 * @run with @text, the warm run at the IP: ipt__blk_next_chain takes it
 * (the general way would walk it and so make it warm), and the
 * trailing-event rules follow as ipt__blk_proceed has them, without
 * ipt__blk_next's general frame; a block of one run goes by
 * ipt__blk_take_last.  Otherwise ipt__blk_next.  The caller has begun the
 * block and noted the image's misses (ipt__blk_watch) before it looked up
 * @run. */
static int ipt__blk_next_last_run(struct pt_block_decoder *decoder,
				  struct pt_block *block,
				  const struct ipt__blk_run *run,
				  const struct ipt__blk_text *text)
{
	const struct pt_event *ev = &decoder->event;
	int status;

	decoder->cur_block = block;
	if (run->kind == ipt__run_dcall || run->kind == ipt__run_djump ||
	    run->kind == ipt__run_next)
		status = ipt__blk_next_chain(decoder, block, run, text);
	else
		status = ipt__blk_take_last(decoder, block, run, text);
	if (status < 0) {
		decoder->cur_block = NULL;
		return ipt__blk_next(decoder, block, sizeof(*block), 1);
	}
	/* The TIP or the TNT is used up: the trailing-event rules fetch the
	 * next event first (no ticks, no error in hand). */
	if (status > 0 || (ev->type == ptev_tnt && !ev->variant.tnt.size))
		status = ipt__blk_fetch_event(decoder);
	if (status >= 0)
		status = ipt__blk_proceed_trailing_quick(decoder, block);
	decoder->cur_block = NULL;
	/* pt_blk_next comes here only before the end. */
	ipt__blk_stepped(decoder, block, status, 0);
	return status;
}

/* The begun block may use up the trace in hand: by
 * ipt__blk_next_last_run from the run at the IP (recorded if need be; in
 * an image with file sections, only a warm one) where ipt__blk_last_ok,
 * otherwise by ipt__blk_next. */
static int ipt__blk_next_last(struct pt_block_decoder *decoder,
			      struct pt_block *block)
{
	const struct ipt__blk_text *text = NULL;
	struct ipt__blk_run *run;

	if (!ipt__blk_last_ok(decoder))
		return ipt__blk_next(decoder, block, sizeof(*block), 1);

	ipt__blk_watch(decoder);
	run = (struct ipt__blk_run *)
		ipt__blk_run_find(decoder, decoder->ip, decoder->mode,
				  decoder->want_text ? &text : NULL);
	if (!run)
		return ipt__blk_next(decoder, block, sizeof(*block), 1);
	if (!run->warm) {
		/* In a file section, the general way walks it as libipt's
		 * cache would see it. */
		if (ipt__image_has_files(decoder->image))
			return ipt__blk_next(decoder, block, sizeof(*block), 1);
		run->warm = 1;
	}
	return ipt__blk_next_last_run(decoder, block, run, text);
}

static IPT__NOINLINE int ipt__blk_next_slow(struct pt_block_decoder *decoder,
					    struct pt_block *block)
{
	ipt__blk_begin(decoder, block);
	if (ipt__blk_next_any(decoder, block) < 0)
		return ipt__blk_next_last(decoder, block);
	return ipt__blk_next_done(decoder, block, 0);
}

/* ipt__blk_next_fast found @run (with @text), warm, and it does not end in
 * a conditional branch: ipt__blk_next_chain's block, as ipt__blk_next_any
 * would take it.  Its commonest case, a compressed return alone, is taken
 * here as the chain would. */
static IPT__NOINLINE int
ipt__blk_next_chained(struct pt_block_decoder *decoder, struct pt_block *block,
		      const struct ipt__blk_run *run,
		      const struct ipt__blk_text *text)
{
	ipt__blk_begin(decoder, block);
	if (run->kind == ipt__run_ret && ipt__blk_ret_ok(decoder) &&
	    ipt__blk_count(decoder, run) >= 0) {
		ipt__blk_take_ret(decoder, block, run, text);
		return ipt__blk_next_done(decoder, block, 0);
	}
	return ipt__blk_next_done(decoder, block,
				  ipt__blk_next_chain(decoder, block, run,
						      text));
}

/* ipt__blk_next_fast found @run (with @text), warm, for a block that uses
 * up the trace in hand (ipt__blk_last_ok): as ipt__blk_next_slow would
 * take it, without looking the run up again. */
static IPT__NOINLINE int
ipt__blk_next_tail(struct pt_block_decoder *decoder, struct pt_block *block,
		   const struct ipt__blk_run *run,
		   const struct ipt__blk_text *text)
{
	ipt__blk_begin(decoder, block);
	ipt__blk_watch(decoder);
	return ipt__blk_next_last_run(decoder, block, run, text);
}

/* The quickest case of ipt__blk_next_any: its run sits in its set under
 * the context in hand (in any way: the table stays as it is, the run
 * moves to the first way only on a look that records), and ends in a
 * conditional branch (a chain goes to ipt__blk_next_chained; a block that
 * uses up the trace in hand to ipt__blk_next_tail).  Everything else
 * ipt__blk_next_slow does, before anything has changed; every way out of
 * here is a tail call, so that this path saves no registers.
 * @with_text is decoder->want_text, a constant in each copy. */
static IPT__INLINE int ipt__blk_next_fast(struct pt_block_decoder *decoder,
					  struct pt_block *block,
					  int with_text)
{
	const struct ipt__blk_text *text;
	const struct ipt__blk_run *run;
	struct ipt__blk_run *set;
	uint64_t ip = decoder->ip;
	uint32_t ctx = decoder->ctx_id, way = 0;
	int last;

	if (IPT__UNLIKELY(!IPT__BLK_RUNS || !decoder->runs || !ctx ||
			  decoder->ctx_mode != (uint32_t) decoder->mode))
		return ipt__blk_next_slow(decoder, block);
	last = !ipt__blk_fast_ok(decoder);
	if (last && !ipt__blk_last_ok(decoder))
		return ipt__blk_next_slow(decoder, block);

	set = ipt__blk_set_with(decoder,
				ipt__blk_set_of_salted(ip, decoder->ctx_salt,
						       decoder->rsets),
				(uint32_t) with_text);
	if (set[0].ip != ip || set[0].ctx != ctx) {
		if (set[1].ip == ip && set[1].ctx == ctx)
			way = 1;
		else if (set[2].ip == ip && set[2].ctx == ctx)
			way = 2;
		else if (IPT__LIKELY(set[3].ip == ip && set[3].ctx == ctx))
			way = 3;
		else
			return ipt__blk_next_slow(decoder, block);
	}
	run = &set[way];
	text = with_text ? &ipt__blk_set_text(set)[way] : NULL;
	if (IPT__UNLIKELY(!run->warm))
		return ipt__blk_next_slow(decoder, block);
	if (last)
		return ipt__blk_next_tail(decoder, block, run, text);
	if (run->kind != ipt__run_cond)
		return ipt__blk_next_chained(decoder, block, run, text);
	if (IPT__UNLIKELY(ipt__blk_count(decoder, run) < 0))
		return ipt__blk_next_slow(decoder, block);

	ipt__blk_begin(decoder, block);
	ipt__blk_take_cond(decoder, block, run, text);
	decoder->has_fault = 0;
	return 0;
}

/* ipt__blk_next_fast for decoders without text and with, each compiled on
 * its own, so that neither pays for the registers of the other. */
static IPT__NOINLINE int ipt__blk_next_plain(struct pt_block_decoder *decoder,
					     struct pt_block *block)
{
	return ipt__blk_next_fast(decoder, block, 0);
}

static IPT__NOINLINE int ipt__blk_next_text(struct pt_block_decoder *decoder,
					    struct pt_block *block)
{
	return ipt__blk_next_fast(decoder, block, 1);
}

/* pt_blk_next into a block of our own size, past the checks of the
 * arguments: also how the instruction decoder asks for its blocks. */
static IPT__INLINE int ipt__blk_next_own(struct pt_block_decoder *decoder,
					 struct pt_block *block)
{
	if (IPT__UNLIKELY(!ipt__blk_cache_current(decoder) ||
			  decoder->has_end))
		return ipt__blk_next(decoder, block, sizeof(*block), 0);

	if (decoder->want_text)
		return ipt__blk_next_text(decoder, block);
	return ipt__blk_next_plain(decoder, block);
}

IPT_DEF int pt_blk_next(struct pt_block_decoder *decoder,
			struct pt_block *ublock, size_t size)
{
	if (!decoder || !ublock)
		return -pte_invalid;

	if (IPT__UNLIKELY(size != sizeof(*ublock)))
		return ipt__blk_next(decoder, ublock, size, 0);
	return ipt__blk_next_own(decoder, ublock);
}

IPT_DEF int ipt_blk_set_vm_tolerant(struct pt_block_decoder *decoder, int on)
{
	if (!decoder)
		return -pte_invalid;
	decoder->vm_tolerant = on ? 1 : 0;
	return 0;
}

IPT_DEF int ipt_blk_set_cr3_filter(struct pt_block_decoder *decoder,
				   uint64_t cr3)
{
	if (!decoder)
		return -pte_invalid;
	decoder->cr3_filter = cr3;
	return 0;
}

IPT_DEF int ipt_blk_in_guest(const struct pt_block_decoder *decoder)
{
	return decoder ? ipt__vm_side_get(&decoder->vm) : -pte_invalid;
}

IPT_DEF int ipt_blk_set_wait_for_code(struct pt_block_decoder *decoder,
				      int on)
{
	if (!decoder)
		return -pte_invalid;
	decoder->wait_for_code = on ? 1 : 0;
	return 0;
}

IPT_DEF int ipt_blk_get_fault(const struct pt_block_decoder *decoder,
			      struct ipt_fault *ufault, size_t size)
{
	struct ipt_fault fault;

	if (!decoder || !ufault)
		return -pte_invalid;
	if (!decoder->has_fault)
		return 0;

	IPT_MEMSET(&fault, 0, sizeof(fault));
	pt_asid_init(&fault.asid);
	fault.asid.cr3 = decoder->fault.cr3;
	fault.asid.vmcs = decoder->fault.vmcs;
	fault.addr = decoder->fault.addr;
	fault.size = decoder->fault.size;
	if (size > sizeof(fault)) {
		IPT_MEMSET((uint8_t *) ufault + sizeof(fault), 0,
			   size - sizeof(fault));
		size = sizeof(fault);
	}
	IPT_MEMCPY(ufault, &fault, size);
	return 1;
}

/* ---- events ---- */

static int ipt__blk_process_enabled(struct pt_block_decoder *decoder,
				    struct pt_event *ev)
{
	/* A status update just confirms what we know; a VM entry's PSB+
	 * says tracing is on where we had it off (ipt_blk_set_vm_tolerant):
	 * it is, from its IP on. */
	if (ev->status_update) {
		if (decoder->enabled)
			return 0;
		if (!decoder->vm_tolerant || ev->ip_suppressed)
			return -pte_bad_status_update;
		ev->status_update = 0;
	}

	if (ev->ip_suppressed)
		return -pte_noip;
	if (decoder->enabled) {
		/* The VM entry's TIP.PGE after such a PSB+: enabled again
		 * where we are. */
		if (decoder->vm_tolerant &&
		    ev->variant.enabled.ip == decoder->ip)
			return 0;
		return -pte_bad_context;
	}

	decoder->ip = ev->variant.enabled.ip;
	decoder->enabled = 1;
	return 0;
}

static int ipt__blk_process_disabled(struct pt_block_decoder *decoder,
				     const struct pt_event *ev)
{
	if (ev->status_update)
		return decoder->enabled ? -pte_bad_status_update : 0;

	if (!decoder->enabled)
		return -pte_bad_context;

	/* Keep @decoder->ip: tracing may resume there, and the enabled event
	 * will say so.  A later TRIG counts from its own anchor, since our IP
	 * goes stale. */
	decoder->enabled = 0;
	decoder->icnt = 0;
	return 0;
}

static int ipt__blk_process_overflow(struct pt_block_decoder *decoder,
				     const struct pt_event *ev)
{
	if (ev->status_update)
		return -pte_bad_context;

	/* Without an IP the overflow resolved with tracing disabled; any IP
	 * we still had would only mislead. */
	if (ev->ip_suppressed) {
		decoder->enabled = 0;
		decoder->ip = 0;
	} else {
		decoder->enabled = 1;
		decoder->ip = ev->variant.overflow.ip;
	}

	/* The TSX state is lost; the mode we keep until told otherwise. */
	decoder->speculative = 0;
	return 0;
}

/* A paging or VMCS event, synchronous or not: the address space changes,
 * and with it the context the run cache looks up (ctx_id names the old
 * one). */
static void ipt__blk_change_asid(struct pt_block_decoder *decoder,
				 const struct pt_event *ev)
{
	uint64_t cr3;

	ipt__vm_side_take(&decoder->vm, ev);
	if (ipt__evt_paging(ev, &cr3) >= 0)
		ipt__blk_set_cr3(decoder, cr3);
	else if (ev->type == ptev_vmcs)
		ipt__blk_set_vmcs(decoder, ev->variant.vmcs.base);
	else if (ev->type == ptev_async_vmcs)
		ipt__blk_set_vmcs(decoder, ev->variant.async_vmcs.base);
}

/* Build a tick event for the first TNT bit used with a new timestamp. */
static int ipt__blk_tnt_tick(struct pt_block_decoder *decoder,
			     struct pt_event *uevent, size_t size)
{
	struct pt_event *ev = &decoder->event;
	struct pt_event tick;
	int status;

	if (!decoder->flags.variant.block.enable_tick_events ||
	    !ev->has_tsc || ev->tsc == decoder->tsc)
		return -pte_bad_query;

	IPT_MEMSET(&tick, 0, sizeof(tick));
	tick.type = ptev_tick;
	tick.has_tsc = 1;
	tick.tsc = ev->tsc;
	tick.lost_mtc = ev->lost_mtc;
	tick.lost_cyc = ev->lost_cyc;
	tick.variant.tick.ip = decoder->ip;

	/* The TNT stays current; taking over its time now makes sure it
	 * yields one tick at most. */
	decoder->has_tsc = 1;
	decoder->tsc = tick.tsc;
	decoder->lost_mtc = tick.lost_mtc;
	decoder->lost_cyc = tick.lost_cyc;

	IPT_MEMCPY(uevent, &tick, size);

	if (!ev->variant.tnt.size) {
		status = ipt__blk_fetch_event(decoder);
		if (status < 0)
			return status;
	}
	return ipt__blk_proceed_trailing_event(decoder, NULL);
}

/* pt_blk_event's checks of the event in hand (not a TNT or a TIP) and
 * what it does to the decoder's state: 0 or a negative pte_* code. */
static int ipt__blk_event_take(struct pt_block_decoder *decoder)
{
	struct pt_event *ev = &decoder->event;
	int status;

	switch (ev->type) {
	case ptev_tnt:
	case ptev_tip:
		return -pte_internal;

	case ptev_enabled:
		/* Tracing resumes where it stopped (not where the CR3
		 * filter had the decoder stand). */
		if (ev->variant.enabled.ip == decoder->ip &&
		    !decoder->filter_event)
			ev->variant.enabled.resumed = 1;

		status = ipt__blk_process_enabled(decoder, ev);
		if (status < 0)
			return status;
		break;

	case ptev_async_disabled:
		if (decoder->ip != ev->variant.async_disabled.at)
			return -pte_bad_query;
		/* fall through */
	case ptev_disabled:
		status = ipt__blk_process_disabled(decoder, ev);
		if (status < 0)
			return status;
		break;

	case ptev_async_branch:
		if (decoder->ip != ev->variant.async_branch.from)
			return -pte_bad_query;
		if (ev->status_update || !decoder->enabled)
			return -pte_bad_context;

		decoder->ip = ev->variant.async_branch.to;
		break;

	case ptev_async_paging:
		if (!ev->ip_suppressed &&
		    decoder->ip != ev->variant.async_paging.ip)
			return -pte_bad_query;
		/* fall through */
	case ptev_paging:
		ipt__blk_take_paging(decoder, ev);
		break;

	case ptev_async_vmcs:
		if (!ev->ip_suppressed &&
		    decoder->ip != ev->variant.async_vmcs.ip)
			return -pte_bad_query;
		/* fall through */
	case ptev_vmcs:
		ipt__blk_change_asid(decoder, ev);
		break;

	case ptev_overflow:
		status = ipt__blk_process_overflow(decoder, ev);
		if (status < 0)
			return status;
		break;

	case ptev_exec_mode:
		if (decoder->enabled && !ev->ip_suppressed &&
		    decoder->ip != ev->variant.exec_mode.ip)
			return -pte_bad_query;

		/* A status update must agree with what we know. */
		if (ev->status_update && decoder->enabled &&
		    decoder->mode != ptem_unknown &&
		    decoder->mode != ev->variant.exec_mode.mode)
			return -pte_bad_status_update;

		decoder->mode = ev->variant.exec_mode.mode;
		break;

	case ptev_tsx:
		if (!ev->ip_suppressed && decoder->ip != ev->variant.tsx.ip)
			return -pte_bad_query;

		decoder->speculative = ev->variant.tsx.speculative;
		break;

	case ptev_stop:
		/* Tracing is always disabled before it stops. */
		if (ev->status_update || decoder->enabled)
			return -pte_bad_context;
		break;

	case ptev_cbr:
		ipt__blk_set_cbr(decoder, ev->variant.cbr.ratio);
		break;

	case ptev_rsm:
	case ptev_sipi:
		if (!ev->ip_suppressed)
			return -pte_internal;
		break;

	case ptev_exstop:
	case ptev_mwait:
	case ptev_iflags:
	case ptev_interrupt:
	case ptev_smi:
	case ptev_init:
	case ptev_vmexit:
	case ptev_shutdown:
	case ptev_uintr:
	case ptev_trig:
	case ptev_swintr:
	case ptev_syscall:
		if (decoder->enabled && !ev->ip_suppressed &&
		    decoder->ip != ipt__blk_event_ip(ev))
			return -pte_bad_query;
		break;

	case ptev_pwre:
	case ptev_pwrx:
	case ptev_ptwrite:
	case ptev_tick:
	case ptev_mnt:
	case ptev_iret:
	case ptev_vmentry:
	case ptev_uiret:
		break;
	}
	return 0;
}

/* Done with the event in hand, taken: the next one, and the events that
 * bind where the decoder stands.  pt_blk_event's status. */
static int ipt__blk_event_done(struct pt_block_decoder *decoder)
{
	int status = ipt__blk_fetch_event(decoder);

	if (status < 0)
		return status;
	return ipt__blk_proceed_trailing_event(decoder, NULL);
}

static int ipt__blk_event(struct pt_block_decoder *decoder,
			  struct pt_event *uevent, size_t size)
{
	struct pt_event *ev = &decoder->event;
	int status;

	status = decoder->status;
	if (status < 0)
		return status;

	ipt__blk_cache_sync(decoder);

	/* Never write past the user's struct; an older one lacks only what
	 * its user cannot know about. */
	if (size > sizeof(*ev))
		size = sizeof(*ev);

	if (ev->type == ptev_tnt)
		return ipt__blk_tnt_tick(decoder, uevent, size);
	if (ev->type == ptev_tip)
		return -pte_bad_query;

	status = ipt__blk_event_take(decoder);
	if (status < 0)
		return status;
	IPT_MEMCPY(uevent, ev, size);
	return ipt__blk_event_done(decoder);
}

IPT_DEF int pt_blk_event(struct pt_block_decoder *decoder,
			 struct pt_event *uevent, size_t size)
{
	if (!uevent)
		return -pte_invalid;
	IPT__BLK_GUARDED(decoder, ipt__blk_whole(decoder, ipt__blk_op_event,
						 uevent, size));
}

/* For a caller that reports no events (>>cov): pt_blk_event while it
 * would return pts_event_pending, each event handed to @take instead of
 * copied out, once pt_blk_event would have returned it.  @status is the
 * status of the last call, pending at first.  Returns 1 when they are
 * all taken, or one failed (@status says which); 0 when pt_blk_event
 * must take the event in hand (a TNT or a TIP), or all of them.  Each
 * event is taken as ipt__blk_whole takes it, without the copy of the
 * decoder around it, which has nothing to do here: a call is undone only
 * when more trace may come (ipt_blk_extend) or when code missing ahead
 * of the flow is waited for (the SKD022 workaround with
 * ipt_blk_set_wait_for_code). */
static int ipt__blk_take_events(struct pt_block_decoder *decoder,
				void (*take)(void *context,
					     const struct pt_event *ev),
				void *context, int *status)
{
	const struct pt_config *config = pt_evt_get_config(&decoder->evdec);
	struct pt_event *ev = &decoder->event;
	struct pt_event taken;

	if (!IPT__BLK_SHORT || ipt__evt_more(&decoder->evdec) || !config ||
	    (decoder->wait_for_code && config->errata.skd022))
		return 0;
	while (*status & pts_event_pending) {
		if (ev->type == ptev_tnt || ev->type == ptev_tip)
			return 0;
		ipt__blk_cache_sync(decoder);
		ipt__blk_watch(decoder);
		*status = decoder->status;
		if (*status >= 0)
			*status = ipt__blk_event_take(decoder);
		if (*status >= 0) {
			IPT__COPY(taken, *ev);
			*status = ipt__blk_event_done(decoder);
		}
		ipt__blk_note_fault(decoder, *status);
		if (*status < 0)
			return 1;
		take(context, &taken);
	}
	return 1;
}

/* ---- resynchronization ---- */

/* Resynchronizing after errors that come back at once: after this many
 * calls of pt_blk_resync that find the decoder no further on in the trace,
 * it gives up on the PSB it is in and goes on to the next one.  More than
 * the events one packet may queue, so that each gets its turn. */
#define IPT__BLK_RESYNC_STALLS 20

/* Count a call of pt_blk_resync that finds the decoder no further on in the
 * trace than the last one did.  Returns the count. */
static uint32_t ipt__blk_resync_stalls(struct pt_block_decoder *decoder)
{
	uint64_t sync, at;

	if (pt_evt_get_sync_offset(&decoder->evdec, &sync) < 0)
		sync = UINT64_MAX;
	at = ipt__blk_evt_offset(&decoder->evdec);
	if (sync == decoder->resync_sync && at <= decoder->resync_at)
		return ++decoder->resync_stalls;
	decoder->resync_sync = sync;
	decoder->resync_at = at;
	decoder->resync_stalls = 0;
	return 0;
}

/* After an error, find a place to continue from in the events ahead: the
 * first event that tells us an IP, or whether tracing is on.  Events up to
 * there are dropped; state they carry (paging, vmcs) is applied.
 *
 * Each call must take the decoder further.  Going back to the start of a
 * PSB+ goes the same way each time, so it is done once for an error at a
 * given place; an error that comes back at once, again and again, moves
 * the decoder on to the next PSB. */
static int ipt__blk_resync(struct pt_block_decoder *decoder)
{
	struct pt_event *ev;
	uint32_t stalls;
	int status;

	ipt__blk_clear_postponed_insn(decoder);
	ipt__blk_cache_sync(decoder);

	stalls = ipt__blk_resync_stalls(decoder);
	if (stalls >= IPT__BLK_RESYNC_STALLS)
		return pt_blk_sync_forward(decoder);

	ev = &decoder->event;
	for (;;) {
		status = decoder->status;
		if (status < 0)
			return status;

		/* Somewhere inside PSB+: start over at its beginning, unless
		 * we did so before and got no further. */
		if (ev->status_update) {
			uint64_t sync;

			if (stalls)
				return pt_blk_sync_forward(decoder);
			status = pt_blk_get_sync_offset(decoder, &sync);
			if (status < 0)
				return status;
			return pt_blk_sync_set(decoder, sync);
		}

		switch (ev->type) {
		case ptev_enabled:
			decoder->enabled = 0;
			return ipt__blk_status(decoder, pts_event_pending);

		case ptev_disabled:
			decoder->enabled = 1;
			decoder->ip = 0;
			status = ipt__blk_process_disabled(decoder, ev);
			if (status < 0)
				return status;

			status = ipt__blk_fetch_event(decoder);
			if (status < 0)
				return status;
			return ipt__blk_proceed_trailing_event(decoder, NULL);

		case ptev_async_disabled:
			decoder->ip = ev->variant.async_disabled.at;
			status = ipt__blk_skd022_applies(decoder, ev);
			if (status < 0)
				return status;
			if (status)
				break;
			return ipt__blk_status(decoder, pts_event_pending);

		case ptev_async_branch:
			decoder->ip = ev->variant.async_branch.from;
			return ipt__blk_status(decoder, pts_event_pending);

		case ptev_async_paging:
			if (!ev->ip_suppressed) {
				decoder->ip = ev->variant.async_paging.ip;
				return ipt__blk_status(decoder,
						       pts_event_pending);
			}
			/* fall through */
		case ptev_paging:
			/* Skipped: into an address space the CR3 filter
			 * leaves out, tracing is off for the decoder. */
			ipt__blk_take_paging(decoder, ev);
			if (decoder->dark) {
				decoder->dark_leave = 0;
				decoder->enabled = 0;
			}
			break;

		case ptev_async_vmcs:
			if (!ev->ip_suppressed) {
				decoder->ip = ev->variant.async_vmcs.ip;
				return ipt__blk_status(decoder,
						       pts_event_pending);
			}
			/* fall through */
		case ptev_vmcs:
			ipt__blk_change_asid(decoder, ev);
			break;

		case ptev_overflow:
			return ipt__blk_status(decoder, pts_event_pending);

		case ptev_exec_mode:
		case ptev_tsx:
		case ptev_iflags:
		case ptev_interrupt:
			/* These tell whether tracing is on, and where. */
			if (ev->ip_suppressed) {
				decoder->enabled = 0;
			} else {
				decoder->enabled = 1;
				decoder->ip = ipt__blk_event_ip(ev);
			}
			return ipt__blk_status(decoder, pts_event_pending);

		case ptev_ptwrite:
			/* Without an IP it binds to an instruction we cannot
			 * find: the user must fetch it and call us again. */
			if (ev->ip_suppressed)
				return -pte_event_ignored;

			decoder->ip = ev->variant.ptwrite.ip;
			/* Indicated after its instruction. */
			return ipt__blk_status(decoder, 0);

		case ptev_vmentry:
		case ptev_uiret:
			if (ev->ip_suppressed)
				break;

			decoder->ip = ipt__blk_event_ip(ev);
			return ipt__blk_status(decoder, 0);

		case ptev_tip:
			decoder->ip = ev->variant.tip.ip;
			status = ipt__blk_fetch_event(decoder);
			if (status < 0)
				return status;
			return ipt__blk_proceed_trailing_event(decoder, NULL);

		case ptev_exstop:
		case ptev_mwait:
		case ptev_tick:
		case ptev_iret:
		case ptev_smi:
		case ptev_rsm:
		case ptev_init:
		case ptev_vmexit:
		case ptev_shutdown:
		case ptev_uintr:
		case ptev_swintr:
		case ptev_syscall:
			if (ev->ip_suppressed)
				break;

			decoder->ip = ipt__blk_event_ip(ev);
			return ipt__blk_status(decoder, pts_event_pending);

		case ptev_stop:
		case ptev_pwre:
		case ptev_pwrx:
		case ptev_cbr:
		case ptev_mnt:
		case ptev_tnt:
		case ptev_sipi:
		case ptev_trig:
			break;
		}

		status = ipt__blk_fetch_event(decoder);
		if (status < 0)
			return status;
	}
}

IPT_DEF int pt_blk_resync(struct pt_block_decoder *decoder)
{
	IPT__BLK_GUARDED(decoder, ipt__blk_whole(decoder, ipt__blk_op_resync,
						 NULL, 0));
}

/* ---- comparing decoders (for >>seg) ---- */

static IPT__UNUSED unsigned int ipt__retstack_depth(const struct ipt__retstack *rs)
{
	unsigned int top = rs->top, bottom = rs->bottom;

	return top >= bottom ? top - bottom
			     : top + (unsigned int) IPT__RETSTACK_SIZE + 1 -
				       bottom;
}

/* 1 if the stacks are equal, 2 if b's entries are the top of a's, else
 * 0. */
static IPT__UNUSED int ipt__retstack_same(const struct ipt__retstack *a,
					  const struct ipt__retstack *b)
{
	unsigned int da, db, ia, ib, i;

	if (a->top > IPT__RETSTACK_SIZE || a->bottom > IPT__RETSTACK_SIZE ||
	    b->top > IPT__RETSTACK_SIZE || b->bottom > IPT__RETSTACK_SIZE)
		return 0;
	da = ipt__retstack_depth(a);
	db = ipt__retstack_depth(b);
	if (db > da)
		return 0;

	ia = a->top;
	ib = b->top;
	for (i = 0; i < db; ++i) {
		ia = ia ? ia - 1 : (unsigned int) IPT__RETSTACK_SIZE;
		ib = ib ? ib - 1 : (unsigned int) IPT__RETSTACK_SIZE;
		if (a->stack[ia] != b->stack[ib])
			return 0;
	}
	return da == db ? 1 : 2;
}

/* The block decoder, but for its caches, its image, the recent contexts
 * (they only name cache entries) and the trail of the last block (read
 * only by the instruction decoder, within that block). */
static IPT__UNUSED int ipt__blk_same(const struct pt_block_decoder *a,
				     const struct pt_block_decoder *b)
{
	if (!ipt__evt_same(&a->evdec, &b->evdec) ||
	    !ipt__evt_same_event(&a->event, &b->event) ||
	    IPT_MEMCMP(&a->flags, &b->flags, sizeof(a->flags)) ||
	    a->asid.cr3 != b->asid.cr3 || a->asid.vmcs != b->asid.vmcs ||
	    a->ip != b->ip || a->tsc != b->tsc ||
	    a->lost_mtc != b->lost_mtc || a->lost_cyc != b->lost_cyc ||
	    a->cbr != b->cbr || a->resync_sync != b->resync_sync ||
	    a->resync_at != b->resync_at ||
	    a->resync_stalls != b->resync_stalls || a->icnt != b->icnt ||
	    a->mode != b->mode || a->status != b->status ||
	    a->bound != b->bound || a->enabled != b->enabled ||
	    a->speculative != b->speculative || a->has_tsc != b->has_tsc ||
	    a->has_cbr != b->has_cbr || a->has_icnt != b->has_icnt ||
	    a->process_insn != b->process_insn ||
	    a->has_fault != b->has_fault ||
	    a->wait_for_code != b->wait_for_code ||
	    a->fault_ahead != b->fault_ahead)
		return 0;

	/* Where the last call stopped for missing code (@misses only lives
	 * during a call). */
	if (a->has_fault &&
	    (a->fault.addr != b->fault.addr || a->fault.cr3 != b->fault.cr3 ||
	     a->fault.vmcs != b->fault.vmcs || a->fault.size != b->fault.size))
		return 0;

	/* The postponed instruction: rare at a join, compared in full. */
	if (a->process_insn &&
	    (IPT_MEMCMP(&a->insn, &b->insn, sizeof(a->insn)) ||
	     IPT_MEMCMP(&a->iext, &b->iext, sizeof(a->iext))))
		return 0;

	return ipt__retstack_same(&a->retstack, &b->retstack);
}

/* ==== >>insn  instruction decoder ========================================
 * One instruction at a time, on top of the block decoder.
 *
 * It asks the block decoder for a block and hands out its instructions one
 * by one.  They come from the text of the block decoder's cached runs: a
 * copy of the run the next instruction lies in is kept at hand, so that
 * most instructions cost neither a cache lookup nor a decode.  What has no
 * cached run (the last instruction of a truncated block, code that cannot
 * be recorded) is decoded through the block decoder's instruction cache.
 * Status flags and errors of a block are held back until its last
 * instruction; events are indicated between blocks. */

struct pt_insn_decoder {
	struct pt_block_decoder blkdec;

	/* The flags the user configured. */
	struct pt_conf_flags flags;

	/* The instructions of the current block not yet handed out: @ip is
	 * the next one's, @ninsn how many are left. */
	struct pt_block block;

	/* The status of the block decoder call that gave us @block; we hold
	 * it back until @block is used up. */
	int status;

	/* The run @block->ip lies in, @left instructions of it left: the
	 * next one is at @ip, in section @isid, in @mode, speculative or not
	 * (@speculative), its size and class at @info, its bytes at @code.
	 * @next is the IP after the run, if the code says it; @mask keeps
	 * IPs in the mode's range.  The text is the block decoder's trail
	 * entry @trail - 1 for the current block, or our copy @own; @epoch
	 * the block decoder's epoch when we took it.  @insn is what every
	 * instruction of the run has in common (section, mode, speculative;
	 * zeros elsewhere), copied out first. */
	uint64_t ip;
	struct pt_insn insn;
	const uint8_t *info;
	const uint8_t *code;
	uint64_t next;
	uint64_t mask;
	uint32_t left;
	uint32_t trail;
	uint32_t epoch;
	struct ipt__blk_text own;

	/* With @has_held, the last instruction of a block that stopped at
	 * missing memory: it waits for what follows to give its status. */
	struct pt_insn held;
	uint32_t has_held;
};

static void ipt__insn_reset(struct pt_insn_decoder *decoder)
{
	IPT_MEMSET(&decoder->block, 0, sizeof(decoder->block));
	decoder->status = 0;
	decoder->left = 0;
	decoder->trail = 0;
	decoder->has_held = 0;
	IPT_MEMSET(&decoder->insn, 0, sizeof(decoder->insn));
	decoder->mask = ipt__ip_in_mode(decoder->insn.mode, ~0ull);
}

/* Take the run at @block->ip from the block decoder's trail for this
 * block or from its run cache.  Returns non-zero if we have it. */
static IPT__INLINE int ipt__insn_load_run(struct pt_insn_decoder *decoder)
{
	struct pt_block_decoder *blkdec = &decoder->blkdec;
	const struct pt_block *block = &decoder->block;
	const struct ipt__blk_trail *trail;
	const struct ipt__blk_text *text;
	const struct ipt__blk_run *run;

	decoder->left = 0;
	/* What the run's instructions have in common, made again only when
	 * it changes. */
	if (decoder->insn.isid != block->isid ||
	    decoder->insn.mode != block->mode ||
	    decoder->insn.speculative != block->speculative) {
		IPT_MEMSET(&decoder->insn, 0, sizeof(decoder->insn));
		decoder->insn.isid = block->isid;
		decoder->insn.mode = block->mode;
		decoder->insn.speculative = block->speculative;
		decoder->mask = ipt__ip_in_mode(block->mode, ~0ull);
	}
	trail = ipt__blk_trail_at(blkdec, decoder->trail);
	if (trail && trail->ip == block->ip) {
		decoder->trail += 1;
		text = &trail->text;
		decoder->next = trail->next;
		decoder->left = trail->ninsn;
	} else {
		uint64_t next;

		run = ipt__blk_run_find(blkdec, block->ip, block->mode, &text);
		if (!run || !text)
			return 0;

		next = run->ip + run->len + run->isize;
		if (run->kind == ipt__run_dcall ||
		    run->kind == ipt__run_djump)
			next += (uint64_t) (int64_t) run->disp;

		IPT_MEMCPY(&decoder->own, text, sizeof(*text));
		text = &decoder->own;
		decoder->next = next & decoder->mask;
		decoder->left = run->ninsn;
	}

	decoder->ip = block->ip;
	decoder->info = text->info;
	decoder->code = text->code;
	decoder->epoch = ipt__blk_epoch(blkdec);
	return 1;
}

/* Hand out the next instruction of the run at hand in @insn and move
 * @block on. */
static IPT__INLINE void ipt__insn_from_run(struct pt_insn_decoder *decoder,
					   struct pt_insn *insn)
{
	uint8_t info = *decoder->info++;
	uint8_t size = (uint8_t) (info & 0xf);

	/* The bytes after the instruction come along: the code that follows
	 * it, or zeros. */
	IPT__COPY(*insn, decoder->insn);
	IPT_MEMCPY(insn->raw, decoder->code, sizeof(insn->raw));
	insn->ip = decoder->ip;
	insn->iclass = (enum pt_insn_class) (info >> 4);
	insn->size = size;

	decoder->code += size;
	decoder->left -= 1;
	if (decoder->left)
		decoder->ip = (decoder->ip + size) & decoder->mask;
	else
		decoder->ip = decoder->next;
	decoder->block.ip = decoder->ip;
}

static int ipt__insn_decoder_init(struct pt_insn_decoder *decoder,
				  const struct pt_config *uconfig)
{
	struct pt_config config;
	int status;

	status = ipt__config_from_user(&config, uconfig);
	if (status < 0)
		return status;

	decoder->flags = config.flags;

	/* The block decoder gets the flags that concern it. */
	IPT_MEMSET(&config.flags, 0, sizeof(config.flags));
	config.flags.variant.block.enable_tick_events =
		decoder->flags.variant.insn.enable_tick_events;
	config.flags.variant.block.keep_tcal_on_ovf =
		decoder->flags.variant.insn.keep_tcal_on_ovf;
	config.flags.variant.block.enable_iflags_events =
		decoder->flags.variant.insn.enable_iflags_events;

	ipt__insn_reset(decoder);
	return ipt__blk_decoder_init(&decoder->blkdec, &config, 1);
}

/* The allocator lives in the block decoder inside (ipt__blk_allocator). */
IPT_DEF struct pt_insn_decoder *
ipt_insn_alloc_decoder_with(const struct pt_config *config,
			    const struct ipt_allocator *allocator)
{
	struct pt_insn_decoder *decoder;
	struct ipt_allocator a;

	if (ipt__allocator_init(&a, allocator) < 0)
		return NULL;
	decoder = (struct pt_insn_decoder *) ipt__zalloc(&a, sizeof(*decoder));
	if (!decoder)
		return NULL;
	*ipt__blk_allocator(&decoder->blkdec) = a;

	if (ipt__insn_decoder_init(decoder, config) < 0) {
		ipt__free(&a, decoder, sizeof(*decoder));
		return NULL;
	}
	return decoder;
}

IPT_DEF struct pt_insn_decoder *
pt_insn_alloc_decoder(const struct pt_config *config)
{
	return ipt_insn_alloc_decoder_with(config, NULL);
}

IPT_DEF void pt_insn_free_decoder(struct pt_insn_decoder *decoder)
{
	if (decoder)
		ipt__blk_free_with(&decoder->blkdec, decoder,
				   sizeof(*decoder));
}

/* Remember a (re)synchronization's status for the first block. */
static int ipt__insn_synced(struct pt_insn_decoder *decoder, int status)
{
	if (status >= 0)
		decoder->status = status;
	return status;
}

IPT_DEF int ipt_insn_set_ring(struct pt_insn_decoder *decoder,
			      uint8_t *older, uint8_t *older_end,
			      uint8_t *newer, uint8_t *newer_end)
{
	int err;

	if (!decoder)
		return -pte_invalid;
	err = ipt_blk_set_ring(&decoder->blkdec, older, older_end, newer,
			       newer_end);
	if (err < 0)
		return err;
	ipt__insn_reset(decoder);
	return 0;
}

IPT_DEF int ipt_insn_set_buffer(struct pt_insn_decoder *decoder,
				uint8_t *begin, uint8_t *end)
{
	return ipt_insn_set_ring(decoder, begin, end, end, end);
}

IPT_DEF int pt_insn_sync_forward(struct pt_insn_decoder *decoder)
{
	if (!decoder)
		return -pte_invalid;

	ipt__insn_reset(decoder);
	return ipt__insn_synced(decoder, pt_blk_sync_forward(&decoder->blkdec));
}

IPT_DEF int pt_insn_sync_backward(struct pt_insn_decoder *decoder)
{
	if (!decoder)
		return -pte_invalid;

	ipt__insn_reset(decoder);
	return ipt__insn_synced(decoder,
				pt_blk_sync_backward(&decoder->blkdec));
}

IPT_DEF int pt_insn_sync_set(struct pt_insn_decoder *decoder, uint64_t offset)
{
	if (!decoder)
		return -pte_invalid;

	ipt__insn_reset(decoder);
	return ipt__insn_synced(decoder,
				pt_blk_sync_set(&decoder->blkdec, offset));
}

IPT_DEF int ipt_insn_start_at(struct pt_insn_decoder *decoder,
			      uint64_t offset,
			      const struct ipt_start_state *state)
{
	if (!decoder)
		return -pte_invalid;

	ipt__insn_reset(decoder);
	return ipt__insn_synced(decoder, ipt_blk_start_at(&decoder->blkdec,
							  offset, state));
}

/* Only once every instruction of the last block is handed out does the
 * block decoder's state stand for ours. */
IPT_DEF int ipt_insn_get_start_state(const struct pt_insn_decoder *decoder,
				     uint64_t *offset,
				     struct ipt_start_state *state)
{
	if (!decoder)
		return -pte_invalid;
	if (decoder->block.ninsn || decoder->has_held)
		return -pte_bad_context;
	return ipt_blk_get_start_state(&decoder->blkdec, offset, state);
}

IPT_DEF int pt_insn_resync(struct pt_insn_decoder *decoder)
{
	/* Same return as libipt's for a NULL decoder. */
	if (!decoder)
		return -pte_internal;

	ipt__insn_reset(decoder);
	return ipt__insn_synced(decoder, pt_blk_resync(&decoder->blkdec));
}

IPT_DEF int pt_insn_get_offset(const struct pt_insn_decoder *decoder,
			       uint64_t *offset)
{
	if (!decoder)
		return -pte_invalid;
	return pt_blk_get_offset(&decoder->blkdec, offset);
}

IPT_DEF int pt_insn_get_sync_offset(const struct pt_insn_decoder *decoder,
				    uint64_t *offset)
{
	if (!decoder)
		return -pte_invalid;
	return pt_blk_get_sync_offset(&decoder->blkdec, offset);
}

IPT_DEF int ipt_insn_set_cache_limit(struct pt_insn_decoder *decoder,
				     uint64_t bytes)
{
	if (!decoder)
		return -pte_invalid;

	/* The run at hand is a copy; it stays valid. */
	return ipt_blk_set_cache_limit(&decoder->blkdec, bytes);
}

IPT_DEF struct pt_image *pt_insn_get_image(struct pt_insn_decoder *decoder)
{
	return decoder ? pt_blk_get_image(&decoder->blkdec) : NULL;
}

IPT_DEF int pt_insn_set_image(struct pt_insn_decoder *decoder,
			      struct pt_image *image)
{
	if (!decoder)
		return -pte_invalid;
	return pt_blk_set_image(&decoder->blkdec, image);
}

IPT_DEF const struct pt_config *
pt_insn_get_config(const struct pt_insn_decoder *decoder)
{
	return decoder ? pt_blk_get_config(&decoder->blkdec) : NULL;
}

IPT_DEF int pt_insn_time(struct pt_insn_decoder *decoder, uint64_t *time,
			 uint32_t *lost_mtc, uint32_t *lost_cyc)
{
	if (!decoder || !time)
		return -pte_invalid;
	return pt_blk_time(&decoder->blkdec, time, lost_mtc, lost_cyc);
}

IPT_DEF int pt_insn_core_bus_ratio(struct pt_insn_decoder *decoder,
				   uint32_t *cbr)
{
	if (!decoder || !cbr)
		return -pte_invalid;
	return pt_blk_core_bus_ratio(&decoder->blkdec, cbr);
}

IPT_DEF int pt_insn_asid(const struct pt_insn_decoder *decoder,
			 struct pt_asid *asid, size_t size)
{
	if (!decoder || !asid)
		return -pte_invalid;
	return pt_blk_asid(&decoder->blkdec, asid, size);
}

/* Copy @insn to the user's, who may know a smaller or larger struct. */
static void ipt__insn_to_user(struct pt_insn *uinsn, size_t size,
			      const struct pt_insn *insn)
{
	if (uinsn == insn)
		return;

	if (size > sizeof(*insn)) {
		IPT_MEMSET((uint8_t *) uinsn + sizeof(*insn), 0,
			   size - sizeof(*insn));
		size = sizeof(*insn);
	}
	IPT_MEMCPY(uinsn, insn, size);
}

/* Start @insn from what the current block says about its next one. */
static void ipt__insn_from_block(struct pt_insn *insn,
				 const struct pt_block *block)
{
	insn->speculative = block->speculative;
	insn->isid = block->isid;
	insn->mode = block->mode;
	insn->ip = block->ip;
}

/* The last instruction of a block that stopped at missing memory waits in
 * @decoder->held for what follows it: ask the block decoder again.  If the
 * memory is still missing, that is the error, and the instruction waits on
 * (the user gets none).  Otherwise it comes with the status of an empty
 * block that follows (events that bind after it, or an error), or with
 * none if the block goes on. */
static int ipt__insn_resume(struct pt_insn_decoder *decoder,
			    struct pt_insn *uinsn, size_t size)
{
	struct pt_block_decoder *blkdec = &decoder->blkdec;
	struct pt_block *block = &decoder->block;
	int status;

	status = ipt__blk_next_own(blkdec, block);
	decoder->trail = 0;
	if (status < 0 && !block->ninsn &&
	    (ipt__blk_fault(blkdec) || status == -ipt_pte_need_more)) {
		struct pt_insn none;

		IPT_MEMSET(&none, 0, sizeof(none));
		ipt__insn_from_block(&none, block);
		ipt__insn_to_user(uinsn, size, &none);
		return status;
	}

	decoder->has_held = 0;
	decoder->status = status;
	ipt__insn_to_user(uinsn, size, &decoder->held);
	return block->ninsn ? 0 : status;
}

/* The status the last instruction of a block, @insn, comes with: the block
 * decoder's, unless the block stopped at missing memory.  If it did so
 * walking the code, the block would have gone on: nothing binds after
 * @insn, and the next call gives the error, at the instruction that could
 * not be read, as one instruction at a time would find it.  If it did so
 * looking ahead (ipt_blk_set_wait_for_code), @insn waits. */
static IPT__INLINE int ipt__insn_block_end(struct pt_insn_decoder *decoder,
					   const struct pt_insn *insn,
					   struct pt_insn *uinsn, size_t size)
{
	if (IPT__LIKELY(decoder->status >= 0))
		return decoder->status;
	switch (ipt__blk_fault(&decoder->blkdec)) {
	case 0:
		return decoder->status;
	case 1:
		return 0;
	}

	IPT__COPY(decoder->held, *insn);
	decoder->has_held = 1;
	return ipt__insn_resume(decoder, uinsn, size);
}

/* On errors the user gets at least IP and mode: at the instruction the
 * block decoder could not read (@at_fault), it stands right before it.
 * Returns @status. */
static int ipt__insn_out(struct pt_insn_decoder *decoder,
			 struct pt_insn *uinsn, size_t size, int status,
			 int at_fault)
{
	struct pt_insn insn;

	IPT_MEMSET(&insn, 0, sizeof(insn));
	ipt__insn_from_block(&insn, &decoder->block);
	if (at_fault)
		insn.ip = decoder->blkdec.ip;
	ipt__insn_to_user(uinsn, size, &insn);
	return status;
}

/* The block decoder gave an empty block, with @status: an error or event
 * shows now (the result for the user, negative).  Missing memory or trace
 * is a pause: the next call asks again.  Returns 1 if the block decoder
 * is to be asked again. */
static int ipt__insn_empty_block(struct pt_insn_decoder *decoder,
				 struct pt_insn *uinsn, size_t size,
				 int status)
{
	if (status < 0) {
		if (ipt__blk_fault(&decoder->blkdec) ||
		    status == -ipt_pte_need_more)
			decoder->status = 0;
		return ipt__insn_out(decoder, uinsn, size, status, 0);
	}
	if (status & pts_event_pending)
		return ipt__insn_out(decoder, uinsn, size, -pte_event_ignored,
				     0);
	return 1;
}

/* The current block has instructions left: hand out the next one from the
 * run at hand, or from the run it starts (the block decoder's trail or
 * run cache), in @insn and the user's @uinsn.  @synced says the block
 * decoder has just given the block, so its caches describe the current
 * image.  Returns non-zero if it did, with the result for the user in
 * *@status; zero if there is no such run (a truncated last instruction,
 * code without cached runs). */
static IPT__INLINE int ipt__insn_take_run(struct pt_insn_decoder *decoder,
					  struct pt_insn *insn,
					  struct pt_insn *uinsn, size_t size,
					  int synced, int *status)
{
	struct pt_block *block = &decoder->block;

	if (!synced)
		ipt__blk_cache_sync(&decoder->blkdec);
	if (block->truncated && block->ninsn == 1)
		return 0;
	if (block->isid)
		ipt__blk_sec_touch(&decoder->blkdec, block->ip);

	if (!(decoder->left && decoder->ip == block->ip &&
	      decoder->insn.mode == block->mode &&
	      decoder->epoch == ipt__blk_epoch(&decoder->blkdec)) &&
	    !ipt__insn_load_run(decoder))
		return 0;

	ipt__insn_from_run(decoder, insn);
	ipt__insn_to_user(uinsn, size, insn);

	block->ninsn -= 1;
	if (block->ninsn) {
		*status = 0;
		return 1;
	}

	/* The block ends here, perhaps inside the run. */
	decoder->left = 0;
	if (insn->ip != block->end_ip)
		*status = -pte_internal;
	else
		*status = ipt__insn_block_end(decoder, insn, uinsn, size);
	return 1;
}

/* The next instruction of the current block when no cached run has it:
 * decoded through the block decoder's instruction cache, or a truncated
 * last instruction with its bytes. */
static IPT__NOINLINE int ipt__insn_decode_next(struct pt_insn_decoder *decoder,
					       struct pt_insn *uinsn,
					       size_t size)
{
	struct ipt__insn_ext iext;
	struct pt_insn local, *insn;
	struct pt_block *block = &decoder->block;
	int status;

	insn = size == sizeof(local) ? uinsn : &local;
	IPT_MEMSET(insn, 0, sizeof(*insn));
	ipt__insn_from_block(insn, block);
	if (block->truncated && block->ninsn == 1) {
		IPT_MEMCPY(insn->raw, block->raw, block->size);
		insn->size = block->size;
		status = ipt__ild_decode(insn, &iext);
	} else {
		status = ipt__blk_decode_watched(&decoder->blkdec, insn, &iext);
	}
	ipt__insn_to_user(uinsn, size, insn);
	if (status < 0)
		return status;

	/* Hold back the block's status until its last instruction. */
	block->ninsn -= 1;
	if (block->ninsn)
		return ipt__insn_next_ip(&block->ip, insn, &iext);

	if (block->ip != block->end_ip)
		return -pte_internal;
	return ipt__insn_block_end(decoder, insn, uinsn, size);
}

/* pt_insn_next for everything but the middle of a run: block boundaries,
 * events, errors, code without cached runs, and other struct sizes. */
static IPT__NOINLINE int ipt__insn_next(struct pt_insn_decoder *decoder,
					struct pt_insn *uinsn, size_t size)
{
	struct pt_insn local, *insn;
	struct pt_block *block;
	int status;

	block = &decoder->block;
	insn = size == sizeof(local) ? uinsn : &local;

	if (decoder->has_held)
		return ipt__insn_resume(decoder, uinsn, size);

	while (!block->ninsn) {
		/* Errors and events belong to the end of a block.  Missing
		 * memory is not the end: the next call asks again. */
		status = decoder->status;
		if (status < 0) {
			/* At the instruction the block decoder could not
			 * read: it stands right before it. */
			if (ipt__blk_fault(&decoder->blkdec)) {
				decoder->status = 0;
				return ipt__insn_out(decoder, uinsn, size,
						     status, 1);
			}
			return ipt__insn_out(decoder, uinsn, size, status, 0);
		}

		/* The event should have been fetched after the last one. */
		if (status & pts_event_pending)
			return ipt__insn_out(decoder, uinsn, size,
					     -pte_event_ignored, 0);

		status = ipt__blk_next_own(&decoder->blkdec, block);
		decoder->status = status;
		decoder->trail = 0;
		if (block->ninsn)
			break;
		status = ipt__insn_empty_block(decoder, uinsn, size, status);
		if (status <= 0)
			return status;
	}

	/* Most instructions come from the run at hand. */
	if (ipt__insn_take_run(decoder, insn, uinsn, size, 0, &status))
		return status;
	return ipt__insn_decode_next(decoder, uinsn, size);
}

/* pt_insn_next where the run at hand is used up, in the common cases: the
 * next run of the block, or the block decoder's next block when nothing
 * is held back or waits to be told; ipt__insn_next for the others. */
static IPT__NOINLINE int ipt__insn_next_run(struct pt_insn_decoder *decoder,
					    struct pt_insn *uinsn)
{
	struct pt_block *block = &decoder->block;
	int status, synced = 0;

	if (decoder->has_held)
		return ipt__insn_next(decoder, uinsn, sizeof(*uinsn));
	if (!block->ninsn) {
		if (decoder->status < 0 ||
		    (decoder->status & pts_event_pending))
			return ipt__insn_next(decoder, uinsn, sizeof(*uinsn));

		status = ipt__blk_next_own(&decoder->blkdec, block);
		decoder->status = status;
		decoder->trail = 0;
		if (!block->ninsn) {
			status = ipt__insn_empty_block(decoder, uinsn,
						       sizeof(*uinsn), status);
			if (status <= 0)
				return status;
			return ipt__insn_next(decoder, uinsn, sizeof(*uinsn));
		}
		synced = 1;
	}

	if (ipt__insn_take_run(decoder, uinsn, uinsn, sizeof(*uinsn), synced,
			       &status))
		return status;
	return ipt__insn_decode_next(decoder, uinsn, sizeof(*uinsn));
}

IPT_DEF int pt_insn_next(struct pt_insn_decoder *decoder,
			 struct pt_insn *uinsn, size_t size)
{
	struct pt_block *block;

	if (!decoder || !uinsn)
		return -pte_invalid;

	/* Inside the run at hand, and not at the end of the block. */
	block = &decoder->block;
	if (IPT__LIKELY(size == sizeof(*uinsn) && decoder->left &&
			block->ninsn && !block->truncated &&
			decoder->epoch == ipt__blk_epoch(&decoder->blkdec) &&
			ipt__blk_cache_current(&decoder->blkdec))) {
		ipt__insn_from_run(decoder, uinsn);
		block->ninsn -= 1;
		if (IPT__LIKELY(block->ninsn))
			return 0;

		/* The block ends here, perhaps inside the run; its status
		 * comes with its last instruction. */
		decoder->left = 0;
		if (uinsn->ip != block->end_ip)
			return -pte_internal;
		return ipt__insn_block_end(decoder, uinsn, uinsn, size);
	}

	if (size == sizeof(*uinsn))
		return ipt__insn_next_run(decoder, uinsn);
	return ipt__insn_next(decoder, uinsn, size);
}

IPT_DEF int ipt_insn_extend(struct pt_insn_decoder *decoder, uint8_t *end,
			    int more)
{
	if (!decoder)
		return -pte_invalid;
	return ipt_blk_extend(&decoder->blkdec, end, more);
}

IPT_DEF int ipt_insn_set_vm_tolerant(struct pt_insn_decoder *decoder, int on)
{
	if (!decoder)
		return -pte_invalid;
	return ipt_blk_set_vm_tolerant(&decoder->blkdec, on);
}

IPT_DEF int ipt_insn_set_cr3_filter(struct pt_insn_decoder *decoder,
				    uint64_t cr3)
{
	if (!decoder)
		return -pte_invalid;
	return ipt_blk_set_cr3_filter(&decoder->blkdec, cr3);
}

IPT_DEF int ipt_insn_in_guest(const struct pt_insn_decoder *decoder)
{
	if (!decoder)
		return -pte_invalid;
	return ipt_blk_in_guest(&decoder->blkdec);
}

IPT_DEF int ipt_insn_set_wait_for_code(struct pt_insn_decoder *decoder,
				       int on)
{
	if (!decoder)
		return -pte_invalid;
	return ipt_blk_set_wait_for_code(&decoder->blkdec, on);
}

IPT_DEF int ipt_insn_get_fault(const struct pt_insn_decoder *decoder,
			       struct ipt_fault *fault, size_t size)
{
	if (!decoder)
		return -pte_invalid;
	return ipt_blk_get_fault(&decoder->blkdec, fault, size);
}

IPT_DEF int pt_insn_event(struct pt_insn_decoder *decoder,
			  struct pt_event *event, size_t size)
{
	int status;

	if (!decoder || !event)
		return -pte_invalid;

	/* Events come between blocks, not inside one. */
	if (decoder->block.ninsn)
		return -pte_bad_query;

	status = pt_blk_event(&decoder->blkdec, event, size);
	if (status < 0)
		return status;

	decoder->status = status;
	return status;
}

/* ---- comparing decoders (for >>seg) ----
 * Only between blocks: inside one, the instructions left point into the
 * decoder's own run text; nor with an instruction held back for missing
 * memory.  The used-up block still gives the IP and mode of error reports,
 * so it is compared too.  As ipt__blk_same: 1, 2 or 0. */
static IPT__UNUSED int ipt__insn_same(const struct pt_insn_decoder *a,
				      const struct pt_insn_decoder *b)
{
	if (a->block.ninsn || b->block.ninsn || a->left || b->left ||
	    a->has_held || b->has_held || a->status != b->status ||
	    IPT_MEMCMP(&a->flags, &b->flags, sizeof(b->flags)) ||
	    IPT_MEMCMP(&a->block, &b->block, sizeof(b->block)))
		return 0;
	return ipt__blk_same(&a->blkdec, &b->blkdec);
}

/* ==== >>pev  perf_event record reader ====================================
 * Reads and writes the records Linux perf writes beside the trace, in
 * place and without allocating (see >>api-pev).  Uses nothing but >>shim
 * and the error codes.  Every pointer it hands out lies inside the record
 * it read: the sizes are checked before anything is looked at.
 *
 * Internal interface (for >>sb), besides pev_*:
 *
 *   size_t ipt__pev_strnlen(const char *name, size_t max);
 *        the length of a name, looking at no more than max bytes */

/* Every record perf writes is a multiple of this, and so is every body
 * and sample below; a buffer aligned to it keeps every field aligned. */
#define IPT__PEV_ALIGN 8u

/* perf_event time to TSC: time = zero + (tsc * mult) >> shift, inverted
 * in two parts so that the product never overflows.  A shift of 64 or
 * more has no meaning and would not be defined in C. */
static int ipt__pev_time_config(const struct pev_config *config)
{
	if (!pev_config_has(config, time_zero))
		return -pte_bad_config;
	if (!config->time_mult || config->time_shift >= 64)
		return -pte_bad_config;
	return 0;
}

IPT_DEF int pev_time_to_tsc(uint64_t *tsc, uint64_t time,
			    const struct pev_config *config)
{
	uint64_t quot, rem;
	int errcode;

	if (!tsc || !config)
		return -pte_internal;

	/* perf gives synthesized records time zero: the beginning. */
	if (!time) {
		*tsc = 0ull;
		return 0;
	}

	errcode = ipt__pev_time_config(config);
	if (errcode < 0)
		return errcode;

	time -= config->time_zero;
	quot = time / config->time_mult;
	rem = time % config->time_mult;
	*tsc = (quot << config->time_shift) +
	       ((rem << config->time_shift) / config->time_mult);
	return 0;
}

IPT_DEF int pev_time_from_tsc(uint64_t *time, uint64_t tsc,
			      const struct pev_config *config)
{
	uint64_t quot, rem;
	int errcode;

	if (!time || !config)
		return -pte_internal;

	errcode = ipt__pev_time_config(config);
	if (errcode < 0)
		return errcode;

	quot = tsc >> config->time_shift;
	rem = tsc & ((1ull << config->time_shift) - 1);
	*time = config->time_zero + quot * config->time_mult +
		((rem * config->time_mult) >> config->time_shift);
	return 0;
}

/* The sample type of a record whose samples end with identifier (NULL if
 * the record has no room for one): the sample configuration's entry for
 * it, else config's sample_type. */
static int ipt__pev_sample_type(uint64_t *sample_type,
				const uint8_t *identifier,
				const struct pev_config *config)
{
	const struct pev_sample_config *sconfig = NULL;
	uint64_t id;
	int i;

	if (!pev_config_has(config, sample_type))
		return -pte_bad_config;

	*sample_type = config->sample_type;
	if (pev_config_has(config, sample_config))
		sconfig = config->sample_config;
	if (!sconfig || !identifier)
		return 0;

	IPT_MEMCPY(&id, identifier, sizeof(id));
	for (i = 0; i < sconfig->nstypes; ++i) {
		if (sconfig->stypes[i].identifier != id)
			continue;
		if (!(sconfig->stypes[i].sample_type & PERF_SAMPLE_IDENTIFIER))
			return -pte_bad_config;
		*sample_type = sconfig->stypes[i].sample_type;
		return 0;
	}
	return 0;
}

/* The samples sample_id_all appends, in perf's order, with their sizes
 * in the record (the cpu sample is followed by four reserved bytes). */
#define IPT__PEV_SAMPLES(X)                                                  \
	X(PERF_SAMPLE_TID, 8u)                                               \
	X(PERF_SAMPLE_TIME, 8u)                                              \
	X(PERF_SAMPLE_ID, 8u)                                                \
	X(PERF_SAMPLE_STREAM_ID, 8u)                                         \
	X(PERF_SAMPLE_CPU, 8u)                                               \
	X(PERF_SAMPLE_IDENTIFIER, 8u)

static size_t ipt__pev_samples_size(uint64_t sample_type)
{
	size_t size = 0;

#define IPT__PEV_SAMPLE_SIZE(bit, bytes)                                     \
	if (sample_type & (uint64_t) (bit))                                  \
		size += (bytes);
	IPT__PEV_SAMPLES(IPT__PEV_SAMPLE_SIZE)
#undef IPT__PEV_SAMPLE_SIZE
	return size;
}

/* Points event's samples into [pos, end), which they must fill exactly
 * (-pte_nosync otherwise).  The time is converted as soon as it is found,
 * so that a bad time configuration is reported before a size mismatch, as
 * libipt does; nothing else is looked at. */
static int ipt__pev_read_samples(struct pev_event *event, const uint8_t *pos,
				 const uint8_t *end,
				 const struct pev_config *config)
{
	const uint8_t *identifier = NULL;
	size_t avail = (size_t) (end - pos), at = 0;
	uint64_t sample_type;
	int errcode;

	if (avail >= sizeof(uint64_t))
		identifier = end - sizeof(uint64_t);
	errcode = ipt__pev_sample_type(&sample_type, identifier, config);
	if (errcode < 0)
		return errcode;
	if (ipt__pev_samples_size(sample_type) != avail) {
		/* A time that is there still counts first. */
		if ((sample_type & PERF_SAMPLE_TIME) &&
		    ((sample_type & PERF_SAMPLE_TID) ? 16u : 8u) <= avail) {
			uint64_t time, tsc;

			IPT_MEMCPY(&time, pos + ((sample_type &
						  PERF_SAMPLE_TID) ? 8 : 0),
				   sizeof(time));
			errcode = pev_time_to_tsc(&tsc, time, config);
			if (errcode < 0)
				return errcode;
		}
		return -pte_nosync;
	}

	if (sample_type & PERF_SAMPLE_TID) {
		event->sample.pid = (const uint32_t *) (const void *) pos;
		event->sample.tid = (const uint32_t *) (const void *) (pos + 4);
		at += 8;
	}
	if (sample_type & PERF_SAMPLE_TIME) {
		event->sample.time = (const uint64_t *) (const void *) (pos + at);
		at += 8;
		errcode = pev_time_to_tsc(&event->sample.tsc,
					  *event->sample.time, config);
		if (errcode < 0)
			return errcode;
	}
	if (sample_type & PERF_SAMPLE_ID) {
		event->sample.id = (const uint64_t *) (const void *) (pos + at);
		at += 8;
	}
	if (sample_type & PERF_SAMPLE_STREAM_ID) {
		event->sample.stream_id =
			(const uint64_t *) (const void *) (pos + at);
		at += 8;
	}
	if (sample_type & PERF_SAMPLE_CPU) {
		event->sample.cpu = (const uint32_t *) (const void *) (pos + at);
		at += 8;
	}
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		event->sample.identifier =
			(const uint64_t *) (const void *) (pos + at);
	return 0;
}

/* The record types ipt.h reads: the fixed part of each one's body, and
 * whether a NUL-terminated name, padded to 8 bytes, follows it.  SWITCH
 * has no body. */
static const struct {
	uint32_t type;
	uint8_t size;
	uint8_t has_name;
} ipt__pev_bodies[] = {
	{ PERF_RECORD_MMAP, sizeof(struct pev_record_mmap), 1 },
	{ PERF_RECORD_LOST, sizeof(struct pev_record_lost), 0 },
	{ PERF_RECORD_COMM, sizeof(struct pev_record_comm), 1 },
	{ PERF_RECORD_EXIT, sizeof(struct pev_record_exit), 0 },
	{ PERF_RECORD_THROTTLE, sizeof(struct pev_record_throttle), 0 },
	{ PERF_RECORD_UNTHROTTLE, sizeof(struct pev_record_throttle), 0 },
	{ PERF_RECORD_FORK, sizeof(struct pev_record_fork), 0 },
	{ PERF_RECORD_MMAP2, sizeof(struct pev_record_mmap2), 1 },
	{ PERF_RECORD_AUX, sizeof(struct pev_record_aux), 0 },
	{ PERF_RECORD_ITRACE_START, sizeof(struct pev_record_itrace_start),
	  0 },
	{ PERF_RECORD_LOST_SAMPLES, sizeof(struct pev_record_lost_samples),
	  0 },
	{ PERF_RECORD_SWITCH, 0, 0 },
	{ PERF_RECORD_SWITCH_CPU_WIDE,
	  sizeof(struct pev_record_switch_cpu_wide), 0 },
};

/* The size of type's fixed body; -1 for types that are only skipped. */
static int ipt__pev_body_size(uint32_t type, int *has_name)
{
	size_t i;

	*has_name = 0;
	for (i = 0; i < sizeof(ipt__pev_bodies) / sizeof(ipt__pev_bodies[0]);
	     ++i) {
		if (ipt__pev_bodies[i].type == type) {
			*has_name = ipt__pev_bodies[i].has_name;
			return ipt__pev_bodies[i].size;
		}
	}
	return -1;
}

/* The bytes a NUL-terminated name at [pos, end) takes, padded to 8;
 * -pte_bad_packet if it has no NUL. */
static int ipt__pev_name_size(const uint8_t *pos, const uint8_t *end)
{
	const uint8_t *p;

	for (p = pos; p < end; ++p) {
		if (!*p)
			return (int) (((size_t) (p - pos) + IPT__PEV_ALIGN) &
				      ~(size_t) (IPT__PEV_ALIGN - 1));
	}
	return -pte_bad_packet;
}

IPT_DEF int pev_read(struct pev_event *event, const uint8_t *begin,
		     const uint8_t *end, const struct pev_config *config)
{
	struct perf_event_header header;
	const uint8_t *pos;
	int body, has_name;

	if (!event || !begin || !end || end < begin || !config)
		return -pte_internal;
	if ((size_t) (end - begin) < sizeof(header))
		return -pte_eos;

	IPT_MEMCPY(&header, begin, sizeof(header));
	if (header.size < sizeof(header))
		return -pte_nosync;
	if (!header.type || (size_t) (end - begin) < header.size)
		return -pte_eos;

	end = begin + header.size;
	pos = begin + sizeof(header);
	pev_event_init(event);
	event->type = header.type;
	event->misc = header.misc;

	/* Known records are multiples of 8 bytes by their layout: a size
	 * that is not fails the size check below.  An unknown one is skipped,
	 * but perf pads every record, and an odd size would misalign the
	 * next. */
	body = ipt__pev_body_size(header.type, &has_name);
	if (body < 0)
		return header.size % IPT__PEV_ALIGN ? -pte_nosync
						    : (int) header.size;
	if ((size_t) (end - pos) < (size_t) body)
		return -pte_nosync;

	/* Every member of the union is a pointer to a body that starts here. */
	event->record.mmap = (const struct pev_record_mmap *) (const void *) pos;
	if (header.type == PERF_RECORD_SWITCH)
		event->record.mmap = NULL;
	pos += body;
	if (has_name) {
		int name = ipt__pev_name_size(pos, end);

		if (name < 0)
			return name;
		if ((size_t) (end - pos) < (size_t) name)
			return -pte_nosync;
		pos += name;
	}

	body = ipt__pev_read_samples(event, pos, end, config);
	if (body < 0)
		return body;
	return (int) header.size;
}

/* ---- writing records ---- */

/* The sample type the samples event points to make up, and their size. */
static uint64_t ipt__pev_event_samples(const struct pev_event *event)
{
	uint64_t sample_type = 0;

	if (event->sample.tid)
		sample_type |= PERF_SAMPLE_TID;
	if (event->sample.time)
		sample_type |= PERF_SAMPLE_TIME;
	if (event->sample.id)
		sample_type |= PERF_SAMPLE_ID;
	if (event->sample.stream_id)
		sample_type |= PERF_SAMPLE_STREAM_ID;
	if (event->sample.cpu)
		sample_type |= PERF_SAMPLE_CPU;
	if (event->sample.identifier)
		sample_type |= PERF_SAMPLE_IDENTIFIER;
	return sample_type;
}

static void ipt__pev_put(uint8_t **pos, const void *src, size_t size)
{
	if (src)
		IPT_MEMCPY(*pos, src, size);
	else
		IPT_MEMSET(*pos, 0, size);
	*pos += size;
}

/* The length of a name the caller gave, up to the most a record holds. */
static size_t ipt__pev_strnlen(const char *name, size_t max)
{
	size_t len = 0;

	while (len < max && name[len])
		len += 1;
	return len;
}

IPT_DEF int pev_write(const struct pev_event *event, uint8_t *begin,
		      uint8_t *end, const struct pev_config *config)
{
	struct perf_event_header header;
	const char *name = NULL;
	uint64_t sample_type, configured;
	size_t size, len = 0;
	uint8_t *pos;
	int body, has_name, errcode;

	if (!event || !begin || !end || end < begin || !config)
		return -pte_internal;

	body = ipt__pev_body_size(event->type, &has_name);
	if (body < 0)
		return -pte_bad_opc;
	if (body && !event->record.mmap)
		return -pte_internal;

	sample_type = ipt__pev_event_samples(event);
	errcode = ipt__pev_sample_type(&configured,
				       (const uint8_t *) event->sample.identifier,
				       config);
	if (errcode < 0)
		return errcode;
	if (configured != sample_type)
		return -pte_bad_config;
	if ((sample_type & PERF_SAMPLE_TID) && !event->sample.pid)
		return -pte_bad_packet;

	size = sizeof(header) + (size_t) body +
	       ipt__pev_samples_size(sample_type);
	if (has_name) {
		name = event->type == PERF_RECORD_COMM ?
			       event->record.comm->comm :
		       event->type == PERF_RECORD_MMAP ?
			       event->record.mmap->filename :
			       event->record.mmap2->filename;
		len = ipt__pev_strnlen(name, UINT16_MAX);
		if (len >= UINT16_MAX)
			return -pte_eos;
		size += (len + IPT__PEV_ALIGN) & ~(size_t) (IPT__PEV_ALIGN - 1);
	}
	if (size > UINT16_MAX)
		return -pte_bad_packet;
	if ((size_t) (end - begin) < size)
		return -pte_eos;

	header.type = event->type;
	header.misc = event->misc;
	header.size = (uint16_t) size;
	pos = begin;
	ipt__pev_put(&pos, &header, sizeof(header));
	if (body)
		ipt__pev_put(&pos, event->record.mmap, (size_t) body);
	if (has_name) {
		size_t padded = (len + IPT__PEV_ALIGN) &
				~(size_t) (IPT__PEV_ALIGN - 1);

		ipt__pev_put(&pos, name, len);
		ipt__pev_put(&pos, NULL, padded - len);
	}
	if (sample_type & PERF_SAMPLE_TID) {
		ipt__pev_put(&pos, event->sample.pid, 4);
		ipt__pev_put(&pos, event->sample.tid, 4);
	}
	if (sample_type & PERF_SAMPLE_TIME)
		ipt__pev_put(&pos, event->sample.time, 8);
	if (sample_type & PERF_SAMPLE_ID)
		ipt__pev_put(&pos, event->sample.id, 8);
	if (sample_type & PERF_SAMPLE_STREAM_ID)
		ipt__pev_put(&pos, event->sample.stream_id, 8);
	if (sample_type & PERF_SAMPLE_CPU) {
		ipt__pev_put(&pos, event->sample.cpu, 4);
		ipt__pev_put(&pos, NULL, 4);
	}
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		ipt__pev_put(&pos, event->sample.identifier, 8);
	return (int) (pos - begin);
}

/* ==== >>sb  sideband sessions ============================================
 * libipt-sb on top of >>pev and the image layer: a session of sideband
 * decoders applied to a trace decoder's events, process contexts with
 * their images, and the perf_event decoder.  Hosted builds only: sideband
 * names files and prints.  Uses the image API (pt_image_*, pt_iscache_*)
 * and >>pev; touches no field of another layer's structures. */

#ifndef IPT_NO_STDIO

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* A process's ABI, from the first ELF file it maps: which vdso it has. */
enum ipt__sb_abi {
	ipt__sb_abi_unknown,
	ipt__sb_abi_x64,
	ipt__sb_abi_x32,
	ipt__sb_abi_ia32
};

struct pt_sb_context {
	/* The session's list of contexts. */
	struct pt_sb_context *next;
	struct pt_image *image;
	enum ipt__sb_abi abi;
	uint32_t pid;
	/* References: the session's while it lists the context, and each
	 * decoder's that is in or is about to switch to it. */
	uint16_t ucount;
	/* Contexts may outlive their session: each keeps its allocator. */
	struct ipt_allocator allocator;
};

/* A sideband decoder: the caller's callbacks and the time of the record
 * it fetched last. */
struct ipt__sb_decoder {
	struct ipt__sb_decoder *next;
	uint64_t tsc;
	struct pt_sb_decoder_config config;
};

struct pt_sb_session {
	struct pt_image_section_cache *iscache;
	struct pt_sb_context *contexts;
	/* What every new process image starts as a copy of. */
	struct pt_image *kernel;
	/* Decoders with a record in hand, by its time (ascending). */
	struct ipt__sb_decoder *decoders;
	/* Added, not yet started by pt_sb_init_decoders(). */
	struct ipt__sb_decoder *waiting;
	/* Out of records; they still see events until they place a context
	 * switch they put off. */
	struct ipt__sb_decoder *retired;
	/* Failed; kept until the session goes. */
	struct ipt__sb_decoder *removed;
	pt_sb_error_notifier_t *notify_error;
	void *priv_error;
	pt_sb_ctx_switch_notifier_t *notify_switch;
	void *priv_switch;
	struct ipt_allocator allocator;
};

/* ---- contexts ---- */

IPT_DEF int pt_sb_ctx_get(struct pt_sb_context *context)
{
	if (!context)
		return -pte_invalid;
	if (context->ucount == UINT16_MAX)
		return -pte_overflow;
	context->ucount += 1;
	return 0;
}

IPT_DEF int pt_sb_ctx_put(struct pt_sb_context *context)
{
	struct ipt_allocator a;

	if (!context)
		return -pte_invalid;
	if (!context->ucount)
		return -pte_internal;
	context->ucount -= 1;
	if (context->ucount)
		return 0;

	a = context->allocator;
	pt_image_free(context->image);
	ipt__free(&a, context, sizeof(*context));
	return 0;
}

IPT_DEF struct pt_image *pt_sb_ctx_image(const struct pt_sb_context *context)
{
	return context ? context->image : NULL;
}

IPT_DEF int pt_sb_ctx_mmap(struct pt_sb_session *session,
			   struct pt_sb_context *context, const char *filename,
			   uint64_t offset, uint64_t size, uint64_t vaddr)
{
	struct pt_image_section_cache *iscache;
	int isid;

	if (!context || !context->image)
		return -pte_internal;

	iscache = pt_sb_iscache(session);
	if (!iscache)
		return pt_image_add_file(context->image, filename, offset, size,
					 NULL, vaddr);

	isid = pt_iscache_add_file(iscache, filename, offset, size, vaddr);
	if (isid < 0)
		return isid;
	return pt_image_add_cached(context->image, iscache, isid, NULL);
}

IPT_DEF int pt_sb_ctx_switch_to(struct pt_image **image,
				struct pt_sb_session *session,
				const struct pt_sb_context *context)
{
	int errcode;

	if (!image || !session || !context || !context->image)
		return -pte_internal;

	if (session->notify_switch) {
		errcode = session->notify_switch(context, session->priv_switch);
		if (errcode < 0)
			return errcode;
	}
	*image = context->image;
	return 0;
}

IPT_DEF int pt_sb_find_context_by_pid(struct pt_sb_context **context,
				      struct pt_sb_session *session,
				      uint32_t pid)
{
	struct pt_sb_context *ctx;

	if (!context || !session)
		return -pte_invalid;

	for (ctx = session->contexts; ctx; ctx = ctx->next) {
		if (ctx->pid == pid)
			break;
	}
	*context = ctx;
	return 0;
}

/* A new context for pid, its image a copy of the kernel's. */
static int ipt__sb_add_context(struct pt_sb_context **pcontext,
			       struct pt_sb_session *session, uint32_t pid)
{
	struct pt_sb_context *context;
	char name[16];
	int errcode;

	context = (struct pt_sb_context *)
		ipt__zalloc(&session->allocator, sizeof(*context));
	if (!context)
		return -pte_nomem;

	(void) snprintf(name, sizeof(name), "pid-%" PRIx32, pid);
	context->image = ipt_image_alloc_with(name, &session->allocator);
	if (!context->image) {
		ipt__free(&session->allocator, context, sizeof(*context));
		return -pte_nomem;
	}
	context->allocator = session->allocator;
	context->pid = pid;
	context->ucount = 1;

	errcode = pt_image_copy(context->image, session->kernel);
	if (errcode < 0) {
		(void) pt_sb_ctx_put(context);
		return errcode;
	}

	context->next = session->contexts;
	session->contexts = context;
	*pcontext = context;
	return 0;
}

IPT_DEF int pt_sb_get_context_by_pid(struct pt_sb_context **context,
				     struct pt_sb_session *session,
				     uint32_t pid)
{
	int errcode;

	errcode = pt_sb_find_context_by_pid(context, session, pid);
	if (errcode < 0 || *context)
		return errcode;
	return ipt__sb_add_context(context, session, pid);
}

IPT_DEF int pt_sb_remove_context(struct pt_sb_session *session,
				 struct pt_sb_context *context)
{
	struct pt_sb_context **link;

	if (!session || !context)
		return -pte_invalid;

	for (link = &session->contexts; *link; link = &(*link)->next) {
		if (*link == context) {
			*link = context->next;
			context->next = NULL;
			return pt_sb_ctx_put(context);
		}
	}
	return -pte_nosync;
}

/* ---- the session ---- */

IPT_DEF struct pt_sb_session *
ipt_sb_alloc_with(struct pt_image_section_cache *iscache,
		  const struct ipt_allocator *allocator)
{
	struct pt_sb_session *session = (struct pt_sb_session *) ipt__own_alloc(
		allocator, IPT__OWN(struct pt_sb_session));

	if (!session)
		return NULL;
	session->iscache = iscache;
	session->kernel = ipt_image_alloc_with("kernel", &session->allocator);
	if (!session->kernel) {
		ipt__own_free(session, IPT__OWN(struct pt_sb_session));
		return NULL;
	}
	return session;
}

IPT_DEF struct pt_sb_session *
pt_sb_alloc(struct pt_image_section_cache *iscache)
{
	return ipt_sb_alloc_with(iscache, NULL);
}

static void ipt__sb_free_decoders(struct pt_sb_session *session,
				  struct ipt__sb_decoder *list)
{
	while (list) {
		struct ipt__sb_decoder *decoder = list;

		list = decoder->next;
		if (decoder->config.dtor)
			decoder->config.dtor(decoder->config.priv);
		ipt__free(&session->allocator, decoder, sizeof(*decoder));
	}
}

IPT_DEF void pt_sb_free(struct pt_sb_session *session)
{
	struct ipt_allocator a;

	if (!session)
		return;

	ipt__sb_free_decoders(session, session->decoders);
	ipt__sb_free_decoders(session, session->waiting);
	ipt__sb_free_decoders(session, session->retired);
	ipt__sb_free_decoders(session, session->removed);

	while (session->contexts) {
		struct pt_sb_context *context = session->contexts;

		session->contexts = context->next;
		(void) pt_sb_ctx_put(context);
	}

	pt_image_free(session->kernel);
	a = session->allocator;
	ipt__free(&a, session, sizeof(*session));
}

IPT_DEF struct pt_image_section_cache *
pt_sb_iscache(struct pt_sb_session *session)
{
	return session ? session->iscache : NULL;
}

IPT_DEF struct pt_image *pt_sb_kernel_image(struct pt_sb_session *session)
{
	return session ? session->kernel : NULL;
}

IPT_DEF pt_sb_error_notifier_t *
pt_sb_notify_error(struct pt_sb_session *session,
		   pt_sb_error_notifier_t *notifier, void *priv)
{
	pt_sb_error_notifier_t *old;

	if (!session)
		return NULL;
	old = session->notify_error;
	session->notify_error = notifier;
	session->priv_error = priv;
	return old;
}

IPT_DEF pt_sb_ctx_switch_notifier_t *
pt_sb_notify_switch(struct pt_sb_session *session,
		    pt_sb_ctx_switch_notifier_t *notifier, void *priv)
{
	pt_sb_ctx_switch_notifier_t *old;

	if (!session)
		return NULL;
	old = session->notify_switch;
	session->notify_switch = notifier;
	session->priv_switch = priv;
	return old;
}

/* Tells the error notifier, if there is one; its answer is the result. */
static int ipt__sb_error(const struct pt_sb_session *session, int errcode,
			 const char *filename, uint64_t offset)
{
	if (!session)
		return -pte_internal;
	if (!session->notify_error)
		return 0;
	return session->notify_error(errcode, filename, offset,
				     session->priv_error);
}

IPT_DEF const char *pt_sb_errstr(enum pt_sb_error_code errcode)
{
	switch (errcode) {
	case ptse_ok:
		return "OK";
	case ptse_lost:
		return "sideband lost";
	case ptse_trace_lost:
		return "trace lost";
	case ptse_section_lost:
		return "image section lost";
	}
	return "bad errcode";
}

IPT_DEF int pt_sb_alloc_decoder(struct pt_sb_session *session,
				const struct pt_sb_decoder_config *config)
{
	struct ipt__sb_decoder *decoder;

	if (!session || !config)
		return -pte_invalid;

	decoder = (struct ipt__sb_decoder *)
		ipt__zalloc(&session->allocator, sizeof(*decoder));
	if (!decoder)
		return -pte_nomem;

	decoder->config.fetch = config->fetch;
	decoder->config.apply = config->apply;
	decoder->config.print = config->print;
	decoder->config.dtor = config->dtor;
	decoder->config.priv = config->priv;
	decoder->config.primary = config->primary;
	decoder->next = session->waiting;
	session->waiting = decoder;
	return 0;
}

/* Moves decoder to the front of list. */
static void ipt__sb_push(struct ipt__sb_decoder **list,
			 struct ipt__sb_decoder *decoder)
{
	decoder->next = *list;
	*list = decoder;
}

/* Puts decoder into the session's time-ordered list: after those with
 * earlier records, before those with records of the same time. */
static void ipt__sb_insert(struct pt_sb_session *session,
			   struct ipt__sb_decoder *decoder)
{
	struct ipt__sb_decoder **link = &session->decoders;

	while (*link && (*link)->tsc < decoder->tsc)
		link = &(*link)->next;
	ipt__sb_push(link, decoder);
}

static int ipt__sb_fetch(struct pt_sb_session *session,
			 struct ipt__sb_decoder *decoder)
{
	if (!decoder->config.fetch)
		return -pte_bad_config;
	return decoder->config.fetch(session, &decoder->tsc,
				     decoder->config.priv);
}

static int ipt__sb_print(struct pt_sb_session *session,
			 struct ipt__sb_decoder *decoder, FILE *stream,
			 uint32_t flags)
{
	if (!decoder->config.print)
		return -pte_bad_config;
	return decoder->config.print(session, stream, flags,
				     decoder->config.priv);
}

/* Secondary decoders get no image to switch. */
static int ipt__sb_apply(struct pt_sb_session *session,
			 struct pt_image **image,
			 struct ipt__sb_decoder *decoder,
			 const struct pt_event *event)
{
	if (!decoder->config.apply)
		return -pte_bad_config;
	return decoder->config.apply(session,
				     decoder->config.primary ? image : NULL,
				     event, decoder->config.priv);
}

IPT_DEF int pt_sb_init_decoders(struct pt_sb_session *session)
{
	if (!session)
		return -pte_invalid;

	while (session->waiting) {
		struct ipt__sb_decoder *decoder = session->waiting;

		session->waiting = decoder->next;
		decoder->next = NULL;
		if (ipt__sb_fetch(session, decoder) < 0)
			ipt__sb_free_decoders(session, decoder);
		else
			ipt__sb_insert(session, decoder);
	}
	return 0;
}

/* Takes the first decoder off the time-ordered list if its record is
 * not later than tsc, and prints that record; NULL if none is due.  A
 * decoder whose printing fails goes to the removed list. */
static struct ipt__sb_decoder *ipt__sb_next_due(struct pt_sb_session *session,
						uint64_t tsc, FILE *stream,
						uint32_t flags)
{
	struct ipt__sb_decoder *decoder;

	while ((decoder = session->decoders) && decoder->tsc <= tsc) {
		session->decoders = decoder->next;
		decoder->next = NULL;
		if (!stream || ipt__sb_print(session, decoder, stream,
					     flags) >= 0)
			return decoder;
		ipt__sb_push(&session->removed, decoder);
	}
	return NULL;
}

/* Shows event to each decoder on list; those that fail are removed. */
static void ipt__sb_present(struct pt_sb_session *session,
			    struct pt_image **image,
			    struct ipt__sb_decoder **list,
			    const struct pt_event *event)
{
	while (*list) {
		struct ipt__sb_decoder *decoder = *list;

		if (ipt__sb_apply(session, image, decoder, event) >= 0) {
			list = &decoder->next;
			continue;
		}
		*list = decoder->next;
		ipt__sb_push(&session->removed, decoder);
	}
}

IPT_DEF int pt_sb_event(struct pt_sb_session *session,
			struct pt_image **image,
			const struct pt_event *uevent, size_t size,
			FILE *stream, uint32_t flags)
{
	struct ipt__sb_decoder *decoder;
	struct pt_event event;

	if (!session || !uevent)
		return -pte_invalid;
	if (size < offsetof(struct pt_event, reserved))
		return -pte_invalid;

	/* Fields the caller does not know are zero; fields we do not know
	 * are ignored. */
	IPT_MEMSET(&event, 0, sizeof(event));
	IPT_MEMCPY(&event, uevent, size < sizeof(event) ? size : sizeof(event));

	/* Records up to the event's time, in time order across decoders.
	 * The time is compared even without has_tsc, so that sideband can
	 * follow relative time. */
	while ((decoder = ipt__sb_next_due(session, event.tsc, stream,
					   flags))) {
		int errcode;

		if (ipt__sb_apply(session, image, decoder, &event) < 0) {
			ipt__sb_push(&session->removed, decoder);
			continue;
		}
		errcode = ipt__sb_fetch(session, decoder);
		if (errcode == -pte_eos)
			ipt__sb_push(&session->retired, decoder);
		else if (errcode < 0)
			ipt__sb_push(&session->removed, decoder);
		else
			ipt__sb_insert(session, decoder);
	}

	/* Then the event itself, to every decoder, so that each can place
	 * what it put off (a context switch waits for the kernel). */
	ipt__sb_present(session, image, &session->decoders, &event);
	ipt__sb_present(session, image, &session->retired, &event);
	return 0;
}

IPT_DEF int pt_sb_dump(struct pt_sb_session *session, FILE *stream,
		       uint32_t flags, uint64_t tsc)
{
	struct ipt__sb_decoder *decoder;

	if (!session || !stream)
		return -pte_invalid;

	while ((decoder = ipt__sb_next_due(session, tsc, stream, flags))) {
		if (ipt__sb_fetch(session, decoder) < 0)
			ipt__sb_push(&session->removed, decoder);
		else
			ipt__sb_insert(session, decoder);
	}
	return 0;
}

/* ---- the perf_event decoder ----
 * One sideband stream of perf_event records, read into memory whole.  It
 * keeps the current record (fetched, due at its time) and the position
 * of the next.  Applying a record changes the session's contexts at once;
 * the trace decoder's image follows at a fitting event, since in the trace
 * the process keeps running in its old image until it enters the kernel
 * (for exec or a switch). */

/* Where the trace is, by the IPs of the events the decoder saw. */
enum ipt__sb_loc {
	ipt__sb_loc_unknown,
	ipt__sb_loc_kernel,
	ipt__sb_loc_user,
	ipt__sb_loc_likely_kernel,
	ipt__sb_loc_likely_user
};

struct ipt__sb_pevent {
	/* Copies of the configuration's strings; NULL if it had none. */
	char *filename;
	char *sysroot;
	char *vdso_x64;
	char *vdso_x32;
	char *vdso_ia32;
	/* The records; begin is an allocation of (end - begin) bytes, at
	 * least one, so that an empty stream has an address too. */
	uint8_t *begin, *end;
	/* The current record (NULL before the first fetch) and the next. */
	const uint8_t *current, *next;
	struct pev_config pev;
	struct pev_event event;
	/* The context the trace decoder's image is from, and the one it is
	 * to switch to at the next fitting event; each holds a reference. */
	struct pt_sb_context *context;
	struct pt_sb_context *next_context;
	uint64_t kernel_start;
	uint64_t tsc_offset;
	enum ipt__sb_loc location;
	struct ipt_allocator allocator;
};

/* The allocation that holds a stream of size bytes. */
static size_t ipt__sb_alloc_size(size_t size)
{
	return size ? size : 1;
}

static void ipt__sb_free_string(const struct ipt_allocator *a, char *s)
{
	if (s)
		ipt__free(a, s, ipt__pev_strnlen(s, FILENAME_MAX) + 1);
}

static void ipt__sb_pevent_dtor(void *arg)
{
	struct ipt__sb_pevent *priv = (struct ipt__sb_pevent *) arg;
	struct ipt_allocator a;

	if (!priv)
		return;
	a = priv->allocator;
	if (priv->next_context)
		(void) pt_sb_ctx_put(priv->next_context);
	if (priv->context)
		(void) pt_sb_ctx_put(priv->context);
	ipt__sb_free_string(&a, priv->filename);
	ipt__sb_free_string(&a, priv->sysroot);
	ipt__sb_free_string(&a, priv->vdso_x64);
	ipt__sb_free_string(&a, priv->vdso_x32);
	ipt__sb_free_string(&a, priv->vdso_ia32);
	if (priv->begin)
		ipt__free(&a, priv->begin,
			  ipt__sb_alloc_size((size_t) (priv->end - priv->begin)));
	if (priv->pev.sample_config)
		ipt__free(&a, priv->pev.sample_config,
			  sizeof(*priv->pev.sample_config) +
				  priv->pev.sample_config->nstypes *
					  sizeof(struct pev_sample_type));
	ipt__free(&a, priv, sizeof(*priv));
}

/* A copy of a path (NULL for NULL); -pte_invalid if it is longer than a
 * path may be. */
static int ipt__sb_copy_string(char **dst, const char *src,
			       const struct ipt_allocator *a)
{
	size_t len;

	*dst = NULL;
	if (!src)
		return 0;
	len = ipt__pev_strnlen(src, FILENAME_MAX);
	if (len == FILENAME_MAX)
		return -pte_invalid;
	*dst = (char *) ipt__alloc(a, len + 1);
	if (!*dst)
		return -pte_nomem;
	IPT_MEMCPY(*dst, src, len + 1);
	return 0;
}

/* Bytes [begin, end) of a file (to its end if end is zero) into memory
 * from a. */
static int ipt__sb_load(uint8_t **buffer, size_t *psize, const char *filename,
			size_t begin, size_t end, const struct ipt_allocator *a)
{
	FILE *file;
	long fsize;
	size_t size;

	if (end && end <= begin)
		return -pte_invalid;
	if ((size_t) LONG_MAX < begin || (size_t) LONG_MAX < end)
		return -pte_invalid;

	file = fopen(filename, "rb");
	if (!file)
		return -pte_bad_file;
	if (fseek(file, 0, SEEK_END) || (fsize = ftell(file)) < 0 ||
	    (size_t) fsize < begin || fseek(file, (long) begin, SEEK_SET)) {
		fclose(file);
		return -pte_bad_file;
	}
	if (!end || (size_t) fsize < end)
		end = (size_t) fsize;

	size = end - begin;
	*buffer = (uint8_t *) ipt__alloc(a, ipt__sb_alloc_size(size));
	if (!*buffer) {
		fclose(file);
		return -pte_nomem;
	}
	if (fread(*buffer, 1, size, file) != size) {
		ipt__free(a, *buffer, ipt__sb_alloc_size(size));
		fclose(file);
		return -pte_bad_file;
	}
	fclose(file);
	*psize = size;
	return 0;
}

/* Reports errcode for the current record (or the next, before the first
 * fetch) through the session's notifier. */
static int ipt__sb_pevent_error(const struct pt_sb_session *session,
				int errcode,
				const struct ipt__sb_pevent *priv)
{
	const uint8_t *pos = priv->current ? priv->current : priv->next;

	return ipt__sb_error(session, errcode, priv->filename,
			     (uint64_t) (pos - priv->begin));
}

/* Fetches the next record; its time, less tsc_offset, is when it is due.
 * A record without a time is due at once. */
static int ipt__sb_pevent_fetch(struct ipt__sb_pevent *priv, uint64_t *tsc)
{
	struct pev_event *event = &priv->event;
	uint64_t offset, time;
	int size;

	/* Move on first, so that an error names the record it is in. */
	priv->current = priv->next;
	if (priv->current == priv->end)
		return -pte_eos;
	size = pev_read(event, priv->current, priv->end, &priv->pev);
	if (size < 0)
		return size;
	priv->next = priv->current + size;

	if (!event->sample.time) {
		*tsc = 0ull;
		return 0;
	}

	/* Subtracting the offset must not wrap: a record pushed far into
	 * the future would hold back every later one.  A negative offset
	 * (a huge unsigned one) moves records later, up to the end of time. */
	offset = priv->tsc_offset;
	time = event->sample.tsc;
	if (offset <= time)
		time -= offset;
	else if ((int64_t) offset >= 0)
		time = 0ull;
	else if (time <= offset)
		time -= offset;
	else
		time = UINT64_MAX;

	event->sample.tsc = time;
	*tsc = time;
	return 0;
}

static int ipt__sb_pevent_fetch_cb(struct pt_sb_session *session,
				   uint64_t *tsc, void *arg)
{
	struct ipt__sb_pevent *priv = (struct ipt__sb_pevent *) arg;
	int errcode;

	if (!priv || !tsc)
		return -pte_internal;
	errcode = ipt__sb_pevent_fetch(priv, tsc);
	if (errcode < 0 && errcode != -pte_eos)
		(void) ipt__sb_pevent_error(session, errcode, priv);
	return errcode;
}

/* ---- printing records ---- */

/* Prints "NAME" or "NAME.SUFFIX". */
static void ipt__sb_print_name(FILE *stream, const char *name,
			       const char *sfx)
{
	fprintf(stream, "%s%s", name, sfx);
}

static void ipt__sb_print_pair(FILE *stream, uint32_t flags,
			       const char *first, uint32_t a,
			       const char *second, uint32_t b)
{
	if (flags & ptsbp_compact)
		fprintf(stream, "  %" PRIx32 "/%" PRIx32, a, b);
	if (flags & ptsbp_verbose)
		fprintf(stream, "\n  %s: %" PRIx32 "\n  %s: %" PRIx32, first,
			a, second, b);
}

/* The body of a record, compact ("NAME  a, b, c") or verbose ("NAME" and
 * a line per field).  Fields follow the body's layout except in EXIT and
 * FORK, whose compact form pairs pid/tid and ppid/ptid. */
static int ipt__sb_print_record(const struct pev_event *event, FILE *stream,
				uint32_t flags)
{
	const int compact = (flags & ptsbp_compact) != 0;
	const int verbose = (flags & ptsbp_verbose) != 0;

	switch (event->type) {
	case PERF_RECORD_MMAP: {
		const struct pev_record_mmap *r = event->record.mmap;

		ipt__sb_print_name(stream, "PERF_RECORD_MMAP", "");
		ipt__sb_print_pair(stream, flags, "pid", r->pid, "tid", r->tid);
		if (compact)
			fprintf(stream, ", %" PRIx64 ", %" PRIx64 ", %" PRIx64
				", %s", r->addr, r->len, r->pgoff,
				r->filename);
		if (verbose)
			fprintf(stream, "\n  addr: %" PRIx64 "\n  len: %"
				PRIx64 "\n  pgoff: %" PRIx64
				"\n  filename: %s", r->addr, r->len, r->pgoff,
				r->filename);
		return 0;
	}
	case PERF_RECORD_LOST: {
		const struct pev_record_lost *r = event->record.lost;

		ipt__sb_print_name(stream, "PERF_RECORD_LOST", "");
		if (compact)
			fprintf(stream, "  %" PRIx64 ", %" PRIx64, r->id,
				r->lost);
		if (verbose)
			fprintf(stream, "\n  id: %" PRIx64 "\n  lost: %" PRIx64,
				r->id, r->lost);
		return 0;
	}
	case PERF_RECORD_COMM: {
		const struct pev_record_comm *r = event->record.comm;

		ipt__sb_print_name(stream, "PERF_RECORD_COMM",
				   event->misc & PERF_RECORD_MISC_COMM_EXEC ?
					   ".EXEC" : "");
		ipt__sb_print_pair(stream, flags, "pid", r->pid, "tid", r->tid);
		if (compact)
			fprintf(stream, ", %s", r->comm);
		if (verbose)
			fprintf(stream, "\n  comm: %s", r->comm);
		return 0;
	}
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK: {
		/* The two bodies are the same. */
		const struct pev_record_fork *r = event->record.fork;

		ipt__sb_print_name(stream, event->type == PERF_RECORD_EXIT ?
					   "PERF_RECORD_EXIT" :
					   "PERF_RECORD_FORK", "");
		if (compact)
			fprintf(stream, "  %" PRIx32 "/%" PRIx32 ", %" PRIx32
				"/%" PRIx32 ", %" PRIx64, r->pid, r->tid,
				r->ppid, r->ptid, r->time);
		if (verbose)
			fprintf(stream, "\n  pid: %" PRIx32 "\n  ppid: %" PRIx32
				"\n  tid: %" PRIx32 "\n  ptid: %" PRIx32
				"\n  time: %" PRIx64, r->pid, r->ppid, r->tid,
				r->ptid, r->time);
		return 0;
	}
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE: {
		const struct pev_record_throttle *r = event->record.throttle;

		ipt__sb_print_name(stream, event->type == PERF_RECORD_THROTTLE ?
					   "PERF_RECORD_THROTTLE" :
					   "PERF_RECORD_UNTHROTTLE", "");
		if (compact)
			fprintf(stream, "  %" PRIx64 ", %" PRIx64 ", %" PRIx64,
				r->time, r->id, r->stream_id);
		if (verbose)
			fprintf(stream, "\n  time: %" PRIx64 "\n  id: %" PRIx64
				"\n  stream_id: %" PRIx64, r->time, r->id,
				r->stream_id);
		return 0;
	}
	case PERF_RECORD_MMAP2: {
		const struct pev_record_mmap2 *r = event->record.mmap2;

		ipt__sb_print_name(stream, "PERF_RECORD_MMAP2", "");
		ipt__sb_print_pair(stream, flags, "pid", r->pid, "tid", r->tid);
		if (compact)
			fprintf(stream, ", %" PRIx64 ", %" PRIx64 ", %" PRIx64
				", %" PRIx32 ", %" PRIx32 ", %" PRIx64
				", %" PRIx64 ", %" PRIx32 ", %" PRIx32 ", %s",
				r->addr, r->len, r->pgoff, r->maj, r->min,
				r->ino, r->ino_generation, r->prot, r->flags,
				r->filename);
		if (verbose)
			fprintf(stream, "\n  addr: %" PRIx64 "\n  len: %" PRIx64
				"\n  pgoff: %" PRIx64 "\n  maj: %" PRIx32
				"\n  min: %" PRIx32 "\n  ino: %" PRIx64
				"\n  ino_generation: %" PRIx64
				"\n  prot: %" PRIx32 "\n  flags: %" PRIx32
				"\n  filename: %s", r->addr, r->len, r->pgoff,
				r->maj, r->min, r->ino, r->ino_generation,
				r->prot, r->flags, r->filename);
		return 0;
	}
	case PERF_RECORD_AUX: {
		const struct pev_record_aux *r = event->record.aux;

		ipt__sb_print_name(stream, "PERF_RECORD_AUX",
				   r->flags & PERF_AUX_FLAG_TRUNCATED ?
					   ".TRUNCATED" : "");
		if (compact)
			fprintf(stream, "  %" PRIx64 ", %" PRIx64 ", %" PRIx64,
				r->aux_offset, r->aux_size, r->flags);
		if (verbose)
			fprintf(stream, "\n  aux offset: %" PRIx64
				"\n  aux size: %" PRIx64 "\n  flags: %" PRIx64,
				r->aux_offset, r->aux_size, r->flags);
		return 0;
	}
	case PERF_RECORD_ITRACE_START: {
		const struct pev_record_itrace_start *r =
			event->record.itrace_start;

		ipt__sb_print_name(stream, "PERF_RECORD_ITRACE_START", "");
		ipt__sb_print_pair(stream, flags, "pid", r->pid, "tid", r->tid);
		return 0;
	}
	case PERF_RECORD_LOST_SAMPLES:
		ipt__sb_print_name(stream, "PERF_RECORD_LOST_SAMPLES", "");
		if (compact)
			fprintf(stream, "  %" PRIx64,
				event->record.lost_samples->lost);
		if (verbose)
			fprintf(stream, "\n  lost: %" PRIx64,
				event->record.lost_samples->lost);
		return 0;

	case PERF_RECORD_SWITCH:
		ipt__sb_print_name(stream, "PERF_RECORD_SWITCH",
				   event->misc & PERF_RECORD_MISC_SWITCH_OUT ?
					   ".OUT" : ".IN");
		return 0;

	case PERF_RECORD_SWITCH_CPU_WIDE: {
		const struct pev_record_switch_cpu_wide *r =
			event->record.switch_cpu_wide;
		const int out = (event->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;

		ipt__sb_print_name(stream, "PERF_RECORD_SWITCH_CPU_WIDE",
				   out ? ".OUT" : ".IN");
		ipt__sb_print_pair(stream, flags, out ? "next pid" : "prev pid",
				   r->next_prev_pid,
				   out ? "next tid" : "prev tid",
				   r->next_prev_tid);
		return 0;
	}
	}

	/* A type pev_read only skips. */
	if (compact)
		fprintf(stream, "UNKNOWN (%" PRIx32 ", %x)", event->type,
			(unsigned) event->misc);
	if (verbose)
		fprintf(stream, "UNKNOWN\n  type: %" PRIx32 "\n  misc: %x",
			event->type, (unsigned) event->misc);
	return 0;
}

/* The samples: " { a b c }" compact, a line each verbose. */
static void ipt__sb_print_samples(const struct pev_event *event,
				  FILE *stream, uint32_t flags)
{
	const int verbose = (flags & ptsbp_verbose) != 0;

	if (!(flags & (ptsbp_compact | ptsbp_verbose)))
		return;
	if (!verbose)
		fprintf(stream, "  {");
	if (event->sample.pid && event->sample.tid)
		fprintf(stream, verbose ? "\n  pid: %" PRIx32 "\n  tid: %" PRIx32
					: " %" PRIx32 "/%" PRIx32,
			*event->sample.pid, *event->sample.tid);
	if (event->sample.time)
		fprintf(stream, verbose ? "\n  time: %" PRIx64 : " %" PRIx64,
			*event->sample.time);
	if (event->sample.id)
		fprintf(stream, verbose ? "\n  id: %" PRIx64 : " %" PRIx64,
			*event->sample.id);
	if (event->sample.cpu)
		fprintf(stream, verbose ? "\n  cpu: %" PRIx32 : " cpu-%" PRIx32,
			*event->sample.cpu);
	if (event->sample.stream_id)
		fprintf(stream, verbose ? "\n  stream id: %" PRIx64
					: " %" PRIx64,
			*event->sample.stream_id);
	if (event->sample.identifier)
		fprintf(stream, verbose ? "\n  identifier: %" PRIx64
					: " %" PRIx64,
			*event->sample.identifier);
	if (!verbose)
		fprintf(stream, " }");
}

static int ipt__sb_pevent_print(const struct ipt__sb_pevent *priv,
				FILE *stream, uint32_t flags)
{
	const struct pev_event *event = &priv->event;
	uint64_t offset;

	if (!priv->current || !stream)
		return -pte_internal;
	offset = (uint64_t) (priv->current - priv->begin);

	if (flags & ptsbp_filename)
		fprintf(stream, "%s%s", priv->filename,
			flags & ptsbp_file_offset ? ":" : "  ");
	if (flags & ptsbp_file_offset)
		fprintf(stream, "%016" PRIx64 "  ", offset);
	if ((flags & ptsbp_tsc) && event->sample.time)
		fprintf(stream, "%016" PRIx64 "  ", event->sample.tsc);

	/* Both forms may be asked for at once: each is printed whole, the
	 * compact one first, record and then samples.  A SWITCH record
	 * prints only its name, once for either or both. */
	if (flags & ptsbp_compact)
		(void) ipt__sb_print_record(event, stream, ptsbp_compact);
	if ((flags & ptsbp_verbose) &&
	    !((flags & ptsbp_compact) && event->type == PERF_RECORD_SWITCH))
		(void) ipt__sb_print_record(event, stream, ptsbp_verbose);
	if (flags & ptsbp_compact)
		ipt__sb_print_samples(event, stream, ptsbp_compact);
	if (flags & ptsbp_verbose)
		ipt__sb_print_samples(event, stream, ptsbp_verbose);
	if (flags)
		fprintf(stream, "\n");
	return 0;
}

static int ipt__sb_pevent_print_cb(struct pt_sb_session *session,
				   FILE *stream, uint32_t flags, void *arg)
{
	struct ipt__sb_pevent *priv = (struct ipt__sb_pevent *) arg;
	int errcode;

	if (!priv)
		return -pte_internal;
	errcode = ipt__sb_pevent_print(priv, stream, flags);
	if (errcode < 0)
		return ipt__sb_pevent_error(session, errcode, priv);
	return 0;
}

/* ---- applying records ---- */

/* Switches the trace decoder to the pending context now. */
static int ipt__sb_pevent_switch_now(struct pt_sb_session *session,
				     struct pt_image **image,
				     struct ipt__sb_pevent *priv)
{
	struct pt_sb_context *prev = priv->context;
	int errcode;

	if (!image || !priv->next_context)
		return -pte_internal;

	errcode = pt_sb_ctx_switch_to(image, session, priv->next_context);
	if (errcode < 0)
		return errcode;

	priv->context = priv->next_context;
	priv->next_context = NULL;
	return prev ? pt_sb_ctx_put(prev) : 0;
}

/* Makes context the one to switch to at the next fitting event, in place
 * of any other pending switch.  Nothing is pending when the trace decoder
 * is in context already (threads of one process, or a cpu-wide
 * switch-out followed by its switch-in). */
static int ipt__sb_pevent_switch_later(struct ipt__sb_pevent *priv,
				       struct pt_sb_context *context)
{
	int errcode;

	if (priv->next_context == context)
		return 0;
	if (priv->next_context) {
		errcode = pt_sb_ctx_put(priv->next_context);
		priv->next_context = NULL;
		if (errcode < 0)
			return errcode;
	}
	if (priv->context == context)
		return 0;

	errcode = pt_sb_ctx_get(context);
	if (errcode < 0)
		return errcode;
	priv->next_context = context;
	return 0;
}

static int ipt__sb_pevent_switch_to_pid(struct pt_sb_session *session,
					struct ipt__sb_pevent *priv,
					uint32_t pid)
{
	struct pt_sb_context *context = NULL;
	int errcode;

	errcode = pt_sb_get_context_by_pid(&context, session, pid);
	if (errcode < 0)
		return errcode;
	return ipt__sb_pevent_switch_later(priv, context);
}

static int ipt__sb_remove_pid(struct pt_sb_session *session, uint32_t pid)
{
	struct pt_sb_context *context = NULL;
	int errcode;

	errcode = pt_sb_find_context_by_pid(&context, session, pid);
	if (errcode < 0 || !context)
		return errcode;
	return pt_sb_remove_context(session, context);
}

/* ITRACE_START: trace begins in pid; nothing to wait for. */
static int ipt__sb_pevent_itrace_start(struct pt_sb_session *session,
				       struct pt_image **image,
				       struct ipt__sb_pevent *priv,
				       const struct pev_record_itrace_start *r)
{
	int errcode;

	errcode = ipt__sb_pevent_switch_to_pid(session, priv, r->pid);
	if (errcode < 0 || !priv->next_context)
		return errcode;
	return ipt__sb_pevent_switch_now(session, image, priv);
}

/* FORK of a process (not of a thread): a fresh context for the child, a
 * copy of its parent's image if the parent is known.  An old context of
 * the pid goes: EXIT comes while the process still runs in the kernel,
 * so contexts are replaced here rather than removed there. */
static int ipt__sb_pevent_fork(struct pt_sb_session *session,
			       const struct pev_record_fork *r)
{
	struct pt_sb_context *context = NULL, *parent = NULL;
	int errcode;

	if (r->ppid == r->pid)
		return 0;
	/* A new process's first thread has the process's id. */
	if (r->pid != r->tid)
		return -pte_internal;

	errcode = ipt__sb_remove_pid(session, r->pid);
	if (errcode < 0)
		return errcode;
	errcode = pt_sb_get_context_by_pid(&context, session, r->pid);
	if (errcode < 0)
		return errcode;
	errcode = pt_sb_find_context_by_pid(&parent, session, r->ppid);
	if (errcode < 0 || !parent)
		return errcode;
	return pt_image_copy(pt_sb_ctx_image(context), pt_sb_ctx_image(parent));
}

/* COMM.EXEC: pid gets a new context, empty but for the kernel, which the
 * MMAPs that follow fill.  The old one stays in use until the trace
 * reaches the kernel, where the exec happens. */
static int ipt__sb_pevent_exec(struct pt_sb_session *session,
			       struct pt_image **image,
			       struct ipt__sb_pevent *priv,
			       const struct pev_record_comm *r)
{
	struct pt_sb_context *context = NULL;
	int errcode;

	errcode = ipt__sb_remove_pid(session, r->pid);
	if (errcode < 0)
		return errcode;
	errcode = pt_sb_get_context_by_pid(&context, session, r->pid);
	if (errcode < 0 || !image)
		return errcode;
	return ipt__sb_pevent_switch_later(priv, context);
}

/* The vdso file for a process's ABI; -pte_bad_config if none was given. */
static int ipt__sb_pevent_vdso(const char **filename,
			       const struct ipt__sb_pevent *priv,
			       const struct pt_sb_context *context)
{
	const char *vdso = NULL;

	switch (context->abi) {
	case ipt__sb_abi_unknown:
		break;
	case ipt__sb_abi_x64:
		vdso = priv->vdso_x64;
		break;
	case ipt__sb_abi_x32:
		vdso = priv->vdso_x32;
		break;
	case ipt__sb_abi_ia32:
		vdso = priv->vdso_ia32;
		break;
	}
	if (!vdso)
		return -pte_bad_config;
	*filename = vdso;
	return 0;
}

/* A process's ABI, from the ELF header of the first file it maps that
 * has one: 64-bit, x32 (32-bit class, x86-64 machine) or 32-bit. */
static void ipt__sb_track_abi(struct pt_sb_context *context,
			      const char *filename)
{
	enum { elf_class = 4, elf_version = 6, elf_machine = 18 };
	uint8_t ehdr[20];
	uint16_t machine;
	FILE *file;
	size_t got;

	if (context->abi != ipt__sb_abi_unknown)
		return;
	file = fopen(filename, "rb");
	if (!file)
		return;
	got = fread(ehdr, 1, sizeof(ehdr), file);
	fclose(file);

	if (got != sizeof(ehdr) || IPT_MEMCMP(ehdr, "\177ELF", 4) ||
	    ehdr[elf_version] != 1)
		return;
	/* e_machine in the file's byte order; x86 ELF files are LSB. */
	machine = (uint16_t) (ehdr[elf_machine] | (ehdr[elf_machine + 1] << 8));
	if (ehdr[elf_class] == 2)
		context->abi = ipt__sb_abi_x64;
	else if (ehdr[elf_class] == 1 && machine == 3)
		context->abi = ipt__sb_abi_ia32;
	else if (ehdr[elf_class] == 1 && machine == 62)
		context->abi = ipt__sb_abi_x32;
}

/* MMAP, MMAP2: adds the mapped file to pid's image.  Names in brackets
 * other than [vdso], anonymous and deleted mappings have no file to read:
 * they are reported as lost sections and ignored. */
static int ipt__sb_pevent_map(struct pt_sb_session *session,
			      const struct ipt__sb_pevent *priv, uint32_t pid,
			      const char *filename, uint64_t offset,
			      uint64_t size, uint64_t vaddr)
{
	struct pt_sb_context *context = NULL;
	char path[FILENAME_MAX];
	int errcode;

	errcode = pt_sb_get_context_by_pid(&context, session, pid);
	if (errcode < 0)
		return errcode;

	if (filename[0] == '[') {
		if (strcmp(filename, "[vdso]") != 0)
			return ipt__sb_pevent_error(session, ptse_section_lost,
						    priv);
		errcode = ipt__sb_pevent_vdso(&filename, priv, context);
		if (errcode < 0)
			return ipt__sb_pevent_error(session, errcode, priv);
	} else if (!strcmp(filename, "//anon") ||
		   strstr(filename, " (deleted)")) {
		return ipt__sb_pevent_error(session, ptse_section_lost, priv);
	} else if (priv->sysroot) {
		errcode = snprintf(path, sizeof(path), "%s%s", priv->sysroot,
				   filename);
		if (errcode < 0 || (size_t) errcode >= sizeof(path))
			return -pte_overflow;
		filename = path;
	}

	ipt__sb_track_abi(context, filename);
	return pt_sb_ctx_mmap(session, context, filename, offset, size, vaddr);
}

/* Whether an MMAP is the kernel's: those files on disk are not the code
 * that runs (the kernel patches itself at boot, modules at load), so the
 * kernel image comes from elsewhere (a core dump) and they are ignored. */
static int ipt__sb_kernel_mmap(uint16_t misc)
{
	return (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
}

/* Applies the current record.  image is NULL for a secondary decoder,
 * which keeps contexts up to date but neither switches nor reports what
 * only concerns the primary trace. */
static int ipt__sb_pevent_apply_record(struct pt_sb_session *session,
				       struct pt_image **image,
				       struct ipt__sb_pevent *priv)
{
	const struct pev_event *event = &priv->event;

	switch (event->type) {
	case PERF_RECORD_ITRACE_START:
		if (!image)
			return 0;
		return ipt__sb_pevent_itrace_start(session, image, priv,
						   event->record.itrace_start);

	case PERF_RECORD_FORK:
		return ipt__sb_pevent_fork(session, event->record.fork);

	case PERF_RECORD_COMM:
		if (!(event->misc & PERF_RECORD_MISC_COMM_EXEC))
			return 0;
		return ipt__sb_pevent_exec(session, image, priv,
					   event->record.comm);

	case PERF_RECORD_SWITCH:
		/* Wait for the switch-in, which needs the pid sample. */
		if (!image || (event->misc & PERF_RECORD_MISC_SWITCH_OUT))
			return 0;
		if (!event->sample.pid)
			return -pte_bad_config;
		return ipt__sb_pevent_switch_to_pid(session, priv,
						    *event->sample.pid);

	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (!image)
			return 0;
		/* The switch-out names the next process; the switch-in only
		 * has the pid sample, if there is one. */
		if (event->misc & PERF_RECORD_MISC_SWITCH_OUT)
			return ipt__sb_pevent_switch_to_pid(
				session, priv,
				event->record.switch_cpu_wide->next_prev_pid);
		if (!event->sample.pid)
			return 0;
		return ipt__sb_pevent_switch_to_pid(session, priv,
						    *event->sample.pid);

	case PERF_RECORD_MMAP:
		if (ipt__sb_kernel_mmap(event->misc))
			return 0;
		return ipt__sb_pevent_map(session, priv, event->record.mmap->pid,
					  event->record.mmap->filename,
					  event->record.mmap->pgoff,
					  event->record.mmap->len,
					  event->record.mmap->addr);

	case PERF_RECORD_MMAP2:
		if (ipt__sb_kernel_mmap(event->misc))
			return 0;
		return ipt__sb_pevent_map(session, priv,
					  event->record.mmap2->pid,
					  event->record.mmap2->filename,
					  event->record.mmap2->pgoff,
					  event->record.mmap2->len,
					  event->record.mmap2->addr);

	case PERF_RECORD_LOST:
		/* A warning beside the decode error that likely follows. */
		return ipt__sb_pevent_error(session, ptse_lost, priv);

	case PERF_RECORD_AUX:
		if (!image || !(event->record.aux->flags &
				PERF_AUX_FLAG_TRUNCATED))
			return 0;
		return ipt__sb_pevent_error(session, ptse_trace_lost, priv);
	}
	return 0;
}

/* ---- where the trace is ---- */

static enum ipt__sb_loc ipt__sb_loc_at(const struct ipt__sb_pevent *priv,
				       uint64_t ip)
{
	return ip < priv->kernel_start ? ipt__sb_loc_user : ipt__sb_loc_kernel;
}

/* After tracing stops with the IP suppressed, we are likely on the other
 * side of the kernel/user line than before. */
static enum ipt__sb_loc ipt__sb_loc_across(enum ipt__sb_loc from)
{
	switch (from) {
	case ipt__sb_loc_kernel:
	case ipt__sb_loc_likely_kernel:
		return ipt__sb_loc_likely_user;
	case ipt__sb_loc_user:
	case ipt__sb_loc_likely_user:
		return ipt__sb_loc_likely_kernel;
	case ipt__sb_loc_unknown:
		break;
	}
	return ipt__sb_loc_unknown;
}

/* Where an event puts the trace: by its IP where it has one, by the
 * direction of the change for suppressed disables and paging; unknown for
 * events with no IP. */
static enum ipt__sb_loc ipt__sb_loc_of(const struct ipt__sb_pevent *priv,
				       const struct pt_event *ev)
{
	const int ip = !ev->ip_suppressed;

	switch (ev->type) {
	case ptev_enabled:
		return ipt__sb_loc_at(priv, ev->variant.enabled.ip);
	case ptev_disabled:
		return ip ? ipt__sb_loc_at(priv, ev->variant.disabled.ip)
			  : ipt__sb_loc_across(priv->location);
	case ptev_async_disabled:
		return ip ? ipt__sb_loc_at(priv, ev->variant.async_disabled.ip)
			  : ipt__sb_loc_across(ipt__sb_loc_at(
				    priv, ev->variant.async_disabled.at));
	case ptev_async_branch:
		return ipt__sb_loc_at(priv, ev->variant.async_branch.to);
	case ptev_async_paging:
		if (ip)
			return ipt__sb_loc_at(priv,
					      ev->variant.async_paging.ip);
		return ipt__sb_loc_likely_kernel;
	case ptev_paging:
		return ipt__sb_loc_likely_kernel;
	case ptev_tip:
		return ipt__sb_loc_at(priv, ev->variant.tip.ip);

#define IPT__SB_LOC_IP(name)                                                 \
	case ptev_##name:                                                    \
		return ip ? ipt__sb_loc_at(priv, ev->variant.name.ip)        \
			  : ipt__sb_loc_unknown;
	IPT__SB_LOC_IP(overflow)
	IPT__SB_LOC_IP(exec_mode)
	IPT__SB_LOC_IP(tsx)
	IPT__SB_LOC_IP(exstop)
	IPT__SB_LOC_IP(mwait)
	IPT__SB_LOC_IP(ptwrite)
	IPT__SB_LOC_IP(tick)
	IPT__SB_LOC_IP(iflags)
	IPT__SB_LOC_IP(interrupt)
	IPT__SB_LOC_IP(iret)
	IPT__SB_LOC_IP(smi)
	IPT__SB_LOC_IP(rsm)
	IPT__SB_LOC_IP(init)
	IPT__SB_LOC_IP(vmentry)
	IPT__SB_LOC_IP(vmexit)
	IPT__SB_LOC_IP(shutdown)
	IPT__SB_LOC_IP(uintr)
	IPT__SB_LOC_IP(uiret)
#undef IPT__SB_LOC_IP

	case ptev_stop:
	case ptev_vmcs:
	case ptev_async_vmcs:
	case ptev_pwre:
	case ptev_pwrx:
	case ptev_cbr:
	case ptev_mnt:
	case ptev_tnt:
	case ptev_sipi:
	case ptev_trig:
	case ptev_swintr:
	case ptev_syscall:
		break;
	}
	return ipt__sb_loc_unknown;
}

/* Applies the current record if it is due (records without a time are
 * due at once), else places a pending context switch: the trace enters
 * the kernel to switch or exec, so a switch happens at an event in the
 * kernel, one that leaves it, or one of unknown place (e.g. where tracing
 * starts).  -pte_eos when the last record is applied and nothing is left
 * pending: the decoder is done. */
static int ipt__sb_pevent_apply(struct pt_sb_session *session,
				struct pt_image **image,
				const struct pt_event *event,
				struct ipt__sb_pevent *priv)
{
	const struct pev_event *record = &priv->event;
	enum ipt__sb_loc before;

	if (priv->current != priv->next &&
	    (!record->sample.time || record->sample.tsc <= event->tsc))
		return ipt__sb_pevent_apply_record(session, image, priv);

	before = priv->location;
	priv->location = ipt__sb_loc_of(priv, event);

	if (!priv->next_context)
		return priv->current == priv->next ? -pte_eos : 0;

	switch (before) {
	case ipt__sb_loc_kernel:
	case ipt__sb_loc_likely_kernel:
	case ipt__sb_loc_unknown:
		return ipt__sb_pevent_switch_now(session, image, priv);
	case ipt__sb_loc_user:
	case ipt__sb_loc_likely_user:
		break;
	}
	switch (priv->location) {
	case ipt__sb_loc_kernel:
	case ipt__sb_loc_likely_kernel:
	case ipt__sb_loc_unknown:
		return ipt__sb_pevent_switch_now(session, image, priv);
	case ipt__sb_loc_user:
	case ipt__sb_loc_likely_user:
		break;
	}
	return 0;
}

static int ipt__sb_pevent_apply_cb(struct pt_sb_session *session,
				   struct pt_image **image,
				   const struct pt_event *event, void *arg)
{
	struct ipt__sb_pevent *priv = (struct ipt__sb_pevent *) arg;
	int errcode;

	if (!priv || !event)
		return -pte_internal;
	errcode = ipt__sb_pevent_apply(session, image, event, priv);
	if (errcode < 0 && errcode != -pte_eos)
		return ipt__sb_pevent_error(session, errcode, priv);
	return errcode;
}

/* ---- making the decoder ---- */

static int ipt__sb_pevent_init(struct ipt__sb_pevent *priv,
			       const struct pt_sb_pevent_config *config)
{
	const struct pev_sample_config *sc = NULL;
	int errcode;

	/* sample_config came with libipt 2.1. */
	if (config->size >= offsetof(struct pt_sb_pevent_config,
				     sample_config) + sizeof(sc))
		sc = config->sample_config;

	errcode = ipt__sb_copy_string(&priv->filename, config->filename,
				      &priv->allocator);
	if (errcode >= 0)
		errcode = ipt__sb_copy_string(&priv->sysroot, config->sysroot,
					      &priv->allocator);
	if (errcode >= 0)
		errcode = ipt__sb_copy_string(&priv->vdso_x64,
					      config->vdso_x64,
					      &priv->allocator);
	if (errcode >= 0)
		errcode = ipt__sb_copy_string(&priv->vdso_x32,
					      config->vdso_x32,
					      &priv->allocator);
	if (errcode >= 0)
		errcode = ipt__sb_copy_string(&priv->vdso_ia32,
					      config->vdso_ia32,
					      &priv->allocator);
	if (errcode < 0)
		return errcode;

	pev_config_init(&priv->pev);
	priv->pev.sample_type = config->sample_type;
	priv->pev.time_shift = config->time_shift;
	priv->pev.time_mult = config->time_mult;
	priv->pev.time_zero = config->time_zero;
	/* A copy: the caller may grow or free its own. */
	if (sc) {
		size_t size = sizeof(*sc) + sc->nstypes * sizeof(sc->stypes[0]);

		priv->pev.sample_config = (struct pev_sample_config *)
			ipt__alloc(&priv->allocator, size);
		if (!priv->pev.sample_config)
			return -pte_nomem;
		IPT_MEMCPY(priv->pev.sample_config, sc, size);
	}
	priv->kernel_start = config->kernel_start;
	priv->tsc_offset = config->tsc_offset;
	priv->location = ipt__sb_loc_unknown;
	return 0;
}

/* Adds a perf_event decoder that owns the stream of size bytes at buffer
 * (from the session's allocator), or frees it. */
static int ipt__sb_add_pevent(struct pt_sb_session *session,
			      const struct pt_sb_pevent_config *config,
			      uint8_t *buffer, size_t size)
{
	struct pt_sb_decoder_config dconfig;
	struct ipt__sb_pevent *priv;
	int errcode;

	priv = (struct ipt__sb_pevent *)
		ipt__zalloc(&session->allocator, sizeof(*priv));
	if (!priv) {
		ipt__free(&session->allocator, buffer, ipt__sb_alloc_size(size));
		return -pte_nomem;
	}
	priv->allocator = session->allocator;
	priv->begin = buffer;
	priv->end = buffer + size;
	priv->next = buffer;

	errcode = ipt__sb_pevent_init(priv, config);
	if (errcode < 0) {
		ipt__sb_pevent_dtor(priv);
		return errcode;
	}

	IPT_MEMSET(&dconfig, 0, sizeof(dconfig));
	dconfig.size = sizeof(dconfig);
	dconfig.fetch = ipt__sb_pevent_fetch_cb;
	dconfig.apply = ipt__sb_pevent_apply_cb;
	dconfig.print = ipt__sb_pevent_print_cb;
	dconfig.dtor = ipt__sb_pevent_dtor;
	dconfig.priv = priv;
	dconfig.primary = config->primary;

	errcode = pt_sb_alloc_decoder(session, &dconfig);
	if (errcode < 0)
		ipt__sb_pevent_dtor(priv);
	return errcode;
}

/* The configuration must have every field: libipt's first version did. */
static int ipt__sb_pevent_config_ok(const struct pt_sb_pevent_config *config)
{
	return config->size >= offsetof(struct pt_sb_pevent_config,
					sample_config);
}

IPT_DEF int pt_sb_alloc_pevent_decoder(struct pt_sb_session *session,
				       const struct pt_sb_pevent_config *config)
{
	uint8_t *buffer = NULL;
	size_t size = 0;
	int errcode;

	if (!session || !config || !ipt__sb_pevent_config_ok(config) ||
	    !config->filename)
		return -pte_invalid;

	errcode = ipt__sb_load(&buffer, &size, config->filename, config->begin,
			       config->end, &session->allocator);
	if (errcode < 0)
		return errcode;
	return ipt__sb_add_pevent(session, config, buffer, size);
}

IPT_DEF int
ipt_sb_alloc_pevent_decoder_mem(struct pt_sb_session *session,
				const struct pt_sb_pevent_config *config,
				const uint8_t *begin, const uint8_t *end)
{
	uint8_t *buffer = NULL;
	size_t size;

	if (!session || !config || !ipt__sb_pevent_config_ok(config) ||
	    !begin || !end || end < begin)
		return -pte_invalid;

	size = (size_t) (end - begin);
	buffer = (uint8_t *) ipt__alloc(&session->allocator,
					ipt__sb_alloc_size(size));
	if (!buffer)
		return -pte_nomem;
	if (size)
		IPT_MEMCPY(buffer, begin, size);
	return ipt__sb_add_pevent(session, config, buffer, size);
}

#endif /* IPT_NO_STDIO */

/* ==== >>cov  coverage for fuzzers ========================================
 * A trace to an AFL-style edge bitmap, on the block decoder.
 *
 * The flow is the block decoder's: a coverage decoder holds one, asks it
 * for blocks and events, and derives each edge from the instruction a
 * block ended with and where the flow went next (the next block's start,
 * or the event that took it elsewhere).  Errata, return compression,
 * address spaces, events and the caches are the block decoder's, so the
 * coverage cannot disagree with it.
 *
 * Speed comes from the common case: while the event in hand is a TNT, a
 * TIP or a disable with an IP, the block decoder walks its run cache for
 * us (ipt__blk_walk)
 * and reports each branch that used trace and each place the flow
 * reached, with no blocks made; everything else goes through pt_blk_next
 * and pt_blk_event (its events handed to us without a copy, a PSB+'s
 * status events among them, by ipt__blk_take_events; a PSB+ with tracing
 * off that only restates the state is taken whole, ipt__blk_set_quiet_psb).
 * Either way an edge waits as "pending" until the flow is seen at its
 * destination.
 *
 * Steady state goes further: a memo takes a run of TNT bits at once (see
 * "taking TNT bits in bulk").
 *
 * Uses of the block decoder: its public calls (ipt_blk_set_ring for
 * the next trace), and ipt__blk_walk, ipt__blk_take_events,
 * ipt__blk_decode, ipt__blk_trace_ended, ipt__blk_trace_size,
 * ipt__blk_trace_more,
 * ipt__blk_set_run_hook, ipt__blk_set_quiet_psb and ipt__blk_allocator
 * (see >>blk); the memo reads runs with ipt__blk_run_find and
 * ipt__blk_ctx_of and, as the walk would, takes bits off the TNT in hand
 * and moves the return stack and the instruction count. */

struct ipt_cov_decoder {
	/* The block decoder; it holds the allocator. */
	struct pt_block_decoder blk;

	struct ipt_cov_config config;

	/* The edge kinds that count, and the bitmap (@mask is its size less
	 * one). */
	uint32_t kinds;
	uint8_t *map;
	uint32_t mask;

	struct ipt_cov_status status;

	/* The branch the last block ended with, while its destination is
	 * still to come: its IP, the IP after it and its kind (zero if there
	 * is none; ipt_cov_taken for any conditional branch). */
	uint64_t pend_from;
	uint64_t pend_next;
	uint32_t pend_kind;

	/* Whether the block decoder is synchronized; where the last error
	 * left the trace, and the last sync offset. */
	uint32_t synced;
	uint64_t error_at;
	uint64_t sync_at;
	uint32_t has_sync;
	uint32_t has_error;

	/* The block decoder call the walk made last (enum ipt__cov_call),
	 * and, while paused at missing code, the call that resumes: at the
	 * PSB at @resume_sync for a sync. */
	uint32_t call;
	uint32_t paused;
	uint64_t resume_sync;

	/* While the trace's end may move (ipt_cov_extend): the walk waits
	 * for more (@waiting), to go on with @wait_status.  A start
	 * (ipt_cov_start_at) waits the same way. */
	uint32_t waiting;
	int wait_status;
	/* The instructions since the flow last used trace (see
	 * IPT_COV_IDLE_MAX). */
	uint64_t idle;

	/* Where the last pause was, and whether the decode has resumed from
	 * it without getting anywhere else yet. */
	uint64_t fault_addr;
	uint64_t fault_cr3;
	uint64_t fault_vmcs;
	uint32_t resumed;

	/* The TNT memo (see "taking TNT bits in bulk"): @nmemo entries at
	 * @memo (none yet, or none to be had, if NULL), and with an edge
	 * callback as many at @memo_edges (and a spare one at the end of
	 * each), at most @memo_limit bytes in all, @memo_used of them in
	 * use (counted from zero again when it cannot grow, set to half of
	 * them to ask it to grow).
	 * @memo is in @memo_block, at its first 64-byte line.
	 * @memo_ctx is the block decoder's last context number when the
	 * memo was last used, to see the numbers start over. */
	struct ipt__cov_memo *memo;
	struct ipt__cov_memo_edges *memo_edges;
	uint64_t *memo_arena;
	void *memo_block;
	uint64_t memo_limit;
	uint32_t nmemo;
	uint32_t memo_used;
	uint32_t memo_failed;
	uint32_t memo_ctx;
	/* The filter of keys of a memo of its first size (see
	 * ipt__cov_memo_nseen), after the spare entry, and how many keys it
	 * has taken in since the memo last grew or was asked to. */
	uint32_t *memo_seen;
	uint32_t memo_fresh;
	/* The words of the arena entries' tails are given from (see
	 * ipt__cov_memo_words), behind the spare entry, @memo_top of
	 * them given. */
	uint32_t memo_words;
	uint32_t memo_top;
	/* A compressed return from before an entry was seen: the walk
	 * takes such returns in entries from now on (ipt__cov_tnt_ret). */
	uint32_t memo_out_pop;
	/* While memo steps run (ipt__cov_tnt_with): the entry applied last,
	 * whose last edge is the pending one, not yet written to @pend_from,
	 * @pend_next and @pend_kind (ipt__cov_memo_pend); NULL once it is,
	 * and always outside the steps. */
	const struct ipt__cov_memo *memo_pend;
};

enum ipt__cov_call {
	ipt__cov_at_none,
	ipt__cov_at_next,
	ipt__cov_at_event,
	ipt__cov_at_sync
};

/* A bitmap index: libxdc's mix of both ends, so that a libxdc user gets
 * the same bitmap. */
static IPT__INLINE uint64_t ipt__cov_mix(uint64_t v)
{
	v ^= v >> 31;
	return v * 0x7fb5d329728ea185ull;
}

static IPT__INLINE uint32_t ipt__cov_index(uint64_t from, uint64_t to)
{
	return (uint32_t) (ipt__cov_mix(to) ^ (ipt__cov_mix(from) >> 1));
}

static int ipt__cov_in_ranges(const struct ipt_cov_decoder *cov, uint64_t ip)
{
	uint32_t i;

	for (i = 0; i < cov->config.nranges; ++i)
		if (cov->config.range[i].begin <= ip &&
		    ip < cov->config.range[i].end)
			return 1;
	return 0;
}

/* Whether the edge @from -> @to of @kind counts. */
static IPT__INLINE int ipt__cov_counts(const struct ipt_cov_decoder *cov,
				       uint64_t from, uint64_t to,
				       enum ipt_cov_kind kind)
{
	if (!(cov->kinds & (uint32_t) kind))
		return 0;
	return !cov->config.nranges ||
	       ipt__cov_in_ranges(cov, kind == ipt_cov_enable ? to : from);
}

/* Count the edge @from -> @to of @kind with the bitmap index @index: it
 * counts. */
static IPT__INLINE void ipt__cov_hit(struct ipt_cov_decoder *cov,
				     uint64_t from, uint64_t to,
				     enum ipt_cov_kind kind, uint32_t index)
{
	cov->status.edges += 1;
	if (IPT__LIKELY(cov->map != NULL)) {
		uint8_t *counter = &cov->map[index & cov->mask];
		uint8_t value = (uint8_t) (*counter + 1);

		if (value || !(cov->config.flags & ipt_cov_saturate))
			*counter = value;
	}
	if (cov->config.edge)
		cov->config.edge(cov->config.context, from, to, kind);
}

/* Count the edge @from -> @to of @kind, if it counts. */
static IPT__INLINE void ipt__cov_count(struct ipt_cov_decoder *cov,
				       uint64_t from, uint64_t to,
				       enum ipt_cov_kind kind)
{
	if (ipt__cov_counts(cov, from, to, kind))
		ipt__cov_hit(cov, from, to, kind, ipt__cov_index(from, to));
}

/* The flow went on at @to: the pending branch, if any, went there. */
static IPT__INLINE void ipt__cov_resolve(struct ipt_cov_decoder *cov,
					 uint64_t to)
{
	uint32_t kind = cov->pend_kind;

	if (!kind)
		return;
	cov->pend_kind = 0;
	if (kind == ipt_cov_taken && to == cov->pend_next)
		kind = ipt_cov_not_taken;
	ipt__cov_count(cov, cov->pend_from, to, (enum ipt_cov_kind) kind);
}

/* The edge kind of the instruction @block ends with, if it took trace to
 * get past it, and for conditional branches the IP after it in @next.
 * Zero for an instruction that needs no trace (direct calls and jumps
 * end blocks too, at section borders). */
static uint32_t ipt__cov_block_kind(struct ipt_cov_decoder *cov,
				    const struct pt_block *block,
				    uint64_t *next)
{
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	int status;

	switch (block->iclass) {
	case ptic_return:
		return ipt_cov_return;
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
		return ipt_cov_far;
	case ptic_indirect:
		return ipt_cov_jump;
	case ptic_cond_jump:
	case ptic_call:
	case ptic_jump:
		break;
	case ptic_other:
	case ptic_ptwrite:
	case ptic_unknown:
		return 0;
	}

	IPT_MEMSET(&insn, 0, sizeof(insn));
	IPT_MEMSET(&iext, 0, sizeof(iext));
	insn.ip = block->end_ip;
	insn.mode = block->mode;
	if (block->truncated) {
		IPT_MEMCPY(insn.raw, block->raw, sizeof(insn.raw));
		insn.size = block->size;
		status = ipt__ild_decode(&insn, &iext);
	} else {
		status = ipt__blk_decode(&cov->blk, &insn, &iext);
	}
	if (status < 0)
		return 0;

	if (block->iclass == ptic_cond_jump) {
		*next = ipt__ip_in_mode(block->mode,
					 block->end_ip + insn.size);
		return ipt_cov_taken;
	}
	if (iext.variant.branch.is_direct && iext.iclass != IPT__INST_JMPABS)
		return 0;
	return block->iclass == ptic_call ? ipt_cov_call : ipt_cov_jump;
}

static void ipt__cov_block(struct ipt_cov_decoder *cov,
			   const struct pt_block *block)
{
	if (!block->ninsn)
		return;
	ipt__cov_resolve(cov, block->ip);
	cov->pend_from = block->end_ip;
	cov->pend_kind = ipt__cov_block_kind(cov, block, &cov->pend_next);
}

/* The flow as the event @ev, which the block decoder took, says (@context
 * is the coverage decoder). */
static void ipt__cov_event(void *context, const struct pt_event *ev)
{
	struct ipt_cov_decoder *cov = (struct ipt_cov_decoder *) context;
	uint64_t ip;

	switch (ev->type) {
	case ptev_enabled:
		/* A PSB+ saying tracing is on changes nothing. */
		if (ev->status_update)
			break;
		cov->pend_kind = 0;
		ipt__cov_count(cov, 0, ev->variant.enabled.ip, ipt_cov_enable);
		break;

	case ptev_disabled:
		ip = 0;
		if (ev->ip_suppressed)
			cov->pend_kind = 0;
		else
			ip = ev->variant.disabled.ip;
		ipt__cov_resolve(cov, ip);
		if (!ev->status_update)
			ipt__cov_count(cov, ip, 0, ipt_cov_disable);
		break;

	case ptev_async_disabled:
		ipt__cov_resolve(cov, ev->variant.async_disabled.at);
		ipt__cov_count(cov, ev->variant.async_disabled.at, 0,
			       ipt_cov_disable);
		break;

	case ptev_async_branch:
		ipt__cov_resolve(cov, ev->variant.async_branch.from);
		ipt__cov_count(cov, ev->variant.async_branch.from,
			       ev->variant.async_branch.to, ipt_cov_async);
		break;

	case ptev_overflow:
		cov->pend_kind = 0;
		break;

	case ptev_paging:
	case ptev_async_paging:
	case ptev_exec_mode:
	case ptev_tsx:
	case ptev_stop:
	case ptev_vmcs:
	case ptev_async_vmcs:
	case ptev_exstop:
	case ptev_mwait:
	case ptev_pwre:
	case ptev_pwrx:
	case ptev_ptwrite:
	case ptev_tick:
	case ptev_cbr:
	case ptev_mnt:
	case ptev_tip:
	case ptev_tnt:
	case ptev_iflags:
	case ptev_interrupt:
	case ptev_iret:
	case ptev_smi:
	case ptev_rsm:
	case ptev_sipi:
	case ptev_init:
	case ptev_vmentry:
	case ptev_vmexit:
	case ptev_shutdown:
	case ptev_uintr:
	case ptev_uiret:
	case ptev_trig:
	case ptev_swintr:
	case ptev_syscall:
		/* No change of flow the blocks do not show. */
		break;
	}
}

/* The edge kind of a branch of @iclass that used trace. */
static IPT__INLINE uint32_t ipt__cov_kind_of(enum pt_insn_class iclass)
{
	switch (iclass) {
	case ptic_cond_jump:
		return ipt_cov_taken;
	case ptic_return:
		return ipt_cov_return;
	case ptic_call:
		return ipt_cov_call;
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
		return ipt_cov_far;
	case ptic_unknown:
	case ptic_other:
	case ptic_jump:
	case ptic_ptwrite:
	case ptic_indirect:
		break;
	}
	return ipt_cov_jump;
}

/* The walk's reports: a branch used trace; the flow reached @ip. */
static IPT__INLINE void ipt__cov_branch(void *context, uint64_t from,
					uint64_t next,
					enum pt_insn_class iclass)
{
	struct ipt_cov_decoder *cov = (struct ipt_cov_decoder *) context;

	cov->pend_from = from;
	cov->pend_next = next;
	cov->pend_kind = ipt__cov_kind_of(iclass);
	cov->idle = 0;
}

static IPT__INLINE void ipt__cov_reach(void *context, uint64_t ip)
{
	ipt__cov_resolve((struct ipt_cov_decoder *) context, ip);
}

/* ---- taking TNT bits and TIPs in bulk ----
 * Between two packets that are neither TNT nor TIP, the walk goes from
 * run to run taking one TNT bit at each conditional branch and a TIP at
 * each indirect branch.  The memo keeps, for a context (address space,
 * mode, image epoch: the run cache's context number), an IP and the next
 * up to IPT__COV_MEMO_BITS TNT bits, what the walk does with them: the
 * edges, the return-stack pushes and pops, the instructions it counts,
 * and where the flow goes on.  One look-up then stands for a run of
 * branches.  An entry asked to end at a TIP goes on after its last bit
 * to the branch that takes it, and keeps that branch too.
 *
 * The bits and the TIPs come from the TNT in hand and the TNT and TIP
 * packets behind it, read straight from the trace (ipt__blk_tnt_ahead,
 * and for one-byte TNTs in a row ipt__blk_tnt_fill, into a window of
 * bits): one memo step after another takes bits from the window, across
 * packet borders, and a TIP where a step ends at one, with no event made
 * per packet, until an entry takes nothing.  Then the block decoder is
 * told how far the steps got (ipt__blk_tnt_taken) and the walk goes on
 * from there.  A TIP is taken only with a TNT, a TIP or a TIP.PGD behind
 * it, so that the steps end with a TNT in hand or one of those next, as
 * the walk's hook must.  A TIP.PGD they do not take (one without a
 * TIP.PGE behind it: a PIP or a PSB+ while tracing is off, say) lets
 * them take every bit before it, the last too, where that is a packet's
 * read ahead (its end is known): the block decoder then fetches the
 * TIP.PGD as the disable it is, and the walk finds where it binds, as
 * after taking that bit itself (see ipt__blk_walk_ops).
 *
 * An entry holds only what the bits and the code decide: it stops before
 * a branch that needs a TIP (unless asked to end there, after its last
 * bit), right after a compressed return whose address was pushed before
 * the entry began (the return stack's contents are not part of the key:
 * where it returns to is read off the stack when the entry is applied),
 * before a return with a not-taken bit, a missing run, a branch more
 * instructions after the entry's start or its last bit than
 * IPT_COV_IDLE_MAX allows (the walk gives up there; it asks for steps
 * only right after a use of the trace), and before the last bit of the
 * window when no TNT, TIP or TIP.PGD packet follows (the walk takes that
 * one and applies the trailing-event rules).  Whatever the entries do
 * not cover the walk does as before, so the edges and the decoder's
 * state are the walk's.
 * The last branch of a step stays pending, as the walk leaves it, until
 * the flow is seen at its destination.  Entries are tagged with the
 * context number: a new image epoch (ipt_image_invalidate, section
 * changes) makes them all stale.
 *
 * The memo is one block, allocated on first use from the decoder's
 * allocator with at most @memo_limit bytes (ipt_cov_set_memo_limit): a
 * table of entries of one size, what a hit reads, and an arena for the
 * rest of each, as long as it is (ipt__cov_memo_words).  It
 * starts small and grows twice over whenever half its places are in use,
 * up to the limit: a short trace's first decode is not spent on memory
 * it never uses, and a memo that holds all a trace needs stays as it
 * is.  An entry has two places, by two hashes of its key: a new entry
 * goes in its first if it is free, else in its second if that is;
 * else in its first, and the one there moves to its own second (over
 * what is there), so that keys that share a first place, often in the
 * same loop, do not push each other out in turn.  While the memo is of
 * its first size, a key gets an entry only when it comes a second time
 * (ipt__cov_memo_find): code that runs once leaves it at that size. */

enum {
	/* The most TNT bits one entry covers (and thus edges): at most 57,
	 * so that the window of 64 holds them, one more and a one-byte
	 * TNT's six (and @count and the edges' @ret and @nt the TIP's
	 * too).  A key holds all the bits a step asks for, also those past
	 * where the entry stops (a return, an indirect branch): longer keys
	 * are fewer look-ups in loops but, in large code with varied paths,
	 * keep apart entries that do the same and miss more, and each miss
	 * walks more bits (a first decode of large code costs more).  An
	 * entry's tail grows with the bits it takes, not with this. */
	IPT__COV_MEMO_BITS = 57,
	/* The most return-stack pushes and pops one entry replays. */
	IPT__COV_MEMO_OPS = 8,
	/* Once the window runs low, one-byte TNTs are read into it up to
	 * this many bits (and a packet's more: below 58, so that 64 hold
	 * them): one read serves several steps.  The steps' keys are the
	 * same however far it reads: a step takes IPT__COV_MEMO_BITS bits
	 * while that many and one more are in the window. */
	IPT__COV_MEMO_FILL = 57
};

/* In a memo key: the bits (the first in the highest of the low 57),
 * their number and whether the entry ends at a TIP. */
#define IPT__COV_MEMO_KEY(bits, n, tip)                                        \
	((uint64_t) (bits) | ((uint64_t) (n) << 57) | ((uint64_t) (tip) << 63))

/* An entry: what a hit reads, of one size for all, in the table; the
 * rest, as long as what it holds, is its tail in the memo's arena (see
 * ipt__cov_memo_words).  The edges themselves, for an edge
 * callback, are in a struct ipt__cov_memo_edges of the same number, so
 * that a decoder without one has more entries in the same memory. */
struct ipt__cov_memo {
	/* The key: the IP, IPT__COV_MEMO_KEY and the context number (zero
	 * for an empty entry). */
	uint64_t ip;
	uint64_t key;
	uint32_t ctx;
	/* Where the entry's tail begins in the arena, in words. */
	uint32_t tail;
	/* Bit i of @count says the i-th edge counts (the decoder's kinds
	 * and ranges); the TIP's branch is edge @used. */
	uint64_t count;
	/* Where the flow goes on (without a TIP); the last edge's (the TIP's
	 * branch's) from and the IP after it. */
	uint64_t exit;
	uint64_t last_from;
	uint64_t last_next;
	/* The last edge's bitmap index (without a TIP), and its kind; the
	 * TIP's branch's kind. */
	uint32_t last_index;
	uint16_t last_kind;
	uint16_t tip_kind;
	/* Instructions walked up to the last bit taken, or to the TIP. */
	uint16_t ninsn_last;
	/* TNT bits taken, zero if none (the walk takes the next); whether
	 * the entry ends at a branch that takes a TIP, after them. */
	uint8_t used;
	uint8_t tip;
	/* Return-stack operations, in order: bit i of @pops says the i-th
	 * is a pop, else a push. */
	uint8_t nops;
	uint8_t pops;
	/* How many of the edges but the last count, and in how many
	 * places of the bitmap. */
	uint8_t ncount;
	uint8_t nplace;
	/* The last bit is a compressed return whose address was pushed
	 * before the entry began: the flow goes on where the return stack
	 * says, not at @exit (see ipt__cov_memo_apply). */
	uint8_t out_pop;
	/* Where parts of the tail begin, in words from @tail. */
	uint8_t op_at;
	uint8_t ninsn_at;
};

/* An entry's tail, in 8-byte words of the arena, in this order (and
 * only the parts the entry has):
 * - a word with the entry's number (the low half) and the tail's length
 *   in words (the high half), for the arena to be compacted
 *   (ipt__cov_memo_compact);
 * - what a hit reads first, from the next word on: the bitmap indices,
 *   before the bitmap's size, of the @nplace places its @ncount edges but
 *   the last that count are counted in (uint32_t), then how many of the
 *   edges each place counts (@nplace bytes): in a loop one edge is most
 *   of them, and adding to one counter in turn waits for each add;
 * - from the word @op_at on, the return-stack operations: @nops words, a
 *   push's address (a pop's is zero);
 * - for an entry that ends at a TIP, two words: the code its runs cover
 *   after the last bit, up to the TIP's branch, from the lowest IP to the
 *   end (a disable's IP there binds elsewhere);
 * - for an entry that does not end at a TIP, from the word @ninsn_at on,
 *   the instructions walked up to each of its @used bits (uint16_t), read
 *   where a step ends in another packet than it began. */
static IPT__INLINE uint32_t ipt__cov_memo_op_at(uint32_t nplace)
{
	return 1u + (nplace * 5u + 7u) / 8u;
}

static IPT__INLINE uint32_t ipt__cov_memo_words(uint32_t nplace,
						uint32_t nops, uint32_t tip,
						uint32_t nninsn)
{
	return ipt__cov_memo_op_at(nplace) + nops + 2u * tip +
	       (nninsn * 2u + 7u) / 8u;
}

/* A tail's first word, of the entry numbered @owner and @words long; the
 * length in one. */
static IPT__INLINE uint64_t ipt__cov_memo_head(uint32_t owner, uint32_t words)
{
	return (uint64_t) owner | ((uint64_t) words << 32);
}

static IPT__INLINE uint32_t ipt__cov_memo_head_words(uint64_t head)
{
	return (uint32_t) (head >> 32);
}

static IPT__INLINE const uint32_t *
ipt__cov_memo_counted(const struct ipt_cov_decoder *cov,
		      const struct ipt__cov_memo *e)
{
	return (const uint32_t *) (const void *) &cov->memo_arena[e->tail + 1u];
}

static IPT__INLINE const uint64_t *
ipt__cov_memo_op(const struct ipt_cov_decoder *cov,
		 const struct ipt__cov_memo *e)
{
	return &cov->memo_arena[e->tail + e->op_at];
}

static IPT__INLINE const uint16_t *
ipt__cov_memo_ninsn(const struct ipt_cov_decoder *cov,
		    const struct ipt__cov_memo *e)
{
	return (const uint16_t *) (const void *)
		&cov->memo_arena[e->tail + e->ninsn_at];
}

enum {
	/* The words of the longest tail. */
	IPT__COV_MEMO_TAIL_MOST =
		1 + (IPT__COV_MEMO_BITS * 5 + 7) / 8 + IPT__COV_MEMO_OPS + 2 +
		(IPT__COV_MEMO_BITS * 2 + 7) / 8,
	/* The arena's words per entry of the table: what an entry's tail
	 * takes on average, measured on large code, with room to spare.
	 * When it fills up, it is compacted; if that leaves less than a
	 * quarter free, every other entry goes and the memo is asked to
	 * grow (see ipt__cov_memo_room). */
	IPT__COV_MEMO_ARENA = 24
};

/* One edge per bit taken, and the TIP's branch (its @to unknown).  Bit i
 * of @ret says the i-th edge is a compressed return, of @nt that it is a
 * conditional branch not taken. */
struct ipt__cov_memo_edges {
	uint64_t from[IPT__COV_MEMO_BITS + 1];
	uint64_t to[IPT__COV_MEMO_BITS];
	uint64_t ret;
	uint64_t nt;
};

/* The default memory bound of the memo, in bytes. */
#ifndef IPT_COV_MEMO_LIMIT
#define IPT_COV_MEMO_LIMIT (1u << 25)
#endif

/* The bytes a memo's block has beyond its entries, for them to start on
 * a 64-byte line. */
enum { IPT__COV_MEMO_SLACK = 63 };

enum {
	/* The entries a memo starts with (or all the limit holds, if
	 * fewer). */
	IPT__COV_MEMO_FIRST = 256,
	/* The tags per entry of the filter of keys a memo of its first
	 * size has (see ipt__cov_memo_find). */
	IPT__COV_MEMO_SEEN = 4
};

/* The filter's tags in a memo of @n entries: as many as in one of its
 * first size once it has grown (and no longer uses them), so that a
 * larger memo never takes fewer bytes. */
static uint32_t ipt__cov_memo_nseen(uint32_t n)
{
	return (n < IPT__COV_MEMO_FIRST ? n : (uint32_t) IPT__COV_MEMO_FIRST) *
	       IPT__COV_MEMO_SEEN;
}

/* The words of the arena of a memo of @n entries that entries' tails
 * are given from; the spare entry's tail is behind them. */
static uint32_t ipt__cov_memo_arena(uint32_t n)
{
	return n * (uint32_t) IPT__COV_MEMO_ARENA;
}

/* The bytes of a block that holds @n memo entries from its first 64-byte
 * line, the spare entry a key is walked into without an entry, the
 * arena with the spare entry's tail, and the filter. */
static size_t ipt__cov_memo_bytes(uint32_t n)
{
	return ((size_t) n + 1u) * sizeof(struct ipt__cov_memo) +
	       ((size_t) ipt__cov_memo_arena(n) + IPT__COV_MEMO_TAIL_MOST) *
		       sizeof(uint64_t) +
	       (size_t) ipt__cov_memo_nseen(n) * sizeof(uint32_t) +
	       IPT__COV_MEMO_SLACK;
}

/* The bytes of the edges of @n memo entries and the spare one. */
static size_t ipt__cov_memo_edges_bytes(uint32_t n)
{
	return ((size_t) n + 1u) * sizeof(struct ipt__cov_memo_edges);
}

static void ipt__cov_memo_free(struct ipt_cov_decoder *cov)
{
	if (cov->memo)
		ipt__free(ipt__blk_allocator(&cov->blk), cov->memo_block,
			  ipt__cov_memo_bytes(cov->nmemo));
	if (cov->memo_edges)
		ipt__free(ipt__blk_allocator(&cov->blk), cov->memo_edges,
			  ipt__cov_memo_edges_bytes(cov->nmemo));
	cov->memo = NULL;
	cov->memo_edges = NULL;
	cov->memo_arena = NULL;
	cov->memo_seen = NULL;
	cov->nmemo = 0;
	cov->memo_failed = 0;
}

/* The hash of a memo entry's key but its context number: the same IP
 * and bits in two contexts (a stale one, or another address space) share
 * places, told apart when they are compared.  The IP is mixed on its
 * own: a step's IP is known before its bits are read (a TIP's, or the
 * entry before's exit), so that only one multiply waits for the bits. */
static IPT__INLINE uint64_t ipt__cov_memo_hash(uint64_t ip, uint64_t key)
{
	return ((ip * 0x9e3779b97f4a7c15ull) ^ key) * 0xff51afd7ed558ccdull;
}

/* An entry's first (@which zero) or second place in the memo, from the
 * hash @h of its key: the high half of @h, or of @h mixed again, scaled
 * to the entries (any number of them). */
static IPT__INLINE uint32_t
ipt__cov_memo_place(const struct ipt_cov_decoder *cov, uint64_t h,
		    uint32_t which)
{
	if (which)
		h *= 0x9e3779b97f4a7c15ull;
	return (uint32_t) (((h >> 32) * cov->nmemo) >> 32);
}

/* Move the tails of the entries that have one to the arena's start, in
 * the order they are in, over those of entries written over or emptied
 * since. */
static IPT__NOINLINE void ipt__cov_memo_compact(struct ipt_cov_decoder *cov)
{
	uint64_t *arena = cov->memo_arena;
	uint32_t at = 0, to = 0, i;

	while (at < cov->memo_top) {
		uint32_t owner = (uint32_t) arena[at];
		uint32_t words = ipt__cov_memo_head_words(arena[at]);
		struct ipt__cov_memo *e = &cov->memo[owner];

		if (e->ctx && e->tail == at) {
			for (i = 0; i < words && to != at; ++i)
				arena[to + i] = arena[at + i];
			e->tail = to;
			to += words;
		}
		at += words;
	}
	cov->memo_top = to;
}

/* Empty every entry of the memo.  Only the keys: the rest of an entry is
 * written before it is read (ipt__cov_memo_fill), and a memo of a
 * megabyte is cleared in a fraction of the time. */
static void ipt__cov_memo_clear(struct ipt_cov_decoder *cov)
{
	uint32_t i;

	for (i = 0; i < cov->nmemo; ++i) {
		cov->memo[i].ip = 0;
		cov->memo[i].ctx = 0;
		cov->memo[i].key = 0;
	}
	for (i = 0; i < ipt__cov_memo_nseen(cov->nmemo); ++i)
		cov->memo_seen[i] = 0;
	cov->memo_used = 0;
	cov->memo_fresh = 0;
	cov->memo_top = 0;
}

/* The bytes of a memo of @n entries, with their edges if the decoder
 * keeps them (none for none). */
static uint64_t ipt__cov_memo_total(const struct ipt_cov_decoder *cov,
				    uint32_t n)
{
	if (!n)
		return 0;
	return ipt__cov_memo_bytes(n) +
	       (cov->config.edge ? ipt__cov_memo_edges_bytes(n) : 0);
}

/* The entries the limit holds where a memo's bytes grow alike from @n
 * entries on: each entry's bytes, and those of the memo of none, as a
 * memo of @n and one of @n + 1 have them. */
static uint64_t ipt__cov_memo_fits(const struct ipt_cov_decoder *cov,
				   uint32_t n)
{
	uint64_t each = ipt__cov_memo_total(cov, n + 1) -
			ipt__cov_memo_total(cov, n);
	uint64_t base = ipt__cov_memo_total(cov, n) - n * each;

	return cov->memo_limit > base ? (cov->memo_limit - base) / each : 0;
}

/* The most entries the limit holds, up to 2^24 (zero below 16: no
 * memo): as in a memo larger than its first size (whose filter is
 * that size's), else in one that size or less. */
static uint32_t ipt__cov_memo_most(const struct ipt_cov_decoder *cov)
{
	uint64_t want = ipt__cov_memo_fits(cov, IPT__COV_MEMO_FIRST + 1);

	if (want <= IPT__COV_MEMO_FIRST)
		want = ipt__cov_memo_fits(cov, 1);
	if (want < 16)
		return 0;
	return want < (1u << 24) ? (uint32_t) want : (1u << 24);
}

/* Allocate @n entries for the memo, empty, the entries of the one before
 * (if any) carried over to the first or second place free for them;
 * without room for both tables in the limit, the old one goes first and
 * nothing is carried.  Returns whether the memo has @n entries (else it
 * is as it was, or none if it had to go). */
static int ipt__cov_memo_resize(struct ipt_cov_decoder *cov, uint32_t n)
{
	const struct ipt_allocator *a = ipt__blk_allocator(&cov->blk);
	struct ipt__cov_memo *old = cov->memo, *memo;
	struct ipt__cov_memo_edges *old_edges = cov->memo_edges, *edges = NULL;
	void *block, *old_block = cov->memo_block;
	const uint64_t *old_arena = cov->memo_arena;
	uint32_t nold = cov->nmemo, i;

	if (ipt__cov_memo_total(cov, n) + ipt__cov_memo_total(cov, nold) >
	    cov->memo_limit) {
		ipt__cov_memo_free(cov);
		old = NULL;
		old_edges = NULL;
		nold = 0;
	}
	block = ipt__alloc_cache(a, ipt__cov_memo_bytes(n));
	if (block && cov->config.edge) {
		edges = (struct ipt__cov_memo_edges *) ipt__alloc_cache(
			a, ipt__cov_memo_edges_bytes(n));
		if (!edges) {
			ipt__free(a, block, ipt__cov_memo_bytes(n));
			block = NULL;
		}
	}
	if (!block)
		return 0;

	memo = (struct ipt__cov_memo *) (void *) ((uint8_t *) block +
		((64u - ((uintptr_t) block & 63u)) & 63u));
	cov->memo_block = block;
	cov->memo = memo;
	cov->memo_edges = edges;
	cov->memo_arena = (uint64_t *) (void *) &memo[n + 1];
	cov->memo_words = ipt__cov_memo_arena(n);
	cov->memo_seen = (uint32_t *) (void *) &cov->memo_arena
		[cov->memo_words + IPT__COV_MEMO_TAIL_MOST];
	cov->nmemo = n;
	ipt__cov_memo_clear(cov);
	for (i = 0; i < nold; ++i) {
		const struct ipt__cov_memo *e = &old[i];
		const uint64_t *tail;
		uint32_t words, w;
		uint64_t h;
		uint32_t to;

		if (!e->ctx)
			continue;
		tail = &old_arena[e->tail];
		words = ipt__cov_memo_head_words(*tail);
		if (cov->memo_top + words > cov->memo_words)
			continue;
		h = ipt__cov_memo_hash(e->ip, e->key);
		to = ipt__cov_memo_place(cov, h, 0);
		if (memo[to].ctx) {
			to = ipt__cov_memo_place(cov, h, 1);
			if (memo[to].ctx)
				continue;
		}
		IPT__COPY(memo[to], *e);
		memo[to].tail = cov->memo_top;
		cov->memo_arena[cov->memo_top] = ipt__cov_memo_head(to, words);
		for (w = 1; w < words; ++w)
			cov->memo_arena[cov->memo_top + w] = tail[w];
		cov->memo_top += words;
		cov->memo_used += 1;
		if (edges)
			IPT__COPY(edges[to], old_edges[i]);
	}
	if (old)
		ipt__free(a, old_block, ipt__cov_memo_bytes(nold));
	if (old_edges)
		ipt__free(a, old_edges, ipt__cov_memo_edges_bytes(nold));
	return 1;
}

/* Allocate the memo, or grow it twice over when half its places are in
 * use.  Returns whether there is one. */
static IPT__NOINLINE int ipt__cov_memo_alloc(struct ipt_cov_decoder *cov)
{
	uint32_t most = ipt__cov_memo_most(cov), n;

	if (cov->memo_failed || !most) {
		cov->memo_failed = 1;
		return 0;
	}
	n = cov->memo ? cov->nmemo : IPT__COV_MEMO_FIRST / 2;
	n = n < most / 2 ? n * 2 : most;
	if (n == cov->nmemo || !ipt__cov_memo_resize(cov, n)) {
		if (!cov->memo) {
			cov->memo_failed = 1;
			return 0;
		}
		/* A memo that cannot grow stays as it is; asked again
		 * when as many more places are in use. */
		cov->memo_used = 0;
	}
	return 1;
}

/* The kind of an entry's @i-th edge, with @ret and @nt as in struct
 * ipt__cov_memo_edges. */
static IPT__INLINE enum ipt_cov_kind
ipt__cov_memo_kind(const struct ipt__cov_memo *e, uint64_t ret, uint64_t nt,
		   uint32_t i)
{
	if (e->tip && i == e->used)
		return (enum ipt_cov_kind) e->tip_kind;
	if ((ret >> i) & 1)
		return ipt_cov_return;
	return (nt >> i) & 1 ? ipt_cov_not_taken : ipt_cov_taken;
}

/* What filling an entry finds for its tail and its edges (see
 * ipt__cov_memo_words): the return-stack operations, the code after the
 * last bit, the edges' kinds, every edge's bitmap index and the
 * instructions walked up to each bit and to the TIP. */
struct ipt__cov_memo_scratch {
	uint64_t op[IPT__COV_MEMO_OPS];
	uint64_t span_lo;
	uint64_t span_hi;
	uint64_t ret;
	uint64_t nt;
	uint32_t index[IPT__COV_MEMO_BITS + 1];
	uint16_t ninsn[IPT__COV_MEMO_BITS + 1];
};

/* Record in @e (and @s) what the walk does from @ip in @mode with the @n
 * bits in @bits (the first in bit n-1), reading runs as the walk would;
 * with @tip,
 * taking all of them and going on to the branch that takes a TIP (or, if
 * there is none, the bits but the last).  The entry ends right after the
 * last bit it could take, or at the TIP.  Only @with_ret, for the walk
 * that looks for them (ipt__cov_tnt_ret), does it take a return from
 * before it (and end there); without, it stops before one and has the
 * walk look for them from then on. */
static IPT__NOINLINE void
ipt__cov_memo_fill(struct ipt_cov_decoder *cov, struct ipt__cov_memo *e,
		   struct ipt__cov_memo_scratch *s, uint64_t ip,
		   enum pt_exec_mode mode, uint64_t bits, uint32_t n,
		   uint32_t tip, int with_ret)
{
	struct pt_block_decoder *blk = &cov->blk;
	struct ipt__cov_memo_edges *edges =
		cov->memo_edges ? &cov->memo_edges[e - cov->memo] : NULL;
	uint32_t used = 0, ninsn = 0, nops = 0, pops = 0, depth = 0;
	uint32_t chain = 0, since = 0, out_pop = 0;
	uint64_t mask = 1;
	const struct ipt__blk_run *run;
	uint64_t end_ip = 0, next = 0;
	/* The entry's pushes not popped yet, by their op number. */
	uint8_t stack[IPT__COV_MEMO_OPS];
	/* The entry as of the last bit taken, and of the bit before, kept
	 * here and written to @e once at its end: a new entry's memory is
	 * most likely not in the cache, and what is only written there does
	 * not wait for it.  Nothing taken yet: a TIP's branch reached
	 * before any bit replays only the operations found on the way, and
	 * a step back to no bit restores these. */
	uint64_t exit_ip = 0, from_ip = 0, next_ip = 0;
	uint64_t ret = 0, nt = 0, count = 0;
	uint64_t prev_exit = 0, prev_next = 0, prev_from = 0;
	uint64_t span_lo = UINT64_MAX, span_hi = 0;
	uint32_t e_nops = 0, e_pops = 0, prev_nops = 0, prev_pops = 0;

	for (;;) {
		uint64_t to;
		uint32_t bit;
		enum ipt_cov_kind kind;

		mask = 1ull << used;
		run = ipt__blk_run_find(blk, ip, mode, NULL);
		if (!run)
			break;
		ninsn += run->ninsn;
		/* No more instructions from one use of the trace to the
		 * next than IPT_COV_IDLE_MAX allows (the walk gives up
		 * there): a bound of its own only below the entry's. */
		if (ninsn > UINT16_MAX ||
		    (IPT_COV_IDLE_MAX < UINT16_MAX &&
		     ninsn - since > IPT_COV_IDLE_MAX))
			break;
		end_ip = run->ip + run->len;
		next = ipt__ip_in_mode(mode, end_ip + run->isize);
		bit = used < n ? (uint32_t) ((bits >> (n - 1 - used)) & 1) : 0;
		if (used == n) {
			if (run->ip < span_lo)
				span_lo = run->ip;
			if (end_ip > span_hi)
				span_hi = end_ip;
		}

		switch ((enum ipt__run_kind) run->kind) {
		case ipt__run_cond:
			if (used == n)
				goto out;
			to = bit ? ipt__blk_run_target(run, mode, next) : next;
			kind = ipt_cov_taken;
			if (to == next) {
				nt |= mask;
				kind = ipt_cov_not_taken;
			}
			break;

		case ipt__run_ret:
			if (used == n) {
				if (tip)
					goto tip_branch;
				goto out;
			}
			if (!bit || nops == IPT__COV_MEMO_OPS)
				goto out;
			/* The address is the entry's own last push, or one
			 * from before it: the entry ends with that, and
			 * the flow goes where the return stack says. */
			if (depth)
				to = s->op[stack[--depth]];
			else if (!with_ret) {
				cov->memo_out_pop = 1;
				goto out;
			} else {
				to = 0;
				out_pop = 1;
			}
			pops |= 1u << nops;
			s->op[nops++] = 0;
			ret |= mask;
			kind = ipt_cov_return;
			break;

		case ipt__run_dcall:
			if (run->disp) {
				if (nops == IPT__COV_MEMO_OPS)
					goto out;
				stack[depth++] = (uint8_t) nops;
				s->op[nops++] = next;
			}
			/* fall through */
		case ipt__run_djump:
		case ipt__run_next:
			/* No trace needed: on to the next run. */
			if (++chain > IPT__BLK_WALK_CHAIN)
				goto out;
			ip = run->kind == ipt__run_next ? next :
			     ipt__blk_run_target(run, mode, next);
			continue;

		case ipt__run_icall:
		case ipt__run_indirect:
			if (tip && used == n)
				goto tip_branch;
			goto out;

		default:
			goto out;
		}

		/* A TNT bit taken: what the walk has done up to here is the
		 * entry. */
		if (edges) {
			edges->from[used] = end_ip;
			edges->to[used] = to;
		}
		/* Every edge's index for now (ipt__cov_memo_miss keeps
		 * those that count). */
		s->index[used] = ipt__cov_index(end_ip, to);
		s->ninsn[used] = (uint16_t) ninsn;
		if (ipt__cov_counts(cov, end_ip, to, kind))
			count |= mask;
		prev_exit = exit_ip;
		prev_next = next_ip;
		prev_from = from_ip;
		prev_nops = e_nops;
		prev_pops = e_pops;
		used += 1;
		e_nops = nops;
		e_pops = pops;
		exit_ip = to;
		from_ip = end_ip;
		next_ip = next;
		if (out_pop)
			break;
		chain = 0;
		since = ninsn;
		ip = to;
	}

out:
	/* Asked for a TIP and not there: the last bit is the walk's. */
	if (tip && used == n && used) {
		used -= 1;
		out_pop = 0;
		exit_ip = prev_exit;
		from_ip = prev_from;
		next_ip = prev_next;
		e_nops = prev_nops;
		e_pops = prev_pops;
	}
	e->tip = 0;
	e->out_pop = (uint8_t) out_pop;
	goto done;

tip_branch:
	/* The branch that takes the TIP, as the walk takes it: a call
	 * pushes the IP after it. */
	if (run->kind == ipt__run_icall) {
		if (nops == IPT__COV_MEMO_OPS)
			goto out;
		s->op[nops++] = next;
	}
	if (edges)
		edges->from[used] = end_ip;
	from_ip = end_ip;
	next_ip = next;
	e_nops = nops;
	s->ninsn[used] = (uint16_t) ninsn;
	e->tip_kind = (uint16_t) ipt__cov_kind_of(
		(enum pt_insn_class) run->iclass);
	if (ipt__cov_counts(cov, end_ip, 0, (enum ipt_cov_kind) e->tip_kind))
		count |= mask;
	e->tip = 1;
	e->out_pop = 0;

done:
	e->used = (uint8_t) used;
	e->nops = (uint8_t) e_nops;
	e->pops = (uint8_t) e_pops;
	e->exit = exit_ip;
	e->last_from = from_ip;
	e->last_next = next_ip;
	e->count = count;
	/* The last edge's index (kept apart from the places, without a
	 * TIP), and the instructions up to the last bit or the TIP. */
	if (!e->tip && used)
		e->last_index = s->index[used - 1];
	e->ninsn_last = e->tip ? s->ninsn[used] :
			used ? s->ninsn[used - 1] : 0;
	s->ret = ret;
	s->nt = nt;
	s->span_lo = span_lo;
	s->span_hi = span_hi;
}

/* Write the edge the entry applied last left pending (cov->memo_pend, if
 * any) to the decoder's pending branch: before anything reads that, or
 * the memo changes. */
static IPT__INLINE void ipt__cov_memo_pend(struct ipt_cov_decoder *cov)
{
	const struct ipt__cov_memo *e = cov->memo_pend;

	if (!e)
		return;
	cov->pend_from = e->last_from;
	cov->pend_next = e->last_next;
	cov->pend_kind = e->last_kind == ipt_cov_not_taken ?
				 (uint32_t) ipt_cov_taken : e->last_kind;
	cov->memo_pend = NULL;
}

/* Move the entry @e, in its first place, to its second, over what is
 * there (its edges too). */
static IPT__NOINLINE void ipt__cov_memo_move(struct ipt_cov_decoder *cov,
					     const struct ipt__cov_memo *e)
{
	uint32_t from = (uint32_t) (e - cov->memo), to;

	to = ipt__cov_memo_place(cov, ipt__cov_memo_hash(e->ip, e->key),
				 1);
	if (to == from)
		return;
	if (!cov->memo[to].ctx)
		cov->memo_used += 1;
	IPT__COPY(cov->memo[to], *e);
	cov->memo_arena[e->tail] = ipt__cov_memo_head(
		to, ipt__cov_memo_head_words(cov->memo_arena[e->tail]));
	if (cov->memo_edges)
		IPT__COPY(cov->memo_edges[to], cov->memo_edges[from]);
}

/* Whether the filter of a memo of its first size has not seen the key
 * of hash @h; it has from then on.  Once it has taken in as many keys as
 * half its tags, the memo is asked to grow: it keeps the keys that come
 * again as long as the filter can tell them. */
static IPT__NOINLINE int ipt__cov_memo_new(struct ipt_cov_decoder *cov,
					   uint64_t h)
{
	uint32_t nseen = ipt__cov_memo_nseen(cov->nmemo);
	uint32_t *seen =
		&cov->memo_seen[(uint32_t) (((h >> 32) * nseen) >> 32)];

	if (*seen == (uint32_t) h)
		return 0;
	*seen = (uint32_t) h;
	if (++cov->memo_fresh >= nseen / 2) {
		cov->memo_fresh = 0;
		if (cov->memo_used < cov->nmemo / 2)
			cov->memo_used = cov->nmemo / 2;
	}
	return 1;
}

/* Give the entry @e, just filled, a tail of @words words at the arena's
 * top.  An arena without room is compacted; if that leaves less than a
 * quarter of it free, the memo is asked to grow and every other entry
 * but @e goes (all of them if even that leaves no room), so that the
 * next compaction is as many words away. */
static void ipt__cov_memo_room(struct ipt_cov_decoder *cov,
			       struct ipt__cov_memo *e, uint32_t words)
{
	uint32_t i;

	if (e == &cov->memo[cov->nmemo]) {
		e->tail = cov->memo_words;
		return;
	}
	if (cov->memo_top + words > cov->memo_words) {
		/* Its tail before is no longer its. */
		e->ctx = 0;
		ipt__cov_memo_compact(cov);
		if (cov->memo_words - cov->memo_top < cov->memo_words / 4) {
			for (i = (uint32_t) (e - cov->memo) % 2u ^ 1u;
			     i < cov->nmemo; i += 2) {
				cov->memo[i].ip = 0;
				cov->memo[i].ctx = 0;
				cov->memo[i].key = 0;
			}
			ipt__cov_memo_compact(cov);
			if (cov->memo_top + words > cov->memo_words)
				ipt__cov_memo_clear(cov);
			if (cov->memo_used < cov->nmemo / 2)
				cov->memo_used = cov->nmemo / 2;
		}
	}
	e->tail = cov->memo_top;
	cov->memo_top += words;
}

/* A miss in ipt__cov_memo_find: fill an entry for the key @key (hash
 * @h) of the @n bits @bits at @ip, in its first place @e if free, else
 * in @second, else in @e after moving what is there; kept out of the
 * walks, whose steps hit. */
static IPT__NOINLINE struct ipt__cov_memo *
ipt__cov_memo_miss(struct ipt_cov_decoder *cov, struct ipt__cov_memo *e,
		   struct ipt__cov_memo *second, uint64_t ip,
		   enum pt_exec_mode mode, uint64_t bits, uint32_t n,
		   uint32_t tip, int with_ret, uint64_t key, uint64_t h,
		   uint32_t *pctx)
{
	struct pt_block_decoder *blk = &cov->blk;
	struct ipt__cov_memo_scratch s;
	uint8_t times[IPT__COV_MEMO_BITS], last[256];
	uint64_t low[4], *tail;
	uint32_t i, ncount = 0, nplace = 0, nbit, nninsn, words, *counted;

	/* The entry applied last may be written over. */
	ipt__cov_memo_pend(cov);
	/* While the memo is of its first size, a key the filter
	 * has not seen is walked into the spare entry, used once
	 * and left there: code that runs once (a short trace's
	 * first decode) costs no more memory than that, fresh memory
	 * that each growth would write.  A key that comes again (or
	 * shares a tag with one that did) gets its entry.  In a
	 * memo that has grown every key does: there the keys that
	 * come again are many, and walking each of them twice costs
	 * more than the entries of those that do not. */
	if (cov->nmemo <= IPT__COV_MEMO_FIRST &&
	    ipt__cov_memo_new(cov, h))
		e = &cov->memo[cov->nmemo];
	/* The first place if it is free, else the second; if both
	 * are taken, the entry in the first makes room, to its
	 * second place. */
	else if (!e->ctx)
		cov->memo_used += 1;
	else if (!second->ctx) {
		e = second;
		cov->memo_used += 1;
	} else
		ipt__cov_memo_move(cov, e);

	ipt__cov_memo_fill(cov, e, &s, ip, mode, bits, n, tip, with_ret);
	/* The edges seen at their destination within the entry: all
	 * of a TIP's entry, all but the last of the others (its
	 * index kept apart). */
	nbit = e->tip ? e->used : e->used ? e->used - 1u : 0;
	/* An entry of no bit and no TIP is never applied, and its
	 * first bit's kind was never written. */
	if (e->tip || e->used)
		e->last_kind =
			(uint16_t) ipt__cov_memo_kind(e, s.ret, s.nt, nbit);
	/* The places, in @s.index, the edges that share one counted
	 * there.  Bit i of @low: a place kept has an index whose low
	 * eight bits are i (an index without its bit there is new, not
	 * looked for), @last[i] the last such place: the one looked for
	 * first. */
	low[0] = 0;
	low[1] = 0;
	low[2] = 0;
	low[3] = 0;
	for (i = 0; i < nbit; ++i) {
		uint32_t index = s.index[i], j = nplace, low8 = index & 255;
		uint64_t bit = 1ull << (low8 & 63);

		if (!((e->count >> i) & 1))
			continue;
		ncount += 1;
		if (low[low8 >> 6] & bit) {
			j = last[low8];
			if (s.index[j] != index)
				for (j = 0; j < nplace; ++j)
					if (s.index[j] == index)
						break;
		}
		if (j < nplace) {
			times[j] += 1;
			continue;
		}
		low[low8 >> 6] |= bit;
		last[low8] = (uint8_t) nplace;
		s.index[nplace] = index;
		times[nplace++] = 1;
	}
	e->ncount = (uint8_t) ncount;
	e->nplace = (uint8_t) nplace;
	nninsn = e->tip ? 0u : e->used;
	words = ipt__cov_memo_words(nplace, e->nops, e->tip, nninsn);
	ipt__cov_memo_room(cov, e, words);
	e->op_at = (uint8_t) ipt__cov_memo_op_at(nplace);
	e->ninsn_at = (uint8_t) ipt__cov_memo_words(nplace, e->nops, e->tip, 0);
	tail = &cov->memo_arena[e->tail];
	tail[0] = ipt__cov_memo_head((uint32_t) (e - cov->memo), words);
	counted = (uint32_t *) (void *) &tail[1];
	IPT_MEMCPY(counted, s.index, nplace * sizeof(*counted));
	IPT_MEMCPY(&counted[nplace], times, nplace);
	IPT_MEMCPY(&tail[e->op_at], s.op, e->nops * sizeof(*tail));
	if (e->tip) {
		tail[e->op_at + e->nops] = s.span_lo;
		tail[e->op_at + e->nops + 1u] = s.span_hi;
	}
	IPT_MEMCPY(&tail[e->ninsn_at], s.ninsn, nninsn * sizeof(*s.ninsn));
	if (cov->memo_edges) {
		cov->memo_edges[e - cov->memo].ret = s.ret;
		cov->memo_edges[e - cov->memo].nt = s.nt;
	}
	/* Filling may have moved to a new context. */
	e->ip = ip;
	e->ctx = ipt__blk_ctx_of(blk, mode);
	e->key = key;
	*pctx = e->ctx;
	return e;
}

/* The entry for the @n bits @bits at @ip (to end at a TIP if @tip) in
 * the context *@ctx (ipt__blk_ctx_of for @mode), filled first if it is
 * not there (as ipt__cov_memo_fill, @with_ret); filling may move to a new
 * context, left in *@ctx. */
static IPT__INLINE struct ipt__cov_memo *
ipt__cov_memo_find(struct ipt_cov_decoder *cov, uint64_t ip,
		   enum pt_exec_mode mode, uint64_t bits, uint32_t n,
		   uint32_t tip, int with_ret, uint32_t *pctx)
{
	struct ipt__cov_memo *e;
	uint32_t ctx = *pctx;
	uint64_t key, h;

	key = IPT__COV_MEMO_KEY(bits, n, tip ? 1 : 0);
	h = ipt__cov_memo_hash(ip, key);
	e = &cov->memo[ipt__cov_memo_place(cov, h, 0)];
	if (IPT__UNLIKELY(e->ip != ip || e->ctx != ctx || e->key != key)) {
		struct ipt__cov_memo *second =
			&cov->memo[ipt__cov_memo_place(cov, h, 1)];

		if (second->ip != ip || second->ctx != ctx ||
		    second->key != key)
			return ipt__cov_memo_miss(cov, e, second, ip, mode,
						  bits, n, tip, with_ret, key,
						  h, pctx);
		e = second;
	}
	return e;
}

/* Do @e's return-stack operations (it has some).  Returns 1 for an entry
 * that ends with a return from before it (@out_pop), with where it
 * returns to in *@to; zero for another; -1 if the stack has nothing for
 * that return: the stack is then as it was (the entry's own pushes and
 * pops before it are as many), and the entry is not to be applied. */
static IPT__INLINE int ipt__cov_memo_ops(struct pt_block_decoder *blk,
					 const struct ipt__cov_memo *e,
					 const uint64_t *op, uint64_t *to)
{
	struct ipt__retstack *rs = &blk->retstack;
	/* The stack's ends in locals through the operations. */
	uint8_t top = rs->top, bottom = rs->bottom;
	int status = e->out_pop;
	uint32_t i;

	for (i = 0; i < e->nops; ++i) {
		if ((e->pops >> i) & 1) {
			if (ipt__retstack_pop_at(rs, &top, bottom, to) < 0) {
				status = -1;
				break;
			}
		} else
			ipt__retstack_push_at(rs, &top, &bottom, op[i]);
	}
	rs->top = top;
	rs->bottom = bottom;
	return status;
}

/* Do what @e says: the return stack's operations if @ops (else the
 * caller did them, ipt__cov_memo_ops) and the edges, as the walk reports
 * them: all but the last are seen at their destination; the last (a TIP's
 * branch, if the entry ends at one) waits for the flow to get there, left
 * pending in cov->memo_pend.
 * @wrap is the bitmap if its counters wrap and the memo keeps no edges (no
 * edge callback), else NULL. */
static IPT__INLINE void ipt__cov_memo_apply(struct ipt_cov_decoder *cov,
					    const struct ipt__cov_memo *e,
					    uint8_t *wrap, int ops)
{
	const uint32_t *counted = ipt__cov_memo_counted(cov, e);
	const uint8_t *times = (const uint8_t *) (const void *)
		&counted[e->nplace];
	uint32_t i, last;
	uint64_t to;

	if (ops && e->nops)
		(void) ipt__cov_memo_ops(&cov->blk, e,
					 ipt__cov_memo_op(cov, e), &to);

	if (IPT__LIKELY(wrap != NULL)) {
		/* As ipt__cov_hit, with its tests taken out of the loop, and
		 * in locals: stores to the bitmap could alias anything. */
		uint32_t mask = cov->mask, nplace = e->nplace;

		/* Four at a time: the loop's own instructions were half of
		 * it. */
		for (i = 0; i + 4 <= nplace; i += 4) {
			wrap[counted[i] & mask] += times[i];
			wrap[counted[i + 1] & mask] += times[i + 1];
			wrap[counted[i + 2] & mask] += times[i + 2];
			wrap[counted[i + 3] & mask] += times[i + 3];
		}
		for (; i < nplace; ++i)
			wrap[counted[i] & mask] += times[i];
		cov->status.edges += e->ncount;
	} else if (!cov->memo_edges) {
		/* No callback: a saturating bitmap, or none. */
		uint8_t *map = cov->map;
		uint32_t mask = cov->mask, nplace = e->nplace;

		if (map)
			for (i = 0; i < nplace; ++i) {
				uint8_t *counter = &map[counted[i] & mask];
				uint32_t sum = (uint32_t) *counter + times[i];

				*counter = (uint8_t) (sum < UINT8_MAX ? sum :
								       UINT8_MAX);
			}
		cov->status.edges += e->ncount;
	} else {
		const struct ipt__cov_memo_edges *edges =
			&cov->memo_edges[e - cov->memo];

		last = e->tip ? (uint32_t) e->used : (uint32_t) e->used - 1;
		for (i = 0; i < last; ++i)
			if ((e->count >> i) & 1)
				ipt__cov_hit(cov, edges->from[i], edges->to[i],
					     ipt__cov_memo_kind(e, edges->ret,
								edges->nt, i),
					     ipt__cov_index(edges->from[i],
							    edges->to[i]));
	}
	cov->memo_pend = e;
}

/* The TIP (or TIP.PGD, TIP.PGE pair) behind the TNT bits of the window,
 * read ahead (ipt__cov_tnt): its IP payload and compression (a TIP.PGD's
 * for a pair), the TIP.PGE's for a pair (@ipc2 zero for a TIP), and where
 * it ends. */
struct ipt__cov_tip {
	uint64_t payload;
	uint64_t payload2;
	uint32_t ipc;
	uint32_t ipc2;
	const uint8_t *end;
};

/* The packet @p read ahead is not a TNT: read it into @tip with the
 * TIP.PGE of a pair, and the packet behind it into @p, unless that is a
 * one-byte TNT (@p's type zero then, the TNT read again from @tip's end).
 * Returns whether the steps may take it: a TIP or a pair with a TNT, a
 * TIP or a TIP.PGD behind it. */
static IPT__INLINE int ipt__cov_read_tip(const struct pt_block_decoder *blk,
					 struct ipt__cov_tip *tip,
					 struct ipt__tnt_packet *p, int tip_free)
{
	const uint8_t *next = p->end;

	if (p->type != ppt_tip && p->type != ppt_tip_pgd)
		return 0;
	tip->payload = p->payload;
	tip->ipc = p->size;
	tip->ipc2 = 0;
	if (p->type == ppt_tip_pgd) {
		if (ipt__blk_tnt_ahead(blk, &next, &tip->payload2, &p->size,
				       tip_free) != ppt_tip_pge)
			return 0;
		tip->ipc2 = p->size;
	}
	tip->end = next;
	if (ipt__blk_tnt8_next(blk, next)) {
		p->type = (enum pt_packet_type) 0;
		return 1;
	}
	p->type = ipt__blk_tnt_ahead(blk, &next, &p->payload, &p->size,
				     tip_free);
	p->end = next;
	return p->type && p->type != ppt_tip_pge;
}

/* Not an edge kind: ipt__cov_tnt's first step resolves the edge the
 * decoder has pending. */
#define IPT__COV_PEND_DECODER UINT32_MAX

/* The walk's ops->tnt: take the next bits of the TNT in hand and the TNT
 * packets behind it, and the TIPs between them, one memo step after
 * another from @ip.
 *
 * The bits wait in a window (struct ipt__tnt_window): TNT packets are
 * read into it up to the next TIP, while it holds no more than a step
 * takes; a step takes bits off its top, and a TIP step the TIP behind
 * them.  Where each packet's last bit is tells a step which packets it
 * used up (the instructions walked in the packet in hand count from
 * where it began), with no bookkeeping per packet; only where the steps
 * stop is the block decoder told which packet is in hand and where it
 * ends. */
static IPT__INLINE uint64_t ipt__cov_tnt_with(void *context,
					      struct pt_block_decoder *blk,
					      uint64_t ip,
					      enum pt_exec_mode mode,
					      int with_ret)
{
	struct ipt_cov_decoder *cov = (struct ipt_cov_decoder *) context;
	struct pt_event *ev = &blk->event;
	struct ipt__tnt_window w;
	struct ipt__cov_tip tip;
	struct ipt_last_ip last_ip;
	/* The last IP as the TIPs taken leave it (@last_ip's, until one
	 * is). */
	uint64_t last;
	uint32_t tips = 0;
	/* Whether the TIPs behind may be taken (ipt__evt_tip_free): nothing
	 * moves in the event decoder while the steps read ahead. */
	int tip_free;
	/* Where to read on (NULL: after the packet the decoder holds), and
	 * the packet there if it has been read (behind a TIP). */
	const uint8_t *pos = NULL;
	struct ipt__tnt_packet held;
	uint32_t icnt, crossed = 0, ctx;
	/* What is behind the window: zero while more TNT packets may be,
	 * 1 for a TIP the steps may take, 2 for a packet they do not
	 * take, 3 for a TIP.PGD they do not take but may take every bit
	 * before (see "taking TNT bits and TIPs in bulk"). */
	uint32_t ahead = 0;
	/* TNT bits taken, for the status. */
	uint64_t taken = 0;
	/* The kind of the edge the last step left pending if it counts
	 * (zero if not), with its bitmap index; before the first step,
	 * IPT__COV_PEND_DECODER: the decoder's own, if any. */
	uint32_t pend_kind = IPT__COV_PEND_DECODER, pend_index = 0;
	/* The bitmap if memo hits count into it the short way. */
	uint8_t *wrap;

	if (IPT__UNLIKELY(cov->memo_used >= cov->nmemo / 2) &&
	    !ipt__cov_memo_alloc(cov))
		return ip;
	wrap = cov->memo_edges || (cov->config.flags & ipt_cov_saturate) ?
		       NULL : cov->map;

	/* Context numbers that start over could match old entries. */
	if (IPT__UNLIKELY(blk->ctx_next < cov->memo_ctx))
		ipt__cov_memo_clear(cov);
	cov->memo_ctx = blk->ctx_next;

	ctx = ipt__blk_ctx_of(blk, mode);
	IPT_MEMSET(&tip, 0, sizeof(tip));
	IPT_MEMSET(&held, 0, sizeof(held));
	w.n = ev->variant.tnt.size;
	w.bits = ev->variant.tnt.bits & ((1ull << w.n) - 1);
	w.lasts = 1;
	w.nread = w.n;
	icnt = blk->icnt;
	tip_free = ipt__evt_tip_free(&blk->evdec);
	IPT__COPY(last_ip, *ipt__blk_last_ip(blk));
	last = last_ip.ip;

	for (;;) {
		const struct ipt__cov_memo *e;
		uint64_t bits, popped;
		/* The bits a step leaves in the window when no TIP is to
		 * be taken: one, none before a TIP.PGD (ahead 3). */
		uint32_t n, used, tip_step, spare;
		int popped_out;

		/* Read TNT packets up to a TIP while a step's bits and one
		 * more are not in the window (a TNT-64 that does not fit
		 * waits until the steps have taken bits). */
		while (!ahead && w.n <= IPT__COV_MEMO_BITS) {
			if (!held.type && pos &&
			    ipt__blk_tnt_fill(blk, &pos, &w,
					      IPT__COV_MEMO_FILL, &held, tip_free))
				break;
			if (!held.type) {
				held.end = pos;
				held.type = ipt__blk_tnt_ahead(blk, &held.end,
							       &held.payload,
							       &held.size,
							       tip_free);
			}
			if (held.type == ppt_tnt_8 || held.type == ppt_tnt_64) {
				if (w.n + held.size >= 64)
					break;
				ipt__tnt_window_add(&w, held.payload, held.size,
						    held.end);
				pos = held.end;
				held.type = (enum pt_packet_type) 0;
				continue;
			}
			ahead = ipt__cov_read_tip(blk, &tip, &held, tip_free) ?
					1 : 2;
			/* A TIP.PGD (not followed by a TIP.PGE, else it would
			 * be in @held no more) behind bits of which the last
			 * is a packet's read ahead: the bits of the packet in
			 * hand are all taken (@crossed), or the window's
			 * last bit is not theirs. */
			if (ahead == 2 && held.type == ppt_tip_pgd && w.n &&
			    (crossed || (w.lasts & ((1ull << w.n) - 1)) != 1)) {
				ahead = 3;
				pos = w.ends[w.nread % 64];
			}
		}

		/* With a TIP to take behind them, all the bits and the TIP;
		 * with a TIP.PGD, all the bits, the TIP.PGD left to the
		 * decoder once they are taken; else all bits but the last. */
		tip_step = ahead == 1 && w.n <= IPT__COV_MEMO_BITS;
		n = w.n;
		if (!tip_step) {
			spare = ahead != 3;
			n = n > spare ? n - spare : 0;
			if (n > IPT__COV_MEMO_BITS)
				n = IPT__COV_MEMO_BITS;
			if (!n)
				break;
		}
		bits = w.bits >> (w.n - n);
		e = ipt__cov_memo_find(cov, ip, mode, bits, n, tip_step,
				       with_ret, &ctx);
		used = e->used;
		/* Not to a count that wraps, as the walk. */
		if ((!used && !e->tip) ||
		    icnt + e->ninsn_last < icnt)
			break;
		/* A disable binds where the flow reaches its IP first: not
		 * in the runs on the way to the branch. */
		if (e->tip && tip.ipc2) {
			uint64_t pgd = ipt__last_ip_next(last, tip.payload,
							 tip.ipc);
			const uint64_t *span =
				&ipt__cov_memo_op(cov, e)[e->nops];

			if (span[0] <= pgd && pgd <= span[1])
				break;
		}
		/* The return stack first: a return from before the entry
		 * with nothing on the stack is the walk's to report. */
		popped_out = 0;
		if (with_ret && e->nops) {
			popped_out = ipt__cov_memo_ops(
				blk, e, ipt__cov_memo_op(cov, e), &popped);
			if (popped_out < 0)
				break;
		}

		taken += used;
		if (used && !e->tip) {
			/* The last bits of packets among those taken: the
			 * packet in hand now begins after the last of them,
			 * @at bits into the step.  (A TIP step takes the
			 * whole window.) */
			uint64_t past = (w.lasts >> (w.n - used)) &
					((1ull << used) - 1);

			if (past) {
				uint32_t at = used - ipt__lsb(past);
				const uint16_t *ninsn =
					ipt__cov_memo_ninsn(cov, e);

				crossed = 1;
				icnt = e->ninsn_last - ninsn[at - 1];
			} else
				icnt += e->ninsn_last;
			w.n -= used;
			w.bits &= (1ull << w.n) - 1;
		}

		/* The edge pending went to @ip: after a step, the edge its
		 * entry left pending, which the entry has counted. */
		if (IPT__UNLIKELY(pend_kind == IPT__COV_PEND_DECODER))
			ipt__cov_resolve(cov, ip);
		else if (pend_kind)
			ipt__cov_hit(cov,
				     cov->memo_pend ? cov->memo_pend->last_from :
						      cov->pend_from,
				     ip, (enum ipt_cov_kind) pend_kind,
				     pend_index);
		ipt__cov_memo_apply(cov, e, wrap, !with_ret);

		if (!e->tip) {
			uint32_t last = used - 1;

			pend_kind = (e->count >> last) & 1 ? e->last_kind : 0;
			pend_index = e->last_index;
			ip = e->exit;
			if (with_ret && IPT__UNLIKELY(popped_out)) {
				pend_index = ipt__cov_index(e->last_from,
							    popped);
				ip = popped;
			}
			continue;
		}

		/* The TIP (the window is empty, a TNT, a TIP or a TIP.PGD
		 * behind it): the flow goes to its IP, no instructions
		 * walked since.  A TIP.PGD, TIP.PGE pair: tracing is
		 * disabled at the TIP.PGD's IP and enabled again at the
		 * TIP.PGE's, as ipt__cov_event sees it. */
		last = ipt__last_ip_next(last, tip.payload, tip.ipc);
		if (tip.ipc2) {
			ipt__cov_memo_pend(cov);
			ipt__cov_resolve(cov, last);
			ipt__cov_count(cov, last, 0, ipt_cov_disable);
			last = ipt__last_ip_next(last, tip.payload2, tip.ipc2);
			ipt__cov_count(cov, 0, last, ipt_cov_enable);
		}
		tips = 1;
		pos = tip.end;
		ahead = 0;
		w.n = 0;
		w.bits = 0;
		w.lasts = 0;
		icnt = 0;
		crossed = 1;

		/* Still pending unless the disable took it. */
		pend_kind = !tip.ipc2 && e->last_kind &&
					    ((e->count >> used) & 1) ?
				    e->tip_kind : 0;
		/* Hashed only for an edge that counts: in libxdc's mode a
		 * TIP's never does. */
		if (pend_kind)
			pend_index = ipt__cov_index(e->last_from, last);
		ip = last;
	}

	cov->status.memo_bits += taken;
	ipt__cov_memo_pend(cov);
	if (tips) {
		last_ip.ip = last;
		last_ip.have_ip = 1;
		last_ip.suppressed = 0;
	}
	if (w.n) {
		/* The packet in hand is the one the window's next bit
		 * belongs to: its bits are the window's down to its last. */
		uint32_t last = ipt__msb(w.lasts & ((1ull << w.n) - 1));

		if (!crossed) {
			ev->variant.tnt.size = (uint8_t) (w.n - last);
			blk->icnt = icnt;
		} else
			ipt__blk_tnt_taken(blk, w.ends[(w.nread - last) % 64],
					   w.bits >> last, w.n - last, icnt,
					   &last_ip);
	} else
		/* Right after a TIP, with a TIP or a TIP.PGD behind it; or
		 * every bit taken, a TIP.PGD behind them (@pos is where the
		 * last packet read ahead ends, ahead 3). */
		ipt__blk_tnt_taken(blk, pos, 0, 0, 0, &last_ip);
	return ip;
}

/* ipt__cov_tnt_with for traces without compressed returns from before an
 * entry and with, each compiled on its own, so that the first pays
 * nothing for the second's return stack look-ups; the first hands over
 * to the second once its memo sees such a return. */
static IPT__NOINLINE uint64_t ipt__cov_tnt_plain(void *context,
						struct pt_block_decoder *blk,
						uint64_t ip,
						enum pt_exec_mode mode)
{
	return ipt__cov_tnt_with(context, blk, ip, mode, 0);
}

static IPT__NOINLINE uint64_t ipt__cov_tnt_ret(void *context,
					      struct pt_block_decoder *blk,
					      uint64_t ip,
					      enum pt_exec_mode mode)
{
	return ipt__cov_tnt_with(context, blk, ip, mode, 1);
}

static uint64_t ipt__cov_tnt(void *context, struct pt_block_decoder *blk,
			     uint64_t ip, enum pt_exec_mode mode)
{
	const struct ipt_cov_decoder *cov =
		(const struct ipt_cov_decoder *) context;

	if (cov->memo_out_pop)
		return ipt__cov_tnt_ret(context, blk, ip, mode);
	return ipt__cov_tnt_plain(context, blk, ip, mode);
}

/* The instruction cache of a coverage decoder's block decoder, as a power
 * of two entries: with filter ranges, tracing is disabled at each branch
 * out of them, and the block decoder walks the run up to such a branch
 * one instruction at a time; in large code those are more than its
 * default cache holds. */
enum { IPT__COV_ICACHE_BITS = 10 };

/* Note an error at the decoder's position; the trace up to the next PSB is
 * lost. */
static void ipt__cov_error(struct ipt_cov_decoder *cov, int error)
{
	uint64_t at;

	cov->pend_kind = 0;
	cov->synced = 0;
	if (pt_blk_get_offset(&cov->blk, &at) < 0)
		at = cov->has_sync ? cov->sync_at : 0;

	cov->status.errors += 1;
	if (!cov->status.first_error)
		cov->status.first_error = error;
	cov->status.last_error = error;
	cov->error_at = at;
	cov->has_error = 1;
}

/* Synchronize onto the next PSB.  Returns the status of
 * pt_blk_sync_forward, -pte_eos at the end of the trace or if the decoder
 * did not get further. */
static int ipt__cov_sync(struct ipt_cov_decoder *cov)
{
	uint64_t at, size;
	int status;

	size = ipt__blk_trace_size(&cov->blk);

	/* A sync that met the end while more may come searches again once
	 * it has moved. */
	status = pt_blk_sync_forward(&cov->blk);
	if ((status == -pte_eos || status == -ipt_pte_need_more) &&
	    ipt__blk_trace_more(&cov->blk))
		return -ipt_pte_need_more;
	if (status == -pte_eos || pt_blk_get_sync_offset(&cov->blk, &at) < 0)
		at = size;
	if (cov->has_error) {
		cov->has_error = 0;
		if (at > cov->error_at)
			cov->status.skipped += at - cov->error_at;
	}
	if (status == -pte_eos)
		return status;
	if (cov->has_sync && at <= cov->sync_at)
		return -pte_eos;
	cov->has_sync = 1;
	cov->sync_at = at;
	if (status >= 0)
		cov->synced = 1;
	return status;
}

/* The rule of IPT_COV_IDLE_MAX after a block of @ninsn instructions that
 * ipt__cov_block took (one that leaves a branch pending ends in a branch
 * that used trace): whether the decode gives up. */
static int ipt__cov_idle(struct ipt_cov_decoder *cov, uint32_t ninsn)
{
	cov->idle += ninsn;
	if (cov->idle > IPT_COV_IDLE_MAX)
		return 1;
	if (cov->pend_kind)
		cov->idle = 0;
	return 0;
}

/* Decode from a synchronized decoder with @status until an error or the
 * end of the trace.  Returns a negative pte_* code; -pte_eos at the end,
 * -ipt_pte_need_more at the end for now (the block decoder undid the
 * call, cov->call says which).  While more may come only pt_blk_next and
 * pt_blk_event decode, which the block decoder undoes if they need more:
 * the run walk and the memo count edges as they go. */
static int ipt__cov_walk(struct ipt_cov_decoder *cov, int status)
{
	struct pt_block_decoder *blk = &cov->blk;
	struct ipt__blk_walk_ops ops;
	int walk = !ipt__blk_trace_more(blk);

	/* Filled in here, not initialized: a table of function pointers
	 * would be relocated data, which freestanding builds must not
	 * have. */
	ops.branch = ipt__cov_branch;
	ops.reach = ipt__cov_reach;
	ops.tnt = cov->memo_limit ? ipt__cov_tnt : NULL;
	ops.idle = &cov->idle;
	ops.idle_max = IPT_COV_IDLE_MAX;

	for (;;) {
		struct pt_block block;

		while (status & pts_event_pending) {
			struct pt_event ev;

			cov->idle = 0;
			cov->call = ipt__cov_at_event;
			if (!ipt__blk_take_events(blk, ipt__cov_event, cov,
						  &status)) {
				status = pt_blk_event(blk, &ev, sizeof(ev));
				if (status >= 0)
					ipt__cov_event(cov, &ev);
			}
			if (status < 0)
				return status;
		}
		if (status & pts_eos)
			return -pte_eos;

		cov->call = ipt__cov_at_next;
		if (walk && ipt__blk_walk(blk, &ops, cov, &status)) {
			if (status < 0)
				return ipt__blk_trace_ended(blk) ? -pte_eos :
				       status;
			continue;
		}

		status = pt_blk_next(blk, &block, sizeof(block));
		if (status < 0) {
			if (status == -ipt_pte_need_more)
				return status;
			/* The flow got as far as the block goes (to missing
			 * code, it goes on from there later, its count
			 * kept). */
			ipt__cov_block(cov, &block);
			(void) ipt__cov_idle(cov, block.ninsn);
			return ipt__blk_trace_ended(blk) ? -pte_eos : status;
		}
		ipt__cov_block(cov, &block);
		if (ipt__cov_idle(cov, block.ninsn))
			return -pte_bad_query;
	}
}

/* Did the block decoder call that returned @status stop at missing code
 * the caller wants to supply?  Then the decode pauses, to resume with
 * @call. */
static int ipt__cov_pauses(struct ipt_cov_decoder *cov, int status,
			   uint32_t call)
{
	struct ipt_fault fault;
	int again;

	if (status >= 0 || !(cov->config.flags & ipt_cov_pause) ||
	    ipt_blk_get_fault(&cov->blk, &fault, sizeof(fault)) <= 0)
		return 0;

	/* Code still missing when the decode resumes is an error. */
	again = cov->resumed && fault.addr == cov->fault_addr &&
		fault.asid.cr3 == cov->fault_cr3 &&
		fault.asid.vmcs == cov->fault_vmcs;
	cov->resumed = 0;
	if (again)
		return 0;
	cov->fault_addr = fault.addr;
	cov->fault_cr3 = fault.asid.cr3;
	cov->fault_vmcs = fault.asid.vmcs;
	cov->paused = call;
	return 1;
}

/* Go on from a pause: the status to walk on with, or a negative code. */
static int ipt__cov_resume(struct ipt_cov_decoder *cov)
{
	uint32_t call = cov->paused;
	int status;

	cov->paused = ipt__cov_at_none;
	cov->resumed = 1;
	switch (call) {
	case ipt__cov_at_event:
		return pts_event_pending;
	case ipt__cov_at_sync:
		status = pt_blk_sync_set(&cov->blk, cov->resume_sync);
		if (status >= 0)
			cov->synced = 1;
		return status;
	default:
		return 0;
	}
}

/* The walk starts afresh (at a sync or a start). */
static void ipt__cov_walk_fresh(struct ipt_cov_decoder *cov)
{
	cov->idle = 0;
}

/* The walk needs more trace: the same call goes on once the end has
 * moved. */
static int ipt__cov_wait(struct ipt_cov_decoder *cov)
{
	cov->waiting = 1;
	cov->wait_status =
		cov->call == ipt__cov_at_event ? pts_event_pending : 0;
	return -ipt_pte_need_more;
}

IPT_DEF int ipt_cov_decode(struct ipt_cov_decoder *cov)
{
	if (!cov)
		return -pte_invalid;

	for (;;) {
		int status = 0;

		if (cov->waiting) {
			cov->waiting = 0;
			status = cov->wait_status;
		} else if (cov->paused) {
			uint32_t call = cov->paused;

			/* The count goes on after a pause in the flow. */
			if (call == ipt__cov_at_sync)
				ipt__cov_walk_fresh(cov);
			status = ipt__cov_resume(cov);
			if (status == -ipt_pte_need_more) {
				cov->paused = call;
				return status;
			}
			if (ipt__cov_pauses(cov, status, call))
				return -pte_nomap;
			if (status < 0) {
				ipt__cov_error(cov, status);
				continue;
			}
		} else if (!cov->synced) {
			ipt__cov_walk_fresh(cov);
			status = ipt__cov_sync(cov);
			if (status == -ipt_pte_need_more)
				return status;
			if (status == -pte_eos)
				return 0;
			if (ipt__cov_pauses(cov, status, ipt__cov_at_sync)) {
				if (pt_blk_get_sync_offset(&cov->blk,
							   &cov->resume_sync) < 0)
					cov->resume_sync = cov->sync_at;
				return -pte_nomap;
			}
			if (status < 0) {
				ipt__cov_error(cov, status);
				continue;
			}
		}

		status = ipt__cov_walk(cov, status);
		if (status == -ipt_pte_need_more)
			return ipt__cov_wait(cov);
		if (status == -pte_eos) {
			cov->synced = 0;
			cov->pend_kind = 0;
			return 0;
		}
		if (ipt__cov_pauses(cov, status, cov->call))
			return -pte_nomap;
		ipt__cov_error(cov, status);
	}
}

IPT_DEF int ipt_cov_get_fault(const struct ipt_cov_decoder *cov,
			      struct ipt_fault *fault, size_t size)
{
	if (!cov || !fault)
		return -pte_invalid;
	if (!cov->paused)
		return 0;
	return ipt_blk_get_fault(&cov->blk, fault, size);
}

IPT_DEF struct ipt_cov_decoder *
ipt_cov_alloc_decoder_with(const struct pt_config *config,
			   const struct ipt_cov_config *ucov,
			   const struct ipt_allocator *allocator)
{
	struct ipt_cov_decoder *cov;
	struct ipt_allocator a;
	struct pt_config bconfig;

	if (!config || !ucov || ucov->nranges > ipt_cov_max_ranges)
		return NULL;
	if (ipt__config_from_user(&bconfig, config) < 0)
		return NULL;
	if (ipt__allocator_init(&a, allocator) < 0)
		return NULL;

	cov = (struct ipt_cov_decoder *) ipt__zalloc(&a, sizeof(*cov));
	if (!cov)
		return NULL;
	*ipt__blk_allocator(&cov->blk) = a;

	/* The block decoder's flags are ours: plain blocks, no ticks. */
	IPT_MEMSET(&bconfig.flags, 0, sizeof(bconfig.flags));
	if (ipt__blk_decoder_init(&cov->blk, &bconfig, 0) < 0) {
		ipt__free(&a, cov, sizeof(*cov));
		return NULL;
	}
	ipt__blk_set_icache_bits(&cov->blk, IPT__COV_ICACHE_BITS);

	IPT__COPY(cov->config, *ucov);
	cov->kinds = ucov->kinds ? ucov->kinds : (uint32_t) ipt_cov_all;
	if (ucov->flags & ipt_cov_libxdc) {
		cov->kinds = ipt_cov_taken | ipt_cov_not_taken;
		cov->config.flags &= ~(uint32_t) ipt_cov_saturate;
	}
	ipt__blk_set_run_hook(&cov->blk, ucov->block, ucov->context);
	/* A PSB+ taken whole asks nothing of us: its disable, a status
	 * update with its IP suppressed, would leave no branch pending, and
	 * none is but the one the event that turned tracing off settles
	 * (which may reach us after the PSB+ was taken). */
	ipt__blk_set_quiet_psb(&cov->blk, 1);
	if (ucov->flags & ipt_cov_pause)
		(void) ipt_blk_set_wait_for_code(&cov->blk, 1);
	cov->memo_limit = IPT_COV_MEMO_LIMIT;
	return cov;
}

IPT_DEF struct ipt_cov_decoder *
ipt_cov_alloc_decoder(const struct pt_config *config,
		      const struct ipt_cov_config *cov)
{
	return ipt_cov_alloc_decoder_with(config, cov, NULL);
}

IPT_DEF void ipt_cov_free_decoder(struct ipt_cov_decoder *cov)
{
	if (!cov)
		return;
	ipt__cov_memo_free(cov);
	ipt__blk_free_with(&cov->blk, cov, sizeof(*cov));
}

IPT_DEF int ipt_cov_set_image(struct ipt_cov_decoder *cov,
			      struct pt_image *image)
{
	return cov ? pt_blk_set_image(&cov->blk, image) : -pte_invalid;
}

IPT_DEF struct pt_image *ipt_cov_get_image(struct ipt_cov_decoder *cov)
{
	return cov ? pt_blk_get_image(&cov->blk) : NULL;
}

IPT_DEF int ipt_cov_set_bitmap(struct ipt_cov_decoder *cov, uint8_t *bitmap,
			       size_t size)
{
	/* At most 2^31 bytes (a power of two that fits the 32-bit mask),
	 * said so that 32-bit builds see no always-false comparison. */
	if (!cov || !bitmap || !size || (size & (size - 1)) ||
	    ((uint64_t) size >> 31) > 1)
		return -pte_invalid;

	cov->map = bitmap;
	cov->mask = (uint32_t) (size - 1);
	return 0;
}

IPT_DEF int ipt_cov_set_trace(struct ipt_cov_decoder *cov,
			      const uint8_t *begin, const uint8_t *end,
			      int clear_bitmap)
{
	return ipt_cov_set_ring(cov, begin, end, end, end, clear_bitmap);
}

/* What a coverage decoder put at a new place in the trace forgets: the
 * edge it had pending, where it last synchronized, the error it noted and
 * the call a missing page paused. */
static void ipt__cov_moved(struct ipt_cov_decoder *cov)
{
	cov->pend_kind = 0;
	cov->has_sync = 0;
	cov->has_error = 0;
	cov->paused = ipt__cov_at_none;
}

IPT_DEF int ipt_cov_set_ring(struct ipt_cov_decoder *cov,
			     const uint8_t *older, const uint8_t *older_end,
			     const uint8_t *newer, const uint8_t *newer_end,
			     int clear_bitmap)
{
	int status;

	if (!cov)
		return -pte_invalid;

	status = ipt_blk_set_ring(&cov->blk, (uint8_t *) (uintptr_t) older,
				  (uint8_t *) (uintptr_t) older_end,
				  (uint8_t *) (uintptr_t) newer,
				  (uint8_t *) (uintptr_t) newer_end);
	if (status < 0)
		return status;

	ipt__cov_moved(cov);
	cov->synced = 0;
	cov->waiting = 0;
	if (clear_bitmap && cov->map)
		IPT_MEMSET(cov->map, 0, (size_t) cov->mask + 1);
	return 0;
}

IPT_DEF int ipt_cov_extend(struct ipt_cov_decoder *cov, const uint8_t *end,
			   int more)
{
	if (!cov)
		return -pte_invalid;
	return ipt_blk_extend(&cov->blk, (uint8_t *) (uintptr_t) end, more);
}

/* The block decoder starts; the walk goes on from its status as from a
 * sync. */
IPT_DEF int ipt_cov_start_at(struct ipt_cov_decoder *cov, uint64_t offset,
			     const struct ipt_start_state *state)
{
	int status;

	if (!cov)
		return -pte_invalid;
	status = ipt_blk_start_at(&cov->blk, offset, state);
	if (status < 0)
		return status;
	ipt__cov_moved(cov);
	cov->synced = 1;
	cov->waiting = 1;
	cov->wait_status = status;
	ipt__cov_walk_fresh(cov);
	return 0;
}

IPT_DEF int ipt_cov_set_cache_limit(struct ipt_cov_decoder *cov,
				    uint64_t bytes)
{
	return cov ? ipt_blk_set_cache_limit(&cov->blk, bytes) : -pte_invalid;
}

IPT_DEF int ipt_cov_set_cr3_filter(struct ipt_cov_decoder *cov,
				   uint64_t cr3)
{
	return cov ? ipt_blk_set_cr3_filter(&cov->blk, cr3) : -pte_invalid;
}

IPT_DEF int ipt_cov_set_memo_limit(struct ipt_cov_decoder *cov,
				   uint64_t bytes)
{
	if (!cov)
		return -pte_invalid;
	ipt__cov_memo_free(cov);
	cov->memo_limit = bytes;
	return 0;
}

IPT_DEF int ipt_cov_get_status(const struct ipt_cov_decoder *cov,
			       struct ipt_cov_status *status)
{
	if (!cov || !status)
		return -pte_invalid;
	IPT__COPY(*status, cov->status);
	return 0;
}

/* ==== >>seg  segments: the PSB index and joining decoders ===============
 * ipt_seg_index finds the PSBs with the packet layer's search (aligned
 * 8-byte words, >>pkt) and reads each PSB+ with a packet decoder on the
 * stack: the trace is read once, code never.  ipt_blk_converged and
 * ipt_insn_converged compare two decoders' states, for the stitching rule
 * in >>api-seg, through ipt__blk_same and ipt__insn_same; each layer
 * compares its own part (ipt__pkt_same, ipt__evt_same, ...).
 * ipt_seg_split and the stitch apply the rule to the caller's loop, which
 * they reach only through struct ipt_seg_loop.  Uses >>pkt's public
 * functions and accessors. */

/* Record one packet of a PSB+ in seg.  Returns 1 when the PSB+ ends, 0 to
 * read on. */
static int ipt__seg_psb_packet(struct ipt_segment *seg,
			       struct ipt_last_ip *last_ip,
			       const struct pt_packet *packet,
			       const struct pt_config *config)
{
	switch (packet->type) {
	case ppt_psbend:
		return 1;

	case ppt_ovf:
		seg->overflow = 1;
		return 1;

	case ppt_fup:
		if (ipt_last_ip_update_ip(last_ip, &packet->payload.ip,
					  config) < 0 ||
		    ipt_last_ip_query(&seg->ip, last_ip) < 0)
			break;
		seg->enabled = 1;
		break;

	case ppt_mode:
		if (packet->payload.mode.leaf == pt_mol_exec)
			seg->mode = pt_get_exec_mode(
				&packet->payload.mode.bits.exec);
		else if (packet->payload.mode.leaf == pt_mol_tsx)
			seg->intx = packet->payload.mode.bits.tsx.intx;
		break;

	case ppt_pip:
		seg->has_cr3 = 1;
		seg->cr3 = packet->payload.pip.cr3;
		seg->nr = packet->payload.pip.nr;
		break;

	case ppt_vmcs:
		seg->has_vmcs = 1;
		seg->vmcs = packet->payload.vmcs.base;
		break;

	case ppt_tsc:
		seg->has_tsc = 1;
		seg->tsc = packet->payload.tsc.tsc;
		break;

	case ppt_tma:
		seg->has_tma = 1;
		seg->ctc = packet->payload.tma.ctc;
		seg->fc = packet->payload.tma.fc;
		break;

	case ppt_cbr:
		seg->has_cbr = 1;
		seg->cbr = packet->payload.cbr.ratio;
		break;

	/* Timing packets may come inside PSB+ and mean what they mean
	 * outside (SDM 33.3.7); the rest tell a PSB+ nothing. */
	case ppt_invalid:
	case ppt_unknown:
	case ppt_pad:
	case ppt_psb:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
	case ppt_tnt_8:
	case ppt_tnt_64:
	case ppt_mtc:
	case ppt_cyc:
	case ppt_stop:
	case ppt_mnt:
	case ppt_exstop:
	case ppt_mwait:
	case ppt_pwre:
	case ppt_pwrx:
	case ppt_ptw:
	case ppt_cfe:
	case ppt_evd:
	case ppt_trig:
		break;
	}
	return 0;
}

/* Read the PSB+ at the packet decoder's position (synchronized: its
 * first packet is the PSB) into seg.  A PSB+ is a handful of packets;
 * one that goes on for longer than any could is broken, so that a
 * hostile trace cannot make the index decode it all. */
static void ipt__seg_read_psb(struct ipt_segment *seg,
			      struct pt_packet_decoder *pacdec)
{
	struct ipt_last_ip last_ip;
	struct pt_packet packet;
	int n;

	ipt_last_ip_init(&last_ip);
	for (n = 0; n < 64; ++n) {
		if (pt_pkt_next(pacdec, &packet, sizeof(packet)) < 0)
			break;
		if (ipt__seg_psb_packet(seg, &last_ip, &packet,
					ipt__pkt_config(pacdec)))
			return;
	}
	seg->broken = 1;
}

IPT_DEF int64_t ipt_seg_index(const struct pt_config *config,
			      struct ipt_segment *segs, size_t max)
{
	struct pt_packet_decoder pacdec;
	uint64_t size;
	int64_t n;
	int status;

	if (!config || (!segs && max))
		return -pte_invalid;

	status = ipt__pkt_init(&pacdec, config);
	if (status < 0)
		return status;
	size = (uint64_t) (ipt__pkt_end(&pacdec) -
			   ipt__pkt_config(&pacdec)->begin);

	for (n = 0;; ++n) {
		struct ipt_segment *seg;
		uint64_t offset;

		status = pt_pkt_sync_forward(&pacdec);
		if (status >= 0)
			status = pt_pkt_get_sync_offset(&pacdec, &offset);
		if (status < 0)
			break;
		if (n && (size_t) (n - 1) < max)
			segs[n - 1].end = offset;
		if ((size_t) n >= max)
			continue;

		seg = &segs[n];
		IPT_MEMSET(seg, 0, sizeof(*seg));
		seg->offset = offset;
		seg->end = size;
		seg->mode = ptem_unknown;
		ipt__seg_read_psb(seg, &pacdec);

		/* The next search starts behind this PSB, not behind its
		 * PSB+: a PSB+ cut short may hide the next PSB. */
		status = pt_pkt_sync_set(&pacdec, offset);
		if (status < 0)
			break;
	}

	ipt__pkt_fini(&pacdec);
	if (status != -pte_eos)
		return status;
	return n;
}

/* ---- joining decoders ----
 * A saved state is a copy of the decoder; the layers compare their own
 * parts (ipt__blk_same, ipt__insn_same), leaving out caches and image. */

IPT_DEF size_t ipt_blk_state_size(void)
{
	return sizeof(struct pt_block_decoder);
}

IPT_DEF int ipt_blk_save(const struct pt_block_decoder *decoder, void *state,
			 size_t size)
{
	if (!decoder || !state || size < sizeof(*decoder))
		return -pte_invalid;
	IPT_MEMCPY(state, decoder, sizeof(*decoder));
	return 0;
}

IPT_DEF int ipt_blk_converged(const struct pt_block_decoder *decoder,
			      const void *state)
{
	if (!decoder || !state)
		return -pte_invalid;
	return ipt__blk_same(decoder, (const struct pt_block_decoder *) state);
}

IPT_DEF size_t ipt_insn_state_size(void)
{
	return sizeof(struct pt_insn_decoder);
}

IPT_DEF int ipt_insn_save(const struct pt_insn_decoder *decoder,
			  void *state, size_t size)
{
	if (!decoder || !state || size < sizeof(*decoder))
		return -pte_invalid;
	IPT_MEMCPY(state, decoder, sizeof(*decoder));
	return 0;
}

IPT_DEF int ipt_insn_converged(const struct pt_insn_decoder *decoder,
			       const void *state)
{
	if (!decoder || !state)
		return -pte_invalid;
	return ipt__insn_same(decoder, (const struct pt_insn_decoder *) state);
}

/* ---- decoding in pieces ----
 * A piece's loop, once past the next piece's PSB, looks for a state the
 * next piece's loop goes through from its start: a probe loop started at
 * that PSB gives them, saved.  A loop that finds none decodes on into
 * the piece after, and so on. */

enum {
	/* The states a probe takes of a piece: how far apart two loops may
	 * be when they reach the same state.  64 missed joins in real
	 * traces, where the instruction decoder takes many steps between two
	 * packets; a missed join decodes a piece twice. */
	ipt__seg_probe_max = 256,
	/* Until the loop nears the next piece, where it is need not be
	 * asked at every step: it takes steps in batches, at first this
	 * many ... */
	ipt__seg_look_every = 16,
	/* ... a batch doubling up to this many while one takes the loop
	 * less than an eighth of the way left (a call through the loop's
	 * functions, and the question where it is, cost as much as a step
	 * of the instruction decoder), cut to what should take it a quarter
	 * of the way when one takes it further ... */
	ipt__seg_batch_max = 4096,
	/* ... and one by one within this many bytes of trace before its
	 * PSB, where a dozen steps might take the loop past it, or, in a
	 * short trace, to the end. */
	ipt__seg_near = 256
};

struct ipt_seg_split {
	struct ipt_allocator allocator;
	struct ipt_seg_loop ops;
	size_t state_size;
	struct ipt_seg_piece *pieces;
	size_t npieces, max;
};

struct ipt__seg_snap {
	uint64_t offset, mark;
	void *state;
};

struct ipt_seg_worker {
	const struct ipt_seg_split *split;
	/* The piece whose states snaps holds (zero: none), how many, and
	 * how many the probe took of it (those the loop passed are gone). */
	size_t probed, nsnaps, taken;
	/* The probe has no states after them; it stands right after the
	 * last one's step, in this ipt_seg_decode call (before the next, the
	 * caller may use it for something else). */
	int ended, live;
	struct ipt__seg_snap snaps[ipt__seg_probe_max];
	unsigned char *states;
};

/* size * num / den, for num <= den <= 2^32, without overflow. */
static uint64_t ipt__seg_share(uint64_t size, uint64_t num, uint64_t den)
{
	return size / den * num + size % den * num / den;
}

/* Where piece k of n should begin in a trace of size bytes.  The pieces
 * are alike up to the middle and get smaller after it, the last a
 * fraction of the first: threads that take them in order end about
 * together, since what one still decodes when the others find none left
 * is one of the last.  Piece j weighs h = ceil(n/2) in the first half,
 * n - j in the second.  (More than 2^16 pieces are alike.) */
static uint64_t ipt__seg_target(uint64_t size, size_t k, size_t n)
{
	uint64_t h = ((uint64_t) n + 1) / 2, all, part;

	if ((uint64_t) n > 1u << 16)
		return size / n * k;
	all = h * h + (n - h) * (n - h + 1) / 2;
	part = k <= h ? k * h : h * h + (k - h) * (2 * n - h - k + 1) / 2;
	return ipt__seg_share(size, part, all);
}

/* The pieces' PSBs: piece k at the first PSB after its target and after
 * piece k - 1's, searched from there (a PSB search looks at the bytes it
 * passes, nothing else).  The first piece synchronizes at the first PSB
 * and needs none. */
static int ipt__seg_spread(struct ipt_seg_split *split,
			   const struct pt_config *config)
{
	struct pt_packet_decoder pacdec;
	uint64_t size, offset, last;
	int status;

	status = ipt__pkt_init(&pacdec, config);
	if (status < 0)
		return status;
	size = (uint64_t) (ipt__pkt_end(&pacdec) -
			   ipt__pkt_config(&pacdec)->begin);
	split->npieces = 1;
	status = pt_pkt_sync_forward(&pacdec);
	if (status >= 0)
		status = pt_pkt_get_sync_offset(&pacdec, &last);
	while (status >= 0 && split->npieces < split->max) {
		uint64_t target = ipt__seg_target(size, split->npieces,
						  split->max);

		/* The search starts at target: behind a sync offset one
		 * before it. */
		if (target <= last)
			target = last + 1;
		status = pt_pkt_sync_set(&pacdec, target - 1);
		if (status >= 0)
			status = pt_pkt_sync_forward(&pacdec);
		if (status >= 0)
			status = pt_pkt_get_sync_offset(&pacdec, &offset);
		if (status < 0 || offset <= last)
			break;
		split->pieces[split->npieces++].begin = offset;
		last = offset;
	}
	ipt__pkt_fini(&pacdec);
	return 0;
}

IPT_DEF struct ipt_seg_split *
ipt_seg_split_alloc(const struct pt_config *config, size_t max_pieces,
		    const struct ipt_seg_loop *ops, size_t state_size,
		    const struct ipt_allocator *allocator)
{
	struct ipt_seg_split *split;

	if (!config || !max_pieces || !ops || !ops->start || !ops->step ||
	    !ops->at || !ops->save || !ops->same || !state_size ||
	    max_pieces > (size_t) -1 / sizeof(struct ipt_seg_piece) ||
	    state_size > (size_t) -1 / ipt__seg_probe_max)
		return NULL;
	split = (struct ipt_seg_split *) ipt__own_alloc(
		allocator, IPT__OWN(struct ipt_seg_split));
	if (!split)
		return NULL;
	IPT__COPY(split->ops, *ops);
	split->state_size = state_size;
	split->max = max_pieces;
	split->pieces = (struct ipt_seg_piece *) ipt__zalloc(
		&split->allocator, max_pieces * sizeof(*split->pieces));
	if (!split->pieces || ipt__seg_spread(split, config) < 0) {
		ipt_seg_split_free(split);
		return NULL;
	}
	return split;
}

IPT_DEF void ipt_seg_split_free(struct ipt_seg_split *split)
{
	if (!split)
		return;
	ipt__free(&split->allocator, split->pieces,
		  split->max * sizeof(*split->pieces));
	ipt__own_free(split, IPT__OWN(struct ipt_seg_split));
}

IPT_DEF size_t ipt_seg_split_count(const struct ipt_seg_split *split)
{
	return split ? split->npieces : 0;
}

IPT_DEF const struct ipt_seg_piece *
ipt_seg_split_piece(const struct ipt_seg_split *split, size_t idx)
{
	if (!split || idx >= split->npieces)
		return NULL;
	return &split->pieces[idx];
}

IPT_DEF struct ipt_seg_worker *
ipt_seg_worker_alloc(const struct ipt_seg_split *split)
{
	struct ipt_seg_worker *w;
	size_t i, size;

	if (!split)
		return NULL;
	/* Each state aligned as the allocator's blocks are. */
	size = (split->state_size + 15u) & ~(size_t) 15u;
	w = (struct ipt_seg_worker *) ipt__zalloc(&split->allocator,
						  sizeof(*w));
	if (!w)
		return NULL;
	w->split = split;
	w->states = (unsigned char *) ipt__alloc(&split->allocator,
						 size * ipt__seg_probe_max);
	if (!w->states) {
		ipt__free(&split->allocator, w, sizeof(*w));
		return NULL;
	}
	for (i = 0; i < ipt__seg_probe_max; ++i)
		w->snaps[i].state = w->states + i * size;
	return w;
}

IPT_DEF void ipt_seg_worker_free(struct ipt_seg_worker *w)
{
	const struct ipt_allocator *a;
	size_t size;

	if (!w)
		return;
	a = &w->split->allocator;
	size = (w->split->state_size + 15u) & ~(size_t) 15u;
	ipt__free(a, w->states, size * ipt__seg_probe_max);
	ipt__free(a, w, sizeof(*w));
}

/* Forget the states behind offset, where the loop is: it never goes
 * back.  The others move to the front, in order. */
static void ipt__seg_drop_behind(struct ipt_seg_worker *w, uint64_t offset)
{
	size_t n = 0, i;

	while (n < w->nsnaps && w->snaps[n].offset < offset)
		n += 1;
	if (!n)
		return;
	for (i = n; i < w->nsnaps; ++i) {
		struct ipt__seg_snap snap = w->snaps[i - n];

		w->snaps[i - n] = w->snaps[i];
		w->snaps[i] = snap;
	}
	w->nsnaps -= n;
}

/* The states probe goes through from piece idx's PSB on, as far as the
 * loop needs: until one lies past offset, where the loop is.  Most joins
 * are at the first few, and a state is a copy of a decoder: taken as the
 * loop comes near, not all at once, and not where the loop has been (a
 * loop that took many steps at once may be far past the PSB).  After
 * ipt__seg_probe_max of them the probe gives up.  It goes on from where
 * this call left it, else starts over. */
static int ipt__seg_probe(struct ipt_seg_worker *w, size_t idx, void *probe,
			  uint64_t offset)
{
	const struct ipt_seg_loop *ops = &w->split->ops;
	uint64_t mark;
	int err;

	if (w->probed == idx)
		ipt__seg_drop_behind(w, offset);
	if (w->probed == idx &&
	    (w->ended || w->taken >= ipt__seg_probe_max ||
	     (w->nsnaps && w->snaps[w->nsnaps - 1].offset > offset)))
		return 0;
	if (w->probed != idx || !w->live) {
		w->probed = idx;
		w->nsnaps = 0;
		w->taken = 0;
		w->ended = ops->start(probe, w->split->pieces[idx].begin, 0) < 0;
		w->live = !w->ended;
	}
	while (!w->ended && w->taken < ipt__seg_probe_max &&
	       (!w->nsnaps || w->snaps[w->nsnaps - 1].offset <= offset)) {
		struct ipt__seg_snap *snap = &w->snaps[w->nsnaps];

		if (ops->at(probe, &snap->offset, &snap->mark) &&
		    snap->offset >= offset) {
			err = ops->save(probe, snap->state);
			if (err < 0) {
				w->probed = 0;
				return err;
			}
			w->nsnaps += 1;
			w->taken += 1;
		}
		w->ended = ops->step(probe, 1, &mark) == ipt_seg_done;
	}
	return 0;
}

/* Is loop, at offset, where the probe was at one of its states?  If so,
 * piece joins piece to there. */
static int ipt__seg_try_join(const struct ipt_seg_worker *w,
			     struct ipt_seg_piece *piece, void *loop,
			     uint64_t offset, size_t to)
{
	size_t j;

	for (j = 0; j < w->nsnaps; ++j) {
		const struct ipt__seg_snap *snap = &w->snaps[j];
		int kind;

		if (snap->offset != offset)
			continue;
		kind = w->split->ops.same(loop, snap->state);
		if (kind <= 0)
			continue;
		piece->join = kind;
		piece->join_to = to;
		piece->join_at = snap->mark;
		return 1;
	}
	return 0;
}

/* The next batch of steps, after one of batch steps that took the loop
 * over moved bytes of trace, with left bytes to go to the next piece's
 * PSB; zero within ipt__seg_near of it. */
static unsigned int ipt__seg_batch(unsigned int batch, uint64_t moved,
				   uint64_t left)
{
	if (left <= ipt__seg_near)
		return 0;
	left -= ipt__seg_near;
	if (moved > left / 4) {
		uint64_t fit = (uint64_t) batch * (left / 4) / moved;

		if (fit < ipt__seg_look_every)
			fit = ipt__seg_look_every;
		return (unsigned int) fit;
	}
	if (moved < left / 8 && batch < ipt__seg_batch_max)
		return batch * 2;
	return batch;
}

IPT_DEF int ipt_seg_decode(struct ipt_seg_worker *w, size_t idx, void *loop,
			   void *probe)
{
	const struct ipt_seg_split *split;
	const struct ipt_seg_loop *ops;
	struct ipt_seg_piece *piece;
	uint64_t offset, mark, last;
	size_t next;
	unsigned int steps, batch;
	int err;

	if (!w || !loop || !probe || idx >= w->split->npieces)
		return -pte_invalid;
	split = w->split;
	ops = &split->ops;
	piece = &split->pieces[idx];
	piece->end = 0;
	piece->join = 0;
	piece->join_to = 0;
	piece->join_at = 0;
	piece->nrserr = 0;
	w->live = 0;
	piece->failed = ops->start(loop, piece->begin, !idx) < 0;
	if (piece->failed)
		return 0;

	batch = ipt__seg_look_every;
	last = 0;
	for (next = idx + 1;;) {
		/* Until the loop nears the next piece, steps in batches;
		 * then one by one, looking for a join after each. */
		steps = next < split->npieces ? 1 : ipt__seg_batch_max;
		if (next < split->npieces && ops->at(loop, &offset, &mark)) {
			while (next + 1 < split->npieces &&
			       split->pieces[next + 1].begin <= offset)
				next += 1;
			if (split->pieces[next].begin > offset) {
				batch = ipt__seg_batch(batch, offset - last,
						       split->pieces[next].begin -
							       offset);
				last = offset;
				if (batch)
					steps = batch;
				else
					batch = ipt__seg_look_every;
			} else {
				err = ipt__seg_probe(w, next, probe, offset);
				if (err < 0)
					return err;
				if (ipt__seg_try_join(w, piece, loop, offset,
						      next)) {
					piece->end = mark;
					return 0;
				}
				/* Past every state the probe will take. */
				if (!w->nsnaps ||
				    w->snaps[w->nsnaps - 1].offset < offset)
					next += 1;
			}
		}

		switch (ops->step(loop, steps, &mark)) {
		case ipt_seg_go:
			continue;

		case ipt_seg_retstack:
			if (piece->nrserr < ipt_seg_rserr_max)
				piece->rserr[piece->nrserr] = mark;
			piece->nrserr += 1;
			continue;

		case ipt_seg_done:
			break;
		}
		break;
	}
	(void) ops->at(loop, &offset, &piece->end);
	return 0;
}

IPT_DEF int ipt_seg_rerun(const struct ipt_seg_split *split, size_t idx,
			  void *loop)
{
	uint64_t mark;
	int err;

	if (!split || !loop || idx >= split->npieces)
		return -pte_invalid;
	err = split->ops.start(loop, split->pieces[idx].begin, !idx);
	if (err < 0)
		return err;
	while (split->ops.step(loop, ipt__seg_batch_max, &mark) !=
	       ipt_seg_done)
		;
	return 0;
}

/* ---- the stitch ---- */

enum {
	ipt__stitch_range,
	ipt__stitch_join,
	ipt__stitch_rerun,
	ipt__stitch_done
};

IPT_DEF void ipt_seg_stitch_init(struct ipt_seg_stitch *st)
{
	if (!st)
		return;
	IPT_MEMSET(st, 0, sizeof(*st));
	st->again = (size_t) -1;
	st->phase = ipt__stitch_range;
}

/* Can the piece piece joined take over where it joined? */
static int ipt__seg_join_ok(const struct ipt_seg_split *split,
			    const struct ipt_seg_piece *piece)
{
	const struct ipt_seg_piece *to = &split->pieces[piece->join_to];

	return piece->join && !to->failed && piece->join_at <= to->end;
}

/* Where, at or after from, did piece first find its return stack empty?
 * Its end if it did not; from if it may have, uncounted. */
static uint64_t ipt__seg_rserr_from(const struct ipt_seg_piece *piece,
				    uint64_t from)
{
	size_t i;

	for (i = 0; i < piece->nrserr && i < ipt_seg_rserr_max; ++i)
		if (piece->rserr[i] >= from)
			return piece->rserr[i];
	return piece->nrserr > ipt_seg_rserr_max ? from : piece->end;
}

/* The piece st->idx is done: its range. */
static int ipt__seg_stitch_range(const struct ipt_seg_split *split,
				 struct ipt_seg_stitch *st,
				 struct ipt_seg_range *range)
{
	const struct ipt_seg_piece *piece = &split->pieces[st->idx];
	uint64_t end = piece->end;

	if (st->again != (size_t) -1)
		end = ipt__seg_rserr_from(piece, st->at);
	if (end < st->at)
		end = st->at;
	range->idx = st->idx;
	range->from = st->at;
	range->to = end;
	st->end = end;
	if (st->again != (size_t) -1) {
		st->since += end - st->at;
		if (end < piece->end) {
			st->phase = ipt__stitch_rerun;
			return 1;
		}
	}
	st->phase = ipt__stitch_join;
	if (piece->join)
		st->wait = piece->join_to;
	return 1;
}

/* The piece st->idx and the one it joined are done: follow the join. */
static void ipt__seg_stitch_join(const struct ipt_seg_split *split,
				 struct ipt_seg_stitch *st)
{
	const struct ipt_seg_piece *piece = &split->pieces[st->idx];
	int ok = ipt__seg_join_ok(split, piece);

	if (st->again == (size_t) -1 &&
	    (piece->join == 2 || (piece->join && !ok))) {
		st->again = st->idx;
		st->since = st->end;
	}
	if (!ok) {
		st->phase = piece->join ? ipt__stitch_rerun : ipt__stitch_done;
		return;
	}
	st->at = piece->join_at;
	st->idx = piece->join_to;
	st->wait = st->idx;
	st->phase = ipt__stitch_range;
}

IPT_DEF int ipt_seg_stitch_next(const struct ipt_seg_split *split,
				struct ipt_seg_stitch *st,
				struct ipt_seg_range *range)
{
	if (!split || !st || !range || st->idx >= split->npieces)
		return -pte_invalid;
	if (st->phase == ipt__stitch_join)
		ipt__seg_stitch_join(split, st);
	switch (st->phase) {
	case ipt__stitch_range:
		return ipt__seg_stitch_range(split, st, range);

	case ipt__stitch_rerun:
		range->idx = st->again;
		range->from = st->since;
		range->to = UINT64_MAX;
		st->phase = ipt__stitch_done;
		return 2;

	default:
		return 0;
	}
}

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

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

/* >>api-time: ipt_ extensions of the time layer */

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
 * Speed comes from two caches, both owned by the decoder, allocated once,
 * with a fixed number of entries:
 *
 *   - the instruction cache maps (address space, mode, IP) to a decoded
 *     instruction, so that neither the image's read callback nor Zydis is
 *     asked twice for the same instruction;
 *   - the run cache maps (address space, mode, IP) to the straight-line run
 *     of instructions starting there: how many, where the last one is, and
 *     what it needs (a TNT bit, a TIP, a return-stack pop, or nothing for a
 *     direct call or jump).  Steady-state decoding jumps from run to run.
 *
 * Entries are tagged with an epoch.  Changing the image, or its generation
 * counter moving (ipt_image_invalidate, adding or removing sections), starts
 * a new epoch and so drops every entry at once. */

/* The size of the caches, as a power of two number of entries. */
#ifndef IPT_BLK_ICACHE_BITS
#define IPT_BLK_ICACHE_BITS 11
#endif
#ifndef IPT_BLK_RCACHE_BITS
#define IPT_BLK_RCACHE_BITS 10
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

static void ipt__retstack_push(struct ipt__retstack *rs, uint64_t ip)
{
	uint8_t top = rs->top;

	rs->stack[top] = ip;
	top = (uint8_t) (top == IPT__RETSTACK_SIZE ? 0 : top + 1);
	if (top == rs->bottom)
		rs->bottom = (uint8_t) (rs->bottom == IPT__RETSTACK_SIZE ?
					0 : rs->bottom + 1);
	rs->top = top;
}

static int ipt__retstack_pop(struct ipt__retstack *rs, uint64_t *ip)
{
	uint8_t top = rs->top;

	if (top == rs->bottom)
		return -pte_retstack_empty;

	top = (uint8_t) (top ? top - 1 : IPT__RETSTACK_SIZE);
	rs->top = top;
	*ip = rs->stack[top];
	return 0;
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

/* A straight-line run of instructions from @ip to @end_ip.  All of them
 * lie in the section @isid, all in @mode. */
struct ipt__blk_run {
	uint64_t ip;
	uint64_t cr3;
	uint64_t vmcs;
	uint64_t end_ip;
	/* The branch displacement of the last instruction, for the direct and
	 * conditional kinds. */
	int64_t disp;
	int isid;
	uint32_t epoch;
	uint16_t ninsn;
	uint8_t mode;
	uint8_t kind;
	uint8_t iclass;
	uint8_t isize;
};

/* The longest run the cache records.  Longer straight lines are chained:
 * the run ends in ipt__run_next and the next run continues. */
enum { IPT__RUN_MAX = 0x400 };

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

	/* Instructions since the last TRIG anchor IP, if @has_icnt. */
	uint32_t icnt;

	enum pt_exec_mode mode;

	/* The event decoder's last status; negative once it failed. */
	int status;

	/* IPT__BOUND_* bits for @insn. */
	uint32_t bound;

	uint32_t enabled:1;
	uint32_t speculative:1;
	uint32_t has_tsc:1;
	uint32_t has_cbr:1;
	uint32_t has_icnt:1;
	uint32_t process_insn:1;

	/* The caches and what they are valid for. */
	struct ipt__blk_icache_entry *icache;
	struct ipt__blk_run *rcache;
	const struct pt_image *cache_image;
	uint64_t cache_gen;
	uint32_t epoch;
};

/* Make sure the caches describe the current image: a different image or a
 * new generation of it starts a new epoch.  Called once per public call,
 * never per instruction. */
static void ipt__blk_cache_sync(struct pt_block_decoder *decoder)
{
	uint64_t gen;

	gen = ipt__image_generation(decoder->image);
	if (IPT__LIKELY(decoder->cache_image == decoder->image &&
			decoder->cache_gen == gen))
		return;

	decoder->cache_image = decoder->image;
	decoder->cache_gen = gen;
	decoder->epoch += 1;
	if (!decoder->epoch) {
		/* After 2^32 epochs, old tags could look current again. */
		IPT_MEMSET(decoder->icache, 0,
			   sizeof(*decoder->icache) << IPT_BLK_ICACHE_BITS);
		IPT_MEMSET(decoder->rcache, 0,
			   sizeof(*decoder->rcache) << IPT_BLK_RCACHE_BITS);
		decoder->epoch = 1;
	}
}

static uint32_t ipt__blk_hash(uint64_t ip, const struct pt_asid *asid,
			      enum pt_exec_mode mode, unsigned int bits)
{
	uint64_t h;

	h = ip ^ (asid->cr3 * 0x9e3779b97f4a7c15ull) ^
	    (asid->vmcs * 0xc2b2ae3d27d4eb4full) ^ (uint64_t) mode;
	h *= 0xff51afd7ed558ccdull;
	return (uint32_t) (h >> (64 - bits));
}

/* Decode the instruction at @insn->ip in @insn->mode, from the instruction
 * cache when we can.  Leaves @insn->speculative alone.
 *
 * Returns zero on success, a negative pte_* code as ipt__insn_decode. */
static int ipt__blk_decode(struct pt_block_decoder *decoder,
			   struct pt_insn *insn, struct ipt__insn_ext *iext)
{
	struct ipt__blk_icache_entry *entry;
	uint32_t speculative;
	int status;

	entry = &decoder->icache[ipt__blk_hash(insn->ip, &decoder->asid,
					       insn->mode,
					       IPT_BLK_ICACHE_BITS)];
	speculative = insn->speculative;
	if (entry->epoch == decoder->epoch && entry->insn.ip == insn->ip &&
	    entry->insn.mode == insn->mode &&
	    entry->cr3 == decoder->asid.cr3 &&
	    entry->vmcs == decoder->asid.vmcs) {
		*insn = entry->insn;
		*iext = entry->iext;
		insn->speculative = speculative;
		return 0;
	}

	status = ipt__insn_decode(insn, iext, decoder->image, &decoder->asid);
	if (status < 0)
		return status;

	/* A truncated instruction was put together from several sections;
	 * it is rare, and always read afresh. */
	if (!insn->truncated) {
		entry->cr3 = decoder->asid.cr3;
		entry->vmcs = decoder->asid.vmcs;
		entry->epoch = decoder->epoch;
		entry->insn = *insn;
		entry->insn.speculative = 0;
		entry->iext = *iext;
	}
	return 0;
}

/* ---- state ---- */

/* The TRIG anchor: a TRIG packet counts instructions from the last IP the
 * trace gave us (from a TIP, FUP, ...).  After each event we learn whether
 * it provides such an anchor.  Events from packets without IP leave the
 * anchor alone; disables drop it. */
static int ipt__blk_update_trig_anchor(struct pt_block_decoder *decoder,
				       const struct pt_event *ev)
{
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

	default:
		return -pte_internal;
	}

	decoder->has_icnt = 1;
	decoder->icnt = 0;
	return 0;
}

/* We are done with the current event: remember its time and get the next
 * one.  An event decoder error is kept in @status and reported when we
 * get to it. */
static int ipt__blk_fetch_event(struct pt_block_decoder *decoder)
{
	struct pt_event *ev = &decoder->event;
	int status;

	decoder->tsc = ev->tsc;
	decoder->has_tsc = ev->has_tsc;
	decoder->lost_mtc = ev->lost_mtc;
	decoder->lost_cyc = ev->lost_cyc;

	status = ipt__blk_update_trig_anchor(decoder, ev);
	if (status < 0)
		return status;

	status = pt_evt_next(&decoder->evdec, ev, sizeof(*ev));
	if (status < 0) {
		decoder->status = status;
		IPT_MEMSET(ev, 0xff, sizeof(*ev));
	}
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
	IPT_MEMSET(&decoder->event, 0xff, sizeof(decoder->event));
	ipt__retstack_init(&decoder->retstack);
	pt_asid_init(&decoder->asid);
}

static int ipt__blk_decoder_init(struct pt_block_decoder *decoder,
				 const struct pt_config *uconfig)
{
	struct pt_config config;
	int status;

	status = ipt__config_from_user(&config, uconfig);
	if (status < 0)
		return status;

	decoder->flags = config.flags;

	/* The event decoder gets the flags that concern it. */
	IPT_MEMSET(&config.flags, 0, sizeof(config.flags));
	config.flags.variant.event.keep_tcal_on_ovf =
		decoder->flags.variant.block.keep_tcal_on_ovf;
	config.flags.variant.event.enable_iflags_events =
		decoder->flags.variant.block.enable_iflags_events;

	status = ipt__evt_decoder_init(&decoder->evdec, &config);
	if (status < 0)
		return status;

	decoder->default_image = pt_image_alloc(NULL);
	decoder->icache = (struct ipt__blk_icache_entry *)
		ipt__zalloc(sizeof(*decoder->icache) << IPT_BLK_ICACHE_BITS);
	decoder->rcache = (struct ipt__blk_run *)
		ipt__zalloc(sizeof(*decoder->rcache) << IPT_BLK_RCACHE_BITS);
	if (!decoder->default_image || !decoder->icache ||
	    !decoder->rcache) {
		pt_image_free(decoder->default_image);
		ipt__free(decoder->icache,
			  sizeof(*decoder->icache) << IPT_BLK_ICACHE_BITS);
		ipt__free(decoder->rcache,
			  sizeof(*decoder->rcache) << IPT_BLK_RCACHE_BITS);
		ipt__evt_decoder_fini(&decoder->evdec);
		return -pte_nomem;
	}

	decoder->image = decoder->default_image;
	decoder->cache_image = NULL;
	decoder->cache_gen = 0;
	decoder->epoch = 1;
	ipt__blk_reset(decoder);
	return 0;
}

static void ipt__blk_decoder_fini(struct pt_block_decoder *decoder)
{
	ipt__free(decoder->rcache,
		  sizeof(*decoder->rcache) << IPT_BLK_RCACHE_BITS);
	ipt__free(decoder->icache,
		  sizeof(*decoder->icache) << IPT_BLK_ICACHE_BITS);
	pt_image_free(decoder->default_image);
	ipt__evt_decoder_fini(&decoder->evdec);
}

IPT_DEF struct pt_block_decoder *
pt_blk_alloc_decoder(const struct pt_config *config)
{
	struct pt_block_decoder *decoder;

	decoder = (struct pt_block_decoder *) ipt__zalloc(sizeof(*decoder));
	if (!decoder)
		return NULL;

	if (ipt__blk_decoder_init(decoder, config) < 0) {
		ipt__free(decoder, sizeof(*decoder));
		return NULL;
	}
	return decoder;
}

IPT_DEF void pt_blk_free_decoder(struct pt_block_decoder *decoder)
{
	if (!decoder)
		return;

	ipt__blk_decoder_fini(decoder);
	ipt__free(decoder, sizeof(*decoder));
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

		saved = decoder->evdec;
		tnt = *ev;

		status = pt_evt_next(&decoder->evdec, ev, sizeof(*ev));
		if (status < 0 || ev->type != ptev_tip) {
			decoder->evdec = saved;
			*ev = tnt;
			return -pte_bad_query;
		}

		/* No tick for this TIP: the TNT must stay current. */
		decoder->ip = ev->variant.tip.ip;
		*ev = tnt;
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
	default:
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

	IPT_MEMSET(insn, 0, sizeof(*insn));
	IPT_MEMSET(iext, 0, sizeof(*iext));
	insn->mode = decoder->mode;
	insn->ip = decoder->ip;

	status = ipt__blk_decode(decoder, insn, iext);
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

/* Walk the code without trace until @decoder->ip reaches @ip.
 *
 * On 1, @decoder->ip == @ip and @insn is the instruction before it, if we
 * moved at all.  Otherwise as ipt__blk_proceed_to_insn. */
static int ipt__blk_proceed_to_ip(struct pt_block_decoder *decoder,
				  struct pt_block *block,
				  struct pt_insn *insn,
				  struct ipt__insn_ext *iext, uint64_t ip)
{
	int status;

	for (;;) {
		if (decoder->ip == ip)
			return 1;

		status = ipt__blk_proceed_one_insn(decoder, block, insn, iext);
		if (status <= 0)
			return status;

		status = ipt__insn_next_ip(&decoder->ip, insn, iext);
		if (status < 0)
			return status;

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

	default:
		return 0;
	}
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
 * it bound to.  Tracing will likely resume after a call returns; after
 * anything else we cannot guess. */
static void ipt__blk_set_disable_resume_ip(struct pt_block_decoder *decoder,
					   const struct pt_insn *insn)
{
	if (insn->iclass == ptic_call || insn->iclass == ptic_far_call)
		decoder->ip = insn->ip + insn->size;
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

	IPT_MEMSET(&insn, 0, sizeof(insn));
	IPT_MEMSET(&iext, 0, sizeof(iext));
	insn.mode = decoder->mode;
	insn.ip = ev->variant.async_disabled.at;

	if (ipt__blk_decode(decoder, &insn, &iext) < 0)
		return 0;

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
	decoder->insn = *insn;
	decoder->iext = *iext;
	return ipt__blk_status(decoder, pts_event_pending);
}

static void ipt__blk_clear_postponed_insn(struct pt_block_decoder *decoder)
{
	decoder->process_insn = 0;
	decoder->bound = 0;
}

/* Proceed past a postponed instruction, with trace if it needs it. */
static int ipt__blk_proceed_postponed_insn(struct pt_block_decoder *decoder)
{
	int status;

	if (!decoder->process_insn)
		return 0;

	if (decoder->enabled) {
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
	default:
		*bit = 0;
		return NULL;
	}
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
	default:
		return 0;
	}
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
	uint32_t bit;
	int status;

	IPT_MEMSET(&insn, 0, sizeof(insn));
	IPT_MEMSET(&iext, 0, sizeof(iext));

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
			ipt__blk_set_disable_resume_ip(decoder, &insn);
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

		decoder->bound |= bit;
		return ipt__blk_postpone_insn(decoder, &insn, &iext);

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

	default:
		return -pte_internal;
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

/* Record the run starting at @decoder->ip in @run.
 *
 * The run follows the code while the next IP is known without trace, up to
 * and including the first instruction that needs trace or is a direct near
 * call or jump (those update the return stack or may end the block on the
 * user's request).  It stops early, before an instruction in a different
 * section, one that cannot be decoded in one piece, or after IPT__RUN_MAX
 * instructions.
 *
 * Returns @run, or NULL if not even the first instruction qualifies: the
 * caller then walks instruction by instruction, which reports errors. */
static const struct ipt__blk_run *
ipt__blk_run_fill(struct pt_block_decoder *decoder, struct ipt__blk_run *run)
{
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	uint64_t ip = decoder->ip;
	uint16_t ninsn = 0;
	uint8_t kind;

	for (;;) {
		uint64_t next;
		int status;

		IPT_MEMSET(&insn, 0, sizeof(insn));
		IPT_MEMSET(&iext, 0, sizeof(iext));
		insn.mode = decoder->mode;
		insn.ip = ip;

		status = ipt__blk_decode(decoder, &insn, &iext);
		if (status < 0 || insn.truncated ||
		    (ninsn && insn.isid != run->isid))
			break;

		status = ipt__insn_next_ip(&next, &insn, &iext);
		if (status < 0 && status != -pte_bad_query)
			break;

		run->isid = insn.isid;
		run->end_ip = insn.ip;
		run->iclass = (uint8_t) insn.iclass;
		run->isize = insn.size;
		run->disp = iext.variant.branch.displacement;
		ninsn += 1;

		if (status < 0) {
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
			default:
				kind = ipt__run_indirect;
				break;
			}
			goto done;
		}

		if (insn.iclass == ptic_call) {
			kind = ipt__run_dcall;
			goto done;
		}
		if (insn.iclass == ptic_jump) {
			kind = ipt__run_djump;
			goto done;
		}

		run->disp = 0;
		if (ninsn == IPT__RUN_MAX) {
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
	run->ip = decoder->ip;
	run->cr3 = decoder->asid.cr3;
	run->vmcs = decoder->asid.vmcs;
	run->mode = (uint8_t) decoder->mode;
	run->ninsn = ninsn;
	run->kind = kind;
	run->epoch = decoder->epoch;
	return run;
}

static const struct ipt__blk_run *
ipt__blk_run_lookup(struct pt_block_decoder *decoder)
{
	struct ipt__blk_run *run;

	run = &decoder->rcache[ipt__blk_hash(decoder->ip, &decoder->asid,
					     decoder->mode,
					     IPT_BLK_RCACHE_BITS)];
	if (IPT__LIKELY(run->epoch == decoder->epoch &&
			run->ip == decoder->ip &&
			run->mode == (uint8_t) decoder->mode &&
			run->cr3 == decoder->asid.cr3 &&
			run->vmcs == decoder->asid.vmcs))
		return run;

	/* Not filled yet, or the slot holds another run: (re)fill it. */
	run->epoch = 0;
	return ipt__blk_run_fill(decoder, run);
}

/* No event binds before the next branch that needs trace: go there run by
 * run, then take that branch with trace.  This also proceeds to the start
 * IP of the next block.
 *
 * Returns zero on success, a negative pte_* code otherwise. */
static int ipt__blk_proceed_no_event(struct pt_block_decoder *decoder,
				     struct pt_block *block)
{
	for (;;) {
		const struct ipt__blk_run *run;
		uint64_t next;
		uint32_t ninsn;

		run = ipt__blk_run_lookup(decoder);
		if (!run)
			return ipt__blk_proceed_no_event_uncached(decoder,
								  block);

		/* Blocks do not cross sections. */
		if (run->isid != block->isid) {
			if (!ipt__blk_block_is_empty(block))
				return 0;
			block->isid = run->isid;
		}

		/* A run that does not fit ends the block; it will fit into
		 * the next, empty one. */
		ninsn = (uint32_t) block->ninsn + run->ninsn;
		if (ninsn > UINT16_MAX)
			return 0;

		if (decoder->has_icnt) {
			uint32_t icnt = decoder->icnt + run->ninsn;

			if (icnt < decoder->icnt)
				return -pte_overflow;
			decoder->icnt = icnt;
		}

		block->ninsn = (uint16_t) ninsn;
		block->end_ip = run->end_ip;
		block->iclass = (enum pt_insn_class) run->iclass;

		next = run->end_ip + run->isize;
		decoder->ip = run->end_ip;

		switch ((enum ipt__run_kind) run->kind) {
		case ipt__run_cond: {
			int taken = ipt__blk_cond_branch(decoder);

			if (taken < 0)
				return taken;
			if (taken)
				next += (uint64_t) run->disp;
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
			decoder->ip = next + (uint64_t) run->disp;
			if (decoder->flags.variant.block.end_on_call)
				return 0;
			break;

		case ipt__run_djump:
			decoder->ip = next + (uint64_t) run->disp;
			if (decoder->flags.variant.block.end_on_jump)
				return 0;
			break;

		case ipt__run_next:
			decoder->ip = next;
			break;

		default:
			return -pte_internal;
		}
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

	default:
		return ipt__blk_proceed_event(decoder, block);
	}
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

	if (ipt__blk_decode(decoder, &insn, &iext) < 0)
		return 0;
	if (!ipt__insn_is_branch(&insn, &iext))
		return 0;

	status = ipt__insn_range_is_contiguous(decoder->ip, ev->variant.tsx.ip,
					       decoder->mode, decoder->image,
					       &decoder->asid,
					       IPT__BDM64_MAX_STEPS);
	if (status > 0)
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
	if (ev->ip_suppressed)
		return 0;

	if (block) {
		const struct pt_config *config;

		config = pt_evt_get_config(&decoder->evdec);
		if (!config)
			return -pte_internal;

		if (config->errata.bdm64 &&
		    ipt__blk_handle_bdm64(decoder, block, ev) < 0)
			return 1;
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
			ipt__blk_set_disable_resume_ip(decoder, &decoder->insn);
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

	default:
		return -pte_internal;
	}

none:
	/* Nothing applies here.  Proceed past any postponed instruction. */
	status = ipt__blk_proceed_postponed_insn(decoder);
	if (status < 0)
		return status;
	return ipt__blk_status(decoder, 0);
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

/* We just synchronized.  Learn from the PSB+ status updates whether tracing
 * is enabled and where, on a copy of the event decoder: the user still gets
 * to see those events.  Then fetch the first event. */
static int ipt__blk_start(struct pt_block_decoder *decoder)
{
	struct pt_event_decoder evdec;
	struct pt_event ev;
	int status;

	evdec = decoder->evdec;
	for (;;) {
		/* Only the PSB+ we synchronized onto, not an adjacent one. */
		if (ipt__blk_evt_offset(&evdec) !=
		    ipt__blk_evt_offset(&decoder->evdec))
			break;

		status = pt_evt_next(&evdec, &ev, sizeof(ev));
		if (status < 0) {
			if (status != -pte_eos)
				return status;
			break;
		}

		if (!ev.status_update)
			break;

		if (ev.type == ptev_enabled) {
			decoder->enabled = 1;
			decoder->ip = ev.variant.enabled.ip;
			break;
		}
	}

	decoder->status = pt_evt_next(&decoder->evdec, &decoder->event,
				      sizeof(decoder->event));
	return ipt__blk_proceed_trailing_event(decoder, NULL);
}

IPT_DEF int pt_blk_sync_forward(struct pt_block_decoder *decoder)
{
	int status;

	if (!decoder)
		return -pte_invalid;

	ipt__blk_reset(decoder);
	status = pt_evt_sync_forward(&decoder->evdec);
	if (status < 0)
		return status;
	return ipt__blk_start(decoder);
}

IPT_DEF int pt_blk_sync_backward(struct pt_block_decoder *decoder)
{
	uint64_t start, sync, pos;
	int status;

	if (!decoder)
		return -pte_invalid;

	/* Not synchronized yet: start from the end of the trace. */
	if (pt_evt_get_offset(&decoder->evdec, &start) < 0) {
		const struct pt_config *config;

		config = pt_evt_get_config(&decoder->evdec);
		if (!config)
			return -pte_internal;
		if (!config->begin || !config->end)
			return -pte_bad_config;
		start = (uint64_t) (config->end - config->begin);
	}

	sync = start;
	for (;;) {
		ipt__blk_reset(decoder);

		do {
			status = pt_evt_sync_backward(&decoder->evdec);
			if (status < 0)
				return status;
			pos = ipt__blk_evt_offset(&decoder->evdec);
		} while (sync <= pos);

		sync = pos;

		status = ipt__blk_start(decoder);
		if (status < 0) {
			/* A trace segment at the end without a complete PSB+
			 * does not count. */
			if (status != -pte_eos)
				return status;
			continue;
		}

		/* Starting in or right after PSB+ may bring us back to the
		 * same PSB: go further back. */
		if (ipt__blk_evt_offset(&decoder->evdec) < start)
			return 0;
	}
}

IPT_DEF int pt_blk_sync_set(struct pt_block_decoder *decoder, uint64_t offset)
{
	int status;

	if (!decoder)
		return -pte_invalid;

	ipt__blk_reset(decoder);
	status = pt_evt_sync_set(&decoder->evdec, offset);
	if (status < 0)
		return status;
	return ipt__blk_start(decoder);
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

IPT_DEF int pt_blk_next(struct pt_block_decoder *decoder,
			struct pt_block *ublock, size_t size)
{
	struct pt_block local, *block;
	int status;

	if (!decoder || !ublock)
		return -pte_invalid;

	ipt__blk_cache_sync(decoder);

	block = size == sizeof(local) ? ublock : &local;
	IPT_MEMSET(block, 0, sizeof(*block));

	/* Where the last call left us; events may still change it. */
	block->ip = decoder->ip;
	block->mode = decoder->mode;
	block->speculative = decoder->speculative;

	status = ipt__blk_proceed(decoder, block);

	ipt__blk_block_to_user(ublock, size, block);
	return status;
}

/* ---- events ---- */

static int ipt__blk_process_enabled(struct pt_block_decoder *decoder,
				    const struct pt_event *ev)
{
	/* A status update just confirms what we know. */
	if (ev->status_update)
		return decoder->enabled ? 0 : -pte_bad_status_update;

	if (ev->ip_suppressed)
		return -pte_noip;
	if (decoder->enabled)
		return -pte_bad_context;

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

IPT_DEF int pt_blk_event(struct pt_block_decoder *decoder,
			 struct pt_event *uevent, size_t size)
{
	struct pt_event *ev;
	int status;

	if (!decoder || !uevent)
		return -pte_invalid;

	status = decoder->status;
	if (status < 0)
		return status;

	/* Never write past the user's struct; an older one lacks only what
	 * its user cannot know about. */
	if (size > sizeof(*ev))
		size = sizeof(*ev);

	ev = &decoder->event;
	switch (ev->type) {
	case ptev_tnt:
		return ipt__blk_tnt_tick(decoder, uevent, size);

	case ptev_tip:
		return -pte_bad_query;

	case ptev_enabled:
		/* Tracing resumes where it stopped. */
		if (ev->variant.enabled.ip == decoder->ip)
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
		decoder->asid.cr3 = ev->variant.paging.cr3;
		break;

	case ptev_async_vmcs:
		if (!ev->ip_suppressed &&
		    decoder->ip != ev->variant.async_vmcs.ip)
			return -pte_bad_query;
		/* fall through */
	case ptev_vmcs:
		decoder->asid.vmcs = ev->variant.vmcs.base;
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
		decoder->has_cbr = 1;
		decoder->cbr = ev->variant.cbr.ratio;
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

	default:
		return -pte_internal;
	}

	IPT_MEMCPY(uevent, ev, size);

	status = ipt__blk_fetch_event(decoder);
	if (status < 0)
		return status;
	return ipt__blk_proceed_trailing_event(decoder, NULL);
}

/* ---- resynchronization ---- */

/* After an error, find a place to continue from in the events ahead: the
 * first event that tells us an IP, or whether tracing is on.  Events up to
 * there are dropped; state they carry (paging, vmcs) is applied. */
IPT_DEF int pt_blk_resync(struct pt_block_decoder *decoder)
{
	struct pt_event *ev;
	int status;

	if (!decoder)
		return -pte_invalid;

	ipt__blk_clear_postponed_insn(decoder);

	ev = &decoder->event;
	for (;;) {
		status = decoder->status;
		if (status < 0)
			return status;

		/* Somewhere inside PSB+: start over at its beginning. */
		if (ev->status_update) {
			uint64_t offset;

			status = pt_blk_get_sync_offset(decoder, &offset);
			if (status < 0)
				return status;
			return pt_blk_sync_set(decoder, offset);
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
			decoder->asid.cr3 = ev->variant.paging.cr3;
			break;

		case ptev_async_vmcs:
			if (!ev->ip_suppressed) {
				decoder->ip = ev->variant.async_vmcs.ip;
				return ipt__blk_status(decoder,
						       pts_event_pending);
			}
			/* fall through */
		case ptev_vmcs:
			decoder->asid.vmcs = ev->variant.vmcs.base;
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

		default:
			return -pte_internal;
		}

		status = ipt__blk_fetch_event(decoder);
		if (status < 0)
			return status;
	}
}

/* ==== >>insn  instruction decoder ========================================
 * One instruction at a time, on top of the block decoder.
 *
 * It asks the block decoder for a block and hands out its instructions one
 * by one, decoding each through the block decoder's instruction cache (so
 * the image is read once per instruction, not once per execution).  Status
 * flags and errors of a block are held back until its last instruction;
 * events are indicated between blocks. */

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
};

static void ipt__insn_reset(struct pt_insn_decoder *decoder)
{
	IPT_MEMSET(&decoder->block, 0, sizeof(decoder->block));
	decoder->status = 0;
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
	return ipt__blk_decoder_init(&decoder->blkdec, &config);
}

IPT_DEF struct pt_insn_decoder *
pt_insn_alloc_decoder(const struct pt_config *config)
{
	struct pt_insn_decoder *decoder;

	decoder = (struct pt_insn_decoder *) ipt__zalloc(sizeof(*decoder));
	if (!decoder)
		return NULL;

	if (ipt__insn_decoder_init(decoder, config) < 0) {
		ipt__free(decoder, sizeof(*decoder));
		return NULL;
	}
	return decoder;
}

IPT_DEF void pt_insn_free_decoder(struct pt_insn_decoder *decoder)
{
	if (!decoder)
		return;

	ipt__blk_decoder_fini(&decoder->blkdec);
	ipt__free(decoder, sizeof(*decoder));
}

/* Remember a (re)synchronization's status for the first block. */
static int ipt__insn_synced(struct pt_insn_decoder *decoder, int status)
{
	if (status >= 0)
		decoder->status = status;
	return status;
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

IPT_DEF int pt_insn_next(struct pt_insn_decoder *decoder,
			 struct pt_insn *uinsn, size_t size)
{
	struct ipt__insn_ext iext;
	struct pt_insn local, *insn;
	struct pt_block *block;
	int status;

	if (!decoder || !uinsn)
		return -pte_invalid;

	insn = size == sizeof(local) ? uinsn : &local;
	block = &decoder->block;

	/* On errors the user gets at least IP and mode. */
	IPT_MEMSET(insn, 0, sizeof(*insn));
	ipt__insn_from_block(insn, block);

	while (!block->ninsn) {
		/* Errors and events belong to the end of a block. */
		status = decoder->status;
		if (status < 0)
			goto out;

		/* The event should have been fetched after the last one. */
		if (status & pts_event_pending) {
			status = -pte_event_ignored;
			goto out;
		}

		status = pt_blk_next(&decoder->blkdec, block, sizeof(*block));
		decoder->status = status;
		ipt__insn_from_block(insn, block);

		if (block->ninsn)
			break;

		/* An empty block: an error or event shows now. */
		if (status < 0)
			goto out;
		if (status & pts_event_pending) {
			status = -pte_event_ignored;
			goto out;
		}
	}

	ipt__blk_cache_sync(&decoder->blkdec);

	/* A truncated last instruction comes with its bytes. */
	if (block->truncated && block->ninsn == 1) {
		IPT_MEMCPY(insn->raw, block->raw, block->size);
		insn->size = block->size;
		status = ipt__ild_decode(insn, &iext);
	} else {
		status = ipt__blk_decode(&decoder->blkdec, insn, &iext);
	}
	if (status < 0)
		goto out;

	ipt__insn_to_user(uinsn, size, insn);

	/* Hold back the block's status until its last instruction. */
	block->ninsn -= 1;
	if (block->ninsn)
		return ipt__insn_next_ip(&block->ip, insn, &iext);

	if (block->ip != block->end_ip)
		return -pte_internal;
	return decoder->status;

out:
	ipt__insn_to_user(uinsn, size, insn);
	return status;
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

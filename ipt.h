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
 * Returns zero, -pte_invalid if image is NULL. */
IPT_API int ipt_image_invalidate(struct pt_image *image,
				 const struct pt_asid *asid, uint64_t begin,
				 uint64_t end);
IPT_API int ipt_image_set_cache_limit(struct pt_image *image, uint64_t bytes);

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
 *   int ipt__image_init(struct pt_image *, const char *name);
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
 *   int ipt__asid_from_user(struct pt_asid *, const struct pt_asid *user);
 *   int ipt__asid_to_user(struct pt_asid *user, const struct pt_asid *,
 *                         size_t size);
 *   int ipt__asid_match(const struct pt_asid *, const struct pt_asid *);
 *
 * Nothing here is locked: an image, or an image section cache together
 * with the images holding its sections, is for one thread at a time (libipt
 * locks sections and its cache; ipt.h has no threads).  The callback must
 * not change the image it reads for. */

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

static char *ipt__strdup(const char *str, size_t *psize)
{
	size_t size;
	char *copy;

	*psize = 0;
	if (!str)
		return NULL;
	for (size = 0; str[size]; ++size)
		;
	size += 1;
	copy = (char *) ipt__alloc(size);
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
 * little over 4 KiB each, plus a hash table of at most 64 Ki pointers.
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
 * each read of unmapped memory calls the callback. */

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

static void ipt__pcache_free_spares(struct ipt__pcache *pc)
{
	while (pc->spare) {
		struct ipt__page *page = pc->spare;

		pc->spare = page->chain;
		ipt__free(page, sizeof(*page));
		pc->npages -= 1;
	}
}

/* Forgets everything; keeps the limit. */
static void ipt__pcache_clear(struct ipt__pcache *pc)
{
	while (pc->newest) {
		struct ipt__page *page = pc->newest;

		pc->newest = page->older;
		ipt__free(page, sizeof(*page));
		pc->npages -= 1;
	}
	pc->oldest = NULL;
	ipt__pcache_free_spares(pc);
	ipt__free(pc->buckets, pc->nbuckets * sizeof(*pc->buckets));
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

/* An entry to fill: a spare one, a new one within the limit, or the least
 * recently used one.  NULL if there is no memory for any. */
static struct ipt__page *ipt__pcache_take(struct ipt__pcache *pc)
{
	struct ipt__page *page;

	if (!pc->buckets) {
		uint64_t want = pc->max_pages;
		uint32_t n = 16;

		while (n < want && n < IPT__PAGE_BUCKETS_MAX)
			n <<= 1;
		pc->buckets = (struct ipt__page **) ipt__zalloc(
			n * sizeof(*pc->buckets));
		if (!pc->buckets)
			return NULL;
		pc->nbuckets = n;
	}

	page = pc->spare;
	if (page) {
		pc->spare = page->chain;
		page->chain = NULL;
		return page;
	}

	if (pc->npages < pc->max_pages) {
		page = (struct ipt__page *) ipt__alloc(sizeof(*page));
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

	page = ipt__pcache_take(pc);
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
 * the image section cache.  Its bytes are read in chunks of 64 KiB when
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

#define IPT__CHUNK_SHIFT 16
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

	section = (struct ipt__section *) ipt__zalloc(sizeof(*section));
	if (!section)
		return -pte_nomem;
	section->filename = ipt__strdup(filename, &section->filename_size);
	if (!section->filename) {
		ipt__free(section, sizeof(*section));
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
			ipt__free(section->chunks[i],
				  ipt__chunk_size(section, i));
		ipt__free(section->chunks,
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
	if (!section)
		return;
	if (--section->ucount)
		return;
	ipt__section_unload(section);
	ipt__free(section->filename, section->filename_size);
	ipt__free(section, sizeof(*section));
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
			(size_t) n * sizeof(*section->chunks));
		if (!section->chunks)
			return -pte_nomem;
		section->nchunks = (size_t) n;
	}

	size = ipt__chunk_size(section, index);
	data = (uint8_t *) ipt__alloc(size);
	if (!data)
		return -pte_nomem;
	errcode = ipt__file_read(section->filename, data, size,
				 section->offset +
					 ((uint64_t) index << IPT__CHUNK_SHIFT));
	if (errcode < 0) {
		ipt__free(data, size);
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

static struct ipt__msec *ipt__msec_mk(struct ipt__section *section,
				      const struct pt_asid *asid,
				      uint64_t vaddr, uint64_t offset,
				      uint64_t size, int isid)
{
	struct ipt__msec *msec;

	if (ipt__section_get(section) < 0)
		return NULL;
	msec = (struct ipt__msec *) ipt__zalloc(sizeof(*msec));
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

static void ipt__msec_free(struct ipt__msec *msec)
{
	ipt__section_put(msec->section);
	ipt__free(msec, sizeof(*msec));
}

static void ipt__msec_free_list(struct ipt__msec *list)
{
	while (list) {
		struct ipt__msec *next = list->next;

		ipt__msec_free(list);
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

	next = ipt__msec_mk(section, asid, begin, offset, size, isid);
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
			fresh = ipt__msec_mk(cur->section, &cur->asid, lbegin,
					     cur->offset, begin - lbegin,
					     cur->isid);
			if (!fresh) {
				errcode = -pte_nomem;
				break;
			}
			fresh->next = next;
			next = fresh;
		}
		if (end < lend) {
			fresh = ipt__msec_mk(cur->section, &cur->asid, end,
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
		ipt__msec_free_list(next);
		for (; *list; list = &(*list)->next)
			;
		*list = removed;
		return errcode;
	}

	ipt__msec_free_list(removed);
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

/* ---- the image ---- */

static IPT__UNUSED int ipt__image_init(struct pt_image *image,
				       const char *name)
{
	if (!image)
		return -pte_internal;
	IPT_MEMSET(image, 0, sizeof(*image));
	image->pages.max_pages = ipt__pcache_pages(IPT_IMAGE_CACHE_LIMIT);
	if (name) {
		image->name = ipt__strdup(name, &image->name_size);
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
	ipt__msec_free_list(image->sections);
#endif
	ipt__pcache_clear(&image->pages);
	ipt__free(image->name, image->name_size);
	IPT_MEMSET(image, 0, sizeof(*image));
}

static IPT__UNUSED uint64_t ipt__image_generation(const struct pt_image *image)
{
	return image ? image->generation : 0;
}

static IPT__UNUSED int ipt__image_read(struct pt_image *image, int *isid,
				       uint8_t *buffer, uint16_t size,
				       const struct pt_asid *asid,
				       uint64_t addr)
{
	if (!image || !isid || !buffer)
		return -pte_internal;
#ifndef IPT_NO_STDIO
	if (image->sections) {
		int status;

		status = ipt__image_read_sections(image, isid, buffer, size,
						  asid, addr);
		if (status != -pte_nomap)
			return status;
	}
#endif
	return ipt__image_read_callback(image, isid, buffer, size, asid, addr);
}

IPT_DEF struct pt_image *pt_image_alloc(const char *name)
{
	struct pt_image *image;

	image = (struct pt_image *) ipt__alloc(sizeof(*image));
	if (image && ipt__image_init(image, name) < 0) {
		ipt__free(image, sizeof(*image));
		image = NULL;
	}
	return image;
}

IPT_DEF void pt_image_free(struct pt_image *image)
{
	if (!image)
		return;
	ipt__image_fini(image);
	ipt__free(image, sizeof(*image));
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
	ipt__pcache_clear(&image->pages);
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
	ipt__pcache_clear(&image->pages);
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
			ipt__msec_free(msec);
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
			ipt__msec_free(msec);
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
	errcode = ipt__section_mk(&section, filename, offset, size);
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

IPT_DEF struct pt_image_section_cache *pt_iscache_alloc(const char *name)
{
	struct pt_image_section_cache *iscache;

	iscache = (struct pt_image_section_cache *) ipt__zalloc(
		sizeof(*iscache));
	if (!iscache)
		return NULL;
	iscache->limit = UINT64_MAX;
	if (name) {
		iscache->name = ipt__strdup(name, &iscache->name_size);
		if (!iscache->name) {
			ipt__free(iscache, sizeof(*iscache));
			return NULL;
		}
	}
	return iscache;
}

IPT_DEF void pt_iscache_free(struct pt_image_section_cache *iscache)
{
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
	ipt__free(iscache->entries,
		  iscache->capacity * sizeof(*iscache->entries));
	ipt__free(iscache->name, iscache->name_size);
	ipt__free(iscache, sizeof(*iscache));
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
		errcode = ipt__section_mk(&fresh, filename, offset, size);
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
			iscache->entries,
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
 *   int ipt__insn_decode(struct pt_insn *insn, struct ipt__insn_ext *iext,
 *                        struct pt_image *image, const struct pt_asid *asid);
 *       reads and decodes the instruction at insn->ip in insn->mode; sets
 *       raw, size, iclass, isid and truncated (set when the bytes came from
 *       more than one read: across sections, or past where the callback
 *       stopped).  0 on success; -pte_bad_insn, -pte_nomap, or an error
 *       of the image
 *   int ipt__insn_changes_cpl(const struct pt_insn *,
 *                             const struct ipt__insn_ext *);
 *   int ipt__insn_changes_cr3(...);     int ipt__insn_is_branch(...);
 *   int ipt__insn_is_far_branch(...);   int ipt__insn_binds_to_pip(...);
 *   int ipt__insn_binds_to_vmcs(...);   int ipt__insn_is_ptwrite(...);
 *   int ipt__insn_is_iret(...);         int ipt__insn_is_vmentry(...);
 *   int ipt__insn_is_uiret(...);        int ipt__insn_is_swint(...);
 *   int ipt__insn_is_syscall(...);
 *       non-zero if so, zero if not or an argument is NULL
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
 *    only).  These fixed encodings, and MOV to CRn with REX2, are
 *    recognized here when Zydis rejects them; other REX2 (APX)
 *    instructions are -pte_bad_insn.  UIRET is Zydis'.  Other instructions
 *    newer than Zydis 4.0 are -pte_bad_insn too, where libipt decodes their
 *    length: e.g. WRMSRNS and RDMSRLIST/WRMSRLIST (0F 01 C6), CMPccXADD,
 *    RAO-INT (0F 38 FC) and the VEX forms of AVX-VNNI (VPDPBUSD etc.).
 *  - ptem_unknown decodes nothing: -pte_bad_insn.
 */

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
			     const struct ipt__ild *ild)
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
			return ipt__ild_branch(iext, insn->raw, ild);
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
			return ipt__ild_branch(iext, insn->raw, ild);
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
				return ipt__ild_branch(iext, insn->raw, ild);
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
		return ipt__ild_branch(iext, insn->raw, ild);
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
	uint8_t i;

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
	for (i = 0; i < z->raw.prefix_count && i < ZYDIS_MAX_INSTRUCTION_LENGTH;
	     ++i) {
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

/* Decodes insn->raw, have bytes of it.  Returns 0 with insn->size and the
 * classes set, 1 if more bytes might make an instruction, -pte_bad_insn
 * if no more bytes can. */
static int ipt__ild_decode_bytes(struct pt_insn *insn,
				 struct ipt__insn_ext *iext, uint8_t have)
{
	ZydisDecoder decoder;
	ZydisDecodedInstruction z;
	ZydisMachineMode machine;
	ZydisStackWidth stack;
	ZyanStatus zs;
	struct ipt__ild ild;
	int status;

	switch (insn->mode) {
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
	if (have > pt_max_insn_size)
		have = pt_max_insn_size;

	if (ZYAN_FAILED(ZydisDecoderInit(&decoder, machine, stack)) ||
	    ZYAN_FAILED(ZydisDecoderEnableMode(
		    &decoder, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE)))
		return -pte_internal;

	zs = ZydisDecoderDecodeInstruction(&decoder, NULL, insn->raw, have, &z);
	if (ZYAN_SUCCESS(zs))
		ipt__ild_from_zydis(&ild, &z);
	else {
		status = ipt__ild_late(&ild, insn->raw, have, insn->mode);
		if (status == 0)
			return have < pt_max_insn_size ? 1 : -pte_bad_insn;
		if (status < 0) {
			if (zs == ZYDIS_STATUS_NO_MORE_DATA &&
			    have < pt_max_insn_size)
				return 1;
			return -pte_bad_insn;
		}
	}

	status = ipt__ild_classify(insn, iext, &ild);
	if (status < 0)
		return status;
	insn->size = ild.size;
	return 0;
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

static IPT__UNUSED int ipt__insn_decode(struct pt_insn *insn,
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
		status = ipt__ild_decode_bytes(insn, iext, have);
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
	default:
		return 0;
	}
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
	default:
		return 0;
	}
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
	default:
		return -pte_bad_query;
	}

	if (insn->mode != ptem_64bit)
		ip &= 0xffffffffull;
	if (pip)
		*pip = ip;
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

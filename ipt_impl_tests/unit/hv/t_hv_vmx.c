/* t_hv_vmx: the shapes VM entries and exits give the trace (SDM Vol. 3C,
 * "Packet Generation under Different Enable Conditions", the VM entry and
 * VM exit rows; "Managing Trace Packet Generation Across VMX
 * Transitions"), each decoded by libipt's rules and vm-tolerant, with every
 * event and instruction tagged guest or host (ipt_*_in_guest).
 *
 * The log is blk_util.h's, each line followed by the tag asked right
 * after it: g (guest), h (host) or ? (no PIP yet).  One trace in the
 * query decoder checks its event tags the same way. */
#include "blk_util.h"
#include "check.h"

enum {
	guest_cr3 = 0x5000,
	host_cr3 = 0x9000,
	vmcs = 0xa000
};

/* The guest at 0x1000:     The host at 0x1100:
 *   1000  nop                1100  nop
 *   1001  nop                1101  vmptrld [rax]
 *   1002  nop                1104  vmresume
 *   1003  jmp rax            1107  nop
 *                            1108  jmp rax */
static uint8_t code[0x10a];

static void code_init(void)
{
	static const uint8_t guest[] = { 0x90, 0x90, 0x90, 0xff, 0xe0 };
	static const uint8_t host[] = { 0x90, 0x0f, 0xc7, 0x30, 0x0f, 0x01,
					0xc3, 0x90, 0xff, 0xe0 };

	memset(code, 0x90, sizeof(code));
	memcpy(code, guest, sizeof(guest));
	memcpy(code + 0x100, host, sizeof(host));
}

static void tb_vmcs(struct tb *t, uint64_t base)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_vmcs;
	p.payload.vmcs.base = base;
	tb_put(t, &p);
}

static char tag(int in_guest)
{
	return in_guest == 1 ? 'g' : in_guest == 0 ? 'h' : '?';
}

/* Replace the newline that ends @l with " TAG\n". */
static void log_tag(struct log *l, int in_guest)
{
	if (l->len && l->text[l->len - 1] == '\n')
		l->len -= 1;
	log_add(l, " %c\n", tag(in_guest));
}

static void tag_line(struct log *l, struct pt_insn_decoder *d,
		     const struct pt_insn *insn, void *context)
{
	(void) insn;
	(void) context;
	log_tag(l, ipt_insn_in_guest(d));
}

/* The guest runs at 0x1000 and is interrupted at 0x1001. */
static void guest_runs(struct tb *t)
{
	tb_start64_pip(t, 0x1000, guest_cr3, 1);
	tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1001);
}

/* System-wide tracing (no MSR-load lists, nothing concealed): the exit is
 * FUP(guest IP), PIP(host CR3, NR=0), TIP(host IP); the host loads a VMCS
 * (VMCS packet at VMPTRLD) and enters with PIP(guest CR3, NR=1),
 * TIP(guest IP) at VMRESUME. */
static void exit_and_enter(struct tb *t)
{
	guest_runs(t);
	tb_pip_nr(t, host_cr3, 0);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1100);
	tb_vmcs(t, vmcs);
	tb_pip_nr(t, guest_cr3, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1001);
}

static void build_system_wide(struct tb *t)
{
	exit_and_enter(t);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

/* As system-wide, with a PSB+ right after the VM entry: it restates what
 * the decoder knows (enabled at the guest IP, guest CR3, the VMCS). */
static void build_psb_after_entry(struct tb *t)
{
	exit_and_enter(t);
	tb_simple(t, ppt_psb);
	tb_mode_exec(t, ptem_64bit);
	tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1001);
	tb_pip_nr(t, guest_cr3, 1);
	tb_vmcs(t, vmcs);
	tb_simple(t, ppt_psbend);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

/* The guest alone, switched by the VMCS's MSR-load lists: the exit clears
 * TraceEn (FUP(guest IP), TIP.PGD()); the entry sets it again, after
 * which comes @entry's shape, then the guest runs to its JMP. */
static void guest_only(struct tb *t, void (*entry)(struct tb *t))
{
	guest_runs(t);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	entry(t);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

/* PIP(guest CR3, NR=1), MODE.Exec, TIP.PGE(guest IP). */
static void entry_pge(struct tb *t)
{
	tb_pip_nr(t, guest_cr3, 1);
	tb_mode_exec(t, ptem_64bit);
	tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1001);
}

/* A PSB+ whose FUP says tracing is on at the guest IP (TraceEn set as by
 * WRMSR), then TIP.PGE there. */
static void entry_psb_pge(struct tb *t)
{
	tb_start64_pip(t, 0x1001, guest_cr3, 1);
	tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1001);
}

/* The PSB+ alone says tracing is on. */
static void entry_psb(struct tb *t)
{
	tb_start64_pip(t, 0x1001, guest_cr3, 1);
}

static void build_guest_only(struct tb *t)
{
	guest_only(t, entry_pge);
}

static void build_guest_only_psb_pge(struct tb *t)
{
	guest_only(t, entry_psb_pge);
}

static void build_guest_only_psb(struct tb *t)
{
	guest_only(t, entry_psb);
}

/* The host alone: the entry clears TraceEn (PIP(guest CR3, NR=1),
 * TIP.PGD() at VMRESUME), the exit sets it (PIP(host CR3, NR=0),
 * MODE.Exec, TIP.PGE(host IP)). */
static void build_host_only(struct tb *t)
{
	tb_start64_pip(t, 0x1100, host_cr3, 0);
	tb_vmcs(t, vmcs);
	tb_pip_nr(t, guest_cr3, 1);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	tb_pip_nr(t, host_cr3, 0);
	tb_mode_exec(t, ptem_64bit);
	tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1107);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

/* An IP filter that leaves the host out: the exit is FUP(guest IP),
 * PIP(host CR3, NR=0), TIP.PGD(host IP); the entry as entry_pge. */
static void build_host_filtered(struct tb *t)
{
	guest_runs(t);
	tb_pip_nr(t, host_cr3, 0);
	tb_ip(t, ppt_tip_pgd, pt_ipc_sext_48, 0x1100);
	entry_pge(t);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

/* "Conceal VMX from PT": no PIP at entry or exit, so the exit is an
 * ordinary asynchronous branch and the entry an ordinary far branch; the
 * trace cannot tell guest from host. */
static void build_concealed(struct tb *t)
{
	tb_start64(t, 0x1000);
	tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1001);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1100);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1001);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

/* What the decoders report, in pieces: the guest from its first PSB+ to
 * the VM exit, the host from its first instruction to VMRESUME, the guest
 * from the entry to its JMP, and the guest alone entered again. */
#define GUEST_START                                                          \
	"e enabled 1000 ?\n"                                                 \
	"e exec_mode 1000 ?\n"                                               \
	"e async_paging 1000 g\n"                                            \
	"i 1000 1 g\n"
#define HOST_RUNS                                                            \
	"e async_branch 1001 g\n"                                            \
	"e async_paging 1100 h\n"                                            \
	"i 1100 1 h\n"                                                       \
	"i 1101 3 h\n"                                                       \
	"e vmcs 0 h\n"                                                       \
	"i 1104 3 h\n"                                                       \
	"e paging 0 g\n"
#define GUEST_ENDS                                                           \
	"i 1001 1 g\n"                                                       \
	"i 1002 1 g\n"                                                       \
	"i 1003 2 g\n"                                                       \
	"e disabled 0 g\n"
#define GUEST_EXITS "e async_disabled 0 g\n"
#define GUEST_PSB "e enabled 1001 g\n"                                       \
	"e exec_mode 1001 g\n"                                               \
	"e async_paging 1001 g\n"

struct shape {
	const char *name;
	void (*build)(struct tb *t);
	/* What libipt's rules give, and what vm-tolerant gives (NULL: the
	 * same). */
	const char *strict;
	const char *tolerant;
};

static const struct shape shapes[] = {
	{ "system-wide", build_system_wide,
	  GUEST_START HOST_RUNS GUEST_ENDS, NULL },
	{ "PSB+ after entry", build_psb_after_entry,
	  GUEST_START HOST_RUNS GUEST_PSB "e async_vmcs 0 g\n" GUEST_ENDS,
	  NULL },
	{ "guest only", build_guest_only,
	  GUEST_START GUEST_EXITS "e paging 0 g\n" "e enabled 1001 g\n"
	  GUEST_ENDS, NULL },
	{ "guest only, PSB+ then TIP.PGE", build_guest_only_psb_pge,
	  GUEST_START GUEST_EXITS "x bad status update\n",
	  GUEST_START GUEST_EXITS GUEST_PSB "e enabled 1001 g\n" GUEST_ENDS },
	{ "guest only, PSB+ alone", build_guest_only_psb,
	  GUEST_START GUEST_EXITS "x bad status update\n",
	  GUEST_START GUEST_EXITS GUEST_PSB GUEST_ENDS },
	{ "host only", build_host_only,
	  "e enabled 1100 ?\n"
	  "e exec_mode 1100 ?\n"
	  "e async_paging 1100 h\n"
	  "i 1100 1 h\n"
	  "i 1101 3 h\n"
	  "e vmcs 0 h\n"
	  "i 1104 3 h\n"
	  "e paging 0 g\n"
	  "e disabled 0 g\n"
	  "e paging 0 h\n"
	  "e enabled 1107 h\n"
	  "i 1107 1 h\n"
	  "i 1108 2 h\n"
	  "e disabled 0 h\n", NULL },
	{ "host filtered out", build_host_filtered,
	  GUEST_START
	  "e async_disabled 1001 g\n"
	  "e async_paging 0 h\n"
	  "e paging 0 g\n"
	  "e enabled 1001 g\n" GUEST_ENDS, NULL },
	{ "concealed", build_concealed,
	  "e enabled 1000 ?\n"
	  "e exec_mode 1000 ?\n"
	  "i 1000 1 ?\n"
	  "e async_branch 1001 ?\n"
	  "i 1100 1 ?\n"
	  "i 1101 3 ?\n"
	  "i 1104 3 ?\n"
	  "i 1001 1 ?\n"
	  "i 1002 1 ?\n"
	  "i 1003 2 ?\n"
	  "e disabled 0 ?\n", NULL },
};

static void check_shape(struct pt_image *image, const struct shape *s)
{
	char name[128];
	int tolerant;

	for (tolerant = 0; tolerant < 2; ++tolerant) {
		struct pt_insn_decoder *d;
		const char *expected;
		struct tb t;
		struct log l;

		expected = tolerant && s->tolerant ? s->tolerant : s->strict;
		snprintf(name, sizeof(name), "%s%s", s->name,
			 tolerant ? ", vm-tolerant" : "");
		tb_init(&t);
		s->build(&t);
		d = pt_insn_alloc_decoder(tb_done(&t));
		CHECK_EQ(t.errors, 0);
		if (!CHECK(d != NULL))
			continue;
		CHECK_EQ(ipt_insn_set_vm_tolerant(d, tolerant), 0);
		pt_insn_set_image(d, image);
		run_insn_with(&l, d, tag_line, NULL);
		CHECK(log_is(&l, expected, name));
		pt_insn_free_decoder(d);
	}
}

/* The query decoder tags its events as the instruction decoder does. */
static void check_qry(void)
{
	static const char expected[] =
		"e enabled 1000 ?\n"
		"e exec_mode 1000 ?\n"
		"e async_paging 1000 g\n"
		"e async_branch 1001 g\n"
		"e async_paging 1100 h\n"
		"e vmcs 0 h\n"
		"e paging 0 g\n"
		"e disabled 0 g\n";
	struct pt_query_decoder *d;
	struct tb t;
	struct log l;
	uint64_t ip;
	int status, taken;

	tb_init(&t);
	build_system_wide(&t);
	d = pt_qry_alloc_decoder(tb_done(&t));
	CHECK_EQ(t.errors, 0);
	if (!CHECK(d != NULL))
		return;
	log_init(&l);
	CHECK_EQ(ipt_qry_in_guest(d), -pte_nosync);
	status = pt_qry_sync_forward(d, &ip);
	while (status >= 0) {
		struct pt_event ev;

		if (status & pts_event_pending) {
			status = pt_qry_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
			log_event(&l, &ev);
			log_tag(&l, ipt_qry_in_guest(d));
			continue;
		}
		status = pt_qry_cond_branch(d, &taken);
		if (status == -pte_bad_query)
			status = pt_qry_indirect_branch(d, &ip);
	}
	CHECK_EQ(status, -pte_eos);
	CHECK(log_is(&l, expected, "query decoder"));
	CHECK_EQ(ipt_qry_in_guest(d), 1);
	CHECK_EQ(pt_qry_sync_set(d, &ip, 0) >= 0, 1);
	CHECK_EQ(ipt_qry_in_guest(d), -pte_nosync);
	CHECK_EQ(ipt_qry_in_guest(NULL), -pte_invalid);
	pt_qry_free_decoder(d);
}

int main(void)
{
	struct pt_image *image = pt_image_alloc(NULL);
	struct mem m;
	size_t i;

	code_init();
	mem_init(&m, 0x1000, code, sizeof(code));
	pt_image_set_callback(image, mem_read, &m);

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); ++i)
		check_shape(image, &shapes[i]);
	check_qry();

	pt_image_free(image);
	return check_done();
}

/* t_hv_cr3: the CR3 filter (ipt_blk_set_cr3_filter, ipt_insn_set_cr3_filter).
 *
 * Two address spaces run the same virtual addresses with different code,
 * and a read-memory callback counts the reads of each.  Filtered to one
 * CR3, the decoders must never read the other's code, and report the
 * instructions a decode without filter reports in the kept CR3: all of
 * them where the switches come with an IP (VM exits and entries), all but
 * those between a MOV CR3 into it and the next IP packet otherwise.  The
 * boundary events are checked against the header's description.  The
 * coverage decoder, filtered, reports the edges cov_oracle.h derives from
 * a filtered block decoder, and reads no other code either.
 *
 * With arguments (hv_cases.h: corpora, --synth DIR), each case is
 * decoded without filter, then filtered to each of its first CR3s: no
 * read of another address space, every instruction reported in the
 * filter's CR3, and, where the decode without filter met no error, the
 * filtered instructions a subsequence of the unfiltered ones in that CR3
 * (or before any PIP). */
#include "blk_util.h"
#include "hv_cases.h"
#include "../cov/cov_oracle.h"

enum {
	cr3_a = 0x3000,	/* kept */
	cr3_b = 0x4000,	/* skipped */
	cr3_h = 0x9000	/* the host */
};

/* A at 0x1000:              B at 0x1000:
 *   1000  nop                 1000  jz 1004
 *   1001  jz 1005             1002  nop
 *   1003  nop                 1003  nop
 *   1004  nop                 1004  jmp rax
 *   1005  jmp rax
 *
 * The kernel at 0x8000, in every address space:
 *   8000  mov cr3, rax
 *   8003  nop
 *   8004  jz 8008
 *   8006  nop
 *   8007  nop
 *   8008  jmp rax
 *
 * The host at 0x8000 (a VMM, CR3 cr3_h):
 *   8000  nop
 *   8001  jz 8005
 *   8003  nop
 *   8004  nop
 *   8005  vmresume */
static const uint8_t code_a[] = { 0x90, 0x74, 0x02, 0x90, 0x90, 0xff, 0xe0 };
static const uint8_t code_b[] = { 0x74, 0x02, 0x90, 0x90, 0xff, 0xe0 };
static const uint8_t code_k[] = { 0x0f, 0x22, 0xd8, 0x90, 0x74, 0x02,
				  0x90, 0x90, 0xff, 0xe0 };
static const uint8_t code_h[] = { 0x90, 0x74, 0x02, 0x90, 0x90,
				  0x0f, 0x01, 0xc3 };

struct space {
	uint64_t cr3;
	const uint8_t *user, *kernel;
	size_t nuser, nkernel;
	unsigned long reads;
};

static struct space spaces[] = {
	{ cr3_a, code_a, code_k, sizeof(code_a), sizeof(code_k), 0 },
	{ cr3_b, code_b, code_k, sizeof(code_b), sizeof(code_k), 0 },
	{ cr3_h, NULL, code_h, 0, sizeof(code_h), 0 },
};
enum { nspaces = sizeof(spaces) / sizeof(spaces[0]) };

static int read_space(uint8_t *buffer, size_t size,
		      const struct pt_asid *asid, uint64_t ip, void *context)
{
	const uint8_t *code;
	size_t i, n;
	uint64_t base;

	(void) context;
	for (i = 0; i < nspaces; ++i)
		if (asid && asid->cr3 == spaces[i].cr3)
			break;
	if (i == nspaces)
		return -pte_nomap;
	spaces[i].reads += 1;
	if (ip >= 0x8000) {
		base = 0x8000;
		code = spaces[i].kernel;
		n = spaces[i].nkernel;
	} else {
		base = 0x1000;
		code = spaces[i].user;
		n = spaces[i].nuser;
	}
	if (!code || ip < base || ip >= base + n)
		return -pte_nomap;
	n -= (size_t) (ip - base);
	if (n > size)
		n = size;
	memcpy(buffer, code + (ip - base), n);
	return (int) n;
}

static void reads_reset(void)
{
	size_t i;

	for (i = 0; i < nspaces; ++i)
		spaces[i].reads = 0;
}

/* A VM exit at @from (FUP, PIP(host), TIP to the host), the host's jz
 * @taken, the VM entry at its VMRESUME into the guest of @cr3 at @to
 * (PIP(guest, NR=1), TIP). */
static void vm_switch(struct tb *t, uint64_t from, int taken, uint64_t cr3,
		      uint64_t to)
{
	tb_ip(t, ppt_fup, pt_ipc_sext_48, from);
	tb_pip_nr(t, cr3_h, 0);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x8000);
	tb_tnt(t, taken, 1);
	tb_pip_nr(t, cr3, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, to);
}

/* VM exits and entries switch: guest A, exit to the host, entry into
 * guest B, exit, entry back into A. */
static void build_vm(struct tb *t)
{
	tb_start64_pip(t, 0x1000, cr3_a, 1);
	tb_tnt(t, 1, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1000);
	vm_switch(t, 0x1001, 0, cr3_b, 0x1000);
	tb_tnt(t, 1, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1000);
	vm_switch(t, 0x1000, 1, cr3_a, 0x1001);
	tb_tnt(t, 0, 1);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

/* One kernel switches with MOV CR3: A calls into the kernel, which
 * switches to B; B calls in, the kernel switches back to A and returns
 * there.  A PSB+ in B's stretch says B's CR3 again. */
static void build_os(struct tb *t)
{
	tb_start64_pip(t, 0x1000, cr3_a, 0);
	tb_tnt(t, 1, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x8000);
	tb_pip(t, cr3_b);
	tb_tnt(t, 0, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1000);
	tb_start64_pip(t, 0x1000, cr3_b, 0);
	tb_tnt(t, 1, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x8000);
	tb_pip(t, cr3_a);
	tb_tnt(t, 1, 1);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1001);
	tb_tnt(t, 0, 1);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

/* In @kept, each instruction reported in CR3 @keep. */
struct kept {
	struct log *log;
	uint64_t keep;
};

static void keep_line(struct log *l, struct pt_insn_decoder *d,
		      const struct pt_insn *insn, void *context)
{
	struct kept *k = (struct kept *) context;
	struct pt_asid asid;

	(void) l;
	pt_asid_init(&asid);
	if (!insn || pt_insn_asid(d, &asid, sizeof(asid)) < 0)
		return;
	if (asid.cr3 == k->keep)
		log_add(k->log, "i %llx\n", (unsigned long long) insn->ip);
}

/* Decode with the instruction decoder, filtered to @filter: the log, and
 * in @kept the instructions the decoder reported in CR3 @keep. */
static void run(struct log *l, struct log *kept, struct pt_config *config,
		uint64_t filter, uint64_t keep)
{
	struct pt_insn_decoder *d;
	struct kept k;

	log_init(l);
	log_init(kept);
	d = pt_insn_alloc_decoder(config);
	if (!CHECK(d != NULL))
		return;
	pt_image_set_callback(pt_insn_get_image(d), read_space, NULL);
	CHECK_EQ(ipt_insn_set_cr3_filter(d, filter), 0);
	k.log = kept;
	k.keep = keep;
	run_insn_with(l, d, keep_line, &k);
	pt_insn_free_decoder(d);
}

/* The block decoder, filtered: the instructions it reports, counted. */
static unsigned long run_blk_count(struct pt_config *config, uint64_t filter)
{
	struct pt_block_decoder *d;
	unsigned long ninsn = 0;
	int status;

	d = pt_blk_alloc_decoder(config);
	if (!CHECK(d != NULL))
		return 0;
	pt_image_set_callback(pt_blk_get_image(d), read_space, NULL);
	CHECK_EQ(ipt_blk_set_cr3_filter(d, filter), 0);
	status = pt_blk_sync_forward(d);
	while (status >= 0) {
		struct pt_block b;
		struct pt_event ev;

		while (status >= 0 && (status & pts_event_pending))
			status = pt_blk_event(d, &ev, sizeof(ev));
		if (status < 0)
			break;
		status = pt_blk_next(d, &b, sizeof(b));
		ninsn += b.ninsn;
	}
	CHECK_EQ(status, -pte_eos);
	pt_blk_free_decoder(d);
	return ninsn;
}

/* How many lines of @text begin with @prefix. */
static unsigned long count_lines(const char *text, const char *prefix)
{
	unsigned long n = 0;

	for (; *text; text = strchr(text, '\n') + 1) {
		n += !strncmp(text, prefix, strlen(prefix));
		if (!strchr(text, '\n'))
			break;
	}
	return n;
}

/* Lines of @all not in @gap, in order: @all less the instructions the
 * filter cannot see. */
static void log_less(struct log *out, const char *all, const char *gap)
{
	const char *line = all;

	log_init(out);
	while (*line) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t) (end - line + 1) : strlen(line);

		if (!(*gap && !strncmp(line, gap, strcspn(gap, "\n") + 1))) {
			log_add(out, "%.*s", (int) n, line);
		} else
			gap += strcspn(gap, "\n") + 1;
		line += n;
	}
}

static void check_trace(void (*build)(struct tb *),
			const char *expected, const char *gap,
			const char *name)
{
	struct log full, full_kept, filtered, filtered_kept, want;
	unsigned long reads_a, ninsn;
	struct tb t;

	tb_init(&t);
	build(&t);
	tb_done(&t);
	CHECK_EQ(t.errors, 0);

	reads_reset();
	run(&full, &full_kept, &t.config, pt_asid_no_cr3, cr3_a);
	CHECK(strstr(full.text, "x ") == NULL);
	CHECK(spaces[1].reads > 0);

	reads_reset();
	run(&filtered, &filtered_kept, &t.config, cr3_a, cr3_a);
	CHECK(log_is(&filtered, expected, name));
	reads_a = spaces[0].reads;
	CHECK(reads_a > 0);
	CHECK_EQ(spaces[1].reads, 0);
	CHECK_EQ(spaces[2].reads, 0);

	/* All instructions it reports are A's, and they are what the full
	 * decode reports in A, less the gap. */
	CHECK_EQ(count_lines(filtered.text, "i "),
		 count_lines(filtered_kept.text, "i "));
	log_less(&want, full_kept.text, gap);
	CHECK(log_is(&filtered_kept, want.text, name));

	/* The block decoder reports as many, and reads no other code. */
	reads_reset();
	ninsn = run_blk_count(&t.config, cr3_a);
	CHECK_EQ(ninsn, count_lines(filtered_kept.text, "i "));
	CHECK_EQ(spaces[1].reads, 0);
	CHECK_EQ(spaces[2].reads, 0);
}

/* Filtered to the host in build_vm: guests A and B are both skipped. */
static void check_host(void)
{
	struct log l, kept;
	struct tb t;

	tb_init(&t);
	build_vm(&t);
	tb_done(&t);
	reads_reset();
	run(&l, &kept, &t.config, cr3_h, cr3_h);
	CHECK(log_is(&l,
		     "e enabled 1000\n"
		     "e exec_mode 1000\n"
		     "e async_paging 1000\n"
		     "e disabled 0\n"
		     "e enabled 8000\n"
		     "e async_paging 8000\n"
		     "i 8000 1\n"
		     "i 8001 2\n"
		     "i 8003 1\n"
		     "i 8004 1\n"
		     "i 8005 3\n"
		     "e paging 0\n"
		     "e disabled 0\n"
		     "e enabled 8000\n"
		     "e async_paging 8000\n"
		     "i 8000 1\n"
		     "i 8001 2\n"
		     "i 8005 3\n"
		     "e paging 0\n"
		     "e disabled 0\n", "host"));
	CHECK_EQ(spaces[0].reads, 0);
	CHECK_EQ(spaces[1].reads, 0);
}

/* ---- the coverage decoder ---- */

/* The oracle reads the bytes of a block's last instruction without an
 * address space: those of the one kept (@context). */
static int read_kept(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	struct pt_asid kept;

	if (asid)
		return read_space(buffer, size, asid, ip, NULL);
	pt_asid_init(&kept);
	kept.cr3 = *(const uint64_t *) context;
	return read_space(buffer, size, &kept, ip, NULL);
}

static void check_cov(void (*build)(struct tb *), uint64_t keep,
		      const char *name)
{
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 };
	struct ipt_cov_decoder *cov;
	struct ipt_cov_config cc;
	struct pt_image *image;
	size_t i;
	struct tb t;

	tb_init(&t);
	build(&t);
	tb_done(&t);
	image = pt_image_alloc(NULL);
	if (!CHECK(image != NULL))
		return;
	pt_image_set_callback(image, read_kept, &keep);
	CHECK_EQ(oracle_edges_cr3(&want, &t.config, image, read_kept, &keep,
				  keep), 0);
	pt_image_free(image);

	memset(&cc, 0, sizeof(cc));
	cc.edge = olist_on_edge;
	cc.context = &got;
	cov = ipt_cov_alloc_decoder(&t.config, &cc);
	if (!CHECK(cov != NULL))
		return;
	pt_image_set_callback(ipt_cov_get_image(cov), read_space, NULL);
	CHECK_EQ(ipt_cov_set_cr3_filter(cov, keep), 0);
	reads_reset();
	CHECK_EQ(ipt_cov_decode(cov), 0);
	for (i = 0; i < nspaces; ++i)
		if (spaces[i].cr3 != keep && !CHECK(spaces[i].reads == 0))
			printf("  %s: read cr3 %llx\n", name,
			       (unsigned long long) spaces[i].cr3);
	CHECK(want.n > 0);
	if (!CHECK(olist_diff(&got, &want) < 0))
		printf("  %s: edges differ at %ld\n", name,
		       olist_diff(&got, &want));
	ipt_cov_free_decoder(cov);
	free(want.e);
	free(got.e);
}

/* ---- the corpus ---- */

enum { corpus_max_insn = 1 << 22, corpus_max_cr3 = 3 };

struct cr3_gmem {
	struct gmem *m;
	uint64_t filter;
	unsigned long others;
};

static int cr3_gmem_read(uint8_t *buffer, size_t size,
			 const struct pt_asid *asid, uint64_t ip,
			 void *context)
{
	struct cr3_gmem *g = (struct cr3_gmem *) context;

	if (asid && asid->cr3 != pt_asid_no_cr3 && asid->cr3 != g->filter)
		g->others += 1;
	return gmem_read(buffer, size, asid, ip, g->m);
}

struct trail {
	uint64_t *ip, *cr3;
	size_t n, cap;
	unsigned long errors;
};

static void trail_add(struct trail *t, uint64_t ip, uint64_t cr3)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 4096;
		uint64_t *a = (uint64_t *) realloc(t->ip, cap * sizeof(*a));
		uint64_t *b;

		if (!a)
			abort();
		t->ip = a;
		b = (uint64_t *) realloc(t->cr3, cap * sizeof(*b));
		if (!b)
			abort();
		t->cr3 = b;
		t->cap = cap;
	}
	t->ip[t->n] = ip;
	t->cr3[t->n++] = cr3;
}

/* Decode @c with the instruction decoder filtered to @filter, synchronizing
 * forward after errors. */
static void corpus_decode(struct trail *t, struct hcase *c, uint64_t filter,
			  struct cr3_gmem *g)
{
	struct pt_insn_decoder *d;
	int status;

	memset(t, 0, sizeof(*t));
	d = pt_insn_alloc_decoder(&c->config);
	if (!CHECK(d != NULL))
		return;
	g->m = &c->mem;
	g->filter = filter;
	g->others = 0;
	pt_image_set_callback(pt_insn_get_image(d), cr3_gmem_read, g);
	CHECK_EQ(ipt_insn_set_cr3_filter(d, filter), 0);
	status = pt_insn_sync_forward(d);
	while (status != -pte_eos && t->n < corpus_max_insn) {
		struct pt_insn insn;
		struct pt_event ev;
		struct pt_asid asid;

		while (status >= 0 && (status & pts_event_pending))
			status = pt_insn_event(d, &ev, sizeof(ev));
		if (status >= 0)
			status = pt_insn_next(d, &insn, sizeof(insn));
		if (status == -pte_event_ignored) {
			status = pts_event_pending;
			continue;
		}
		if (status >= 0 || insn.iclass != ptic_unknown) {
			pt_asid_init(&asid);
			(void) pt_insn_asid(d, &asid, sizeof(asid));
			trail_add(t, insn.ip, asid.cr3);
		}
		if (status < 0 && status != -pte_eos) {
			t->errors += 1;
			status = pt_insn_sync_forward(d);
		}
	}
	pt_insn_free_decoder(d);
}

static unsigned long corpus_cases, corpus_checked, corpus_kept,
	corpus_restricted;

/* Is @f's every instruction, in order, one of @full's in @cr3 (or before
 * any PIP)? */
static int corpus_subsequence(const struct trail *f, const struct trail *full,
			      uint64_t cr3)
{
	size_t i = 0, j;

	for (j = 0; j < full->n && i < f->n; ++j) {
		if (full->cr3[j] != cr3 && full->cr3[j] != pt_asid_no_cr3)
			continue;
		corpus_restricted += 1;
		if (full->ip[j] == f->ip[i])
			i += 1;
	}
	for (; j < full->n; ++j)
		corpus_restricted += full->cr3[j] == cr3 ||
				     full->cr3[j] == pt_asid_no_cr3;
	return i == f->n;
}

static void corpus_case(struct hcase *c)
{
	struct trail full, f;
	struct cr3_gmem g;
	uint64_t cr3s[corpus_max_cr3];
	size_t i, n = 0, k;

	corpus_decode(&full, c, pt_asid_no_cr3, &g);
	for (i = 0; i < full.n && n < corpus_max_cr3; ++i) {
		if (full.cr3[i] == pt_asid_no_cr3)
			continue;
		for (k = 0; k < n && cr3s[k] != full.cr3[i]; ++k)
			;
		if (k == n)
			cr3s[n++] = full.cr3[i];
	}
	corpus_cases += n ? 1 : 0;
	for (k = 0; k < n; ++k) {
		int wrong = 0;

		corpus_decode(&f, c, cr3s[k], &g);
		if (!CHECK(g.others == 0))
			printf("  %s, cr3 %llx: other address spaces read\n",
			       c->name, (unsigned long long) cr3s[k]);
		for (i = 0; i < f.n; ++i)
			wrong += f.cr3[i] != cr3s[k] &&
				 f.cr3[i] != pt_asid_no_cr3;
		if (!CHECK(wrong == 0))
			printf("  %s, cr3 %llx: instructions of another\n",
			       c->name, (unsigned long long) cr3s[k]);
		if (!full.errors && full.n < corpus_max_insn &&
		    f.n < corpus_max_insn) {
			corpus_checked += 1;
			corpus_kept += f.n;
			if (!CHECK(corpus_subsequence(&f, &full, cr3s[k])))
				printf("  %s, cr3 %llx: not the unfiltered "
				       "decode's\n", c->name,
				       (unsigned long long) cr3s[k]);
		}
		free(f.ip);
		free(f.cr3);
	}
	free(full.ip);
	free(full.cr3);
}

/* Each decoder reads through its own image: nothing one decode read is
 * cached for the next. */
int main(int argc, char **argv)
{
	if (argc > 1) {
		hv_cases(argc, argv, corpus_case);
		printf("%lu cases with PIPs, %lu filtered decodes compared: "
		       "%lu of %lu instructions kept\n", corpus_cases,
		       corpus_checked, corpus_kept, corpus_restricted);
		CHECK(corpus_checked > 0);
	}

	/* A from its first PSB+ to its jmp, and from 1001 back to its jmp,
	 * which disables tracing. */
#define A_STARTS                                                             \
	"e enabled 1000\n"                                                   \
	"e exec_mode 1000\n"                                                 \
	"e async_paging 1000\n"                                              \
	"i 1000 1\n"                                                         \
	"i 1001 2\n"                                                         \
	"i 1005 2\n"
#define A_RETURNS                                                            \
	"e enabled 1001\n"                                                   \
	"i 1001 2\n"                                                         \
	"i 1003 1\n"                                                         \
	"i 1004 1\n"                                                         \
	"i 1005 2\n"                                                         \
	"e disabled 0\n"

	check_trace(build_vm,
		    A_STARTS
		    "i 1000 1\n"
		    "e async_branch 1001\n"
		    "e async_paging 8000\n"
		    "e disabled 0\n"
		    "e paging 0\n"
		    A_RETURNS, "", "VM exits and entries");
	check_trace(build_os,
		    A_STARTS
		    "i 8000 3\n"
		    "e paging 0\n"
		    "e disabled 0\n"
		    "e paging 0\n"
		    A_RETURNS,
		    "i 8003\ni 8004\ni 8008\n", "MOV CR3");
	check_host();
	check_cov(build_vm, cr3_a, "coverage, VM exits and entries");
	check_cov(build_vm, cr3_h, "coverage, the host");
	check_cov(build_os, cr3_a, "coverage, MOV CR3");
	CHECK_EQ(ipt_cov_set_cr3_filter(NULL, 0), -pte_invalid);

	CHECK_EQ(ipt_blk_set_cr3_filter(NULL, 0), -pte_invalid);
	CHECK_EQ(ipt_insn_set_cr3_filter(NULL, 0), -pte_invalid);
	return check_done();
}

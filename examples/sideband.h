/* sideband.h - the --sb:* and --pevent:* options of ptdump and ptxed.
 *
 * Linux perf records, beside the trace, what the traced processes did:
 * which files they mapped where, exec, fork, context switches, where trace
 * was lost.  Both examples read such perf_event sideband files through a
 * sideband session (pt_sb_*): ptdump prints the records in time order
 * between the packets, ptxed also applies them, so that each process is
 * decoded in its own image.  This file holds what the two share: the
 * options, loading a sideband file, and the error messages.  It is
 * included after ipt.h, in hosted builds only.
 *
 * A sideband file's configuration is not in the file: --pevent:sample-type
 * and the --pevent:time-* options given before --pevent:primary FILE (or
 * :secondary) apply to it, as with libipt's tools. */

#ifndef IPT_NO_STDIO

/* What the including tool lends: its number parser (value at most max,
 * prints why not and returns zero) and its "file:from-to" splitter
 * (returns zero or -pte_invalid). */
typedef int(sb_get_number_fn)(uint64_t *value, uint64_t max,
			      const char *option, const char *arg,
			      const char *prog);
typedef int(sb_split_range_fn)(char *name, uint64_t *offset,
			       uint64_t *size);

struct sb_options {
	/* enum pt_sb_print_flag: how records are shown. */
	uint32_t flags;
	/* Show warnings, not only errors (--sb:warn). */
	uint32_t warn:1;
	/* The tool decodes (ptxed) rather than dumps (ptdump): it calls
	 * warnings "warning" where ptdump calls everything "error", and it
	 * has --sb:switch where ptdump has plain --pevent. */
	uint32_t decodes:1;
	/* The configuration the next --pevent:primary/secondary file gets. */
	struct pt_sb_pevent_config pevent;
	/* --pevent:kcore, for the tool to load into the kernel image. */
	const char *kcore;
	/* The sideband files loaded so far. */
	unsigned files;
	sb_get_number_fn *get_number;
	sb_split_range_fn *split_range;
};

/* A decoding tool starts with ring 0 untraced (kernel_start UINT64_MAX),
 * as libipt's ptxed does; ptdump leaves it zero. */
static void sb_options_init(struct sb_options *sb, int decodes,
			    sb_get_number_fn *get_number,
			    sb_split_range_fn *split_range)
{
	memset(sb, 0, sizeof(*sb));
	sb->decodes = decodes ? 1 : 0;
	sb->pevent.size = sizeof(sb->pevent);
	sb->pevent.time_mult = 1;
	sb->pevent.kernel_start = decodes ? UINT64_MAX : 0;
	sb->get_number = get_number;
	sb->split_range = split_range;
}

/* The session's error notifier: "[file:offset sideband error: what]". */
static int sb_print_error(int errcode, const char *filename, uint64_t offset,
			  void *priv)
{
	const struct sb_options *sb = (const struct sb_options *) priv;
	const char *what;

	if (!sb)
		return -pte_internal;
	if (errcode >= 0 && !sb->warn)
		return 0;

	what = errcode < 0 ? pt_errstr(pt_errcode(errcode))
			   : pt_sb_errstr((enum pt_sb_error_code) errcode);
	printf("[%s:%016" PRIx64 " sideband %s: %s]\n",
	       filename ? filename : "<unknown>", offset,
	       (sb->decodes && errcode >= 0) ? "warning" : "error",
	       what ? what : "<unknown error>");
	return 0;
}

/* --sb:switch: "[context: pid-1]" on each context switch. */
static int sb_print_switch(const struct pt_sb_context *context, void *priv)
{
	const char *name;

	(void) priv;
	name = pt_image_name(pt_sb_ctx_image(context));
	printf("[context: %s]\n", name ? name : "<unknown>");
	return 0;
}

/* Adds a perf_event decoder for "file[:from[-to]]". */
static int sb_add_pevent(struct pt_sb_session *session,
			 struct sb_options *sb, char *filename,
			 const char *prog)
{
	struct pt_sb_pevent_config config;
	uint64_t offset, size;
	int errcode;

	errcode = sb->split_range(filename, &offset, &size);
	if (errcode < 0) {
		fprintf(stderr, "%s: bad file %s: %s.\n", prog, filename,
			pt_errstr(pt_errcode(errcode)));
		return -1;
	}
	if (SIZE_MAX < offset) {
		fprintf(stderr, "%s: bad offset: 0x%" PRIx64 ".\n", prog,
			offset);
		return -1;
	}

	config = sb->pevent;
	config.filename = filename;
	config.begin = (size_t) offset;
	config.end = 0;
	if (size) {
		uint64_t end = offset + size;

		if (end <= offset || SIZE_MAX < end) {
			fprintf(stderr, "%s: bad range: 0x%" PRIx64
				"-0x%" PRIx64 ".\n", prog, offset, end);
			return -1;
		}
		config.end = (size_t) end;
	}

	errcode = pt_sb_alloc_pevent_decoder(session, &config);
	if (errcode < 0) {
		fprintf(stderr, "%s: error loading %s: %s.\n", prog, filename,
			pt_errstr(pt_errcode(errcode)));
		return -1;
	}
	sb->files += 1;
	return 0;
}

/* A flag option: the print flag it sets, zero if arg is none. */
static int sb_flag_option(struct sb_options *sb, struct pt_sb_session *session,
			  const char *arg)
{
	if (!strcmp(arg, "--sb:compact") || !strcmp(arg, "--sb")) {
		sb->flags &= ~(uint32_t) ptsbp_verbose;
		sb->flags |= (uint32_t) ptsbp_compact;
	} else if (!strcmp(arg, "--sb:verbose")) {
		sb->flags &= ~(uint32_t) ptsbp_compact;
		sb->flags |= (uint32_t) ptsbp_verbose;
	} else if (!strcmp(arg, "--sb:filename"))
		sb->flags |= (uint32_t) ptsbp_filename;
	else if (!strcmp(arg, "--sb:offset"))
		sb->flags |= (uint32_t) ptsbp_file_offset;
	else if (!strcmp(arg, "--sb:time"))
		sb->flags |= (uint32_t) ptsbp_tsc;
	else if (!strcmp(arg, "--sb:warn"))
		sb->warn = 1;
	else if (!strcmp(arg, "--sb:switch") && sb->decodes)
		pt_sb_notify_switch(session, sb_print_switch, sb);
	else
		return 0;
	return 1;
}

/* --pevent:sample-config ID:TYPE: records whose PERF_SAMPLE_IDENTIFIER is
 * ID have the samples of TYPE.  Each decoder copies the list, so it may
 * grow here.  Returns zero or -pte_invalid / -pte_nomem. */
static int sb_add_sample_type(struct sb_options *sb, const char *arg)
{
	struct pev_sample_config *sc = sb->pevent.sample_config;
	uint64_t identifier, sample_type;
	uint8_t n = sc ? sc->nstypes : 0;
	char *rest;

	errno = 0;
	identifier = strtoull(arg, &rest, 0);
	if (errno || rest == arg || *rest != ':')
		return -pte_invalid;
	arg = rest + 1;
	sample_type = strtoull(arg, &rest, 0);
	if (errno || rest == arg || *rest || n == UINT8_MAX)
		return -pte_invalid;

	sc = (struct pev_sample_config *) realloc(
		sc, sizeof(*sc) + (n + 1u) * sizeof(sc->stypes[0]));
	if (!sc)
		return -pte_nomem;
	sc->stypes[n].identifier = identifier;
	sc->stypes[n].sample_type = sample_type;
	sc->nstypes = (uint8_t) (n + 1u);
	sb->pevent.sample_config = sc;
	return 0;
}

static void sb_options_fini(struct sb_options *sb)
{
	free(sb->pevent.sample_config);
	sb->pevent.sample_config = NULL;
}

/* A numeric --pevent option: the field its value goes to, which is as
 * wide as its maximum says. */
static int sb_number_option(struct sb_options *sb, const char *arg,
			    const char *value, const char *prog)
{
	struct pt_sb_pevent_config *p = &sb->pevent;
	const struct {
		const char *name;
		uint64_t max;
		void *field;
	} options[] = {
		{ "--pevent:sample-type", UINT64_MAX, &p->sample_type },
		{ "--pevent:time-zero", UINT64_MAX, &p->time_zero },
		{ "--pevent:time-shift", UINT16_MAX, &p->time_shift },
		{ "--pevent:time-mult", UINT32_MAX, &p->time_mult },
		{ "--pevent:tsc-offset", UINT64_MAX, &p->tsc_offset },
		{ "--pevent:kernel-start", UINT64_MAX, &p->kernel_start },
	};
	size_t i;
	uint64_t v;

	for (i = 0; i < sizeof(options) / sizeof(options[0]); ++i) {
		if (strcmp(arg, options[i].name))
			continue;
		if (!sb->get_number(&v, options[i].max, arg, value, prog))
			return -1;
		if (options[i].max == UINT16_MAX)
			*(uint16_t *) options[i].field = (uint16_t) v;
		else if (options[i].max == UINT32_MAX)
			*(uint32_t *) options[i].field = (uint32_t) v;
		else
			*(uint64_t *) options[i].field = v;
		return 1;
	}
	return 0;
}

/* A --pevent option that names a file. */
static int sb_file_option(struct sb_options *sb, struct pt_sb_session *session,
			  const char *arg, char *value, const char *prog)
{
	int primary = !strcmp(arg, "--pevent:primary") ||
		      (!sb->decodes && !strcmp(arg, "--pevent"));

	if (!primary && strcmp(arg, "--pevent:secondary") &&
	    strcmp(arg, "--pevent:sysroot") && strcmp(arg, "--pevent:kcore") &&
	    strcmp(arg, "--pevent:vdso-x64") &&
	    strcmp(arg, "--pevent:vdso-x32") &&
	    strcmp(arg, "--pevent:vdso-ia32"))
		return 0;

	if (!value) {
		fprintf(stderr, "%s: %s: missing argument.\n", prog, arg);
		return -1;
	}

	if (!strcmp(arg, "--pevent:sysroot"))
		sb->pevent.sysroot = value;
	else if (!strcmp(arg, "--pevent:kcore"))
		sb->kcore = value;
	else if (!strcmp(arg, "--pevent:vdso-x64"))
		sb->pevent.vdso_x64 = value;
	else if (!strcmp(arg, "--pevent:vdso-x32"))
		sb->pevent.vdso_x32 = value;
	else if (!strcmp(arg, "--pevent:vdso-ia32"))
		sb->pevent.vdso_ia32 = value;
	else {
		sb->pevent.primary = primary ? 1 : 0;
		if (sb_add_pevent(session, sb, value, prog) < 0)
			return -1;
	}
	return 1;
}

/* One sideband option at argv[*i] (its value, if any, after it).
 * Returns 1 and moves *i past what it took, 0 if the option is none of
 * ours, -1 after saying what is wrong. */
static int sb_option(struct sb_options *sb, struct pt_sb_session *session,
		     int argc, char *argv[], int *i, const char *prog)
{
	const char *arg = argv[*i];
	char *value = *i + 1 < argc ? argv[*i + 1] : NULL;
	int taken;

	if (sb_flag_option(sb, session, arg)) {
		*i += 1;
		return 1;
	}
	if (!strcmp(arg, "--pevent:sample-config")) {
		int errcode = value ? sb_add_sample_type(sb, value)
				    : -pte_invalid;

		if (errcode < 0) {
			/* ptxed names the value, ptdump the option. */
			fprintf(stderr, "%s: bad sample config %s: %s.\n", prog,
				sb->decodes && value ? value : arg,
				pt_errstr(pt_errcode(errcode)));
			return -1;
		}
		*i += 2;
		return 1;
	}
	taken = sb_number_option(sb, arg, value, prog);
	if (!taken)
		taken = sb_file_option(sb, session, arg, value, prog);
	if (taken > 0)
		*i += 2;
	return taken;
}

#endif /* IPT_NO_STDIO */

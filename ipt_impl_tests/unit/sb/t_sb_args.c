/* t_sb_args - the sideband session's answers to bad arguments and to
 * decoders that lack a callback, as libipt 2.3's sideband library gives
 * them (sideband/src/pt_sb_session.c, pt_sb_context.c): -pte_invalid for
 * a missing session or argument, -pte_internal where libipt's helpers
 * check (pt_sb_ctx_mmap, pt_sb_ctx_switch_to), NULL from the accessors.  A
 * decoder without fetch is dropped by pt_sb_init_decoders; one without
 * print by pt_sb_dump, one without apply by pt_sb_event; the others go on. */

#define _GNU_SOURCE
#include "ipt.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

/* A decoder with three records, at times 1, 2 and 3; it counts what it is
 * asked to do. */
struct fake {
	uint64_t next;
	int fetched, applied, printed, freed;
};

static int fake_fetch(struct pt_sb_session *s, uint64_t *tsc, void *priv)
{
	struct fake *f = (struct fake *) priv;

	(void) s;
	f->fetched++;
	if (f->next > 3)
		return -pte_eos;
	*tsc = f->next++;
	return 0;
}

static int fake_apply(struct pt_sb_session *s, struct pt_image **image,
		      const struct pt_event *event, void *priv)
{
	(void) s;
	(void) image;
	(void) event;
	((struct fake *) priv)->applied++;
	return 0;
}

static int fake_print(struct pt_sb_session *s, FILE *stream, uint32_t flags,
		      void *priv)
{
	(void) s;
	(void) flags;
	fputc('p', stream);
	((struct fake *) priv)->printed++;
	return 0;
}

static void fake_dtor(void *priv)
{
	((struct fake *) priv)->freed++;
}

static struct pt_sb_decoder_config fake_config(struct fake *f)
{
	struct pt_sb_decoder_config config;

	memset(f, 0, sizeof(*f));
	f->next = 1;
	memset(&config, 0, sizeof(config));
	config.size = sizeof(config);
	config.fetch = fake_fetch;
	config.apply = fake_apply;
	config.print = fake_print;
	config.dtor = fake_dtor;
	config.priv = f;
	return config;
}

static void test_arguments(void)
{
	struct pt_sb_decoder_config config;
	struct pt_sb_session *session = pt_sb_alloc(NULL);
	struct pt_sb_context *ctx = NULL;
	struct pt_image *image = NULL;
	struct pt_event event;
	struct fake f;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	CHECK(session != NULL);
	if (!session)
		return;
	memset(&event, 0, sizeof(event));
	config = fake_config(&f);

	/* Contexts. */
	CHECK_EQ(pt_sb_ctx_put(NULL), -pte_invalid);
	CHECK(pt_sb_ctx_image(NULL) == NULL);
	CHECK_EQ(pt_sb_ctx_mmap(session, NULL, "/bin/true", 0, 1, 0),
		 -pte_internal);
	CHECK_EQ(pt_sb_get_context_by_pid(&ctx, session, 7), 0);
	CHECK(ctx != NULL);
	CHECK_EQ(pt_sb_ctx_switch_to(NULL, session, ctx), -pte_internal);
	CHECK_EQ(pt_sb_ctx_switch_to(&image, NULL, ctx), -pte_internal);
	CHECK_EQ(pt_sb_ctx_switch_to(&image, session, NULL), -pte_internal);
	CHECK(image == NULL);
	CHECK_EQ(pt_sb_ctx_switch_to(&image, session, ctx), 0);
	CHECK(image == pt_sb_ctx_image(ctx));
	CHECK_EQ(pt_sb_find_context_by_pid(NULL, session, 7), -pte_invalid);
	CHECK_EQ(pt_sb_find_context_by_pid(&ctx, NULL, 7), -pte_invalid);
	CHECK_EQ(pt_sb_get_context_by_pid(NULL, session, 7), -pte_invalid);
	CHECK_EQ(pt_sb_remove_context(NULL, ctx), -pte_invalid);
	CHECK_EQ(pt_sb_remove_context(session, NULL), -pte_invalid);

	/* The session's accessors. */
	CHECK(pt_sb_iscache(NULL) == NULL);
	CHECK(pt_sb_kernel_image(NULL) == NULL);
	CHECK(pt_sb_notify_error(NULL, NULL, NULL) == NULL);
	CHECK(pt_sb_notify_switch(NULL, NULL, NULL) == NULL);
	pt_sb_free(NULL);

	/* Decoders, events, dumps. */
	CHECK_EQ(pt_sb_alloc_decoder(NULL, &config), -pte_invalid);
	CHECK_EQ(pt_sb_alloc_decoder(session, NULL), -pte_invalid);
	CHECK_EQ(pt_sb_init_decoders(NULL), -pte_invalid);
	CHECK_EQ(pt_sb_event(NULL, &image, &event, sizeof(event), NULL, 0),
		 -pte_invalid);
	CHECK_EQ(pt_sb_event(session, &image, NULL, sizeof(event), NULL, 0),
		 -pte_invalid);
	out = open_memstream(&text, &len);
	CHECK_EQ(pt_sb_dump(NULL, out, ptsbp_compact, UINT64_MAX),
		 -pte_invalid);
	fclose(out);
	free(text);
	CHECK_EQ(pt_sb_dump(session, NULL, ptsbp_compact, UINT64_MAX),
		 -pte_invalid);
	CHECK_EQ(f.fetched + f.applied + f.printed + f.freed, 0);
	pt_sb_free(session);
}

/* Decoders that lack one callback each, next to one that has all. */
static void test_missing_callbacks(void)
{
	struct pt_sb_decoder_config config;
	struct pt_sb_session *session = pt_sb_alloc(NULL);
	struct fake whole, nofetch, noprint, noapply;
	struct pt_image *image = NULL;
	struct pt_event event;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	CHECK(session != NULL);
	if (!session)
		return;

	config = fake_config(&whole);
	CHECK_EQ(pt_sb_alloc_decoder(session, &config), 0);
	config = fake_config(&nofetch);
	config.fetch = NULL;
	CHECK_EQ(pt_sb_alloc_decoder(session, &config), 0);
	config = fake_config(&noprint);
	config.print = NULL;
	CHECK_EQ(pt_sb_alloc_decoder(session, &config), 0);
	config = fake_config(&noapply);
	config.apply = NULL;
	CHECK_EQ(pt_sb_alloc_decoder(session, &config), 0);

	/* No fetch: dropped (and freed) at once. */
	CHECK_EQ(pt_sb_init_decoders(session), 0);
	CHECK_EQ(nofetch.freed, 1);
	CHECK_EQ(whole.fetched, 1);
	CHECK_EQ(noprint.fetched, 1);
	CHECK_EQ(noapply.fetched, 1);

	/* No print: the dump leaves it out from then on; the others print
	 * their record at time 1. */
	out = open_memstream(&text, &len);
	CHECK_EQ(pt_sb_dump(session, out, ptsbp_compact, 1), 0);
	fclose(out);
	CHECK(text && !strcmp(text, "pp"));
	free(text);
	CHECK_EQ(whole.printed, 1);
	CHECK_EQ(noapply.printed, 1);
	CHECK_EQ(noprint.printed, 0);
	CHECK_EQ(noprint.fetched, 1);

	/* No apply: the event leaves it out; the whole one applies its
	 * records up to the event's time, then sees the event once more. */
	memset(&event, 0, sizeof(event));
	event.type = ptev_tick;
	event.tsc = 3;
	CHECK_EQ(pt_sb_event(session, &image, &event, sizeof(event), NULL, 0),
		 0);
	CHECK_EQ(whole.applied, 3);
	CHECK_EQ(noapply.applied, 0);
	CHECK_EQ(noapply.fetched, 2);

	pt_sb_free(session);
	CHECK_EQ(whole.freed + noprint.freed + noapply.freed, 3);
}

int main(void)
{
	test_arguments();
	test_missing_callbacks();
	return check_done();
}

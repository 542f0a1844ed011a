/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CLI's `set preset P|all NAME` and `show presets` (lib/conf/
 * shp_preset.h, docs/presets.md).
 *
 * A preset is applied as an --atomic file of its stage changes would be:
 * every key's text (what the preset gives, else off, a queue its running
 * kind's defaults) checked on every port selected, then one publish
 * (ctl_set_stages, shaper_batch.h), so a packet meets the old link or the
 * new one, never a mix; an error changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_priv.h"
#include "events.h"
#include "shp_preset.h"

struct r_preset {
	cmdline_fixed_string_t w1, w2, port, name;
};

/* The changes preset p makes on the ports selected (port < 0: all) into
 * ch/args_of/text; how many. A key the preset leaves off is left out
 * where the port runs another kind in its slot (tbf and trace share one):
 * that one's own key turns it off; and where the stage is off already. */
static unsigned int
preset_changes(const struct shp_preset *p, int port, struct ctl_change *ch,
	       const char *(*args_of)[SHP_MAX_PORTS],
	       char (*text)[SHP_MAX_PORTS][CTL_TEXT_LEN])
{
	unsigned int k, i, n = 0;

	for (k = 0; k < shp_key_nb(); k++) {
		const char *key = shp_key_name(k);
		enum shp_slot sl = shp_key_slot(k);
		bool any = false;

		for (i = 0; i < S->nb_ports; i++) {
			uint16_t q = S->port_ids[i];
			const struct shp_kind *run = S->chain[q].kind[sl];
			const char *t = shp_preset_text(p, k);

			args_of[n][i] = NULL;
			if (port >= 0 && port != q)
				continue;
			if (t == NULL)   /* a queue: its kind's defaults */
				t = run->name;
			else if (strcmp(t, "off") == 0 &&
				 (run == NULL || run != shp_kind_find(key) ||
				  S->chain[q].conf[sl] == NULL))
				continue;   /* off already */
			snprintf(text[n][i], CTL_TEXT_LEN, "%s", t);
			args_of[n][i] = text[n][i];
			any = true;
		}
		if (any) {
			ch[n] = (struct ctl_change){ key, port, args_of[n] };
			n++;
		}
	}
	return n;
}

static void
cmd_set_preset(void *res, struct cmdline *c, void *data)
{
	static struct {
		struct ctl_change ch[SHP_MAX_KEYS];
		const char *args_of[SHP_MAX_KEYS][SHP_MAX_PORTS];
		char text[SHP_MAX_KEYS][SHP_MAX_PORTS][CTL_TEXT_LEN];
	} b;
	struct r_preset *r = res;
	struct ctl_config *was;
	struct shp_preset p;
	char err[SHP_ERR_LEN];
	unsigned int n, j;
	int port;

	(void)c; (void)data;
	port = port_of("set preset", r->port);
	if (port == -2)
		return;
	if (shp_preset_load(r->name, &p, err) < 0) {
		fail("set preset %s: %s (nothing changed)", r->port, err);
		return;
	}
	was = malloc(sizeof(*was));
	if (was == NULL) {
		fail("set preset: out of memory (nothing changed)");
		shp_preset_free(&p);
		return;
	}
	ctl_config_snapshot(was);
	n = preset_changes(&p, port, b.ch, b.args_of, b.text);
	if (n > 0 && ctl_set_stages(S, b.ch, n, err) < 0) {
		fail("set preset %s %s: %s (nothing changed)", r->port,
		     p.name, err);
	} else {
		for (j = 0; j < n; j++)
			confirm_stage(b.ch[j].key, port, was);
		/* after its stages' own events: which preset they were */
		shp_event_emit(shp_event_source(), port, "preset", "", p.name);
		out("preset %s on %s%s: %s\n", p.name, port < 0 ? "" : "port ",
		    r->port, p.summary);
	}
	free(was);
	shp_preset_free(&p);
}

static void
cmd_show_presets(void *res, struct cmdline *c, void *data)
{
	static char names[SHP_PRESETS_MAX][SHP_PRESET_NAME_MAX];
	char err[SHP_ERR_LEN];
	int n, i;

	(void)res; (void)c; (void)data;
	n = shp_preset_list(names, SHP_PRESETS_MAX, err);
	if (n < 0) {
		fail("show presets: %s", err);
		return;
	}
	if (n == 0)
		out("no presets in %s\n", shp_preset_dir());
	for (i = 0; i < n; i++) {
		struct shp_preset p;

		/* a preset that does not load is listed with why */
		if (shp_preset_load(names[i], &p, err) < 0) {
			out("%-16s (unusable: %s)\n", names[i], err);
			continue;
		}
		out("%-16s %s\n", p.name, p.summary);
		shp_preset_free(&p);
	}
}

static cmdline_parse_token_string_t t_set =
	TOKEN_STRING_INITIALIZER(struct r_preset, w1, "set");
static cmdline_parse_token_string_t t_preset =
	TOKEN_STRING_INITIALIZER(struct r_preset, w2, "preset");
static cmdline_parse_token_string_t t_port =
	TOKEN_STRING_INITIALIZER(struct r_preset, port, NULL);
static cmdline_parse_token_string_t t_name =
	TOKEN_STRING_INITIALIZER(struct r_preset, name, NULL);

cmdline_parse_inst_t cli_set_preset_inst = {
	.f = cmd_set_preset,
	.help_str = "set preset all|P NAME: a link preset's profile, at once "
		    "(show presets lists them)",
	.tokens = { (void *)&t_set, (void *)&t_preset, (void *)&t_port,
		    (void *)&t_name, NULL },
};

static cmdline_parse_token_string_t t_show =
	TOKEN_STRING_INITIALIZER(struct r_preset, w1, "show");
static cmdline_parse_token_string_t t_presets =
	TOKEN_STRING_INITIALIZER(struct r_preset, w2, "presets");

cmdline_parse_inst_t cli_show_presets_inst = {
	.f = cmd_show_presets,
	.help_str = "show presets: the link presets, each with its summary",
	.tokens = { (void *)&t_show, (void *)&t_presets, NULL },
};

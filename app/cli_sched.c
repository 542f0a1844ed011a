/* SPDX-License-Identifier: BSD-3-Clause */
/* The CLI's `link down|up P|all [carrier]`, `disable|enable P|all`
 * (shaper_wire.h) and `show schedule` (shaper_sched.h). */
#include <stdio.h>
#include <string.h>
#include <cmdline_parse.h>
#include <cmdline_parse_string.h>

#include "cli.h"
#include "control.h"
#include "shaper_sched.h"
#include "shaper_wire.h"

struct r_link {
	cmdline_fixed_string_t w1, w2, port, w4;
};

static void
link_cmd(struct r_link *r, bool carrier)
{
	char err[SHP_ERR_LEN];
	int p;

	p = ctl_port_arg(&shaper, r->port, err);
	if (p == -2 || shaper_link_set(&shaper, p, strcmp(r->w2, "down") == 0,
				       carrier, err) < 0) {
		printf("error: link %s: %s\n", r->w2, err);
		cli_set_failed();
	}
}

static void
cmd_link(void *res, struct cmdline *c, void *data)
{
	(void)c; (void)data;
	link_cmd(res, false);
}

static void
cmd_link_carrier(void *res, struct cmdline *c, void *data)
{
	(void)c; (void)data;
	link_cmd(res, true);
}

static void
cmd_toggle(void *res, struct cmdline *c, void *data)
{
	struct r_link *r = res;
	char err[SHP_ERR_LEN];
	int p;

	(void)c; (void)data;
	p = ctl_port_arg(&shaper, r->port, err);
	if (p == -2 || shaper_wire_set(&shaper, p,
				       strcmp(r->w1, "disable") == 0,
				       err) < 0) {
		printf("error: %s: %s\n", r->w1, err);
		cli_set_failed();
	}
}

static void
cmd_show_schedule(void *res, struct cmdline *c, void *data)
{
	(void)res; (void)c; (void)data;
	shaper_sched_show(&shaper, stdout);
}

static cmdline_parse_token_string_t t_link =
	TOKEN_STRING_INITIALIZER(struct r_link, w1, "link");
static cmdline_parse_token_string_t t_link_dir =
	TOKEN_STRING_INITIALIZER(struct r_link, w2, "down#up");
static cmdline_parse_token_string_t t_link_port =
	TOKEN_STRING_INITIALIZER(struct r_link, port, NULL);

cmdline_parse_inst_t cli_link_inst = {
	.f = cmd_link,
	.help_str = "link down|up all|P: drop what is offered to the port "
		    "(link_down) from now, or stop",
	.tokens = { (void *)&t_link, (void *)&t_link_dir,
		    (void *)&t_link_port, NULL },
};

static cmdline_parse_token_string_t t_link_down =
	TOKEN_STRING_INITIALIZER(struct r_link, w2, "down");
static cmdline_parse_token_string_t t_link_carrier =
	TOKEN_STRING_INITIALIZER(struct r_link, w4, "carrier");

cmdline_parse_inst_t cli_link_carrier_inst = {
	.f = cmd_link_carrier,
	.help_str = "link down all|P carrier: drop, and take the port's "
		    "carrier down too where its driver can",
	.tokens = { (void *)&t_link, (void *)&t_link_down,
		    (void *)&t_link_port, (void *)&t_link_carrier, NULL },
};

static cmdline_parse_token_string_t t_toggle =
	TOKEN_STRING_INITIALIZER(struct r_link, w1, "disable#enable");
static cmdline_parse_token_string_t t_toggle_port =
	TOKEN_STRING_INITIALIZER(struct r_link, port, NULL);

cmdline_parse_inst_t cli_toggle_inst = {
	.f = cmd_toggle,
	.help_str = "disable|enable all|P: a bare wire keeping the profile, "
		    "or the profile back",
	.tokens = { (void *)&t_toggle, (void *)&t_toggle_port, NULL },
};

static cmdline_parse_token_string_t t_show =
	TOKEN_STRING_INITIALIZER(struct r_link, w1, "show");
static cmdline_parse_token_string_t t_schedule =
	TOKEN_STRING_INITIALIZER(struct r_link, w2, "schedule");

cmdline_parse_inst_t cli_show_schedule_inst = {
	.f = cmd_show_schedule,
	.help_str = "show schedule: the links' state and the next events "
		    "of --schedule",
	.tokens = { (void *)&t_show, (void *)&t_schedule, NULL },
};

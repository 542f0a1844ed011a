/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Options shared by dpdk-shaper and dpdk-shaper-replay: the command line
 * and the INI profile (librte_cfgfile) fill one struct; the command line
 * wins over the file.
 *
 * INI format (comments: lines starting with # or ;, and from a # on):
 *   [global]
 *   bands = 3
 *   priomap = 1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1
 *   classify = tos
 *   seed = 42
 *   ring_size = 1024
 *   schedule = FILE
 *   [port 1]
 *   queue = fq_codel target 5ms
 *   tbf = rate 10mbit burst 10kb limit 1mb
 *   netem = delay 10ms 1ms loss 1%
 * (a key is a stage kind's: shp_kind_key())
 */
#ifndef SHP_CONFIG_H
#define SHP_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "classify.h"
#include "shp_chain.h"
#include "shp_classes.h"
#include "shp_kind.h"
#include "shp_stats.h"
#include "shp_units.h"

/* Per-port profile texts from one source (file or command line), by
 * key (shp_key_index: queue, tbf, netem, ...). */
struct shp_layer {
	char *all[SHP_MAX_KEYS];
	char *port[SHP_MAX_KEYS][SHP_MAX_PORTS];
};

struct shp_options {
	unsigned int bands;
	char *priomap_text;           /* NULL: default for `bands` */
	char *priomap_origin;         /* the INI file it came from, if any */
	enum shp_classify_mode classify;
	uint64_t seed;
	bool seed_set;
	struct shp_layer file, cli;
	/* ports */
	int pair_of[SHP_MAX_PORTS];   /* egress port of each ingress port */
	bool pairs_set;
	/* resources */
	unsigned int mbufs;           /* 0: computed */
	unsigned int ring_size;
	unsigned int burst;
	/* --queues: RX and TX queues of every port, each egress port a
	 * shard per TX queue (issue 24); 1: one chain a port */
	unsigned int queues;
	bool queues_given;            /* by --queues or [global] queues */
	unsigned int rxd, txd;        /* descriptors per RX / TX queue */
	uint64_t link_wait_ns;        /* --link-wait: for links at start */
	/* --mtu (every port) over [port N] mtu over [global] mtu; 0: the
	 * PMD's own and no check of frame lengths (shp_options_mtu) */
	unsigned int mtu_cli, mtu_file, mtu_port[SHP_MAX_PORTS];
	unsigned int mbuf_size;       /* --mbuf-size: data room; 0: sized */
	/* overload: a chain whose oldest due packet is later than this
	 * drops new arrivals as `overload` (0: never) */
	uint64_t max_late_ns;
	bool max_late_set;
	/* --late-drop: what would leave later than this after its send
	 * time is dropped as `late` (0: sent late) */
	uint64_t late_drop_ns;
	/* run */
	unsigned int stats_period;
	char *stats_file;
	bool replay;
	bool pace;                    /* replay at the capture's timing */
	char *rx_lcores;
	char *tx_lcores;
	char *config_file;
	bool interactive;
	/* --strict-budget: a profile over its port's lossless budget
	 * (shp_budget.h) is refused, not warned of */
	bool strict_budget;
	char *cmdline_file;
	char *schedule_file;          /* --schedule (lib/conf/schedule.h) */
	/* per-class profiles (shp_classes.h): --class*, [class NAME];
	 * NULL until one is given */
	struct shp_class_set *classes;
	/* derived by shp_options_finalize */
	struct shp_classifier classifier;
};

#define SHP_DEFAULT_BANDS 3
#define SHP_DEFAULT_RING_SIZE 1024
#define SHP_DEFAULT_BURST 32
#define SHP_DEFAULT_MAX_LATE_NS 50000    /* 50us */

/* Frame lengths: an MTU is the L3 packet's; a frame adds its Ethernet
 * header and up to two VLAN tags (shp_frame_oversize) */
#define SHP_MTU_MIN 68
#define SHP_MTU_MAX 65535

void shp_options_init(struct shp_options *o);
/* Port p's MTU as given (0: none given). */
unsigned int shp_options_mtu(const struct shp_options *o, int port);
void shp_options_free(struct shp_options *o);

/* Set a named option (the long option name without "--") from the command
 * line (cli = true) or the file. 0, or -1 with err. `port` is used by the
 * per-port options (tbf-port, netem-port). */
int shp_option_set(struct shp_options *o, const char *name, int port,
		   const char *value, bool cli, char *err);

/* --class NAME 'MATCH', --class-KEY NAME 'TEXT', ... (shp_classes.h):
 * the option's name without "--", the class and the value. */
int shp_option_class(struct shp_options *o, const char *opt,
		     const char *name, const char *value, char *err);

/* Load an INI profile. 0, or -1 with err naming file, section and key. */
int shp_config_load(struct shp_options *o, const char *path, char *err);
/* The same, a file a stage reads (trace = FILE) given by a relative path
 * found in base instead of the working directory (a preset's files). */
int shp_config_load_in(struct shp_options *o, const char *path,
		       const char *base, char *err);

/* Load every `--config FILE` / `--config=FILE` of argv (up to a "--"),
 * before the other options are applied so that the command line wins. */
int shp_config_preload(struct shp_options *o, int argc, char **argv,
		       char *err);

/* Check everything that depends on more than one option (priomap against
 * bands, profiles parse) and fill the classifier. */
int shp_options_finalize(struct shp_options *o, char *err);

/* The effective profile text of a key (queue, tbf, ...) for an egress
 * port (NULL: none, or "off"). */
const char *shp_options_profile(const struct shp_options *o,
				const char *key, uint16_t port);

/* What the kinds' parsers may use of the options (--bands, --seed...). */
void shp_options_kind_env(const struct shp_options *o,
			  struct shp_kind_env *env);

/* The chain an egress port runs, from the profiles: 0, or -1 with err
 * naming the port and the key (nothing to free then). */
int shp_options_chain_spec(const struct shp_options *o, uint16_t port,
			   struct shp_chain_spec *spec, char *err);

/*
 * Mbufs for a run whose egress ports are ports[0..nb), with nb_lcores
 * lcores touching the pool: --mbufs, or what the ports' chains can hold
 * (shp_chain_pool_size). *need (may be NULL): the latter, that --mbufs
 * should not be below.
 */
unsigned int shp_options_pool_size(const struct shp_options *o,
				   const uint16_t *ports, unsigned int nb,
				   unsigned int nb_lcores, unsigned int *need);

/*
 * One mbuf pool per NUMA socket that has ports (a port of no socket,
 * SOCKET_ID_ANY as vdevs are, counts as main_socket's): each port's RX
 * queues take mbufs of its own socket, and so do its chain's copies.
 * Pool k serves socket[k] and its ports (port_pool[i] is ports[i]'s
 * pool), and is sized as shp_options_pool_size sizes the whole for its
 * own ports; --mbufs is shared out by the number of ports. One socket:
 * one pool of exactly shp_options_pool_size's size.
 */
struct shp_pool_plan {
	unsigned int nb;
	int socket[SHP_MAX_PORTS];
	unsigned int mbufs[SHP_MAX_PORTS], need[SHP_MAX_PORTS];
	unsigned int nb_ports[SHP_MAX_PORTS];
	uint16_t ports[SHP_MAX_PORTS][SHP_MAX_PORTS];  /* of each pool */
	uint8_t port_pool[SHP_MAX_PORTS];               /* by port index */
};
void shp_options_pool_plan(const struct shp_options *o, const uint16_t *ports,
			   const int *port_socket, unsigned int nb,
			   int main_socket, unsigned int nb_lcores,
			   struct shp_pool_plan *plan);

/*
 * What the delay stages of each egress port (its own and its classes')
 * may hold in a pool of pool mbufs (cap[i] for ports[i]): the ports'
 * shares as shp_chain_pool_shares gives them, from the chains the
 * profiles build (as shp_options_pool_size sizes the pool).
 */
void shp_options_hold_caps(const struct shp_options *o, const uint16_t *ports,
			   unsigned int nb, unsigned int nb_lcores,
			   unsigned int pool, uint32_t *cap);

/* getopt_long entries for every key: --KEY (val base + 2i) and
 * --KEY-port (val base + 2i + 1), into out (room for 2 * SHP_MAX_KEYS);
 * returns how many. */
struct option;
unsigned int shp_kind_longopts(struct option *out, int base);

/* "Stage kinds:" and each kind's usage, for --help. */
void shp_kinds_usage(FILE *f);

/* "0:1,2:3" */
int shp_pairs_parse(const char *s, int pair_of[SHP_MAX_PORTS], char *err);

#endif

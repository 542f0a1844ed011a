/* SPDX-License-Identifier: BSD-3-Clause */
/* Ports, lcore roles and each egress port's stage chain. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "pace.h"
#include "shaper.h"

#define POOL_CACHE SHP_POOL_CACHE
/* port_init: what the user asked the port cannot take (exit 2); not
 * an errno */
#define PORT_REFUSED (-100000)
/* net_pcap's RX timestamp: the record's time in microseconds */
#define PCAP_TS_NS_PER_UNIT 1000

/* Ports rte_eth_dev_start() started: only those are stopped at exit
 * (stopping the others makes the PMD complain). */
static bool started[SHP_MAX_PORTS];
/* What each port took (the PMD may round --rxd/--txd): said at start. */
static struct {
	uint16_t rxq, rxd, txd;
	bool soft_mtu;   /* --mtu checked by us only: the PMD sets none */
} applied[SHP_MAX_PORTS];

/* The longest frame an MTU lets in: Ethernet header, up to two VLAN tags
 * and the CRC a NIC may write into the buffer too. */
static uint32_t
frame_max(uint32_t mtu)
{
	return mtu + RTE_ETHER_HDR_LEN + 2 * RTE_VLAN_HLEN + RTE_ETHER_CRC_LEN;
}

/*
 * What a vdev's dev_info does not say. net_af_packet reports frames of
 * at most 1518 bytes (max_rx_pktlen) whatever its framesz=, so ethdev
 * refuses any larger MTU from it; yet its ring frames hold framesz less
 * TPACKET2_HDRLEN (52) bytes of a frame, the kernel cuts longer ones
 * short, and its RX copies a frame into one mbuf, which must have room
 * for framesz - 32 (its rx_queue_setup's check). Its framesz= (default
 * 2048), or 0 for any other driver.
 */
#define AF_PACKET_HDR 52
static uint32_t
af_packet_framesz(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da;
	const char *p;

	if (info->driver_name == NULL || info->device == NULL ||
	    strcmp(info->driver_name, "net_af_packet") != 0)
		return 0;
	da = rte_dev_devargs(info->device);
	p = da != NULL && da->args != NULL ? strstr(da->args, "framesz=") :
	    NULL;
	return p != NULL ? (uint32_t)strtoul(p + 8, NULL, 0) : 2048;
}

uint16_t
shaper_data_room(const struct shaper *s)
{
	uint32_t need = RTE_MBUF_DEFAULT_BUF_SIZE;
	bool scatter = true;
	unsigned int i;

	if (s->opt.mbuf_size != 0)
		return (uint16_t)s->opt.mbuf_size;
	/* one mbuf a frame where a port cannot scatter; else the default
	 * room and scatter RX, which holds a 64-byte frame in 2 KiB, not
	 * in 9 */
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		unsigned int mtu = shp_options_mtu(&s->opt, p);
		struct rte_eth_dev_info info;
		uint32_t room = frame_max(mtu) + RTE_PKTMBUF_HEADROOM, fsz;

		if (rte_eth_dev_info_get(p, &info) != 0)
			continue;
		fsz = af_packet_framesz(&info);
		if (fsz > 32) {   /* a frame of the ring in one mbuf */
			need = RTE_MAX(need, fsz - 32 + RTE_PKTMBUF_HEADROOM);
			scatter = false;
		}
		if (mtu == 0 || room <= RTE_MBUF_DEFAULT_BUF_SIZE)
			continue;
		need = RTE_MAX(need, room);
		if (!(info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER))
			scatter = false;
	}
	return scatter ? RTE_MBUF_DEFAULT_BUF_SIZE :
	       (uint16_t)RTE_MIN(need, (uint32_t)UINT16_MAX);
}

/* --mtu on port p: within what it takes (else one line, refused), asked
 * of it in conf, with scatter RX when a frame outgrows an mbuf. */
static int
port_mtu(const struct shaper *s, uint16_t port,
	 const struct rte_eth_dev_info *info, struct rte_eth_conf *conf)
{
	unsigned int mtu = shp_options_mtu(&s->opt, port);
	uint32_t fsz;
	/* rte_eth_dev_configure's own reckoning of a frame */
	uint32_t overhead = info->max_mtu != UINT16_MAX &&
			    info->max_rx_pktlen > info->max_mtu ?
			    info->max_rx_pktlen - info->max_mtu :
			    RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;

	if (mtu == 0)
		return 0;
	fsz = af_packet_framesz(info);
	if (fsz != 0) {
		/* its ring's frame is the limit, not what it reports; the
		 * MTU stays ethdev's (which refuses more) and is ours to
		 * check */
		uint32_t most = fsz > AF_PACKET_HDR ? fsz - AF_PACKET_HDR : 0;

		if (mtu + RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN > most) {
			fprintf(stderr, "dpdk-shaper: port %u (%s): --mtu %u: "
				"its ring frames hold frames of at most %u "
				"bytes (framesz=%u less %u): give it framesz= "
				"of at least %u\n", port, info->driver_name,
				mtu, most, fsz, AF_PACKET_HDR,
				RTE_ALIGN_CEIL(mtu + RTE_ETHER_HDR_LEN +
					       RTE_VLAN_HLEN + AF_PACKET_HDR,
					       16));
			return PORT_REFUSED;
		}
		applied[port].soft_mtu = true;
		return 0;
	}
	if (mtu < info->min_mtu || mtu > info->max_mtu ||
	    (uint64_t)mtu + overhead > info->max_rx_pktlen) {
		fprintf(stderr, "dpdk-shaper: port %u (%s): --mtu %u: the port "
			"takes an MTU of %u..%u and frames of at most %u bytes "
			"(max_mtu %u, max_rx_pktlen %u)\n", port,
			info->driver_name, mtu, info->min_mtu,
			RTE_MIN((uint32_t)info->max_mtu,
				info->max_rx_pktlen > overhead ?
				info->max_rx_pktlen - overhead : 0),
			info->max_rx_pktlen, info->max_mtu,
			info->max_rx_pktlen);
		return PORT_REFUSED;
	}
	conf->rxmode.mtu = mtu;
	if (frame_max(mtu) > (uint32_t)s->data_room - RTE_PKTMBUF_HEADROOM) {
		if (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER)
			conf->rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
		else
			fprintf(stderr, "dpdk-shaper: warning: port %u (%s) "
				"offers no scatter RX and a frame of its MTU "
				"outgrows an mbuf (%u bytes of data, "
				"--mbuf-size): the PMD chains them or drops "
				"them\n", port, info->driver_name,
				s->data_room - RTE_PKTMBUF_HEADROOM);
	}
	return 0;
}

unsigned int
shaper_pool_size(struct shaper *s)
{
	const struct shp_options *o = &s->opt;
	int sock[SHP_MAX_PORTS];
	unsigned int i, n = 0;

	for (i = 0; i < s->nb_ports; i++)
		sock[i] = rte_eth_dev_socket_id(s->port_ids[i]);
	shp_options_pool_plan(o, s->port_ids, sock, s->nb_ports,
			      (int)rte_socket_id(), rte_lcore_count(), &s->plan);
	for (i = 0; i < s->plan.nb; i++) {
		if (s->plan.mbufs[i] < s->plan.need[i])
			fprintf(stderr, "dpdk-shaper: warning: --mbufs %u%s is "
				"below what the chains can hold (%u mbufs): a "
				"full queue leaves RX without mbufs (the bursts "
				"it cannot fill counted as rx_pool_empty)\n",
				s->plan.mbufs[i], s->plan.nb > 1 ?
				" (its share for a socket)" : "",
				s->plan.need[i]);
		n += s->plan.mbufs[i];
	}
	return n;
}

/* What each port's delay stages hold (shp_stage_env's held): written by
 * the port's TX lcore only, a line each. */
static struct {
	uint32_t v;
} __rte_cache_aligned port_held[SHP_MAX_PORTS][SHP_MAX_QUEUES];

const char *
shaper_hold_note(const struct shaper *s, uint16_t port, const char *what,
		 uint64_t limit, char *buf, size_t len)
{
	uint32_t cap = s->egress[port].hold_cap;

	buf[0] = '\0';
	if (cap != 0 && limit > cap)
		snprintf(buf, len, "port %u: %s limit %" PRIu64 " capped to "
			 "%u, the port's share of the pool (%u mbufs; more "
			 "with --mbufs): beyond it packets drop as "
			 "pool_share", port, what, limit, cap, s->nb_mbufs);
	return buf;
}

/* The kind in a chain spec's delay slot. */
static const struct shp_kind *
spec_delay_kind(const struct shp_chain_spec *spec)
{
	return spec->kind[SHP_SLOT_DELAY] != NULL ?
	       spec->kind[SHP_SLOT_DELAY] : shp_kind_default(SHP_SLOT_DELAY);
}

/* The delay limit of a chain spec (0: none of its own). */
static uint64_t
spec_delay_limit(const struct shp_chain_spec *spec,
		 const struct shp_kind_env *env)
{
	const struct shp_kind *k = spec_delay_kind(spec);

	return spec->conf[SHP_SLOT_DELAY] != NULL && k->capacity != NULL ?
	       k->capacity(spec->conf[SHP_SLOT_DELAY], env) : 0;
}

/* At start, as at run time (control.c): every delay limit above its
 * port's share is said, once. */
static void
hold_warn(const struct shaper *s, uint16_t port,
	  const struct shp_chain_spec *spec, const struct shp_kind_env *kenv)
{
	const struct shp_class_set *cs = s->opt.classes;
	char note[SHP_ERR_LEN], what[SHP_ERR_LEN];
	struct shp_chain_spec cspec;
	unsigned int i;

	if (*shaper_hold_note(s, port, spec_delay_kind(spec)->name,
			      spec_delay_limit(spec, kenv),
			      note, sizeof(note)) != '\0')
		fprintf(stderr, "dpdk-shaper: warning: %s\n", note);
	for (i = 0; cs != NULL && i < cs->nb; i++) {
		const struct shp_class_def *d = &cs->def[i];

		if ((d->ports != 0 && !(d->ports & (1u << port))) ||
		    shp_class_spec(d, kenv, &cspec, what) < 0)
			continue;
		snprintf(what, sizeof(what), "class %s %s", d->name,
			 spec_delay_kind(&cspec)->name);
		if (*shaper_hold_note(s, port, what,
				      spec_delay_limit(&cspec, kenv), note,
				      sizeof(note)) != '\0')
			fprintf(stderr, "dpdk-shaper: warning: %s\n", note);
		shp_chain_spec_free(&cspec);
	}
}

/* What an RX queue of port `in` checks for egress port `out`: the
 * smaller MTU given (0: none) */
uint32_t
shaper_rx_mtu(const struct shaper *s, uint16_t in, uint16_t out)
{
	unsigned int a = shp_options_mtu(&s->opt, in);
	unsigned int b = shp_options_mtu(&s->opt, out);

	return a == 0 ? b : b == 0 ? a : RTE_MIN(a, b);
}

static int
port_init(struct shaper *s, uint16_t port, uint16_t nb_rxq)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t nb_rxd = (uint16_t)s->opt.rxd, nb_txd = (uint16_t)s->opt.txd;
	uint16_t q;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0)
		return rc;
	/* rte_eth_dev_adjust_nb_rx_tx_desc clamps silently: a ring the NIC
	 * cannot have is refused, not quietly made another size */
	if (nb_rxd < info.rx_desc_lim.nb_min ||
	    nb_rxd > info.rx_desc_lim.nb_max ||
	    nb_txd < info.tx_desc_lim.nb_min ||
	    nb_txd > info.tx_desc_lim.nb_max) {
		fprintf(stderr, "dpdk-shaper: port %u (%s): --rxd %u / --txd "
			"%u: the port takes %u..%u RX and %u..%u TX "
			"descriptors\n", port, info.driver_name, nb_rxd, nb_txd,
			info.rx_desc_lim.nb_min, info.rx_desc_lim.nb_max,
			info.tx_desc_lim.nb_min, info.tx_desc_lim.nb_max);
		return PORT_REFUSED;
	}
	rc = port_mtu(s, port, &info, &conf);
	if (rc != 0)
		return rc;
	if (nb_rxq > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads &
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* net_pcap stamps every packet without being asked (and does not
	 * advertise the offload); ask those that want to be asked */
	if (s->opt.pace && (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP))
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
	rc = rte_eth_dev_configure(port, nb_rxq, (uint16_t)shaper_queues(s),
				   &conf);
	if (rc != 0)
		return rc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd);
	if (rc != 0)
		return rc;
	if (conf.rxmode.mtu != 0) {
		/* configure took it where the PMD has an MTU to set; a
		 * vdev without one (net_pcap, net_null) still takes the
		 * frames it reads: the RX lcore checks them */
		rc = rte_eth_dev_set_mtu(port, (uint16_t)conf.rxmode.mtu);
		applied[port].soft_mtu = rc == -ENOTSUP;
		if (rc != 0 && rc != -ENOTSUP) {
			fprintf(stderr, "dpdk-shaper: port %u (%s): --mtu %u: "
				"%s\n", port, info.driver_name,
				conf.rxmode.mtu, rte_strerror(-rc));
			return PORT_REFUSED;
		}
	}
	applied[port].rxq = nb_rxq;
	applied[port].rxd = nb_rxd;
	applied[port].txd = nb_txd;
	for (q = 0; q < nb_rxq; q++) {
		rc = rte_eth_rx_queue_setup(port, q, nb_rxd,
					    rte_eth_dev_socket_id(port), NULL,
					    s->pool_of[port]);
		if (rc != 0)
			return rc;
	}
	for (q = 0; q < shaper_queues(s); q++) {
		rc = rte_eth_tx_queue_setup(port, q, nb_txd,
					    rte_eth_dev_socket_id(port), NULL);
		if (rc != 0)
			return rc;
	}
	rte_eth_promiscuous_enable(port); /* not every PMD supports it */
	rc = rte_eth_dev_start(port);
	if (rc == 0 && port < SHP_MAX_PORTS)
		started[port] = true;
	return rc;
}

/*
 * --pace: a pacer for every RX queue. Only net_pcap gives capture times
 * (a NIC's timestamps are its own clock, not a capture's): refuse others.
 */
static int
pace_init(struct shaper *s)
{
	unsigned int l;
	uint16_t k;

	for (l = 0; l < RTE_MAX_LCORE; l++) {
		struct worker *w = &s->workers[l];

		for (k = 0; k < w->nb_rxq; k++) {
			struct rxq_ref *r = &w->rxq[k];
			struct rte_eth_dev_info info = { 0 };

			if (rte_eth_dev_info_get(r->port, &info) != 0 ||
			    info.driver_name == NULL ||
			    strcmp(info.driver_name, "net_pcap") != 0) {
				fprintf(stderr, "dpdk-shaper: --pace: port %u "
					"(%s) gives no capture times; --pace "
					"replays rx_pcap= captures (net_pcap)\n",
					r->port, info.driver_name ?
					info.driver_name : "?");
				return -2;
			}
			r->pace = rte_zmalloc_socket("pace", sizeof(*r->pace),
						     RTE_CACHE_LINE_SIZE,
						     rte_eth_dev_socket_id(
							     r->port));
			if (r->pace == NULL)
				return -1;
			if (shp_pace_init(r->pace, PCAP_TS_NS_PER_UNIT) < 0) {
				fprintf(stderr, "dpdk-shaper: --pace: port %u "
					"has no RX timestamp field\n",
					r->port);
				return -2;
			}
		}
	}
	return 0;
}

/* Written by the control lcore, read by telemetry and the control socket
 * threads: a lock, never on the packet path. */
static pthread_mutex_t link_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shp_link links[SHP_MAX_PORTS];
static uint64_t link_next_poll;   /* timer cycles */
#define LINK_POLL_HZ 10

static uint64_t
utc_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *
shaper_link_text(const struct shp_link *l, char *buf, size_t len)
{
	if (!l->up)
		snprintf(buf, len, "down");
	else
		snprintf(buf, len, "up%s%s %s", l->speed_mbps == 0 ? "" : " ",
			 l->speed_mbps == 0 ? "" :
			 rte_eth_link_speed_to_str(l->speed_mbps),
			 l->full_duplex ? "full-duplex" : "half-duplex");
	return buf;
}

void
shaper_link_get(uint16_t port, struct shp_link *out)
{
	pthread_mutex_lock(&link_lock);
	*out = port < SHP_MAX_PORTS ? links[port] : (struct shp_link){ 0 };
	pthread_mutex_unlock(&link_lock);
}

/* One reading of port's link; true when up/down changed. */
static bool
link_read(uint16_t port, uint64_t now_ns)
{
	struct rte_eth_link el;
	bool changed;

	memset(&el, 0, sizeof(el));
	if (rte_eth_link_get_nowait(port, &el) != 0)
		return false;
	pthread_mutex_lock(&link_lock);
	changed = shp_link_update(&links[port],
				  el.link_status == RTE_ETH_LINK_UP,
				  el.link_duplex == RTE_ETH_LINK_FULL_DUPLEX,
				  el.link_speed, now_ns);
	pthread_mutex_unlock(&link_lock);
	return changed;
}

void
shaper_link_poll(struct shaper *s)
{
	uint64_t now = rte_get_timer_cycles(), ns;
	unsigned int i;

	if (now < link_next_poll)
		return;
	link_next_poll = now + rte_get_timer_hz() / LINK_POLL_HZ;
	ns = utc_ns();
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t port = s->port_ids[i];
		struct shp_link l;
		char when[32], text[64];
		struct tm tm;
		time_t t = (time_t)(ns / 1000000000ull);

		if (!link_read(port, ns))
			continue;
		/* what the delay lines size their stores by */
		shaper_line_rates(s);
		shaper_link_get(port, &l);
		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%s.%03u UTC port %u: link %s\n", when,
		       (unsigned int)(ns % 1000000000ull / 1000000), port,
		       shaper_link_text(&l, text, sizeof(text)));
	}
}

/* --link-wait: up to that long for every link (a vdev is up at once);
 * shaper_ports_report says what each port found. */
static void
link_wait(struct shaper *s)
{
	uint64_t end = rte_get_timer_cycles() +
		       s->opt.link_wait_ns * rte_get_timer_hz() / 1000000000ull;
	unsigned int i, up;

	for (;;) {
		for (i = 0, up = 0; i < s->nb_ports; i++) {
			link_read(s->port_ids[i], utc_ns());
			up += links[s->port_ids[i]].up;
		}
		if (up == s->nb_ports || rte_get_timer_cycles() >= end ||
		    s->quit)
			break;
		rte_delay_us_sleep(10000);
	}
}

void
shaper_ports_report(const struct shaper *s)
{
	unsigned int i;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t port = s->port_ids[i], mtu = 0;
		struct rte_eth_dev_info info = { 0 };
		struct shp_link l;
		char text[64];

		shaper_link_get(port, &l);
		rte_eth_dev_info_get(port, &info);
		rte_eth_dev_get_mtu(port, &mtu);
		if (applied[port].soft_mtu)   /* what the RX lcore checks */
			mtu = (uint16_t)shp_options_mtu(&s->opt, port);
		printf("dpdk-shaper: port %u (%s): %u RX queue%s of %u "
		       "descriptors, %u TX queue%s of %u\n", port,
		       info.driver_name, applied[port].rxq,
		       applied[port].rxq == 1 ? "" : "s", applied[port].rxd,
		       shaper_queues(s), shaper_queues(s) == 1 ? "" : "s",
		       applied[port].txd);
		if (l.up)
			printf("dpdk-shaper: port %u (%s): link %s, mtu %u%s\n",
			       port, info.driver_name,
			       shaper_link_text(&l, text, sizeof(text)), mtu,
			       applied[port].soft_mtu ? " (checked by the "
			       "shaper: the PMD sets none)" : "");
		else
			printf("dpdk-shaper: port %u (%s): link still down "
			       "after --link-wait %.1fs, mtu %u%s\n", port,
			       info.driver_name, s->opt.link_wait_ns / 1e9,
			       mtu, applied[port].soft_mtu ? " (checked by "
			       "the shaper: the PMD sets none)" : "");
	}
}

/* A worker that polls or sends on a port of another socket crosses the
 * interconnect for every descriptor and packet: said once per pair. A
 * port of no socket (SOCKET_ID_ANY: vdevs) is near every lcore. */
static void
numa_warn(struct shaper *s)
{
	unsigned int i, k, j;

	for (i = 0; i < s->nb_workers; i++) {
		const struct worker *w = &s->workers[s->worker_ids[i]];
		unsigned int ls = rte_lcore_to_socket_id(w->lcore);
		uint16_t seen[MAX_RXQ_PER_LCORE + SHP_MAX_PORTS];
		unsigned int nseen = 0;

		for (k = 0; k < (unsigned int)w->nb_rxq + w->nb_egress; k++) {
			uint16_t port = k < w->nb_rxq ? w->rxq[k].port :
					w->egress[k - w->nb_rxq];
			int ps = rte_eth_dev_socket_id(port);

			for (j = 0; j < nseen && seen[j] != port; j++)
				;
			if (j < nseen || ps < 0 || (unsigned int)ps == ls)
				continue;
			seen[nseen++] = port;
			fprintf(stderr, "dpdk-shaper: warning: port %u is on "
				"socket %d but lcore %u, which serves it, is on "
				"socket %u: pick lcores of socket %d (-l)\n",
				port, ps, w->lcore, ls, ps);
		}
	}
}

int
shaper_ports_init(struct shaper *s)
{
	uint16_t port, nq[SHP_MAX_PORTS] = {0};
	unsigned int i, l;
	int rc;

	for (i = 0; i < s->nb_ports; i++) {
		port = s->port_ids[i];
		for (l = 0; l < RTE_MAX_LCORE; l++) {
			struct worker *w = &s->workers[l];
			uint16_t k;

			for (k = 0; k < w->nb_rxq; k++)
				if (w->rxq[k].port == port)
					nq[port]++;
		}
		rc = port_init(s, port, nq[port]);
		if (rc == PORT_REFUSED)
			return -2;
		if (rc != 0) {
			fprintf(stderr, "dpdk-shaper: port %u: cannot start "
				"it\n", port);
			return -1;
		}
	}
	link_wait(s);
	numa_warn(s);
	if (s->opt.pace)
		return pace_init(s);
	if (s->opt.replay)
		printf("dpdk-shaper: --replay reads the input as fast as it is "
		       "polled, ignoring its timestamps (--pace keeps the "
		       "capture's timing)\n");
	return 0;
}

void
shaper_ports_close(struct shaper *s)
{
	unsigned int i;

	for (i = 0; i < s->nb_ports; i++) {
		if (started[s->port_ids[i]])
			rte_eth_dev_stop(s->port_ids[i]);
		started[s->port_ids[i]] = false;
		rte_eth_dev_close(s->port_ids[i]);
	}
}

/* Each egress port's chain (lib/core/shp_chain.h), from its profiles. */
int
shaper_stages_init(struct shaper *s)
{
	const struct shp_options *o = &s->opt;
	unsigned int i, lc, max_lc = 0;
	struct shp_kind_env kenv;
	uint32_t caps[SHP_MAX_PORTS];

	/* Counter blocks above the highest lcore are never written: the
	 * limit's byte sums need not read them. */
	RTE_LCORE_FOREACH(lc)
		max_lc = RTE_MAX(max_lc, lc + 1);
	shp_options_kind_env(o, &kenv);
	/* each pool's share among its own ports */
	for (i = 0; i < s->plan.nb; i++) {
		uint32_t c[SHP_MAX_PORTS];
		unsigned int k, j;

		shp_options_hold_caps(o, s->plan.ports[i], s->plan.nb_ports[i],
				      rte_lcore_count(), s->plan.mbufs[i], c);
		for (k = 0; k < s->plan.nb_ports[i]; k++)
			for (j = 0; j < s->nb_ports; j++)
				if (s->port_ids[j] == s->plan.ports[i][k])
					caps[j] = c[k];
	}

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t port = s->port_ids[i];
		struct egress *e = &s->egress[port];
		struct shp_stage_env env;
		struct shp_chain_spec spec;
		char err[SHP_ERR_LEN];
		unsigned int nprod = 0, l;
		/* the only port of its pool has no other to starve */
		bool alone = s->plan.nb_ports[s->plan.port_pool[i]] <= 1;

		for (l = 0; l < RTE_MAX_LCORE; l++) {
			uint16_t k;

			for (k = 0; k < s->workers[l].nb_rxq; k++)
				if (s->workers[l].rxq[k].egress == port) {
					nprod++;
					break;
				}
		}
		env = (struct shp_stage_env){
			.socket = rte_eth_dev_socket_id(port),
			.single_producer = nprod <= 1,
			.ring_size = o->ring_size,
			.ctr_blocks = s->ctr,
			.nb_ctr_blocks = rte_get_main_lcore() + 1 > max_lc ?
					 rte_get_main_lcore() + 1 : max_lc,
			/* one port has no other to starve: its limits are
			 * as given (the --mbufs warning says when the pool
			 * is short) */
			.held = alone ? NULL : &port_held[port][0].v,
			/* the port's share is its link's: a shard may hold
			 * all of it, counting what the others hold */
			.hold_cap = alone ? 0 : caps[i],
			.link_held = alone || shaper_queues(s) == 1 ? NULL :
				     &port_held[port][0].v,
			.held_stride = sizeof(port_held[0][0]) /
				       sizeof(port_held[0][0].v),
			.link = s->link[port],
			.nb_shards = (uint16_t)shaper_queues(s),
		};
		if (shaper_queues(s) > 1) {
			/* a shard's byte limits count what it holds, in its
			 * two blocks (its TX lcore's, its RX lcore's); one
			 * lcore feeds it: RX queue q's */
			env.ctr_blocks = SHAPER_SHARD_BLOCK(s->ctr, 0);
			env.nb_ctr_blocks = SHAPER_SHARD_BLOCKS;
			/* and the link's limits, all shards' (issue 56) */
			env.link_ctr_blocks = SHAPER_SHARD_BLOCK(s->ctr, 0);
			env.nb_link_ctr_blocks = SHAPER_SHARD_BLOCKS *
						 shaper_queues(s);
			env.single_producer = true;
		}
		e->hold_cap = env.hold_cap;
		port_held[port][0].v = 0;
		if (shp_options_chain_spec(o, port, &spec, err) < 0) {
			fprintf(stderr, "dpdk-shaper: %s\n", err);
			return -1;
		}
		hold_warn(s, port, &spec, &kenv);
		if (shaper_queues(s) > 1) {
			char note[768];

			if (shp_classes_link_note(&spec, s->opt.classes, port,
						  note, sizeof(note)) > 0)
				printf("dpdk-shaper: port %u on %u shards: the "
				       "profile is the link's but for %s "
				       "(docs/usage.md, Shards)\n", port,
				       shaper_queues(s), note);
		}
		if (shp_chain_build(&s->chain[port], &spec, s->pool_of[port],
				    port,
				    &env, NULL, &kenv) < 0)
			goto fail;
		e->port = port;
		e->txq = 0;
		e->chain = &s->chain[port];
		e->pend.pkts = rte_zmalloc_socket("pending", SHP_MAX_BURST *
						  sizeof(struct rte_mbuf *), 0,
						  env.socket);
		if (e->pend.pkts == NULL)
			goto fail;
		/* shards 1.. of a sharded port, each its own held count */
		for (l = 1; l < shaper_queues(s); l++) {
			env.shard = (uint16_t)l;
			env.held = alone ? NULL : &port_held[port][l].v;
			port_held[port][l].v = 0;
			if (shaper_shards_init(s, port, &env, &kenv) < 0)
				return -1;
		}
		/* per-class profiles: a classes stage under the tbf of each
		 * shard of the port */
		if (shaper_classes_attach(s, port, &kenv, err) < 0) {
			fprintf(stderr, "dpdk-shaper: %s\n", err);
			return -1;
		}
		continue;
fail:
		fprintf(stderr, "dpdk-shaper: port %u: cannot create its "
			"stages: %s\n", port, strerror(errno));
		return -1;
	}
	return 0;
}

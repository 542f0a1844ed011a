/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_byteorder.h>

#include "classify.h"
#include "shp_meta.h"
#include "shp_pkthdr.h"

/* TC_PRIO values */
enum {
	PRIO_BESTEFFORT = 0, PRIO_FILLER = 1, PRIO_BULK = 2,
	PRIO_INTERACTIVE_BULK = 4, PRIO_INTERACTIVE = 6, PRIO_CONTROL = 7,
};

/* The kernel's ip_tos2prio, indexed by (tos & 0x1E) >> 1. */
static const uint8_t tos2prio[16] = {
	PRIO_BESTEFFORT, PRIO_FILLER, PRIO_BESTEFFORT, PRIO_BESTEFFORT,
	PRIO_BULK, PRIO_BULK, PRIO_BULK, PRIO_BULK,
	PRIO_INTERACTIVE, PRIO_INTERACTIVE, PRIO_INTERACTIVE, PRIO_INTERACTIVE,
	PRIO_INTERACTIVE_BULK, PRIO_INTERACTIVE_BULK,
	PRIO_INTERACTIVE_BULK, PRIO_INTERACTIVE_BULK,
};

/*
 * DSCP class selector (dscp >> 3) -> priority. The TOS table maps DSCP
 * code points oddly (EF lands in band 1, AF41 in band 2), so this mode reads
 * the class: CS1/AF1x lower effort -> bulk, AF3x/AF4x -> interactive bulk,
 * EF/CS5 -> interactive, CS6/CS7 network control -> control.
 */
static const uint8_t cs2prio[8] = {
	PRIO_BESTEFFORT, PRIO_BULK, PRIO_BESTEFFORT, PRIO_INTERACTIVE_BULK,
	PRIO_INTERACTIVE_BULK, PRIO_INTERACTIVE, PRIO_CONTROL, PRIO_CONTROL,
};

/* 802.1p PCP -> priority, same reading: BK(1) bulk, BE(0)/EE(2) best
 * effort, CA(3)/VI(4) interactive bulk, VO(5) interactive, IC(6)/NC(7)
 * control. */
static const uint8_t pcp2prio[8] = {
	PRIO_BESTEFFORT, PRIO_BULK, PRIO_BESTEFFORT, PRIO_INTERACTIVE_BULK,
	PRIO_INTERACTIVE_BULK, PRIO_INTERACTIVE, PRIO_CONTROL, PRIO_CONTROL,
};

static const uint8_t linux_priomap[16] = {
	1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1
};

/* Priority from the headers (shp_pkthdr.h: the walker ECN marking and
 * flow hashing also use, so all agree on which frames are IP). Walks no
 * deeper than the mode needs; a frame whose fixed IP header is not all
 * there, or that is not IP, gets priority 0. */
static __rte_always_inline uint8_t
prio_of(enum shp_classify_mode mode, const struct rte_mbuf *m)
{
	struct shp_pkthdr h;

	if (mode == SHP_CLASSIFY_PCP) {
		shp_pkthdr_parse(m, &h, SHP_PKTHDR_L2);
		/* nb_tags and l3_type rather than the flags: then the
		 * compiler drops the flags' bookkeeping from this path */
		return h.nb_tags ? pcp2prio[h.pcp] : 0;
	}
	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L3);
	if (h.l3_type == 0)
		return 0;
	if (mode == SHP_CLASSIFY_DSCP)
		return cs2prio[h.tos >> 5];
	return tos2prio[(h.tos & 0x1e) >> 1];
}

uint8_t
shp_classify_prio(enum shp_classify_mode mode, const struct rte_mbuf *m)
{
	if (mode == SHP_CLASSIFY_NONE)
		return 0;
	return prio_of(mode, m);
}

uint32_t
shp_classify_bands_map(const struct shp_classifier *c, const uint8_t *map,
		       struct rte_mbuf **pkts, uint16_t n, uint8_t *prio,
		       uint8_t *band, uint64_t *bytes)
{
	uint64_t sum = 0;
	uint32_t used = 0;
	uint16_t i;

	if (map == NULL)
		map = c->priomap;
	if (c->mode == SHP_CLASSIFY_NONE) {
		uint8_t b = map[0];

		for (i = 0; i < n; i++) {
			sum += rte_pktmbuf_pkt_len(pkts[i]);
			prio[i] = 0;
			band[i] = b;
		}
		*bytes = sum;
		return n ? 1u << b : 0;
	}
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t p = prio_of(c->mode, m);
		uint8_t b = map[p];

		sum += rte_pktmbuf_pkt_len(m);
		prio[i] = p;
		band[i] = b;
		used |= 1u << b;
	}
	*bytes = sum;
	return used;
}

uint32_t
shp_classify_bands(const struct shp_classifier *c, struct rte_mbuf **pkts,
		   uint16_t n, uint8_t *prio, uint8_t *band, uint64_t *bytes)
{
	return shp_classify_bands_map(c, NULL, pkts, n, prio, band, bytes);
}

uint32_t
shp_classify_burst_map(const struct shp_classifier *c, const uint8_t *map,
		       struct rte_mbuf **pkts, uint16_t n, uint64_t rx_ns,
		       uint8_t *band, uint64_t *bytes)
{
	uint8_t prio[n ? n : 1];
	uint32_t used = shp_classify_bands_map(c, map, pkts, n, prio, band,
					       bytes);

	shp_meta_rx_burst(pkts, n, rx_ns, 0, prio, band);
	return used;
}

uint32_t
shp_classify_burst_bands(const struct shp_classifier *c,
			 struct rte_mbuf **pkts, uint16_t n, uint64_t rx_ns,
			 uint8_t *band, uint64_t *bytes)
{
	return shp_classify_burst_map(c, NULL, pkts, n, rx_ns, band, bytes);
}

void
shp_classify_burst(const struct shp_classifier *c, struct rte_mbuf **pkts,
		   uint16_t n, uint64_t rx_ns)
{
	uint8_t band[n ? n : 1];
	uint64_t bytes;

	shp_classify_burst_bands(c, pkts, n, rx_ns, band, &bytes);
}

void
shp_priomap_default(uint8_t nb_bands, uint8_t priomap[16])
{
	int i;

	for (i = 0; i < 16; i++)
		priomap[i] = RTE_MIN(linux_priomap[i], nb_bands - 1);
}

int
shp_priomap_parse(const char *s, uint8_t nb_bands, uint8_t priomap[16],
		  char *err)
{
	uint8_t map[16];
	const char *p = s;
	int i;

	for (i = 0; i < 16; i++) {
		char *end;
		long v;

		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		if (*p == '\0') {
			snprintf(err, SHP_ERR_LEN,
				 "priomap '%s': needs 16 values (the band of "
				 "each priority 0..15), got %d", s, i);
			return -1;
		}
		v = strtol(p, &end, 10);
		if (end == p || (*end != '\0' && *end != ',' && *end != ' ' &&
				 *end != '\t')) {
			snprintf(err, SHP_ERR_LEN,
				 "priomap '%s': '%.*s' is not a band number",
				 s, (int)strcspn(p, ", \t"), p);
			return -1;
		}
		if (v < 0 || v >= nb_bands) {
			snprintf(err, SHP_ERR_LEN,
				 "priomap '%s': band %ld out of range 0..%d",
				 s, v, nb_bands - 1);
			return -1;
		}
		map[i] = (uint8_t)v;
		p = end;
	}
	while (*p == ' ' || *p == ',' || *p == '\t')
		p++;
	if (*p != '\0') {
		snprintf(err, SHP_ERR_LEN,
			 "priomap '%s': more than 16 entries", s);
		return -1;
	}
	memcpy(priomap, map, sizeof(map));
	return 0;
}

static const char *const mode_names[] = {
	[SHP_CLASSIFY_TOS] = "tos", [SHP_CLASSIFY_DSCP] = "dscp",
	[SHP_CLASSIFY_PCP] = "pcp", [SHP_CLASSIFY_NONE] = "none",
};

int
shp_classify_mode_parse(const char *s, enum shp_classify_mode *mode, char *err)
{
	unsigned int i;

	for (i = 0; i < RTE_DIM(mode_names); i++) {
		if (strcmp(s, mode_names[i]) == 0) {
			*mode = i;
			return 0;
		}
	}
	snprintf(err, SHP_ERR_LEN,
		 "classify '%s': use tos, dscp, pcp or none", s);
	return -1;
}

const char *
shp_classify_mode_name(enum shp_classify_mode mode)
{
	return mode_names[mode];
}

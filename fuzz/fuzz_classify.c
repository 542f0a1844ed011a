/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The classifier (lib/classify.c) on arbitrary frames, each as a one- and
 * a two-segment mbuf: every mode gives a priority 0..15, the same for both
 * layouts; the burst path gives bands within the classifier's, the byte
 * sum and the used-band set; nothing leaks from the pool.
 *
 * Input: byte 0 = number of bands - 1 (low 4 bits), byte 1 = where the
 * second segment starts, the rest = the frame. Also the priomap parser on
 * the frame as text.
 */
#include <rte_mbuf.h>

#include "fuzz_common.h"
#include "classify.h"
#include "shp_meta.h"

#define POOL_SIZE 63
#define FRAME_MAX 4000

static struct rte_mempool *pool;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	fuzz_eal_init("fuzz_cls");
	pool = rte_pktmbuf_pool_create("fuzz", POOL_SIZE, 0,
				       SHP_MBUF_PRIV_SIZE,
				       RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	if (pool == NULL)
		abort();
	return 0;
}

static struct rte_mbuf *
seg(const uint8_t *data, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	char *p;

	if (m == NULL)
		abort();
	p = rte_pktmbuf_append(m, len);
	if (p == NULL)
		abort();
	memcpy(p, data, len);
	shp_meta_init(m, 0);
	return m;
}

/* The frame in one segment (k > len: as much as fits in the first). */
static struct rte_mbuf *
frame(const uint8_t *data, uint16_t len, uint16_t k)
{
	uint16_t room = RTE_MBUF_DEFAULT_DATAROOM;
	struct rte_mbuf *m, *t;

	if (k > len)
		k = len;
	if (k > room)
		k = room;
	if (len - k > room)
		return NULL;
	m = seg(data, k);
	if (k == len)
		return m;
	t = seg(data + k, len - k);
	if (rte_pktmbuf_chain(m, t) < 0)
		abort();
	return m;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum shp_classify_mode modes[] = {
		SHP_CLASSIFY_TOS, SHP_CLASSIFY_DSCP, SHP_CLASSIFY_PCP,
		SHP_CLASSIFY_NONE,
	};
	struct shp_classifier c;
	struct rte_mbuf *pkts[2];
	uint8_t band[2], map[16];
	uint64_t bytes;
	uint32_t used;
	uint16_t len;
	unsigned int i, j;
	char err[SHP_ERR_LEN], *text;

	if (size < 2 || size - 2 > FRAME_MAX)
		return 0;
	len = (uint16_t)(size - 2);
	c.nb_bands = (data[0] & 0xf) + 1;
	shp_priomap_default(c.nb_bands, c.priomap);

	pkts[0] = frame(data + 2, len, len);
	pkts[1] = frame(data + 2, len, data[1] * 16);
	if (pkts[0] == NULL || pkts[1] == NULL) {
		rte_pktmbuf_free(pkts[0]);
		rte_pktmbuf_free(pkts[1]);
		return 0;
	}
	for (i = 0; i < RTE_DIM(modes); i++) {
		uint8_t p0 = shp_classify_prio(modes[i], pkts[0]);
		uint8_t p1 = shp_classify_prio(modes[i], pkts[1]);

		if (p0 > SHP_PRIO_MAX || p0 != p1)
			FUZZ_BUG("mode %u: priority %u (one segment), %u (two)",
				 i, p0, p1);
		c.mode = modes[i];
		used = shp_classify_burst_bands(&c, pkts, 2, 7, band, &bytes);
		if (bytes != 2u * len)
			FUZZ_BUG("burst bytes %" PRIu64 " for 2 x %u", bytes,
				 len);
		for (j = 0; j < 2; j++)
			if (band[j] >= c.nb_bands ||
			    !(used & (1u << band[j])) ||
			    shp_meta(pkts[j])->band != band[j] ||
			    shp_meta(pkts[j])->prio != p0 ||
			    band[j] != c.priomap[p0])
				FUZZ_BUG("mode %u pkt %u: band %u, used 0x%x, "
					 "%u bands", i, j, band[j], used,
					 c.nb_bands);
		if (used >> c.nb_bands)
			FUZZ_BUG("used bands 0x%x of %u", used, c.nb_bands);
	}
	rte_pktmbuf_free_bulk(pkts, 2);
	if (rte_mempool_avail_count(pool) != POOL_SIZE)
		FUZZ_BUG("mbuf leak: %u of %u in the pool",
			 rte_mempool_avail_count(pool), POOL_SIZE);

	/* the priomap parser, on the same bytes as text */
	text = fuzz_str(data + 2, len);
	if (shp_priomap_parse(text, c.nb_bands, map, err) == 0) {
		for (i = 0; i < 16; i++)
			if (map[i] >= c.nb_bands)
				FUZZ_BUG("priomap: band %u of %u", map[i],
					 c.nb_bands);
	}
	free(text);
	return 0;
}

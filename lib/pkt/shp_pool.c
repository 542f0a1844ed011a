/* SPDX-License-Identifier: BSD-3-Clause */
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>

#include "shp_pool.h"

/* rte_pktmbuf_init, and with *iova_va the buffer's address as its IOVA:
 * a packed pool's chunks get none from DPDK (RTE_BAD_IOVA), and with
 * IOVA as VA a buffer's is its address, as for any other memory then */
static void
mbuf_init(struct rte_mempool *mp, void *iova_va, void *obj, unsigned int idx)
{
	struct rte_mbuf *m = obj;

	rte_pktmbuf_init(mp, NULL, obj, idx);
	if (*(const bool *)iova_va)
		m->buf_iova = (rte_iova_t)(uintptr_t)m->buf_addr;
}

bool
shp_pool_pack_default(void)
{
	return !rte_eal_has_hugepages() && rte_eal_iova_mode() == RTE_IOVA_VA;
}

struct rte_mempool *
shp_pool_create(const char *name, unsigned int n, unsigned int cache,
		uint16_t priv_size, uint16_t data_room, int socket,
		const char *ops, bool packed)
{
	struct rte_pktmbuf_pool_private priv = {
		.mbuf_data_room_size = data_room,
		.mbuf_priv_size = priv_size,
	};
	struct rte_mempool *mp;
	bool iova_va;
	int e;

	if (RTE_ALIGN(priv_size, RTE_MBUF_PRIV_ALIGN) != priv_size) {
		rte_errno = EINVAL;
		return NULL;
	}
	mp = rte_mempool_create_empty(name, n, sizeof(struct rte_mbuf) +
				      priv_size + data_room, cache,
				      sizeof(priv), socket,
				      packed ? RTE_MEMPOOL_F_NO_IOVA_CONTIG :
				      0);
	if (mp == NULL)
		return NULL;
	e = rte_mempool_set_ops_byname(mp, ops != NULL ? ops :
				       rte_mbuf_best_mempool_ops(), NULL);
	if (e != 0)
		goto fail;
	rte_pktmbuf_pool_init(mp, &priv);
	e = rte_mempool_populate_default(mp);
	if (e < 0)
		goto fail;
	iova_va = packed && rte_eal_iova_mode() == RTE_IOVA_VA;
	rte_mempool_obj_iter(mp, mbuf_init, &iova_va);
	return mp;
fail:
	rte_mempool_free(mp);
	rte_errno = -e;
	return NULL;
}

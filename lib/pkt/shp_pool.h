/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mbuf pools of the shaper, the offline tool and the benchmarks.
 *
 * rte_pktmbuf_pool_create keeps every object inside one page, so that a
 * buffer is contiguous for a device in IOVA-as-PA mode. Without
 * hugepages the page is 4 KiB and an mbuf of the default size (2.4 KiB
 * with its headers) is alone in it: every mbuf's header then sits at the
 * same offset of its page, all on the same L1 sets, and a burst's 32
 * mbufs evict each other there. A packed pool lets objects straddle
 * pages (RTE_MEMPOOL_F_NO_IOVA_CONTIG): 1.7 a page, their headers spread
 * over the sets. Measured: bench_store_floor's floor on --no-huge
 * 16-17 Mpps one mbuf a page, 42 packed (git log -p docs/benchmarks.md, "mbufs one
 * a page without hugepages").
 */
#ifndef SHP_POOL_H
#define SHP_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_mempool.h>

/*
 * May this process's pools be packed: no hugepages (4 KiB pages, where
 * packing pays) and IOVA as VA (a buffer's IOVA range is then its
 * virtual one, contiguous across pages, so a device may still be handed
 * one).
 */
bool shp_pool_pack_default(void);

/*
 * An mbuf pool as rte_pktmbuf_pool_create_by_ops makes one (ops NULL:
 * the platform's best), packed if asked: then with IOVA as VA each
 * buffer's IOVA is its address (DPDK gives a packed pool none), in PA
 * mode none (RTE_BAD_IOVA: for pools no device reads). NULL with
 * rte_errno set on failure.
 */
struct rte_mempool *shp_pool_create(const char *name, unsigned int n,
				    unsigned int cache, uint16_t priv_size,
				    uint16_t data_room, int socket,
				    const char *ops, bool packed);

#endif /* SHP_POOL_H */

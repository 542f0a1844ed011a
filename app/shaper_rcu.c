/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The program's one RCU QSBR variable (shaper.h): the workers report
 * their quiescent states to it (worker.c); the control plane waits on it
 * before freeing what it replaced (control.c, shaper_sched.c). Set up by
 * main.c (fuzz/: by the harness). In a file of its own because each
 * side that uses it calls the other: held by either, it would make the
 * two files depend on each other.
 */
#include <rte_rcu_qsbr.h>

#include "shaper.h"

struct rte_rcu_qsbr *shaper_rcu;

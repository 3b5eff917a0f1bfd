#ifndef ATTESTEDGE_CLMDB_SHIM_H
#define ATTESTEDGE_CLMDB_SHIM_H
#include <lmdb.h>
#include <stdint.h>

/* Atomic access to a u64 in memory shared between processes (the durable environment's
   sync.state page, see DurabilityBarrier.swift). */
static inline uint64_t attest_load_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
/* Raises *p to v unless it is already at least v. */
static inline void attest_max_u64(uint64_t *p, uint64_t v) {
    uint64_t seen = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (seen < v && !__atomic_compare_exchange_n(p, &seen, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {}
}
#endif

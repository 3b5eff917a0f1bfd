#ifndef ATTESTEDGE_CMETRICS_SHIM_H
#define ATTESTEDGE_CMETRICS_SHIM_H
/* Relaxed atomic operations on 64-bit counters in a shared memory segment (AttestMetrics):
 * Swift has no portable atomics on raw memory that other processes map too. Every slot is
 * 8-byte aligned (the segment is page-aligned and its slots start at offset 64), so each
 * operation is one lock-free instruction (`lock xadd` on x86-64, `ldadd`/LL-SC on arm64):
 * no lock is taken, and a process killed in the middle leaves every slot whole. No library is
 * linked. */
#include <stdint.h>
#include <stddef.h>

static inline void attest_metrics_add(uint64_t *slots, size_t index, uint64_t value) {
    __atomic_fetch_add(&slots[index], value, __ATOMIC_RELAXED);
}

static inline void attest_metrics_store(uint64_t *slots, size_t index, uint64_t value) {
    __atomic_store_n(&slots[index], value, __ATOMIC_RELAXED);
}

static inline uint64_t attest_metrics_load(const uint64_t *slots, size_t index) {
    return __atomic_load_n(&slots[index], __ATOMIC_RELAXED);
}

#endif

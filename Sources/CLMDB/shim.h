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

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
/* Whether another process has the LMDB environment whose lock file is `path` open: every
   process with it open holds an fcntl lock on its first byte (LMDB's mdb_env_excl_lock and
   mdb_env_share_locks). 1: in use, 0: not (or no lock file), -1: cannot tell. Closing the
   descriptor drops this process's own fcntl locks on the file: call it only in a process
   that does not have the environment open. */
static inline int attest_lmdb_in_use(const char *path) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    struct flock probe = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
    int rc = fcntl(fd, F_GETLK, &probe);
    close(fd);
    if (rc != 0) return -1;
    return probe.l_type == F_UNLCK ? 0 : 1;
}
#endif

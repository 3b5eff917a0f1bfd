#ifndef ATTESTEDGE_CLMDB_SHIM_H
#define ATTESTEDGE_CLMDB_SHIM_H
#include <lmdb.h>
#include <stdint.h>

/* Atomic access to a u64 in memory shared between processes (the durable environment's
   sync.state page, see DurabilityBarrier.swift). */
static inline uint64_t attest_load_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void attest_store_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
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
   that does not have the environment open. A link (or FIFO) planted as the lock file is not
   followed or waited on: "cannot tell". */
static inline int attest_lmdb_in_use(const char *path) {
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    struct flock probe = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
    int rc = fcntl(fd, F_GETLK, &probe);
    close(fd);
    if (rc != 0) return -1;
    return probe.l_type == F_UNLCK ? 0 : 1;
}
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <linux/falloc.h>
#include <linux/magic.h>
/* Reserves the disk blocks of the file at `path` (created if missing) up to `bytes` without
   changing its size (fallocate FALLOC_FL_KEEP_SIZE): an LMDB environment opened with
   MDB_WRITEMAP then never stores into a page the disk cannot hold. Only on file systems that
   overwrite allocated blocks in place (ext2/3/4, XFS, tmpfs); a copy-on-write file system
   needs new blocks for every write.
   Returns a descriptor holding an exclusive flock on the file: keep it until the environment
   is open (LMDB sizes the file to its map then), so that no other process's reservation,
   size check or give-back runs in between. Else -errno: -EOPNOTSUPP for another file system;
   -EFBIG when the file is already larger than `bytes` (a smaller map than another process's:
   LMDB would truncate the file to it on open, under that process's writable map); the errno
   of a failed fallocate, after giving back what it allocated past the end of the file. */
static inline int attest_reserve_file(const char *path, long long bytes) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return -errno;
    struct statfs fs;
    struct stat st;
    int rc = 0;
    if (flock(fd, LOCK_EX) != 0 || fstatfs(fd, &fs) != 0 || fstat(fd, &st) != 0) {
        rc = errno;
    } else if (fs.f_type != EXT4_SUPER_MAGIC && fs.f_type != XFS_SUPER_MAGIC && fs.f_type != TMPFS_MAGIC) {
        rc = EOPNOTSUPP;
    } else if ((long long)st.st_size > bytes) {
        rc = EFBIG;
    } else if (syscall(SYS_fallocate, fd, FALLOC_FL_KEEP_SIZE, (off_t)0, (off_t)bytes) != 0) {
        /* The system call: glibc declares fallocate() only with _GNU_SOURCE, which would
           make this module's view of the C library differ from Swift's Glibc module. */
        rc = errno;
        (void)ftruncate(fd, st.st_size);
    }
    if (rc == 0) return fd;
    close(fd);
    return -rc;
}
#endif

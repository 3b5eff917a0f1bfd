#!/usr/bin/env python3
"""sandbox_exec.py PROGRAM ARGS…: runs PROGRAM with the network sandbox of the systemd units
(nginx/deploy/systemd/attestedge@.service) where systemd cannot run it: start it under `unshare --net`
(PrivateNetwork=yes: a network namespace with only a loopback that is down), and this installs
RestrictAddressFamilies=AF_UNIX the way systemd does (a seccomp filter: socket() for any other
family fails with EAFNOSUPPORT), then execs PROGRAM in the same process."""
import ctypes
import errno
import os
import socket
import sys

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO = 0x00050000
SCMP_CMP_NE = 1


class ArgCmp(ctypes.Structure):
    """struct scmp_arg_cmp (seccomp.h)."""
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def restrict_to_unix_sockets():
    lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        sys.exit("sandbox_exec: seccomp_init failed")
    rule = ArgCmp(0, SCMP_CMP_NE, socket.AF_UNIX, 0)
    nr = lib.seccomp_syscall_resolve_name(b"socket")
    if lib.seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO | errno.EAFNOSUPPORT, nr, 1, ctypes.byref(rule)) != 0 or lib.seccomp_load(ctx) != 0:
        sys.exit("sandbox_exec: could not load the seccomp filter")


if __name__ == "__main__":
    restrict_to_unix_sockets()
    os.execv(sys.argv[1], sys.argv[1:])

#ifndef ATTESTEDGE_CLMDB_SHIM_H
#define ATTESTEDGE_CLMDB_SHIM_H
#include <lmdb.h>
#endif

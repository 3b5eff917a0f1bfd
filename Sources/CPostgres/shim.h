#ifndef ATTESTEDGE_CPOSTGRES_SHIM_H
#define ATTESTEDGE_CPOSTGRES_SHIM_H
#include <libpq-fe.h>

/* PG_DIAG_SQLSTATE is a character constant macro. */
static inline int attest_pg_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int attest_pg_diag_message(void) { return PG_DIAG_MESSAGE_PRIMARY; }
#endif

#ifndef ATTESTEDGE_CFASTCGI_SHIM_H
#define ATTESTEDGE_CFASTCGI_SHIM_H
/* libfcgi's request API (FCGX_*), plus the POSIX process and signal calls the pre-fork pool
 * needs that Swift cannot import directly: function-like macros (sys/wait.h), a variadic
 * function (prctl) and struct sigaction's handler union. */
#include <fcgiapp.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

/* Installs `handler` for `sig` with every other signal blocked while it runs. `restart`
 * sets SA_RESTART so interrupted system calls are re-issued instead of failing with EINTR. */
static inline int attest_fcgi_sigaction(int sig, void (*handler)(int), int restart) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigfillset(&action.sa_mask);
    action.sa_flags = restart ? SA_RESTART : 0;
    return sigaction(sig, &action, NULL);
}

/* Sets the disposition of `sig` to SIG_DFL (which = 0) or SIG_IGN (which = 1). */
static inline int attest_fcgi_sigdisposition(int sig, int which) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = which ? SIG_IGN : SIG_DFL;
    sigemptyset(&action.sa_mask);
    return sigaction(sig, &action, NULL);
}

/* prctl(PR_SET_PDEATHSIG): `sig` is delivered to this process when its parent dies. */
static inline int attest_fcgi_set_parent_death_signal(int sig) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0UL, 0UL, 0UL);
}

/* waitpid(2) status decoding. */
static inline int attest_fcgi_wifexited(int status) { return WIFEXITED(status); }
static inline int attest_fcgi_wexitstatus(int status) { return WEXITSTATUS(status); }
static inline int attest_fcgi_wifsignaled(int status) { return WIFSIGNALED(status); }
static inline int attest_fcgi_wtermsig(int status) { return WTERMSIG(status); }
#endif

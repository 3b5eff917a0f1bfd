#ifndef ATTESTEDGE_COPENSSL_SHIM_H
#define ATTESTEDGE_COPENSSL_SHIM_H
/* Only the OpenSSL 3 API: anything deprecated fails to compile. */
#define OPENSSL_NO_DEPRECATED 1
#define OPENSSL_API_COMPAT 30000
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/crypto.h>
#include <string.h>

/* Function-like macros and variadic functions Swift cannot import directly. */
static inline STACK_OF(X509) *attest_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int attest_sk_X509_push(STACK_OF(X509) *s, X509 *x) { return sk_X509_push(s, x); }
static inline void attest_sk_X509_free(STACK_OF(X509) *s) { sk_X509_free(s); }
static inline int attest_sk_X509_num(STACK_OF(X509) *s) { return sk_X509_num(s); }
static inline X509 *attest_sk_X509_value(STACK_OF(X509) *s, int i) { return sk_X509_value(s, i); }
static inline void attest_OPENSSL_free(void *p) { OPENSSL_free(p); }
static inline long attest_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }

/* EVP_PKEY_Q_keygen is variadic; one wrapper per key type. */
static inline EVP_PKEY *attest_generate_ec_key(const char *curve) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve);
}
static inline EVP_PKEY *attest_generate_rsa_key(size_t bits) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", bits);
}
#endif

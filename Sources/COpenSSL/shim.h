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
#include <openssl/param_build.h>
#include <openssl/crypto.h>
#include <openssl/cms.h>
#include <string.h>

/* Function-like macros and variadic functions Swift cannot import directly. */
static inline STACK_OF(X509) *attest_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int attest_sk_X509_push(STACK_OF(X509) *s, X509 *x) { return sk_X509_push(s, x); }
static inline void attest_sk_X509_free(STACK_OF(X509) *s) { sk_X509_free(s); }
static inline void attest_sk_X509_pop_free(STACK_OF(X509) *s) { sk_X509_pop_free(s, X509_free); }
static inline int attest_sk_CMS_SignerInfo_num(STACK_OF(CMS_SignerInfo) *s) { return sk_CMS_SignerInfo_num(s); }
static inline CMS_SignerInfo *attest_sk_CMS_SignerInfo_value(STACK_OF(CMS_SignerInfo) *s, int i) {
    return sk_CMS_SignerInfo_value(s, i);
}
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

/* Domain parameters only (a named curve): the template attest_ec_public_key_like copies.
   NULL on failure. */
static inline EVP_PKEY *attest_ec_parameters(const char *group) {
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    OSSL_PARAM params[] = {
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)group, 0),
        OSSL_PARAM_END
    };
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1
        || EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEY_PARAMETERS, params) != 1) pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}
/* An EC public key on template's curve from an encoded point: the template's parameters are
   copied and the point set (EVP_PKEY_set1_encoded_public_key), which checks it is on the
   curve. About a third of EVP_PKEY_fromdata with the group named (12 vs 30-37 us on the
   development box): copying the group is cheaper than building it from its name, and
   d2i_PUBKEY (OSSL_DECODER) costs more than either. NULL on failure. */
static inline EVP_PKEY *attest_ec_public_key_like(const EVP_PKEY *template, const unsigned char *point, size_t length) {
    EVP_PKEY *pkey = EVP_PKEY_new();
    if (pkey == NULL || EVP_PKEY_copy_parameters(pkey, template) != 1
        || EVP_PKEY_set1_encoded_public_key(pkey, point, length) != 1) {
        EVP_PKEY_free(pkey);
        return NULL;
    }
    return pkey;
}
/* An RSA public key from its big-endian modulus and exponent (a JWK's n and e). NULL on failure. */
static inline EVP_PKEY *attest_rsa_public_key(const unsigned char *n, size_t nlen, const unsigned char *e, size_t elen) {
    EVP_PKEY *pkey = NULL;
    BIGNUM *bn = BN_bin2bn(n, (int)nlen, NULL), *be = BN_bin2bn(e, (int)elen, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (bn && be && bld && ctx
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) == 1
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) == 1
        && (params = OSSL_PARAM_BLD_to_param(bld)) != NULL
        && EVP_PKEY_fromdata_init(ctx) == 1) {
        if (EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) pkey = NULL;
    }
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}
#endif

#ifndef ATTESTEDGE_CCURL_SHIM_H
#define ATTESTEDGE_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic: one typed wrapper per argument kind. */
typedef size_t (*attest_curl_data_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode attest_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode attest_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode attest_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode attest_curl_setopt_callback(CURL *h, CURLoption o, attest_curl_data_callback f) { return curl_easy_setopt(h, o, f); }
/* The webhook sender decides, address by address, whether curl may connect (the SSRF guard). */
typedef curl_socket_t (*attest_curl_opensocket_callback)(void *context, curlsocktype purpose, struct curl_sockaddr *address);
static inline CURLcode attest_curl_setopt_opensocket(CURL *h, attest_curl_opensocket_callback f) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, f); }
static inline curl_socket_t attest_curl_socket_bad(void) { return CURL_SOCKET_BAD; }
static inline CURLcode attest_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode attest_curl_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
#endif

/* Lets Debian 12's civetweb 1.15 use OpenSSL 3 for TLS.
 *
 * civetweb (built without NO_SSL_DL) dlopen()s "libssl.so" and "libcrypto.so" and dlsym()s
 * every function it uses; it refuses TLS when one is missing. Two things break that on
 * Debian 12 / OpenSSL 3:
 * - SSL_get_peer_certificate() is a macro for SSL_get1_peer_certificate() in OpenSSL 3, no
 *   longer an exported symbol ("load_tls_dll: libssl.so: cannot find
 *   SSL_get_peer_certificate", https://github.com/civetweb/civetweb/issues/1334);
 * - the unversioned names "libssl.so"/"libcrypto.so" exist only with libssl-dev installed.
 *
 * This library has the SONAME "libssl.so" and depends on the real libssl.so.3. loadwatch links
 * it (found through its RUNPATH), so when civetweb later asks for "libssl.so", the dynamic
 * loader hands back this already loaded object (it matches loaded objects by SONAME), and
 * dlsym() on it searches this object first, then libssl.so.3. libcrypto_compat.c does the same
 * for "libcrypto.so". */
#include <openssl/ssl.h>

#undef SSL_get_peer_certificate
X509* SSL_get_peer_certificate(const SSL* s);

/* OpenSSL 3: "SSL_get_peer_certificate() is an alias of SSL_get1_peer_certificate()" (it
 * returns a reference the caller frees, as civetweb does). */
X509* SSL_get_peer_certificate(const SSL* s) { return SSL_get1_peer_certificate(s); }

/* Referenced by loadwatch, so a linker with --as-needed keeps this library. */
int loadwatch_ssl_compat(void) { return 1; }

/* SONAME "libcrypto.so", depending on the real libcrypto.so.3: what civetweb's dlopen of
 * "libcrypto.so" gets, without libssl-dev installed. See libssl_compat.c. */
int loadwatch_crypto_compat(void) { return 1; }

// exporter-toolkit semantics (Go crypto/tls) mapped onto OpenSSL, on the SSL_CTX the HTTP
// server's Asio ssl::context wraps:
// - the key and the certificate come from their own files (cert_file, key_file);
// - Go's five client_auth_types: Request/RequireAny (a certificate, not verified) need our own
//   verify callback;
// - min_version and max_version both hold (SSL_CTX_set_{min,max}_proto_version).
#include "web/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "util/bounded_file.h"

namespace loadwatch {

namespace {

/// OpenSSL's queued errors as one line (the queue is cleared).
std::string openssl_errors(const std::string& what) {
  std::string out = what;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += out == what ? ": " : "; ";
    out += buf;
  }
  return out;
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(openssl_errors(what)); }

/// Go's RequestClientCert / RequireAnyClientCert: the certificate is asked for, not verified.
int accept_any_certificate(int, X509_STORE_CTX*) { return 1; }

/// Go's TLS 1.3 suites are not configurable (crypto/tls ignores them in CipherSuites);
/// OpenSSL names them by their IANA names too.
bool is_tls13_suite(const std::string& name) {
  return name == "TLS_AES_128_GCM_SHA256" || name == "TLS_AES_256_GCM_SHA384" ||
         name == "TLS_CHACHA20_POLY1305_SHA256";
}

// The PEM files are read by us, not opened by OpenSSL by name: through the one bounded
// reader (regular files only, capped), so a FIFO or a link to /dev/zero swapped in for a
// certificate can neither block a reload (and SIGTERM behind it) nor be read forever.
std::string read_pem(const std::string& path, const char* what) {
  std::string text;
  BoundedFile file(path);
  if (int err = file.read(kMaxPemFileBytes, text); err != 0) {
    throw std::runtime_error(std::string("cannot load ") + what + " " + path + ": " +
                             file.describe(err, kMaxPemFileBytes));
  }
  return text;
}

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
Bio memory_bio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), &BIO_free);
}

/// What SSL_CTX_use_certificate_chain_file does, from memory: the leaf, then the chain.
bool use_certificate_chain(SSL_CTX* ctx, const std::string& pem) {
  Bio bio = memory_bio(pem);
  if (!bio) return false;
  std::unique_ptr<X509, decltype(&X509_free)> leaf(
      PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (!leaf || SSL_CTX_use_certificate(ctx, leaf.get()) != 1) return false;
  if (SSL_CTX_clear_chain_certs(ctx) != 1) return false;
  while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {  // takes ownership on success only
      X509_free(ca);
      return false;
    }
  }
  // The loop ends with "no start line" at the end of the text: not an error.
  if (ERR_GET_REASON(ERR_peek_last_error()) == PEM_R_NO_START_LINE) ERR_clear_error();
  return ERR_peek_error() == 0;
}

bool use_private_key(SSL_CTX* ctx, const std::string& pem) {
  Bio bio = memory_bio(pem);
  if (!bio) return false;
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  return key && SSL_CTX_use_PrivateKey(ctx, key.get()) == 1;
}

/// What SSL_CTX_load_verify_locations (certificates and CRLs) and SSL_load_client_CA_file
/// (the CA names advertised in the CertificateRequest, as Go does for ClientCAs) do, from
/// memory.
void load_client_cas(SSL_CTX* ctx, const std::string& pem, const std::string& path) {
  Bio bio = memory_bio(pem);
  if (!bio) fail("cannot load client_ca_file " + path);
  STACK_OF(X509_INFO)* infos = PEM_X509_INFO_read_bio(bio.get(), nullptr, nullptr, nullptr);
  if (!infos) fail("cannot load client_ca_file " + path);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new(
      [](const X509_NAME* const* a, const X509_NAME* const* b) { return X509_NAME_cmp(*a, *b); });
  int loaded = 0;
  bool ok = names != nullptr;
  for (int i = 0; ok && i < sk_X509_INFO_num(infos); ++i) {
    X509_INFO* info = sk_X509_INFO_value(infos, i);
    if (info->x509) {
      ok = X509_STORE_add_cert(store, info->x509) == 1;
      ++loaded;
      X509_NAME* name = X509_get_subject_name(info->x509);
      if (ok && sk_X509_NAME_find(names, name) < 0) {
        X509_NAME* copy = X509_NAME_dup(name);
        ok = copy && sk_X509_NAME_push(names, copy) > 0;
        if (!ok) X509_NAME_free(copy);
      }
    }
    if (ok && info->crl) {
      ok = X509_STORE_add_crl(store, info->crl) == 1;
      ++loaded;
    }
  }
  sk_X509_INFO_pop_free(infos, X509_INFO_free);
  if (!ok || loaded == 0) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    fail("cannot load client_ca_file " + path);
  }
  if (sk_X509_NAME_num(names) == 0) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    fail("no certificates in client_ca_file " + path);
  }
  SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
}

}  // namespace

void configure_tls_context(void* opaque, const TlsServerConfig& tls) {
  auto* ctx = static_cast<SSL_CTX*>(opaque);
  ERR_clear_error();
  // cert_file may hold the whole chain, leaf first (as Go's tls.X509KeyPair reads it).
  if (!use_certificate_chain(ctx, read_pem(tls.cert_file, "cert_file"))) {
    fail("cannot load cert_file " + tls.cert_file);
  }
  if (!use_private_key(ctx, read_pem(tls.key_file, "key_file"))) {
    // OpenSSL checks the key against the certificate as it loads it.
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      fail("key_file " + tls.key_file + " does not match cert_file " + tls.cert_file);
    }
    fail("cannot load key_file " + tls.key_file);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    fail("key_file " + tls.key_file + " does not match cert_file " + tls.cert_file);
  }
  if (SSL_CTX_set_min_proto_version(ctx, static_cast<int>(tls.min_version)) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, static_cast<int>(tls.max_version)) != 1) {
    fail("cannot set the TLS version range");
  }
  if (!tls.cipher_suites.empty()) {
    std::string list;
    for (const auto& name : tls.cipher_suites) {
      if (is_tls13_suite(name)) continue;
      // OPENSSL_cipher_name maps an IANA (Go) name to OpenSSL's, "(NONE)" when unknown.
      std::string openssl_name = OPENSSL_cipher_name(name.c_str());
      if (openssl_name == "(NONE)") throw std::runtime_error("unknown cipher suite " + name);
      list += (list.empty() ? "" : ":") + openssl_name;
    }
    if (!list.empty() && SSL_CTX_set_cipher_list(ctx, list.c_str()) != 1) {
      fail("cannot set cipher_suites " + list);
    }
  }
  if (!tls.curve_preferences.empty()) {
    std::string groups;
    for (const auto& c : tls.curve_preferences) {
      std::string g = c == "CurveP256"   ? "P-256"
                      : c == "CurveP384" ? "P-384"
                      : c == "CurveP521" ? "P-521"
                                         : c;  // X25519
      groups += (groups.empty() ? "" : ":") + g;
    }
    if (SSL_CTX_set1_groups_list(ctx, groups.c_str()) != 1) fail("cannot set curve_preferences");
  }
  if (tls.prefer_server_cipher_suites) {
    SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  } else {
    SSL_CTX_clear_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  }

  bool verify = tls.client_auth == ClientAuth::VerifyClientCertIfGiven ||
                tls.client_auth == ClientAuth::RequireAndVerifyClientCert;
  bool require = tls.client_auth == ClientAuth::RequireAnyClientCert ||
                 tls.client_auth == ClientAuth::RequireAndVerifyClientCert;
  if (!tls.client_ca_file.empty()) {
    load_client_cas(ctx, read_pem(tls.client_ca_file, "client_ca_file"), tls.client_ca_file);
  } else if (verify && SSL_CTX_set_default_verify_paths(ctx) != 1) {
    // Go verifies against the system roots when ClientCAs is nil.
    fail("cannot load the system CA certificates");
  }
  int mode = tls.client_auth == ClientAuth::NoClientCert ? SSL_VERIFY_NONE : SSL_VERIFY_PEER;
  if (require) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(ctx, mode, verify ? nullptr : accept_any_certificate);
  // With peer verification OpenSSL refuses session resumption unless a session id context is
  // set ("session id context uninitialized").
  static const unsigned char sid[] = "loadwatch";
  SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
}

void check_tls_config(const TlsServerConfig& tls) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()),
                                                        &SSL_CTX_free);
  if (!ctx) fail("cannot create a TLS context");
  configure_tls_context(ctx.get(), tls);
}

}  // namespace loadwatch

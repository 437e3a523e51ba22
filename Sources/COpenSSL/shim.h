#ifndef STRATA_COPENSSL_SHIM_H
#define STRATA_COPENSSL_SHIM_H
// The parts of OpenSSL's libcrypto (3.0 or later) that encryption at rest uses:
// AES-256-GCM through EVP, HKDF-SHA256 through EVP_PKEY, the CSPRNG, a constant-time compare.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#endif

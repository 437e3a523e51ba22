// AESGCMKey: AES-256-GCM and HKDF-SHA256 from the system's OpenSSL (libcrypto 3). Nothing
// here is cryptography of our own: the engine calls these three primitives and lays out
// the bytes around them (FileCipher.swift, docs/FORMAT.md "Encryption at rest").
//
// Why OpenSSL and not swift-crypto: a record is sealed or opened on every write and every
// read, and swift-crypto sets up a fresh cipher context (key schedule, GHASH tables,
// several allocations) per call — about 1.5 µs for a 200-byte record here, more than a
// whole point read. An OpenSSL context keeps its key schedule and is reused: ~0.3 µs.
// A context is not thread-safe, so each key keeps a small pool of them, one per caller at
// a time.

import COpenSSL

/// One AES-256 key with OpenSSL GCM contexts that keep its key schedule between calls.
/// Safe to use from any number of threads at once.
final class AESGCMKey: @unchecked Sendable {
    // @unchecked: `key` is immutable; the context pools are behind their locks, and a
    // context taken from a pool is used by one caller until it is returned.
    static let keySize = 32
    static let nonceSize = 12
    static let tagSize = 16

    private let key: [UInt8]
    private let encryptors = Locked<[OpaquePointer]>([])
    private let decryptors = Locked<[OpaquePointer]>([])
    /// Contexts kept per pool; more concurrent callers create and free their own.
    private static let pooled = 16

    init(key: [UInt8]) {
        precondition(key.count == AESGCMKey.keySize, "AES-256 takes a 32-byte key")
        self.key = key
    }

    deinit {
        for context in encryptors.withLock({ $0 }) + decryptors.withLock({ $0 }) { EVP_CIPHER_CTX_free(context) }
    }

    private func takeContext(encrypting: Bool) -> OpaquePointer? {
        if let context = (encrypting ? encryptors : decryptors).withLock({ $0.popLast() }) { return context }
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        let ready = key.withUnsafeBufferPointer { key in
            EVP_CipherInit_ex(context, EVP_aes_256_gcm(), nil, key.baseAddress, nil, encrypting ? 1 : 0) == 1
        }
        guard ready else {
            EVP_CIPHER_CTX_free(context)
            return nil
        }
        return context
    }

    private func returnContext(_ context: OpaquePointer, encrypting: Bool) {
        let kept = (encrypting ? encryptors : decryptors).withLock { pool -> Bool in
            guard pool.count < AESGCMKey.pooled else { return false }
            pool.append(context)
            return true
        }
        if !kept { EVP_CIPHER_CTX_free(context) }
    }

    /// Encrypts `plain` into `ciphertext` (room for `plain.count` bytes) and writes the
    /// 16-byte tag, authenticating `aad` with it. Returns false only if OpenSSL fails
    /// (out of memory).
    func seal(nonce: UnsafeRawPointer, aad: UnsafeRawBufferPointer, plain: UnsafeRawBufferPointer,
              ciphertext: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) -> Bool {
        guard let context = takeContext(encrypting: true) else { return false }
        defer { returnContext(context, encrypting: true) }
        guard EVP_EncryptInit_ex(context, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self)) == 1,
              AESGCMKey.update(context, encrypting: true, input: aad, output: nil),
              AESGCMKey.update(context, encrypting: true, input: plain, output: ciphertext) else { return false }
        var finalLength: Int32 = 0
        guard EVP_EncryptFinal_ex(context, ciphertext.assumingMemoryBound(to: UInt8.self) + plain.count, &finalLength) == 1,
              finalLength == 0,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(AESGCMKey.tagSize), tag) == 1 else { return false }
        return true
    }

    /// Decrypts `ciphertext` into `plain` (room for `ciphertext.count` bytes) if `tag`
    /// authenticates it with `aad`. False when it does not — damaged bytes, another key,
    /// another place — and then `plain` holds nothing to use.
    func open(nonce: UnsafeRawPointer, aad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
              tag: UnsafeRawPointer, plain: UnsafeMutableRawPointer) -> Bool {
        guard let context = takeContext(encrypting: false) else { return false }
        defer { returnContext(context, encrypting: false) }
        guard EVP_DecryptInit_ex(context, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self)) == 1,
              AESGCMKey.update(context, encrypting: false, input: aad, output: nil),
              AESGCMKey.update(context, encrypting: false, input: ciphertext, output: plain),
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(AESGCMKey.tagSize), UnsafeMutableRawPointer(mutating: tag)) == 1
        else { return false }
        var finalLength: Int32 = 0
        return EVP_DecryptFinal_ex(context, plain.assumingMemoryBound(to: UInt8.self) + ciphertext.count, &finalLength) == 1
    }

    /// Feeds `input` to the cipher (as authenticated data when `output` is nil), in pieces
    /// OpenSSL's `int` lengths can take.
    private static func update(_ context: OpaquePointer, encrypting: Bool, input: UnsafeRawBufferPointer,
                               output: UnsafeMutableRawPointer?) -> Bool {
        var done = 0
        while done < input.count {
            let piece = min(input.count - done, 1 << 30)
            var written: Int32 = 0
            let source = input.baseAddress!.assumingMemoryBound(to: UInt8.self) + done
            let target = output.map { $0.assumingMemoryBound(to: UInt8.self) + done }
            let ok = encrypting
                ? EVP_EncryptUpdate(context, target, &written, source, Int32(piece))
                : EVP_DecryptUpdate(context, target, &written, source, Int32(piece))
            guard ok == 1, output == nil || Int(written) == piece else { return false }
            done += piece
        }
        return true
    }
}

/// Key derivation and randomness for encryption at rest, from OpenSSL.
enum CryptoPrimitives {
    /// HKDF-SHA256 (RFC 5869) of `key` with `salt` and `info`: `count` bytes, or nil if
    /// OpenSSL fails.
    static func hkdfSHA256(key: [UInt8], salt: [UInt8], info: [UInt8], count: Int) -> [UInt8]? {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: count)
        var length = count
        guard EVP_PKEY_derive_init(context) > 0,
              EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()) > 0,
              EVP_PKEY_CTX_set1_hkdf_salt(context, salt, Int32(salt.count)) > 0,
              EVP_PKEY_CTX_set1_hkdf_key(context, key, Int32(key.count)) > 0,
              EVP_PKEY_CTX_add1_hkdf_info(context, info, Int32(info.count)) > 0,
              EVP_PKEY_derive(context, &output, &length) > 0, length == count else { return nil }
        return output
    }

    /// `count` bytes from OpenSSL's CSPRNG, or nil if it fails.
    static func randomBytes(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { return nil }
        return bytes
    }

    /// Whether `a` and `b` are equal, in time that does not depend on where they differ.
    static func constantTimeEqual(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { CRYPTO_memcmp($0.baseAddress, b.baseAddress, a.count) == 0 }
    }
}

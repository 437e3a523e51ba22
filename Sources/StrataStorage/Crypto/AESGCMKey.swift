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
import Synchronization

/// OpenSSL cipher contexts of one key, each taken by one caller at a time: a few slots
/// swapped atomically (a read takes and returns one without a lock).
private final class ContextPool: @unchecked Sendable {
    // @unchecked: the slots are atomics; a context is owned by whoever swapped it out.
    private static let size = 16
    private let slots: UnsafeMutablePointer<Atomic<Int>>

    init() {
        slots = .allocate(capacity: ContextPool.size)
        for index in 0 ..< ContextPool.size { (slots + index).initialize(to: Atomic(0)) }
    }

    deinit {
        for index in 0 ..< ContextPool.size {
            if let context = OpaquePointer(bitPattern: slots[index].load(ordering: .acquiring)) { EVP_CIPHER_CTX_free(context) }
        }
        slots.deinitialize(count: ContextPool.size)
        slots.deallocate()
    }

    /// A pooled context, or nil if every slot is empty.
    func take() -> OpaquePointer? {
        for index in 0 ..< ContextPool.size {
            if let context = OpaquePointer(bitPattern: slots[index].exchange(0, ordering: .acquiringAndReleasing)) { return context }
        }
        return nil
    }

    /// Keeps `context` for the next caller; false if every slot is taken.
    func give(_ context: OpaquePointer) -> Bool {
        let value = Int(bitPattern: context)
        for index in 0 ..< ContextPool.size
        where slots[index].compareExchange(expected: 0, desired: value, ordering: .acquiringAndReleasing).exchanged {
            return true
        }
        return false
    }
}

/// One AES-256 key with OpenSSL GCM contexts that keep its key schedule between calls.
/// Safe to use from any number of threads at once.
final class AESGCMKey: Sendable {
    static let keySize = 32
    static let nonceSize = 12
    static let tagSize = 16

    private let key: [UInt8]
    private let encryptors = ContextPool()
    private let decryptors = ContextPool()

    init(key: [UInt8]) {
        precondition(key.count == AESGCMKey.keySize, "AES-256 takes a 32-byte key")
        self.key = key
    }

    private func takeContext(encrypting: Bool) -> OpaquePointer? {
        if let context = (encrypting ? encryptors : decryptors).take() { return context }
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
        if !(encrypting ? encryptors : decryptors).give(context) { EVP_CIPHER_CTX_free(context) }
    }

    // Both directions drive the context through `EVP_Cipher`, GCM's direct path (OpenSSL
    // documents it for AEAD ciphers: authenticated data with a nil output, the message, then
    // a nil input to finish, which for decryption checks the tag and returns -1 if it does
    // not match); it skips the checks `EVP_EncryptUpdate` repeats on every call.

    /// Encrypts `plain` into `ciphertext` (room for `plain.count` bytes) and writes the
    /// 16-byte tag, authenticating `aad` with it. Returns false only if OpenSSL fails
    /// (out of memory).
    func seal(nonce: UnsafeRawPointer, aad: UnsafeRawBufferPointer, plain: UnsafeRawBufferPointer,
              ciphertext: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) -> Bool {
        guard let context = takeContext(encrypting: true) else { return false }
        defer { returnContext(context, encrypting: true) }
        return EVP_CipherInit_ex(context, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self), 1) == 1
            && AESGCMKey.feed(context, aad, into: nil)
            && AESGCMKey.feed(context, plain, into: ciphertext)
            && EVP_Cipher(context, nil, nil, 0) == 0
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(AESGCMKey.tagSize), tag) == 1
    }

    /// Decrypts `ciphertext` into `plain` (room for `ciphertext.count` bytes) if `tag`
    /// authenticates it with `aad`. False when it does not — damaged bytes, another key,
    /// another place — and then `plain` holds nothing to use.
    func open(nonce: UnsafeRawPointer, aad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
              tag: UnsafeRawPointer, plain: UnsafeMutableRawPointer) -> Bool {
        guard let context = takeContext(encrypting: false) else { return false }
        defer { returnContext(context, encrypting: false) }
        return EVP_CipherInit_ex(context, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self), 0) == 1
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(AESGCMKey.tagSize), UnsafeMutableRawPointer(mutating: tag)) == 1
            && AESGCMKey.feed(context, aad, into: nil)
            && AESGCMKey.feed(context, ciphertext, into: plain)
            && EVP_Cipher(context, nil, nil, 0) == 0
    }

    /// Feeds `input` to the cipher (as authenticated data when `output` is nil), in pieces
    /// of at most 1 GiB.
    private static func feed(_ context: OpaquePointer, _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer?) -> Bool {
        var done = 0
        while done < input.count {
            let piece = min(input.count - done, 1 << 30)
            let target = output.map { $0.assumingMemoryBound(to: UInt8.self) + done }
            guard EVP_Cipher(context, target, input.baseAddress!.assumingMemoryBound(to: UInt8.self) + done, UInt32(piece)) == Int32(piece)
            else { return false }
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

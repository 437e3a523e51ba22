// The store's side of encryption at rest: deciding at open whether the key fits the store
// (wrongKey) before any file is trusted, and sealing or opening the small whole files
// (hints, MANIFEST, CLEAN). Segments are read and written through SegmentReader and
// RecordWriter (Format/SegmentReader.swift).

extension Store {
    /// Checks, before anything is read, that the key (or its absence) fits the store:
    /// ``StoreError/wrongKey(_:)`` when no file of the store accepts the key given, or when
    /// no key is given and the store is encrypted. A single file refusing a key that the
    /// others accept is damage (a replaced or broken file), reported as `corrupted` when
    /// that file is read.
    ///
    /// Cost: with a key, one 64-byte read per file until one accepts it (usually MANIFEST,
    /// the first); without, one read of MANIFEST (or of the newest segment).
    static func checkKey(path: String, names: [String], segments: [UInt32], cipher: StoreCipher?,
                         fileSystem fs: any FileSystem) throws {
        var candidates: [(name: String, kind: EncryptedFile.Kind)] = []
        if names.contains(Manifest.fileName) { candidates.append((Manifest.fileName, .manifest)) }
        if cipher == nil {
            // A plain store: its manifest (or newest segment) tells; any other encrypted file
            // among plain ones is damage, reported when it is read.
            if candidates.isEmpty, let newest = segments.last { candidates.append((segmentName(newest), .segment)) }
        } else {
            for number in segments.reversed() { candidates.append((segmentName(number), .segment)) }
            if names.contains(CleanShutdown.fileName) { candidates.append((CleanShutdown.fileName, .cleanMarker)) }
        }
        var refused: String?
        var plain: String?
        for (name, kind) in candidates {
            guard let file = try? fs.openFile(path + "/" + name, create: false, readOnly: true) else { continue }
            let head = (try? file.read(count: EncryptedFile.preambleSize, at: 0)) ?? []
            file.close()
            let verdict: StoreCipher.PreambleCheck? = head.withUnsafeBytes { raw in
                if let cipher { return cipher.check(raw, kind: kind) }
                return EncryptedFile.hasMagic(raw) ? .otherKey : nil
            }
            switch verdict {
            case .encrypted?: return
            case .otherKey?: refused = refused ?? name
            case .notEncrypted?: if head.count >= EncryptedFile.magic.count { plain = plain ?? name }
            case nil: return
            }
        }
        guard cipher != nil else {
            if let refused {
                throw StoreError.wrongKey("the store in \(path) is encrypted (\(refused)) and no encryption key was given; open it with its key")
            }
            return
        }
        if let refused {
            throw StoreError.wrongKey("the key does not open \(refused) (nor any other file of the store in \(path)): the store was encrypted with another key")
        }
        if let plain {
            throw StoreError.wrongKey("the store in \(path) is not encrypted (\(plain) is a plain file) but an encryption key was given; open it without a key")
        }
    }

    /// `bytes` as a small whole file holds them: sealed in an encrypted store, as they are
    /// in a plain one.
    static func sealSmallFile(_ bytes: [UInt8], kind: EncryptedFile.Kind, cipher: StoreCipher?) throws -> [UInt8] {
        guard let cipher else { return bytes }
        return try cipher.sealFile(bytes, kind: kind)
    }

    /// The plain contents of the small whole file `name` (`bytes` as read).
    ///
    /// - Throws: ``StoreError/corrupted(segment:offset:reason:)`` naming the file when it
    ///   does not open with the store's key (or is encrypted in a plain store).
    static func openSmallFile(_ bytes: [UInt8], name: String, kind: EncryptedFile.Kind, cipher: StoreCipher?) throws -> [UInt8] {
        guard let cipher else {
            if bytes.withUnsafeBytes(EncryptedFile.hasMagic) {
                throw StoreError.corrupted(segment: name, offset: 0, reason: "file is encrypted, but the store is not (replaced by another store's file)")
            }
            return bytes
        }
        switch cipher.openFile(bytes, kind: kind) {
        case .success(let plain):
            return plain
        case .failure(.notEncrypted):
            throw StoreError.corrupted(segment: name, offset: 0, reason: "file is not encrypted, but the store is (replaced by another store's file, or damaged)")
        case .failure(.otherKey):
            throw StoreError.corrupted(segment: name, offset: 0, reason: "file was encrypted with another key, or its preamble is damaged")
        case .failure(.damaged):
            throw StoreError.corrupted(segment: name, offset: EncryptedFile.preambleSize, reason: "encrypted contents fail authentication (damaged)")
        }
    }
}

import CLMDB

/// Maps an LMDB return code to a `StoreError` (or nothing for `MDB_SUCCESS`); the error names
/// the caller's site.
func check(_ rc: Int32, _ what: @autoclosure () -> String, file: String = #fileID, line: Int = #line) throws {
    guard rc != 0 else { return }
    throw storeError(rc, what(), file: file, line: line)
}

func storeError(_ rc: Int32, _ what: String, file: String = #fileID, line: Int = #line) -> StoreError {
    let text = String(cString: mdb_strerror(rc))
    switch rc {
    case MDB_MAP_FULL: return StoreError(.full, "\(what): \(text)", lmdbCode: rc, file: file, line: line)
    case MDB_READERS_FULL: return StoreError(.busy, "\(what): \(text)", lmdbCode: rc, file: file, line: line)
    case MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INVALID:
        return StoreError(.corrupt, "\(what): \(text)", lmdbCode: rc, file: file, line: line)
    case MDB_VERSION_MISMATCH: return StoreError(.open, "\(what): \(text)", lmdbCode: rc, file: file, line: line)
    default: return StoreError(.io, "\(what): \(text)", lmdbCode: rc, file: file, line: line)
    }
}

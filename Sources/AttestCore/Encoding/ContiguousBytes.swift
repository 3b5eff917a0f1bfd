/// Runs `body` on the bytes of `bytes` in one buffer: the collection's own storage when it has
/// one (arrays, slices, a string's UTF-8), else a copy. Public generic functions of this module
/// go through here: called from another module they are not specialised, and a per-element
/// loop over a generic collection cost hundreds of instructions (and a malloc) per byte.
@inline(__always)
func withContiguousBytes<C: Collection, R>(_ bytes: C, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R
where C.Element == UInt8 {
    if let result = bytes.withContiguousStorageIfAvailable(body) { return result }
    return Array(bytes).withUnsafeBufferPointer(body)
}

/// How much of the FastCGI stdin stream a worker reads for one request.
///
/// nginx buffers the whole body and sends `CONTENT_LENGTH`; without a usable one (absent,
/// empty, not a number) the stream is read to its end, up to the limit.
enum BodyPlan: Equatable {
    /// `CONTENT_LENGTH` is 0: read nothing.
    case empty
    /// `CONTENT_LENGTH` is over the limit: read nothing, set `bodyTooLarge`.
    case tooLarge
    /// Read exactly this many bytes (fewer if the stream ends first).
    case exactly(Int)
    /// Read to the end of the stream; more than this many bytes is too large.
    case untilEnd(limit: Int)

    init(contentLength: String?, limit: Int) {
        guard let text = contentLength, let declared = Int(text), declared >= 0 else {
            self = .untilEnd(limit: limit)
            return
        }
        self = declared > limit ? .tooLarge : declared == 0 ? .empty : .exactly(declared)
    }
}

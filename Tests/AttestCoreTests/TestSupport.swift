import AttestCore
import Testing

/// The code of the `AttestError` `body` throws, or `nil` when it returns.
func errorCode<T>(_ body: () throws -> T) -> AttestError.Code? {
    do {
        _ = try body()
        return nil
    } catch let error as AttestError {
        return error.code
    } catch {
        Issue.record("threw a non-AttestError: \(error)")
        return nil
    }
}

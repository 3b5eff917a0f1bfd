import AttestMetrics

/// nchan's `nchan_stub_status` on the flag stream's publisher socket (`GET /status`, site.conf),
/// read by the monitor pool at each scrape for the `attestedge_flag_stream_*` gauges.
///
/// Wire format (nchan 1.3.6, `text/plain`, one `name: value` per line; captured in
/// FlagStreamMetricsTests):
/// ```
/// total published messages: 3
/// stored messages: 2
/// shared memory used: 24K          (KiB, nginx's %f: digits, maybe a fraction)
/// shared memory limit: 131072K
/// channels: 2
/// subscribers: 3
/// redis pending commands: 0        … more counters, then
/// nchan version: 1.3.6
/// ```
/// Read defensively: lines in any order, unknown names and values ignored, a known name with a
/// value that is not a number left out; `subscribers` and `channels` are required (without
/// them it is not nchan's status). At most `maxLines` lines are looked at.
package enum NchanStubStatus {
    static let path = "/status"
    static let maxLines = 64

    /// nchan's status from the publisher socket `socket`. Throws when it cannot be reached,
    /// answers another status than 200, or the body is not nchan's status.
    package static func read(socket: String) throws(NchanPublisher.Failure) -> FlagStreamGauges {
        let answer = try NchanPublisher.get(socket: socket, target: path, accept: "text/plain")
        guard answer.status == 200 else {
            throw NchanPublisher.Failure("\(socket)\(path): nginx answered \(answer.status)")
        }
        guard let gauges = parse(answer.body) else {
            throw NchanPublisher.Failure("\(socket)\(path): not nchan's status")
        }
        return gauges
    }

    /// The gauges of a stub status body; `nil` without `subscribers` or `channels`.
    static func parse(_ body: ArraySlice<UInt8>) -> FlagStreamGauges? {
        var values: [String: UInt64] = [:]
        var rest = body
        var lines = 0
        while !rest.isEmpty, lines < maxLines {
            let end = rest.firstIndex(of: UInt8(ascii: "\n")) ?? rest.endIndex
            let line = rest[rest.startIndex..<end]
            rest = end < rest.endIndex ? rest[rest.index(after: end)...] : rest[rest.endIndex...]
            lines += 1
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self)
            guard values[name] == nil, let value = number(line[line.index(after: colon)...]) else { continue }
            values[name] = value
        }
        guard let subscribers = values["subscribers"], let channels = values["channels"] else { return nil }
        return FlagStreamGauges(subscribers: subscribers, channels: channels,
                                storedMessages: values["stored messages"],
                                publishedMessages: values["total published messages"],
                                sharedMemoryUsedBytes: values["shared memory used"],
                                sharedMemoryLimitBytes: values["shared memory limit"])
    }

    /// ` 123` → 123; ` 24K` or ` 23.5K` (KiB) → bytes, the fraction's first three digits
    /// counted; a trailing `\r` is allowed. `nil` for anything else (` 1.3.6`, no digits, more
    /// than 15 digits).
    static func number(_ text: ArraySlice<UInt8>) -> UInt64? {
        var cursor = text
        while cursor.first == UInt8(ascii: " ") { cursor = cursor.dropFirst() }
        if cursor.last == UInt8(ascii: "\r") { cursor = cursor.dropLast() }
        func digits() -> (value: UInt64, count: Int) {
            var value: UInt64 = 0
            var count = 0
            while let d = cursor.first, d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") {
                if count < 15 { value = value * 10 + UInt64(d - UInt8(ascii: "0")) }
                count += 1
                cursor = cursor.dropFirst()
            }
            return (value, count)
        }
        let whole = digits()
        guard whole.count > 0, whole.count <= 15 else { return nil }
        if cursor.isEmpty { return whole.value }
        var thousandths: UInt64 = 0
        if cursor.first == UInt8(ascii: ".") {
            cursor = cursor.dropFirst()
            let start = cursor
            let fraction = digits()
            guard fraction.count > 0 else { return nil }
            for (i, d) in start.prefix(min(3, fraction.count)).enumerated() {
                thousandths += UInt64(d - UInt8(ascii: "0")) * [100, 10, 1][i]
            }
        }
        guard cursor.elementsEqual([UInt8(ascii: "K")]) else { return nil }
        return whole.value * 1024 + thousandths * 1024 / 1000
    }
}

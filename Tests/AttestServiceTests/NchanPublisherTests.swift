@testable import AttestService
import Testing

/// nchan's channel info as the flag stream's auth reads it: whether a channel's stored message
/// predates the app's last change (a change whose publish failed).
@Suite struct NchanPublisherTests {
    /// nchan 1.3.6's answer to `GET /pub/<channel>` with `Accept: application/json`, as captured.
    static let info = Array(
        #"{"messages": 1, "requested": 2, "subscribers": 0, "last_message_id": "1796466781:1"}"#.utf8)

    @Test func channelInfoIsRead() {
        let body = Self.info[...]
        #expect(NchanPublisher.messagesMember(body) == 1)
        #expect(NchanPublisher.lastMessageSeconds(body) == 1_796_466_781)
        for bad in [#"{"messages": 0}"#, #"{"last_message_id": 17}"#, #"{"last_message_id": "17"}"#,
                    #"{"last_message_id": ":1"}"#] {
            #expect(NchanPublisher.lastMessageSeconds(Array(bad.utf8)[...]) == nil, "\(bad)")
        }
    }

    @Test func aMessageOlderThanTheLastChangeOrNoneIsStale() {
        let stored = NchanPublisher.ChannelInfo(messages: 1, lastMessageSeconds: 1_796_466_781)
        #expect(!stored.isStale(changedAt: 1_796_466_780))
        #expect(stored.isStale(changedAt: 1_796_466_781), "the same second: may be older (another host primed it then)")
        #expect(stored.isStale(changedAt: 1_796_466_782))
        #expect(NchanPublisher.ChannelInfo(messages: 0, lastMessageSeconds: nil).isStale(changedAt: 0))
        #expect(NchanPublisher.ChannelInfo(messages: 1, lastMessageSeconds: nil).isStale(changedAt: 0))
    }
}

import AttestCore
import AttestTesting
import Foundation
import Testing

/// The software device: identity, counters, and its state file.
@Suite struct SoftwareDeviceTests {
    @Test func keyIDIsSHA256OfTheX962Point() throws {
        let device = try SoftwareDevice.generate()
        #expect(device.publicKey.count == 65 && device.publicKey[0] == 0x04, "an uncompressed P-256 point")
        #expect(device.keyID == SHA256.hash(device.publicKey), "keyId = SHA-256(point)")
    }

    @Test func onlyP256KeysMakeDevices() throws {
        #expect(errorCode { try SoftwareDevice(key: SigningKey.generate(.p384)) } == .keyInvalid,
                "App Attest keys are P-256")
    }

    @Test func assertAdvancesTheCounterAndAssertionAtDoesNot() throws {
        var device = try SoftwareDevice.generate()
        _ = try device.assert(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID)
        _ = try device.assert(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID)
        #expect(device.counter == 2, "two asserts, counter 2")
        let replay = try device.assertion(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID, counter: 1)
        #expect(device.counter == 2, "an assertion at a chosen counter leaves the device's alone")
        let authenticatorData = try Assertion(cborEncoded: replay[...]).authenticatorData
        #expect(Array(authenticatorData.suffix(4)) == [0, 0, 0, 1], "it carries the chosen counter, big-endian")
    }

    @Test func stateJSONRoundTrips() throws {
        var device = try SoftwareDevice.generate()
        device.counter = 41
        device.fields = ["token": "eyJ.x.y", "appID": Fixtures.appID]
        let restored = try SoftwareDevice(stateJSON: device.stateJSON)
        #expect(restored.keyID == device.keyID && restored.counter == 41, "keyId and counter come back")
        #expect(restored.fields == device.fields, "free-form fields come back")
        #expect(restored.stateJSON == device.stateJSON, "the text is stable (sorted keys)")
        var copy = restored
        let next = try copy.assert(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID)
        #expect(throws: Never.self, "the restored key signs for the original public key, counter 42") {
            try AssertionVerifier.verify(assertion: next[...], clientDataHash: Fixtures.clientDataHash,
                                         publicKey: ECPublicKey(x962Point: device.publicKey), appID: Fixtures.appID,
                                         previousCounter: 41)
        }
    }

    @Test func stateJSONFields() throws {
        let device = try SoftwareDevice.generate()
        let text = device.stateJSON
        for key in ["\"version\" : 1", "\"keyId\" : \"\(Base64.encode(device.keyID))\"", "\"counter\" : 0",
                    "\"key\" : \"-----BEGIN PRIVATE KEY-----", "\"fields\" : {"] {
            #expect(text.contains(key), "the state file has \(key)")
        }
    }

    @Test func corruptStateIsRefused() throws {
        let device = try SoftwareDevice.generate()
        let other = try SoftwareDevice.generate()
        #expect(errorCode { try SoftwareDevice(stateJSON: "{") } == .jsonMalformed, "not JSON")
        #expect(errorCode { try SoftwareDevice(stateJSON: "{\"version\": 1}") } == .jsonMalformed, "fields missing")
        let v2 = device.stateJSON.replacingOccurrences(of: "\"version\" : 1", with: "\"version\" : 2")
        #expect(errorCode { try SoftwareDevice(stateJSON: v2) } == .jsonMalformed, "an unknown version")
        let wrongID = device.stateJSON.replacingOccurrences(of: Base64.encode(device.keyID),
                                                            with: Base64.encode(other.keyID))
        #expect(errorCode { try SoftwareDevice(stateJSON: wrongID) } == .keyInvalid, "keyId of another key")
        let badKey = device.stateJSON.replacingOccurrences(of: "-----BEGIN PRIVATE KEY-----",
                                                           with: "-----BEGIN NOTHING-----")
        #expect(errorCode { try SoftwareDevice(stateJSON: badKey) } == .keyInvalid, "a key that does not load")
    }
}

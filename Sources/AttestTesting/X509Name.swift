import AttestCore

/// DER `Name`s shaped like Apple's: one attribute per RDN, UTF8String values.
///
/// ```
/// Name ::= SEQUENCE OF SET { SEQUENCE { type OBJECT IDENTIFIER, value UTF8String } }
/// ```
public enum X509Name {
    public static let commonName = ObjectIdentifier("2.5.4.3")
    public static let organizationalUnit = ObjectIdentifier("2.5.4.11")
    public static let organization = ObjectIdentifier("2.5.4.10")
    public static let stateOrProvince = ObjectIdentifier("2.5.4.8")

    /// A name from (type, value) pairs in order.
    public static func der(_ attributes: [(ObjectIdentifier, String)]) -> [UInt8] {
        DERBuilder.sequence(attributes.map { type, value in
            DERBuilder.set([DERBuilder.sequence([DERBuilder.oid(type), DERBuilder.utf8String(value)])])
        })
    }

    /// `CN=<commonName>[, OU=<unit>], O=<organization>, ST=California`, Apple's layout.
    public static func apple(commonName cn: String, unit: String? = nil, organization: String) -> [UInt8] {
        var attributes = [(commonName, cn)]
        if let unit { attributes.append((organizationalUnit, unit)) }
        attributes += [(self.organization, organization), (stateOrProvince, "California")]
        return der(attributes)
    }

    /// The first UTF8String value of attribute `type` in a certificate's subject, if any.
    public static func value(of type: ObjectIdentifier,
                             inSubjectOf certificateDER: [UInt8]) throws(AttestError) -> String? {
        for rdn in try CertificateTemplate.tbsFields(of: certificateDER)[5].children() {
            for attribute in try rdn.children() {
                let parts = try attribute.children()
                if parts.count == 2, parts[0].content.elementsEqual(type.contentOctets) {
                    return String(validating: parts[1].content, as: UTF8.self)
                }
            }
        }
        return nil
    }
}

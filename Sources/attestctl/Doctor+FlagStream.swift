import AttestConfig
import AttestService
import AttestSupervisor

extension Doctor {
    /// Below this `worker_connections`, an nginx worker runs out of connections with a few
    /// thousand open flag streams (each holds one for as long as its app runs; nginx.conf has 16384).
    static let streamWorkerConnections = 4096

    /// The flag stream's nginx side: nchan's module file is installed, the rendered nginx.conf
    /// loads it (whether the module loads into this nginx is `nginx -t`'s, in `nginx()`), the
    /// running nginx answers nchan's status on the publisher socket, and `worker_connections`
    /// leaves room for the streams (a warning). The rendered file's checks are skipped when
    /// there is none (a system nginx includes site.conf from its own).
    func flagStream() -> [Finding] {
        var findings = [Finding]()
        if !FileIO.exists(NginxSite.nchanModule) {
            findings.append(Finding(problem: "nginx's nchan module \(NginxSite.nchanModule) is missing: there is no "
                                        + "flag stream (GET /api/v1/flags/stream) and attestctl serve refuses to start",
                                    fix: "apt-get install libnginx-mod-nchan, then restart the stack"))
        }
        let conf = data.nginxDirectory + "/nginx.conf"
        if let bytes = (try? FileIO.read(conf)).flatMap({ $0 }) {
            findings += Self.flagStreamFindings(nginxConf: String(decoding: bytes, as: UTF8.self), path: conf)
        }
        let socket = FlagChannel.publishSocket(socketDirectory: sockets)
        if !socketAccepts(socket) {
            findings.append(Finding(problem: "nginx's flag stream publisher does not accept on \(socket): flag "
                                        + "changes reach no open stream",
                                    fix: "start nginx with the rendered site.conf ('attestctl serve', or "
                                        + "'systemctl start nginx'), then see its error.log"))
        } else {
            do {
                _ = try NchanStubStatus.read(socket: socket)
            } catch {
                findings.append(Finding(problem: "nginx's flag stream publisher \(socket) does not answer nchan's "
                                            + "status: \(error)",
                                        fix: "reload nginx with the site.conf this attestctl renders (its publisher "
                                            + "server has location = /status { nchan_stub_status; })"))
            }
        }
        return findings
    }

    /// The findings of a rendered nginx.conf's text: no `load_module` of nchan's module (a
    /// problem), `worker_connections` under `streamWorkerConnections` (a warning). Comments
    /// are skipped; a directive's first parameter is the word after its name.
    static func flagStreamFindings(nginxConf text: String, path: String) -> [Finding] {
        // Tokens of the file without comments: a directive's name, then its parameters.
        let separators: Set<Character> = [" ", "\t", "\r", ";", "{", "}"]
        let words = text.split(separator: "\n")
            .flatMap { $0.prefix { $0 != "#" }.split(whereSeparator: separators.contains) }
        var loadsNchan = false
        var connections: Int?
        for (i, word) in words.enumerated() where i + 1 < words.count {
            if word == "load_module", words[i + 1].unquoted.hasSuffix("/ngx_nchan_module.so") {
                loadsNchan = true
            } else if word == "worker_connections" {
                connections = Int(words[i + 1].unquoted)
            }
        }
        var findings = [Finding]()
        if !loadsNchan {
            findings.append(Finding(problem: "\(path) does not load nchan (load_module \(NginxSite.nchanModule);): "
                                        + "nginx refuses site.conf's flag stream",
                                    fix: "re-render it: restart 'attestctl serve'"))
        }
        // nginx's default when the directive is absent is 512.
        let effective = connections ?? 512
        if effective < streamWorkerConnections {
            findings.append(Finding(problem: "\(path) has worker_connections \(effective): each open flag stream "
                                        + "holds a connection, so a worker refuses new ones past that",
                                    fix: "worker_connections 16384 (as the shipped nginx.conf), with an open-file "
                                        + "limit above it (LimitNOFILE)",
                                    warning: true))
        }
        return findings
    }
}

private extension Substring {
    /// Without the quotes nginx allows around a parameter.
    var unquoted: Substring {
        var s = self
        while let c = s.first, c == "\"" || c == "'" { s = s.dropFirst() }
        while let c = s.last, c == "\"" || c == "'" { s = s.dropLast() }
        return s
    }
}

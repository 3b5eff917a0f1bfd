import CLMDB

extension Store {
    /// Whether another process has an LMDB store under `directory` open (either environment):
    /// every process with an environment open holds an fcntl lock on its `lock.mdb`. `nil`
    /// when that cannot be told. Call it from a process that does not have the store open.
    public static func isOpenElsewhere(directory: String) -> Bool? {
        var unknown = false
        for environment in ["durable", "ephemeral"] {
            switch attest_lmdb_in_use(directory + "/" + environment + "/lock.mdb") {
            case 1: return true
            case 0: continue
            default: unknown = true
            }
        }
        return unknown ? nil : false
    }
}

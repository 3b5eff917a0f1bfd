@testable import AttestStore
import Testing

/// PostgreSQL's retry pauses (random below a ceiling that doubles from 1 ms to 32 ms) and which
/// runs of a write run alone.
@Suite struct RetryPauseTests {
    @Test func theCeilingDoublesThenStaysAt32Milliseconds() {
        let ceilings = [1: 1_000, 2: 2_000, 3: 4_000, 4: 8_000, 5: 16_000, 6: 32_000, 7: 32_000, 20: 32_000]
        for (attempt, ceiling) in ceilings {
            let pauses = (0..<500).map { _ in PostgresStore.retryPause(attempt: attempt) }
            #expect(pauses.allSatisfy { $0 < ceiling }, "attempt \(attempt)")
            // 500 draws below the ceiling all in its lower half: about 2^-500, i.e. a broken spread.
            #expect(pauses.contains { $0 >= ceiling / 2 }, "attempt \(attempt) reaches the upper half")
        }
    }

    @Test func aWriteRunsAloneAfterItsConflictsOrOnItsLastRun() {
        let options = StoreOptions(maxRetries: 20, exclusiveAfterConflicts: 3)
        #expect((1...21).filter { PostgresStore.runsAlone(attempt: $0, options: options) } == Array(4...21))
        // Fewer retries than the threshold: the last run still runs alone.
        #expect((1...3).map { PostgresStore.runsAlone(attempt: $0, options: StoreOptions(maxRetries: 2)) }
                    == [false, false, true])
        // No retries: the only run is optimistic (nothing was lost yet).
        #expect(!PostgresStore.runsAlone(attempt: 1, options: StoreOptions(maxRetries: 0)))
    }
}

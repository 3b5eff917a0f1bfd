@testable import AttestStore
import Testing

/// PostgreSQL's retry pauses: random below a ceiling that doubles from 1 ms to 32 ms.
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
}

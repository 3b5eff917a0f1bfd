"""The Python suites' checks and tally (lib/check.sh is the shell suites' one). Each check
prints "PASS: NAME" or "FAIL: NAME -- DETAIL"; `summary` prints the line nginx/e2e/run.sh reads,
"SUITE: N passed, M failed", and returns the suite's exit status."""


class Tally:
    """Counts checks; each prints PASS or FAIL with what it saw."""

    def __init__(self):
        self.passed = 0
        self.failed = []

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS: {name}", flush=True)
        else:
            self.failed.append(name)
            print(f"FAIL: {name}" + (f" -- {detail}" if detail else ""), flush=True)
        return ok

    def summary(self, suite):
        """The suite's last line, `SUITE: N passed, M failed (failed: …)`; returns 0 or 1."""
        print(f"{suite}: {self.passed} passed, {len(self.failed)} failed"
              + (f" (failed: {', '.join(self.failed)})" if self.failed else ""), flush=True)
        return 0 if not self.failed else 1

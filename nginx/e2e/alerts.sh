#!/usr/bin/env bash
# The shipped Prometheus files (nginx/deploy/prometheus/) through Debian's promtool: the alert
# rules pass `promtool check rules`, the scrape example `promtool check config` (which loads
# the rules too), and the rules' unit tests (alerts.test.yml: input series, the alerts expected
# at given times) pass `promtool test rules`. Then the tests are shown to test something: for
# each alert, a copy of the rules where it can never fire, and one where it fires without
# waiting for its `for:`, must each fail the unit tests on that alert. Needs no build.
# Ends with "alerts: N passed, M failed"; exits 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
source nginx/e2e/lib/check.sh
P=nginx/deploy/prometheus
if ! command -v promtool > /dev/null; then
  echo "FAIL: promtool is missing: install Debian's prometheus package (apt-get install prometheus)"
  CHECK_FAILED=1
  check_summary alerts
  exit 1
fi
D=$(mktemp -d /tmp/attestedge-alerts.XXXXXX)
trap 'rm -rf "$D"' EXIT
echo "NOTE: $(promtool --version 2>&1 | head -1)"

out=$(promtool check rules "$P/alerts.yml" 2>&1); rc=$?
check "promtool check rules accepts alerts.yml" '[ $rc = 0 ]' "$out"
alerts=$(awk '/^      - alert: / { print $3 }' "$P/alerts.yml")
echo "NOTE: alerts: $(echo $alerts)"
for a in AttestEdgeStoreAbove80Percent AttestEdgeServerErrors AttestEdgeWebhookFailures AttestEdgePoolRestartLoop \
         AttestEdgeClockSkew; do
  check "alerts.yml has $a (issue 39's list)" 'grep -qx "$a" <<< "$alerts"'
done
check "the clock alert compares the host's time with the scrape's" \
  'grep -qF "attestedge_time_seconds - timestamp(attestedge_time_seconds)" "$P/alerts.yml"'
out=$(cd "$P" && promtool check config scrape.yml 2>&1); rc=$?
check "promtool check config accepts scrape.yml and the rules it loads" \
  '[ $rc = 0 ] && grep -q "1 rule files found" <<< "$out"' "$out"
out=$(cd "$P" && promtool test rules alerts.test.yml 2>&1); rc=$?
check "promtool test rules: every test of alerts.test.yml passes" '[ $rc = 0 ] && grep -q SUCCESS <<< "$out"' "$out"
for a in $alerts; do
  check "alerts.test.yml tests $a" 'grep -q "alertname: $a\$" "$P/alerts.test.yml"'
done

# mutant NAME never|now: alerts.yml with NAME's expression never true, or its `for:` gone.
mutant() {
  awk -v name="$1" -v mode="$2" '
    /^      - alert: / { current = $3 }
    skip && /^          / { next }          # the continuation lines of a block expression
    { skip = 0 }
    current == name && mode == "never" && /^        expr:/ { print "        expr: vector(0) > 1"; skip = 1; next }
    current == name && mode == "now" && /^        for:/ { print "        for: 0m"; next }
    { print }' "$P/alerts.yml"
}
for a in $alerts; do
  for mode in never now; do
    mkdir -p "$D/$a-$mode"
    mutant "$a" "$mode" > "$D/$a-$mode/alerts.yml"
    cp "$P/alerts.test.yml" "$D/$a-$mode/"
    if diff -q "$P/alerts.yml" "$D/$a-$mode/alerts.yml" > /dev/null; then
      check "$a ($mode): the mutant differs" false
      continue
    fi
    if ! out=$(cd "$D/$a-$mode" && promtool check rules alerts.yml 2>&1); then
      check "$a ($mode): the mutant is valid" false "$out"
      continue
    fi
    out=$(cd "$D/$a-$mode" && promtool test rules alerts.test.yml 2>&1); rc=$?
    what=$([ $mode = never ] && echo "never firing" || echo "firing before its for:")
    check "$a $what fails the unit tests on $a" '[ $rc != 0 ] && grep -q "alertname: $a," <<< "$out"' "$out"
  done
done
check_summary alerts

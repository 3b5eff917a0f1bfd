# The shell suites' checks and tally (source it; lib/check.py is the Python suites' one).
# Each check prints "PASS: NAME" or "FAIL: NAME" (with its time when it took a second or
# more); check_summary prints the line nginx/e2e/run.sh reads, "SUITE: N passed, M failed".
#
#   check NAME CONDITION [DETAIL]   CONDITION is shell text, evaluated where check is called
#                                   (eval); DETAIL is printed after a FAIL
#   check_cmd NAME COMMAND [ARG…]   runs COMMAND as given (its stdin is check_cmd's)
#   check_summary SUITE             the summary line; returns 1 when a check failed
#
# Both checks return the check's status, so `check … || echo "$out"` shows more on a failure.
# Their locals start with _check_: a CONDITION sees the caller's variables, not theirs.

CHECK_PASSED=0
CHECK_FAILED=0

# _check_tally NAME STATUS START [DETAIL]
_check_tally() {
  local _check_time=""
  (( SECONDS - $3 >= 1 )) && _check_time=" ($((SECONDS - $3)) s)"
  if [ "$2" = 0 ]; then
    CHECK_PASSED=$((CHECK_PASSED + 1))
    echo "PASS: $1$_check_time"
  else
    CHECK_FAILED=$((CHECK_FAILED + 1))
    echo "FAIL: $1${4:+ -- $4}"
  fi
  return "$2"
}

check() {
  local _check_start=$SECONDS _check_status=0
  eval "$2" || _check_status=1
  _check_tally "$1" "$_check_status" "$_check_start" "${3:-}"
}

check_cmd() {
  local _check_name=$1 _check_start=$SECONDS _check_status=0
  shift
  "$@" || _check_status=1
  _check_tally "$_check_name" "$_check_status" "$_check_start"
}

check_summary() {
  echo "$1: $CHECK_PASSED passed, $CHECK_FAILED failed"
  [ "$CHECK_FAILED" = 0 ]
}

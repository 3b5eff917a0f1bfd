#!/usr/bin/env python3
"""End-to-end checks of feature requests and support tickets (issue #42; docs/feedback.md)
through `attestctl serve`, real nginx, the feedback pool and software devices (attest-device);
the admin side through the moderation CLI (`attestctl feedback status|reply`, `attestctl
tickets reply|status|priority`).

- Every answer is decoded by strict mirrors of the SDK's models (below): dates exactly
  yyyy-MM-ddTHH:mm:ssZ, UUID ids, closed enums (request pending|open|planned|in_progress|
  shipped|declined|duplicate; ticket open|awaiting_reply|resolved|closed; priority low|normal|
  high|urgent; comment and message authorType user|admin), every member present with its type
  (a ticket's updatedAt included). The SDK drops an item it cannot decode from a list; here
  such an item is a FAILED check, never skipped.
- Feature requests: device 1 creates one (201, pending, upper-case id); device 2 votes (201),
  votes again (409 conflict) and sees hasVoted, device 1 sees the count but not hasVoted;
  device 2 comments (authorType user), the admin replies (`feedback reply`: authorType admin),
  listed oldest first; a status change (`feedback status`) is seen at device 1's next list
  (the SDK's default query), and the status filter finds it; each of the seven statuses set
  in turn decodes at the next list; `feedback merge` of a second request makes it duplicate and
  moves its votes without counting an author twice.
- Support tickets: device 1 opens one (open, normal, messageCount 1, updatedAt); device 3,
  sending the same submitter_id, lists [] and gets 404 for the thread and for a reply; device
  1 replies (user), the admin replies (`tickets reply`: admin, awaiting_reply), device 1's
  next message makes it open again; `tickets status` and `tickets priority` are seen at the
  next read, each of the four statuses and priorities in turn; refused values change nothing.
  Two devices linked to one
  subject by a signed link: the second reads the first's ticket; a device sending that subject
  unsigned, and under an organization's policy `asserted` a device asserting another's subject,
  get 404.
- Webhooks (an endpoint of the organization's, `--allow-private-webhooks`, a local receiver):
  feedback.created, feedback.commented (device and admin), feedback.status_changed,
  ticket.created, ticket.message (device and admin), ticket.status_changed delivered and
  verified with the standardwebhooks package; push_token and push_environment in the data,
  the submitter's where the contract says so.
Ends with "feedback: N passed, M failed"."""
import json
import os
import re
import sys
import time
import uuid
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from receiver import Receiver  # noqa: E402
from stack import Stack, app_headers, run_suite  # noqa: E402
from standardwebhooks.webhooks import Webhook  # noqa: E402

T = Tally()
A = app_headers()
APP = f"{A['X-Team-ID']}.{A['X-Bundle-ID']}"
LOOSE = app_headers(bundle="com.example.loose")  # org loose: subject links as the device asserts them
FEATURES = "/api/v1/feedback/features"
TICKETS = "/api/v1/support/tickets"
# What the devices send for APNs (hex, as the SDK's token prints) and their environment.
PUSH = {"d1": ("a1" * 32, "development"), "d2": ("b2" * 32, "production"), "d3": ("c3" * 32, "production")}
SHARED_SUBMITTER = "submitter:shared-user"  # a client-claimed id two devices both send
RX = Receiver()
HOOK = {}


def setup(s):
    s.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "acme", "--team", A["X-Team-ID"], "--bundle", A["X-Bundle-ID"], "--env", "both")
    s.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")
    s.ctl("org", "add", "loose", "--tier", "pro", "--rate-limit", "0")
    s.ctl("org", "set", "loose", "--subject-links", "asserted")
    s.ctl("app", "add", "--org", "loose", "--team", LOOSE["X-Team-ID"], "--bundle", LOOSE["X-Bundle-ID"])


# --- strict mirrors of the SDK's models -----------------------------------------------------

REQUEST_STATUSES = ("pending", "open", "planned", "in_progress", "shipped", "declined", "duplicate")
TICKET_STATUSES = ("open", "awaiting_reply", "resolved", "closed")
PRIORITIES = ("low", "normal", "high", "urgent")
AUTHOR_TYPES = ("user", "admin")
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


class Undecodable(ValueError):
    pass


def need(obj, key, kind):
    """obj[key], which must be present and of `kind` (bool is not an int, as for JSONDecoder)."""
    if not isinstance(obj, dict) or key not in obj:
        raise Undecodable(f"{key} missing")
    v = obj[key]
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise Undecodable(f"{key} {v!r} is not an integer")
    if kind is not int and not isinstance(v, kind):
        raise Undecodable(f"{key} {v!r} is not {kind.__name__}")
    return v


def date(obj, key):
    """ISO8601DateFormatter's default: exactly yyyy-MM-ddTHH:mm:ssZ, a real date."""
    v = need(obj, key, str)
    if not ISO.match(v):
        raise Undecodable(f"{key} {v!r} is not yyyy-MM-ddTHH:mm:ssZ")
    try:
        return datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError as e:
        raise Undecodable(f"{key} {v!r}: {e}") from None


def uid(obj, key):
    v = need(obj, key, str)
    try:
        uuid.UUID(v)
    except ValueError:
        raise Undecodable(f"{key} {v!r} is not a UUID") from None
    if len(v) != 36:
        raise Undecodable(f"{key} {v!r} is not a UUID string")
    return v


def enum(obj, key, values):
    v = need(obj, key, str)
    if v not in values:
        raise Undecodable(f"{key} {v!r} is not one of {'|'.join(values)}")
    return v


def feature_request(o):
    """FeatureRequest (Models L22-32)."""
    return {"id": uid(o, "id"), "title": need(o, "title", str), "description": need(o, "description", str),
            "status": enum(o, "status", REQUEST_STATUSES), "voteCount": need(o, "voteCount", int),
            "hasVoted": need(o, "hasVoted", bool), "commentCount": need(o, "commentCount", int),
            "createdAt": date(o, "createdAt"), "updatedAt": date(o, "updatedAt")}


def vote(o):
    return {"id": uid(o, "id"), "featureRequestId": uid(o, "featureRequestId"), "createdAt": date(o, "createdAt")}


def comment(o):
    return {"id": uid(o, "id"), "featureRequestId": uid(o, "featureRequestId"),
            "authorType": enum(o, "authorType", AUTHOR_TYPES), "body": need(o, "body", str), "createdAt": date(o, "createdAt")}


def ticket(o):
    """SupportTicket (Models L61-82): updatedAt required."""
    return {"id": uid(o, "id"), "subject": need(o, "subject", str), "status": enum(o, "status", TICKET_STATUSES),
            "priority": enum(o, "priority", PRIORITIES), "messageCount": need(o, "messageCount", int),
            "createdAt": date(o, "createdAt"), "updatedAt": date(o, "updatedAt")}


def message(o):
    return {"id": uid(o, "id"), "ticketId": uid(o, "ticketId"), "authorType": enum(o, "authorType", AUTHOR_TYPES),
            "body": need(o, "body", str), "createdAt": date(o, "createdAt")}


def ticket_detail(o):
    return {"id": uid(o, "id"), "subject": need(o, "subject", str), "status": enum(o, "status", TICKET_STATUSES),
            "priority": enum(o, "priority", PRIORITIES), "messages": [message(m) for m in need(o, "messages", list)],
            "createdAt": date(o, "createdAt"), "updatedAt": date(o, "updatedAt")}


def decoded(name, r, status, model):
    """The answer decoded by `model` when it has `status`; a FAILED check (named `name`) and None
    when the status differs or the body does not decode."""
    try:
        if r.status != status:
            raise Undecodable(f"status {r.status}")
        out = model(json.loads(r.body))
    except (ValueError, TypeError, KeyError) as e:
        T.check(name, False, f"{e}: {r!r}")
        return None
    T.check(name, True)
    return out


def each(decode):
    """A list model: every item must decode (the SDK would silently drop one that does not;
    that is a failure here)."""
    def model(items):
        if not isinstance(items, list):
            raise Undecodable("not an array")
        return [decode(i) for i in items]
    return model


def page_of_requests(o):
    meta = need(o, "metadata", dict)
    return {"items": each(feature_request)(need(o, "items", list)),
            "metadata": {k: need(meta, k, int) for k in ("page", "per", "total")}}


# --- helpers ----------------------------------------------------------------------------------

def enroll(s, name, *args, app=A):
    p = s.device(s.state(name), *args, "enroll", team=app["X-Team-ID"], bundle=app["X-Bundle-ID"])
    if p.returncode != 0:
        raise RuntimeError(f"enroll {name}: {p.stdout}{p.stderr}")
    with open(s.state(name)) as f:
        text = f.read()
    return dict(re.findall(r'"(token|deviceId)"\s*:\s*"([^"]*)"', text), name=name, app=app)


def call(s, d, method, path, body=None):
    return s.http(method, path, {**d["app"], "Authorization": "Bearer " + d["token"]}, body)


def sdk_list(s, d, status=None):
    """The SDK's list call with its default arguments (sort=votes, page 1, 20; voter_id ignored)."""
    q = f"?sort=votes&page=1&per=20&voter_id={d['name']}" + (f"&status={status}" if status else "")
    return call(s, d, "GET", FEATURES + q)


def admin(s, *args):
    """A moderation command (Part 3 contract): its CompletedProcess, never raising."""
    return s.ctl(*args, check=False)


def admin_ok(name, p):
    return T.check(name, p.returncode == 0, f"exit {p.returncode}: {(p.stdout + p.stderr)[:300]}")


def refused(name, p):
    """A moderation command that exists and refuses its input (not a missing command)."""
    said = p.stdout + p.stderr
    return T.check(name, p.returncode != 0 and "unknown command" not in said, f"exit {p.returncode}: {said[:300]}")


def find(items, rid):
    return next((i for i in items or [] if i["id"] == rid), None)


# --- the checks -------------------------------------------------------------------------------

def webhook_endpoint(s):
    """An endpoint of acme's for every event, at the local receiver."""
    key = s.ctl_json("apikey", "create", "--org", "acme")["key"]
    r = s.http("POST", "/api/v1/org/webhooks", {"Authorization": "Bearer " + key}, {"url": f"http://127.0.0.1:{RX.port}/fb"})
    T.check("a webhook endpoint for every event (201)", r.status == 201, repr(r))
    HOOK["secret"] = r.json["secret"]


def feature_requests(s):
    d1, d2 = enroll(s, "d1"), enroll(s, "d2")
    HOOK["d1"], HOOK["d2"] = d1, d2
    token, env = PUSH["d1"]
    body = {"title": "Dark mode", "description": "Please add a dark mode to the app.", "submitterId": "submitter:d1",
            "deviceHash": "hash-d1", "pushToken": token, "pushEnvironment": env}
    r = call(s, d1, "POST", FEATURES, body)
    created = decoded("create: 201 and the answer decodes as FeatureRequest", r, 201, feature_request)
    if not created:
        return
    rid = created["id"]
    HOOK["request"] = rid
    T.check("create: status pending, no votes, no comments, ids upper-case",
            (created["status"], created["voteCount"], created["hasVoted"], created["commentCount"]) == ("pending", 0, False, 0)
            and rid == rid.upper(), repr(created))
    T.check("create: Cache-Control no-store", r.headers.get("cache-control") == "no-store", repr(r.headers))
    page = decoded("list (the SDK's default query): every item decodes", sdk_list(s, d2), 200, page_of_requests)
    T.check("list: device 2 sees the request", page and find(page["items"], rid) is not None and page["metadata"]["total"] >= 1,
            repr(page))

    r = call(s, d2, "POST", f"{FEATURES}/{rid}/vote", {"voterId": "voter:d2", "deviceHash": "hash-d2"})
    v = decoded("vote: device 2 votes (201), the answer decodes as a vote", r, 201, vote)
    T.check("vote: featureRequestId is the request", v and v["featureRequestId"] == rid, repr(v))
    r = call(s, d2, "POST", f"{FEATURES}/{rid}/vote", {"voterId": "voter:d2", "deviceHash": "hash-d2"})
    T.check("vote: device 2's second vote is 409 conflict", r.status == 409 and (r.json or {}).get("code") == "conflict", repr(r))
    r = call(s, d2, "POST", f"{FEATURES}/{rid}/vote", {"voterId": "someone-else", "deviceHash": "other-hash"})
    T.check("vote: another voterId from the same device is 409 too (the author is the device)", r.status == 409, repr(r))
    seen2 = decoded("get: device 2's read decodes", call(s, d2, "GET", f"{FEATURES}/{rid}"), 200, feature_request)
    T.check("get: device 2 sees voteCount 1 and hasVoted", seen2 and (seen2["voteCount"], seen2["hasVoted"]) == (1, True), repr(seen2))
    seen1 = decoded("get: device 1's read decodes", call(s, d1, "GET", f"{FEATURES}/{rid}?voter_id=voter:d2"), 200, feature_request)
    T.check("get: device 1 sees voteCount 1, hasVoted false (voter_id ignored)",
            seen1 and (seen1["voteCount"], seen1["hasVoted"]) == (1, False), repr(seen1))

    token2, env2 = PUSH["d2"]
    r = call(s, d2, "POST", f"{FEATURES}/{rid}/comments",
             {"authorId": "author:d2", "body": "Yes, at night it hurts.", "pushToken": token2, "pushEnvironment": env2})
    c = decoded("comment: device 2 comments (201), the answer decodes", r, 201, comment)
    T.check("comment: authorType user", c and c["authorType"] == "user", repr(c))
    p = admin(s, "feedback", "reply", "--app", APP, rid, "--body", "Thanks, we are on it.")
    admin_ok("feedback reply (the admin's comment) succeeds", p)
    thread = decoded("comments: the thread decodes", call(s, d1, "GET", f"{FEATURES}/{rid}/comments"), 200, each(comment))
    got = [(x["authorType"], x["body"]) for x in thread or []]
    T.check("comments: the device's comment (user), then the admin's reply (admin), oldest first",
            got == [("user", "Yes, at night it hurts."), ("admin", "Thanks, we are on it.")], repr(got))
    T.check("comments: each names the request", all(x["featureRequestId"] == rid for x in thread or []), repr(thread))

    p = admin(s, "feedback", "status", "--app", APP, rid, "--status", "planned")
    admin_ok("feedback status planned succeeds", p)
    page = decoded("list after the status change: every item decodes", sdk_list(s, d1), 200, page_of_requests)
    item = find(page and page["items"], rid)
    T.check("status change: seen at device 1's next list (planned)", item is not None and item["status"] == "planned", repr(item))
    T.check("status change: the list counts 2 comments and 1 vote",
            item is not None and (item["commentCount"], item["voteCount"]) == (2, 1), repr(item))
    page = decoded("list ?status=planned decodes", sdk_list(s, d1, "planned"), 200, page_of_requests)
    T.check("list ?status=planned finds it", find(page and page["items"], rid) is not None, repr(page))
    page = decoded("list ?status=pending decodes", sdk_list(s, d1, "pending"), 200, page_of_requests)
    T.check("list ?status=pending does not", page is not None and find(page["items"], rid) is None, repr(page))

    wrong = []
    for i, st in enumerate([x for x in REQUEST_STATUSES if x != "duplicate"] + ["planned"]):
        p = admin(s, "feedback", "status", "--app", APP, rid, "--status", st)
        page = decoded(f"status {st} ({i + 1} of 7): the next list decodes", sdk_list(s, d1), 200, page_of_requests)
        item = find(page and page["items"], rid)
        if p.returncode != 0 or item is None or item["status"] != st:
            wrong.append((st, p.returncode, p.stderr.strip()[:120], item and item["status"]))
    T.check("each status set in turn (pending…declined) is the one the next list shows", not wrong, repr(wrong))
    refused("feedback status refuses a status outside the enum (shipping)",
            admin(s, "feedback", "status", "--app", APP, rid, "--status", "shipping"))
    refused("feedback status of an unknown id fails", admin(s, "feedback", "status", "--app", APP, str(uuid.uuid4()).upper(),
                                                            "--status", "open"))
    item = find((decoded("list after the refusals decodes", sdk_list(s, d1), 200, page_of_requests) or {}).get("items"), rid)
    T.check("the refusals changed nothing (still planned)", item is not None and item["status"] == "planned", repr(item))


def merge(s):
    """`feedback merge`: a second request voted for by device 1 and device 2 (who voted for the
    first already) is merged into the first: the devices see it `duplicate` (the seventh
    status), the first counts device 1 once more and device 2 not twice."""
    d1, d2, rid = HOOK.get("d1"), HOOK.get("d2"), HOOK.get("request")
    if not (d1 and d2 and rid):
        T.check("merge: the first request exists", False)
        return
    dup = decoded("merge: device 2 creates a second request", call(s, d2, "POST", FEATURES, {
        "title": "Night theme", "description": "A darker look for the evening.", "submitterId": "submitter:d2",
        "deviceHash": "hash-d2"}), 201, feature_request)
    if not dup:
        return
    votes = [call(s, d, "POST", f"{FEATURES}/{dup['id']}/vote", {"voterId": d["name"], "deviceHash": "h"}).status for d in (d1, d2)]
    T.check("merge: devices 1 and 2 vote for it (201, 201)", votes == [201, 201], repr(votes))
    admin_ok("feedback merge succeeds", admin(s, "feedback", "merge", "--app", APP, dup["id"], "--into", rid))
    page = decoded("merge: the next list decodes (duplicate among the statuses)", sdk_list(s, d1), 200, page_of_requests)
    merged, into = find(page and page["items"], dup["id"]), find(page and page["items"], rid)
    T.check("merge: the merged request is duplicate with 0 votes", merged and (merged["status"], merged["voteCount"]) == ("duplicate", 0),
            repr(merged))
    T.check("merge: the first counts 2 votes (device 2 not twice) and device 1 now hasVoted",
            into and (into["voteCount"], into["hasVoted"]) == (2, True), repr(into))
    r = call(s, d1, "POST", f"{FEATURES}/{rid}/vote", {"voterId": "again", "deviceHash": "h"})
    T.check("merge: device 1's vote moved with it (a new vote is 409)", r.status == 409, repr(r))


def tickets(s):
    d1, d3 = HOOK.get("d1") or enroll(s, "d1"), enroll(s, "d3")
    token, env = PUSH["d1"]
    body = {"subject": "Cannot log in", "body": "The login button does nothing.", "submitterId": SHARED_SUBMITTER,
            "submitterEmail": "user@example.com", "deviceHash": "hash-d1", "pushToken": token, "pushEnvironment": env}
    r = call(s, d1, "POST", TICKETS, body)
    t = decoded("ticket: device 1 opens one (201), the answer decodes as SupportTicket", r, 201, ticket)
    if not t:
        return
    tid = t["id"]
    HOOK["ticket"] = tid
    T.check("ticket: open, normal, messageCount 1, upper-case id",
            (t["status"], t["priority"], t["messageCount"]) == ("open", "normal", 1) and tid == tid.upper(), repr(t))
    mine = decoded("ticket list: device 1's decodes", call(s, d1, "GET", f"{TICKETS}?submitter_id={SHARED_SUBMITTER}"), 200, each(ticket))
    T.check("ticket list: device 1 sees its ticket", [x["id"] for x in mine or []] == [tid], repr(mine))
    theirs = decoded("ticket list: device 3's (same submitter_id) decodes",
                     call(s, d3, "GET", f"{TICKETS}?submitter_id={SHARED_SUBMITTER}"), 200, each(ticket))
    T.check("ticket list: device 3 sending the same submitter_id gets []", theirs == [], repr(theirs))
    r = call(s, d3, "GET", f"{TICKETS}/{tid}")
    T.check("ticket thread: device 3 gets 404 not_found", r.status == 404 and (r.json or {}).get("code") == "not_found", repr(r))
    r = call(s, d3, "GET", f"{TICKETS}/{tid.lower()}")
    T.check("ticket thread: device 3 gets 404 with the lower-case id too", r.status == 404, repr(r))
    r = call(s, d3, "POST", f"{TICKETS}/{tid}/messages", {"authorId": SHARED_SUBMITTER, "body": "let me in"})
    T.check("ticket reply: device 3 gets 404", r.status == 404, repr(r))

    r = call(s, d1, "POST", f"{TICKETS}/{tid}/messages", {"authorId": SHARED_SUBMITTER, "body": "Any news?"})
    m = decoded("ticket message: device 1 replies (201), the answer decodes", r, 201, message)
    T.check("ticket message: authorType user, ticketId the ticket", m and (m["authorType"], m["ticketId"]) == ("user", tid), repr(m))
    p = admin(s, "tickets", "reply", "--app", APP, tid, "--body", "Please update to 2.1.")
    admin_ok("tickets reply (the admin's message) succeeds", p)
    detail = decoded("ticket thread: device 1's read decodes", call(s, d1, "GET", f"{TICKETS}/{tid}"), 200, ticket_detail)
    got = [(x["authorType"], x["body"]) for x in (detail or {}).get("messages", [])]
    T.check("ticket thread: the opening body, device 1's message (user), the admin's reply (admin), in order",
            got == [("user", "The login button does nothing."), ("user", "Any news?"), ("admin", "Please update to 2.1.")], repr(got))
    T.check("ticket thread: after the admin's reply it is awaiting_reply", detail and detail["status"] == "awaiting_reply", repr(detail))
    call(s, d1, "POST", f"{TICKETS}/{tid}/messages", {"authorId": SHARED_SUBMITTER, "body": "Updated, works now."})
    listed = decoded("ticket list after the device's answer decodes", call(s, d1, "GET", TICKETS), 200, each(ticket))
    item = find(listed, tid)
    T.check("ticket list: the device's answer makes it open again, messageCount 4",
            item and (item["status"], item["messageCount"]) == ("open", 4), repr(item))

    p = admin(s, "tickets", "status", "--app", APP, tid, "--status", "resolved")
    admin_ok("tickets status resolved succeeds", p)
    detail = decoded("ticket thread after tickets status decodes", call(s, d1, "GET", f"{TICKETS}/{tid}"), 200, ticket_detail)
    T.check("ticket status change: seen at device 1's next read (resolved)", detail and detail["status"] == "resolved", repr(detail))
    p = admin(s, "tickets", "priority", "--app", APP, tid, "--priority", "urgent")
    admin_ok("tickets priority urgent succeeds", p)
    listed = decoded("ticket list after tickets priority decodes", call(s, d1, "GET", TICKETS), 200, each(ticket))
    item = find(listed, tid)
    T.check("ticket priority change: seen at device 1's next list (urgent)", item and item["priority"] == "urgent", repr(item))
    wrong = []
    for kind, values in (("status", TICKET_STATUSES), ("priority", PRIORITIES)):
        for v in values:
            p = admin(s, "tickets", kind, "--app", APP, tid, f"--{kind}", v)
            item = find(decoded(f"ticket {kind} {v}: the next list decodes", call(s, d1, "GET", TICKETS), 200, each(ticket)), tid)
            if p.returncode != 0 or item is None or item[kind] != v:
                wrong.append((kind, v, p.returncode, p.stderr.strip()[:120], item and item[kind]))
    T.check("each ticket status and priority set in turn is the one the next list shows", not wrong, repr(wrong))
    for kind, bad in (("status", "pending"), ("priority", "critical")):
        refused(f"tickets {kind} refuses {bad} (outside the enum)", admin(s, "tickets", kind, "--app", APP, tid, f"--{kind}", bad))
    item = find(decoded("ticket list after the refusals decodes", call(s, d1, "GET", TICKETS), 200, each(ticket)), tid)
    T.check("the refusals changed nothing (closed, urgent)", item and (item["status"], item["priority"]) == ("closed", "urgent"),
            repr(item))


def subject_linked(s):
    """Two devices of one user, each linked to the subject by a signed link (the organization's
    default policy): the second reads and answers the first's ticket."""
    signed = s.ctl("subject", "sign", "--org", "acme", "--subject", "user-7", "--ttl", "10m").stdout.strip()
    phone = enroll(s, "phone", "--fingerprint", "phone-7", "--subject", signed)
    tablet = enroll(s, "tablet", "--fingerprint", "tablet-7", "--subject", signed)
    r = call(s, phone, "POST", TICKETS, {"subject": "Sync broken", "body": "Sync stopped.", "submitterId": "u7", "deviceHash": "h"})
    t = decoded("subject: the phone opens a ticket", r, 201, ticket)
    if not t:
        return
    detail = decoded("subject: the tablet (same signed subject) reads the thread", call(s, tablet, "GET", f"{TICKETS}/{t['id']}"),
                     200, ticket_detail)
    T.check("subject: it is the phone's ticket", detail and detail["id"] == t["id"], repr(detail))
    listed = decoded("subject: the tablet's list decodes", call(s, tablet, "GET", TICKETS), 200, each(ticket))
    T.check("subject: the tablet's list has it", find(listed, t["id"]) is not None, repr(listed))
    # The attacker: the same subject id sent plain (not signed) links nothing under `signed`.
    thief = enroll(s, "thief7", "--fingerprint", "thief-7", "--subject", "user-7")
    r = call(s, thief, "GET", f"{TICKETS}/{t['id']}")
    T.check("subject: a device sending the subject id unsigned gets 404 for the thread", r.status == 404, repr(r))
    listed = decoded("subject: its list decodes", call(s, thief, "GET", TICKETS), 200, each(ticket))
    T.check("subject: its list is []", listed == [], repr(listed))
    # Under the policy `asserted` a device's own claim links it, and grants no ticket.
    victim = enroll(s, "victim9", "--fingerprint", "victim-9", "--subject", "user-9", app=LOOSE)
    claimer = enroll(s, "claimer9", "--fingerprint", "claimer-9", "--subject", "user-9", app=LOOSE)
    shown = s.ctl_json("subject", "show", "user-9", "--org", "loose")
    T.check("asserted: both devices are linked to user-9", len(shown.get("devices", [])) == 2, json.dumps(shown)[:300])
    r = call(s, victim, "POST", TICKETS, {"subject": "Billing", "body": "Charged twice.", "submitterId": "u9", "deviceHash": "h"})
    t9 = decoded("asserted: a device of org loose opens a ticket", r, 201, ticket)
    r = call(s, claimer, "GET", f"{TICKETS}/{t9['id'] if t9 else 'none'}")
    T.check("asserted: a device asserting the same subject gets 404 for the thread", r.status == 404, repr(r))
    r = call(s, claimer, "POST", f"{TICKETS}/{t9['id'] if t9 else 'none'}/messages", {"authorId": "u9", "body": "me too"})
    T.check("asserted: and 404 for a reply", r.status == 404, repr(r))


def webhooks(s):
    """The six events, both device and admin writes, verified with standardwebhooks."""
    want = {"feedback.created", "feedback.commented", "feedback.status_changed", "ticket.created", "ticket.message",
            "ticket.status_changed"}
    deadline = time.time() + 20
    while time.time() < deadline:
        got = [(h, b, json.loads(b)) for _, h, b, _ in RX.on("/fb")]
        if want <= {e["event"] for _, _, e in got} and sum(e["event"] == "feedback.commented" for _, _, e in got) >= 2 \
                and sum(e["event"] == "ticket.message" for _, _, e in got) >= 3:
            break
        time.sleep(0.1)
    time.sleep(1.0)  # a late or duplicate delivery would show by now
    got = [(h, b, json.loads(b)) for _, h, b, _ in RX.on("/fb")]
    events = [e for _, _, e in got]
    kinds = sorted({e["event"] for e in events if e["event"].split(".")[0] in ("feedback", "ticket")})
    print(f"INFO: feedback and ticket events delivered: {kinds}", flush=True)
    for name in sorted(want):
        T.check(f"webhook: {name} delivered", name in kinds, repr(kinds))
    wh = Webhook(HOOK.get("secret", "whsec_" + "A" * 32))
    bad = []
    for h, body, e in got:
        try:
            wh.verify(body, {k: h[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")})
        except Exception as x:  # noqa: BLE001
            bad.append((e["event"], repr(x)))
    T.check("webhook: standardwebhooks verifies every delivery", got and not bad, repr(bad))

    def of(name, **match):
        return [e["data"] for e in events if e["event"] == name and all(e["data"].get(k) == v for k, v in match.items())]

    token1, env1 = PUSH["d1"]
    token2, env2 = PUSH["d2"]
    rid, tid = HOOK.get("request"), HOOK.get("ticket")
    fc = of("feedback.created", feature_request_id=rid)
    T.check("feedback.created: the request, pending, with device 1's push_token and push_environment",
            len(fc) == 1 and (fc[0].get("status"), fc[0].get("push_token"), fc[0].get("push_environment")) == ("pending", token1, env1),
            repr(fc))
    dev = of("feedback.commented", feature_request_id=rid, author_type="device")
    T.check("feedback.commented (device 2): author_type device, its push_token and push_environment",
            len(dev) == 1 and (dev[0].get("push_token"), dev[0].get("push_environment")) == (token2, env2), repr(dev))
    adm = of("feedback.commented", feature_request_id=rid, author_type="admin")
    T.check("feedback.commented for the admin's reply: author_type admin, push_token and push_environment members present",
            len(adm) == 1 and "push_token" in adm[0] and "push_environment" in adm[0], repr(of("feedback.commented")))
    sc = of("feedback.status_changed", feature_request_id=rid, previous_status="pending", status="planned")
    T.check("feedback.status_changed pending → planned with the submitter's (device 1's) push_token and push_environment",
            len(sc) == 1 and (sc[0].get("push_token"), sc[0].get("push_environment")) == (token1, env1),
            repr(of("feedback.status_changed")[:2]))
    tc = of("ticket.created", ticket_id=tid)
    T.check("ticket.created: open, normal, with push_token and push_environment (device 1's) and the email",
            len(tc) == 1 and (tc[0].get("status"), tc[0].get("priority"), tc[0].get("push_token"), tc[0].get("push_environment"),
                              tc[0].get("submitter_email")) == ("open", "normal", token1, env1, "user@example.com"), repr(tc))
    tm = of("ticket.message", ticket_id=tid)
    T.check("ticket.message: device 1's two messages (author_type device) and the admin's reply (admin)",
            sorted(m.get("author_type") for m in tm) == ["admin", "device", "device"], repr(tm))
    ts = of("ticket.status_changed", ticket_id=tid, previous_status="open", status="resolved")
    T.check("ticket.status_changed open → resolved with push_token and push_environment (device 1's)",
            len(ts) == 1 and (ts[0].get("push_token"), ts[0].get("push_environment")) == (token1, env1),
            repr(of("ticket.status_changed")[:3]))
    T.check("webhook: no event delivered twice", len({e["id"] for e in events}) == len(events), f"{len(events)} events")


def main():
    s = Stack(setup=setup, serve_args=["--allow-private-webhooks"])
    try:
        return run_suite(T, "feedback", s, [webhook_endpoint, feature_requests, merge, tickets, subject_linked, webhooks])
    finally:
        RX.shutdown()


if __name__ == "__main__":
    sys.exit(main())

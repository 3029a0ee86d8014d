"""What the admin API's document cannot say in JSON Schema, told to schemathesis.

A key's `expires_at` must lie in the future (a key that would never work is refused with 400),
and "in the future" is no schema keyword. Before a schema-valid request to create a key is
sent, an `expires_at` in the past is moved a day ahead of now; everything else in the case is
sent as generated. Negative cases are left alone: they must be refused anyway.
"""

from datetime import datetime, timedelta, timezone

import schemathesis


def _in_the_past(value):
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False  # not a time this parser reads: left for the server to judge
    if at.tzinfo is None:
        return False
    # A minute of margin for the time between this hook and the server reading the request.
    return at <= datetime.now(timezone.utc) + timedelta(minutes=1)


@schemathesis.hook
def before_call(context, case, kwargs):
    operation = case.operation
    if operation.method.upper() != "POST" or operation.path != "/admin/v1/tenants/{slug}/keys":
        return
    meta = case.meta
    if meta is not None and not meta.generation.mode.is_positive:
        return
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("expires_at"), str) and _in_the_past(body["expires_at"]):
        body["expires_at"] = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

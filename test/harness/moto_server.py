"""moto in server mode, as `moto_server` runs it, with two differences.

DynamoDB requests are handled one at a time. moto's server is threaded and its DynamoDB backend
takes no lock, so two concurrent conditional writes to one item can both succeed. Real DynamoDB
applies each conditional write atomically, and Flotilla's leases depend on that, so the harness
serialises DynamoDB (only DynamoDB: SQS long polls and the other services stay concurrent).

AWS publishes public SSM parameters under /aws/service/ (the EKS-optimized AMI ids that AMI
aliases resolve through). Nobody else may write there, moto included, so the harness plays AWS
publishing them: POST /flotilla-harness/aws-parameters with {"region", "parameters": {name: value}}
puts them into moto's parameter store, where GetParameter finds them as on AWS.

EC2 CreateFleet honours ClientToken as EC2 does (moto ignores it): a repeated request with the
same token and the same parameters gets the first answer again (the same instances, nothing new
launched); the same token with other parameters is refused with IdempotentParameterMismatch.

EC2 capacity reservations, which moto does not model, are answered by the harness as EC2 would:
POST /flotilla-harness/capacity-reservations with {"reservations": [{id, instanceType, availabilityZone,
ownerId, instanceMatchCriteria, state, totalInstanceCount, availableInstanceCount, reservationType,
endDate, tags}]} sets the account's reservations (as creating, using and ending them in EC2 would
leave them), and DescribeCapacityReservations lists them with EC2's id list and filters (state,
owner-id, instance-match-criteria, instance-type, availability-zone, tag:<key>, tag-key); an id it
does not hold is refused with InvalidCapacityReservationId.NotFound, as EC2 refuses it.

EC2 status checks and scheduled events, which moto reports as always ok, are answered by the harness
as EC2 would for the instances it is told of: POST /flotilla-harness/instance-status with
{"statuses": {instanceId: {"availabilityZone", "instanceStatus": {"status", "impairedSince"},
"systemStatus": {...}, "events": [{"code", "description"}]}}} sets them (an instance left out is
healthy), and DescribeInstanceStatus with the filters instance-status.status, system-status.status
or event.code lists the told instances that match; without those filters moto answers.

An EC2 resource's own tags are looked up by its id. moto finds them by scanning every tag of every
resource (describe_tags with a resource-id filter), once per tag filter and once more to answer, so
DescribeInstances grows with the square of the account's instances: about four minutes for one
call at 5,000 instances, where EC2 takes seconds. The look-up returns the same list, in the same
order, as the scan did.

usage: moto_server.py <host> <port>
"""
import hashlib
import io
import json
import os
import signal
import sys
import threading
import time

from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from urllib.parse import parse_qsl

from werkzeug.serving import run_simple


DEFAULT_ACCOUNT = "123456789012"


def publish_aws_parameters(environ, start_response):
    from moto.ssm.models import Parameter, ssm_backends

    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
    store = ssm_backends[DEFAULT_ACCOUNT][body["region"]]._parameters
    for name, value in body["parameters"].items():
        if not name.startswith("/aws/"):
            start_response("400 Bad Request", [("Content-Type", "text/plain")])
            return [f"{name} is not a public AWS parameter".encode()]
        versions = store[name]
        versions.append(
            Parameter(
                account_id=DEFAULT_ACCOUNT,
                name=name,
                value=value,
                parameter_type="String",
                description=None,
                allowed_pattern=None,
                keyid=None,
                last_modified_date=time.time(),
                version=len(versions) + 1,
                data_type="text",
            )
        )
    start_response("200 OK", [("Content-Type", "application/json")])
    return [b"{}"]


CAPACITY_RESERVATIONS = []
_capacity_lock = threading.Lock()


def set_capacity_reservations(environ, start_response):
    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
    with _capacity_lock:
        CAPACITY_RESERVATIONS[:] = body["reservations"]
    start_response("200 OK", [("Content-Type", "application/json")])
    return [b"{}"]


def _reservation_matches(reservation, ids, filters):
    if ids and reservation["id"] not in ids:
        return False
    fields = {
        "state": reservation.get("state", "active"),
        "owner-id": reservation.get("ownerId", DEFAULT_ACCOUNT),
        "instance-match-criteria": reservation.get("instanceMatchCriteria", "open"),
        "instance-type": reservation["instanceType"],
        "availability-zone": reservation["availabilityZone"],
    }
    tags = reservation.get("tags", {})
    for name, values in filters.items():
        if name == "tag-key":
            if not any(key in tags for key in values):
                return False
        elif name.startswith("tag:"):
            if tags.get(name[4:]) not in values:
                return False
        elif name in fields:
            if fields[name] not in values:
                return False
        else:
            raise ValueError(f"filter {name} is not supported by the harness")
    return True


def _ec2_list_response(start_response, action, set_name, items):
    """EC2's answer to `action`: its list of `items` (XML <item>s) under `set_name`."""
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<{action}Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        "<requestId>flotilla-harness</requestId>"
        f"<{set_name}>{''.join(items)}</{set_name}>"
        f"</{action}Response>"
    )
    start_response("200 OK", [("Content-Type", "text/xml")])
    return [body.encode()]


def _xml(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def describe_capacity_reservations(params, start_response):
    ids = [v for k, v in params if k.startswith("CapacityReservationId.")]
    names = {k[: -len(".Name")]: v for k, v in params if k.startswith("Filter.") and k.endswith(".Name")}
    filters = {}
    for prefix, name in names.items():
        filters[name] = [v for k, v in params if k.startswith(prefix + ".Value.")]
    with _capacity_lock:
        known = {r["id"] for r in CAPACITY_RESERVATIONS}
        matched = [r for r in CAPACITY_RESERVATIONS if _reservation_matches(r, ids, filters)]
    unknown = [i for i in ids if i not in known]
    if unknown:
        start_response("400 Bad Request", [("Content-Type", "text/xml")])
        return [RESERVATION_NOT_FOUND.format(ids=_xml(", ".join(unknown))).encode()]
    items = []
    for r in matched:
        tags = "".join(
            f"<item><key>{_xml(k)}</key><value>{_xml(v)}</value></item>" for k, v in r.get("tags", {}).items()
        )
        end = f"<endDate>{_xml(r['endDate'])}</endDate>" if r.get("endDate") else ""
        items.append(
            "<item>"
            f"<capacityReservationId>{_xml(r['id'])}</capacityReservationId>"
            f"<ownerId>{_xml(r.get('ownerId', DEFAULT_ACCOUNT))}</ownerId>"
            f"<instanceType>{_xml(r['instanceType'])}</instanceType>"
            "<instancePlatform>Linux/UNIX</instancePlatform>"
            f"<availabilityZone>{_xml(r['availabilityZone'])}</availabilityZone>"
            "<tenancy>default</tenancy>"
            f"<totalInstanceCount>{int(r.get('totalInstanceCount', 1))}</totalInstanceCount>"
            f"<availableInstanceCount>{int(r.get('availableInstanceCount', 1))}</availableInstanceCount>"
            f"<state>{_xml(r.get('state', 'active'))}</state>"
            f"{end}"
            f"<instanceMatchCriteria>{_xml(r.get('instanceMatchCriteria', 'open'))}</instanceMatchCriteria>"
            f"<reservationType>{_xml(r.get('reservationType', 'default'))}</reservationType>"
            f"<tagSet>{tags}</tagSet>"
            "</item>"
        )
    return _ec2_list_response(start_response, "DescribeCapacityReservations", "capacityReservationSet", items)


INSTANCE_HEALTH = {}
_health_lock = threading.Lock()
HEALTH_FILTERS = ("instance-status.status", "system-status.status", "event.code")


def set_instance_health(environ, start_response):
    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
    with _health_lock:
        INSTANCE_HEALTH.clear()
        INSTANCE_HEALTH.update(body["statuses"])
    start_response("200 OK", [("Content-Type", "application/json")])
    return [b"{}"]


def _summary_xml(tag, summary):
    if not summary or summary.get("status", "ok") == "ok":
        return (
            f"<{tag}><status>ok</status><details><item><name>reachability</name><status>passed</status>"
            f"</item></details></{tag}>"
        )
    since = f"<impairedSince>{_xml(summary['impairedSince'])}</impairedSince>" if summary.get("impairedSince") else ""
    return (
        f"<{tag}><status>{_xml(summary['status'])}</status><details><item><name>reachability</name>"
        f"<status>failed</status>{since}</item></details></{tag}>"
    )


def _health_matches(health, filters):
    for name, values in filters.items():
        if name == "instance-status.status":
            if (health.get("instanceStatus") or {}).get("status", "ok") not in values:
                return False
        elif name == "system-status.status":
            if (health.get("systemStatus") or {}).get("status", "ok") not in values:
                return False
        elif name == "event.code":
            if not any(e.get("code") in values for e in health.get("events", [])):
                return False
        else:
            raise ValueError(f"filter {name} is not supported by the harness")
    return True


def describe_instance_status(params, start_response):
    names = {k[: -len(".Name")]: v for k, v in params if k.startswith("Filter.") and k.endswith(".Name")}
    filters = {name: [v for k, v in params if k.startswith(prefix + ".Value.")] for prefix, name in names.items()}
    with _health_lock:
        told = dict(INSTANCE_HEALTH)
    items = []
    for instance_id, health in sorted(told.items()):
        if not _health_matches(health, filters):
            continue
        events = "".join(
            f"<item><code>{_xml(e['code'])}</code><description>{_xml(e.get('description', ''))}</description></item>"
            for e in health.get("events", [])
        )
        items.append(
            "<item>"
            f"<instanceId>{_xml(instance_id)}</instanceId>"
            f"<availabilityZone>{_xml(health.get('availabilityZone', 'us-east-1a'))}</availabilityZone>"
            "<instanceState><code>16</code><name>running</name></instanceState>"
            f"{_summary_xml('systemStatus', health.get('systemStatus'))}"
            f"{_summary_xml('instanceStatus', health.get('instanceStatus'))}"
            f"<eventsSet>{events}</eventsSet>"
            "</item>"
        )
    return _ec2_list_response(start_response, "DescribeInstanceStatus", "instanceStatusSet", items)


RESERVATION_NOT_FOUND = (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>InvalidCapacityReservationId.NotFound</Code>'
    "<Message>The capacity reservation ID '{ids}' does not exist</Message></Error></Errors>"
    "<RequestID>flotilla-harness</RequestID></Response>"
)

IDEMPOTENCY_MISMATCH = (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>IdempotentParameterMismatch</Code>'
    "<Message>The client token {token} was used before with different parameters.</Message></Error></Errors>"
    "<RequestID>flotilla-harness</RequestID></Response>"
)


class SerialisedDynamoDB(DomainDispatcherApplication):
    _dynamodb = threading.Lock()
    _fleets = threading.Lock()
    # ClientToken -> (digest of the other parameters, status, headers, body) of its first answer.
    _fleet_answers = {}

    def _create_fleet(self, environ, start_response):
        """Answers DescribeCapacityReservations and repeated CreateFleet ClientTokens; else None."""
        if environ.get("REQUEST_METHOD") != "POST" or environ.get("HTTP_X_AMZ_TARGET"):
            return None
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(body)
        params = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        if ("Action", "DescribeCapacityReservations") in params:
            return describe_capacity_reservations(params, start_response)
        if ("Action", "DescribeInstanceStatus") in params and any(
            k.startswith("Filter.") and k.endswith(".Name") and v in HEALTH_FILTERS for k, v in params
        ):
            return describe_instance_status(params, start_response)
        if ("Action", "CreateFleet") not in params:
            return None
        token = dict(params).get("ClientToken")
        if not token:
            return None
        digest = hashlib.sha256(
            json.dumps(sorted(p for p in params if p[0] != "ClientToken")).encode()
        ).hexdigest()
        with self._fleets:
            known = self._fleet_answers.get(token)
            if known is None:
                captured = {}

                def capture(status, headers, exc_info=None):
                    captured["status"], captured["headers"] = status, headers
                    return lambda _data: None

                answer = b"".join(super().__call__(environ, capture))
                if captured["status"].startswith("200"):
                    self._fleet_answers[token] = (digest, captured["status"], captured["headers"], answer)
                start_response(captured["status"], captured["headers"])
                return [answer]
        if known[0] != digest:
            start_response("400 Bad Request", [("Content-Type", "text/xml")])
            return [IDEMPOTENCY_MISMATCH.format(token=token).encode()]
        start_response(known[1], known[2])
        return [known[3]]

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == "/flotilla-harness/aws-parameters" and environ.get("REQUEST_METHOD") == "POST":
            return publish_aws_parameters(environ, start_response)
        if environ.get("PATH_INFO") == "/flotilla-harness/capacity-reservations" and environ.get("REQUEST_METHOD") == "POST":
            return set_capacity_reservations(environ, start_response)
        if environ.get("PATH_INFO") == "/flotilla-harness/instance-status" and environ.get("REQUEST_METHOD") == "POST":
            return set_instance_health(environ, start_response)
        if environ.get("PATH_INFO") == "/moto-api/reset":
            with self._fleets:
                self._fleet_answers.clear()
            with _capacity_lock:
                CAPACITY_RESERVATIONS.clear()
            with _health_lock:
                INSTANCE_HEALTH.clear()
        fleet = self._create_fleet(environ, start_response)
        if fleet is not None:
            return fleet
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            with self._dynamodb:
                # Build the whole response under the lock, so the write is complete before the next one.
                return list(super().__call__(environ, start_response))
        return super().__call__(environ, start_response)


def _own_tags(resource):
    """The resource's tags as moto's describe_tags lists them for its id alone, without the scan."""
    if not resource.id:
        return []
    tags = resource.ec2_backend.tags.get(resource.id) or {}
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource.id), "")
    return [{"resource_id": resource.id, "key": k, "value": v, "resource_type": kind} for k, v in tags.items()]


def main():
    TaggedEC2Resource.get_tags = _own_tags
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = SerialisedDynamoDB(create_backend_app)
    run_simple(host, port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()

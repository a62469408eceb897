"""moto in server mode, as `moto_server` runs it, with two differences.

DynamoDB requests are handled one at a time. moto's server is threaded and its DynamoDB backend
takes no lock, so two concurrent conditional writes to one item can both succeed. Real DynamoDB
applies each conditional write atomically, and Flotilla's leases depend on that, so the harness
serialises DynamoDB (only DynamoDB: SQS long polls and the other services stay concurrent).

AWS publishes public SSM parameters under /aws/service/ (the EKS-optimized AMI ids that AMI
aliases resolve through). Nobody else may write there, moto included, so the harness plays AWS
publishing them: POST /flotilla-harness/aws-parameters with {"region", "parameters": {name: value}}
puts them into moto's parameter store, where GetParameter finds them as on AWS.

usage: moto_server.py <host> <port>
"""
import json
import os
import signal
import sys
import threading
import time

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
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


class SerialisedDynamoDB(DomainDispatcherApplication):
    _dynamodb = threading.Lock()

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == "/flotilla-harness/aws-parameters" and environ.get("REQUEST_METHOD") == "POST":
            return publish_aws_parameters(environ, start_response)
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            with self._dynamodb:
                # Build the whole response under the lock, so the write is complete before the next one.
                return list(super().__call__(environ, start_response))
        return super().__call__(environ, start_response)


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = SerialisedDynamoDB(create_backend_app)
    run_simple(host, port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()

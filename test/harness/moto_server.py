"""moto in server mode, as `moto_server` runs it, with one difference: DynamoDB requests are
handled one at a time.

moto's server is threaded and its DynamoDB backend takes no lock, so two concurrent conditional
writes to one item can both succeed. Real DynamoDB applies each conditional write atomically,
and Flotilla's leases and idempotency records depend on that, so the harness serialises
DynamoDB (only DynamoDB: SQS long polls and the other services stay concurrent).

usage: moto_server.py <host> <port>
"""
import os
import signal
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple


class SerialisedDynamoDB(DomainDispatcherApplication):
    _dynamodb = threading.Lock()

    def __call__(self, environ, start_response):
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

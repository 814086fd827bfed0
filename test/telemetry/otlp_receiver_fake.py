"""FAKE OpenTelemetry collector: no collector binary ships in a registry package this machine can reach, so this
receiver stands in for one. It speaks OTLP/HTTP as the spec says (POST /v1/traces, application/x-protobuf) and decodes
every request with the official protobuf definitions (PyPI opentelemetry-proto); a body they cannot decode gets 400.
Each decoded ExportTraceServiceRequest is printed to stdout as one JSON line (protobuf's JSON mapping).

Run: python test/telemetry/otlp_receiver_fake.py   (prints "port <n>" first)
"""

import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path != "/v1/traces":
            self.send_error(404, "only /v1/traces")
            return
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/x-protobuf":
            self.send_error(415, "expected application/x-protobuf")
            return
        body = self.read_body()
        if self.headers.get("Content-Encoding", "").strip() == "gzip":
            body = gzip.decompress(body)
        try:
            request = ExportTraceServiceRequest.FromString(body)
        except DecodeError as err:
            self.send_error(400, f"not an ExportTraceServiceRequest: {err}")
            return
        print(json.dumps(MessageToDict(request)), flush=True)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def read_body(self) -> bytes:
        """The request body: Content-Length, or chunked transfer encoding (what Node sends for a stream)."""
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length", "0")))
        chunks = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                self.rfile.readline()
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        print(format % args, file=sys.stderr)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

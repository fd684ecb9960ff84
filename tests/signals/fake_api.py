#!/usr/bin/env python3
"""A misbehaving Prometheus-compatible API for the signal fault tests, and a
tiny exporter whose value a test controls. Paths (the signal's url is
http://HOST:PORT/<mode>, lanes appends /api/v1/query):

  /value/api/v1/query    a one-series vector with the number in --value-file;
                         if the file says "garbage": HTTP 200 with an HTML body,
                         "empty": an empty vector (the series went stale),
                         "error": HTTP 503 with a Prometheus error
  /slow/api/v1/query     answers after 30 s (the client's timeout must fire)
  /huge/api/v1/query     streams a 100 MB body (the client must stop reading)
  /metrics               lanes_test_demand <the number in --value-file>

usage: fake_api.py --port-file FILE --value-file FILE [--tls CERT KEY] [--port N]
Binds 127.0.0.1 on --port (default: a free one) and writes it to --port-file.
"""
import argparse
import http.server
import socketserver
import ssl
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--value-file", required=True)
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()

    def value():
        try:
            with open(args.value_file) as f:
                return f.read().strip() or "0"
        except OSError:
            return "0"

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def send(self, status, body, ctype="application/json"):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            try:
                if path == "/metrics":
                    self.send(200, "lanes_test_demand %s\n" % value(), "text/plain; version=0.0.4")
                elif path == "/value/api/v1/query" and value() == "garbage":
                    self.send(200, "<html><body>502 Bad Gateway</body></html>\n", "text/html")
                elif path == "/value/api/v1/query" and value() == "empty":
                    self.send(200, '{"status":"success","data":{"resultType":"vector","result":[]}}')
                elif path == "/value/api/v1/query" and value() == "error":
                    self.send(503, '{"status":"error","errorType":"unavailable","error":"shutting down"}')
                elif path == "/value/api/v1/query":
                    self.send(200, '{"status":"success","data":{"resultType":"vector","result":'
                                   '[{"metric":{},"value":[%f,"%s"]}]}}' % (time.time(), value()))
                elif path == "/slow/api/v1/query":
                    time.sleep(30)
                    self.send(200, '{"status":"success","data":{"resultType":"scalar","result":[0,"1"]}}')
                elif path == "/huge/api/v1/query":
                    chunk = b" " * (1 << 20)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(100 << 20))
                    self.end_headers()
                    for _ in range(100):
                        self.wfile.write(chunk)
                else:
                    self.send(404, "not found\n", "text/plain")
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    srv = Server(("127.0.0.1", args.port), Handler)
    if args.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls[0], args.tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

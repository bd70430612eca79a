"""A fake OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

``FakeOpenAIServer(faults=..., latency_s=...)`` serves ``POST /v1/chat/completions``. ``faults`` maps
a request number (1-based, in arrival order) to a fault: ``429``, ``500``, ``drop`` (close the
connection without answering), ``timeout`` (sleep past the client's timeout), ``badjson``.
A callable ``fault_for(n, body)`` may be given instead. The reply text is ``reply(body)``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def default_reply(body: dict) -> str:
    return "Step one.\nStep two.\nAnswer: 42"


class FakeOpenAIServer:
    def __init__(self, faults=None, fault_for=None, latency_s: float = 0.0, reply=default_reply,
                 timeout_sleep_s: float = 3.0):
        self.faults = dict(faults or {})
        self.fault_for = fault_for
        self.latency_s = latency_s
        self.reply = reply
        self.timeout_sleep_s = timeout_sleep_s
        self.count = 0
        self.served = 0
        self.lock = threading.Lock()
        self.bodies: list[dict] = []
        self.auth_headers: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.count += 1
                    n = server.count
                    server.bodies.append(body)
                    server.auth_headers.append(self.headers.get("Authorization", ""))
                fault = server.fault_for(n, body) if server.fault_for else server.faults.get(n)
                if server.latency_s:
                    time.sleep(server.latency_s)
                if fault == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "timeout":
                    time.sleep(server.timeout_sleep_s)
                    return self._send(200, {"late": True})
                if fault in (429, 500, "429", "500"):
                    return self._send(int(fault), {"error": {"message": f"simulated {fault}"}})
                if fault == "badjson":
                    data = b'{"id": "x", "choices": [ {"message": '
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                text = server.reply(body)
                with server.lock:
                    server.served += 1
                self._send(200, {
                    "id": f"cmpl-{n}", "object": "chat.completion", "created": 0, "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": len(text.split()), "total_tokens": 10},
                })

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

"""An OpenAI-compatible chat-completions server on loopback, for the tests of remote generative models.

``ChatServer(model)`` serves ``POST /v1/chat/completions`` (streamed as server-sent events, or one JSON
answer) and ``GET /v1/models`` from a real ``LocalChatModel`` (SmolLM2), as vLLM or llama.cpp's server
would: usage in the last chunk when ``stream_options.include_usage`` is asked. The model name picks a
misbehaviour instead, for the fault tests:

* ``fault-401``, ``fault-500``: that status, every time;
* ``fault-429``: 429 with a 10 ms ``retry-after-ms``, ``fail_first`` times (``server.fail_first``), then
  the real answer;
* ``fault-garbage``: two pieces of the answer, then a line that is not JSON;
* ``fault-cut``: two pieces, then the connection closes with no finish reason and no ``[DONE]``;
* ``fault-endless``: a piece every 50 ms, forever (until the client goes);
* ``fault-hang``: reads the request and never answers (until ``stop``);
* ``fault-stall``: two pieces, then silence with the connection open (until ``stop``);
* ``fault-nologprobs``: a 400 for a request that asks for ``logprobs``, else the real answer;
* ``fault-noletter``: answers "Not sure, sorry." (``NO_LETTER``), streamed or not, without logprobs:
  a multiple-choice answer that names no option's letter.

A request with ``logprobs`` gets the real log-probabilities of the first answer token's ``top_logprobs``
likeliest tokens, from SmolLM2's logits after the chat prompt: in the answer's ``choices[0].logprobs``, or
streamed, in the first chunk that carries text (``choices[0].logprobs``; later chunks carry none). Only
the first token's are computed: enough for a multiple-choice letter.

``server.requests`` keeps every request body (JSON) and ``server.headers`` the Authorization headers
seen, so a test can check what was sent.

``server.reply``, when set, is a function of the request body (JSON) that returns the answer's text: every
request for a model name that is not a ``fault-*`` one is then answered with that text instead of the
model's (streamed in two pieces, with usage when asked, or whole), so a test chooses what a remote model
says; ``ChatServer(None)`` then needs no model at all. With ``server.hold`` (a ``threading.Event``) set
to one, such an answer's second piece waits until the event is set (a test sees the first piece arrive
while the server is still answering); ``server.first_sent`` counts the first pieces sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from engine.runtime.generative import Decoding

#: What ``fault-noletter`` answers, streamed or not: no word is a letter, whatever the options.
NO_LETTER = "Not sure, sorry."


class ChatServer:
    def __init__(self, model, model_name: str = "smollm2"):
        self.model, self.model_name = model, model_name
        self.requests: list[dict] = []
        self.headers: list[str] = []
        self.fail_first = 0
        self.reply = None
        self.hold: threading.Event | None = None
        self.first_sent = 0
        self._count_lock = threading.Lock()
        self._failed = 0
        self._stop = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05})

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _json(self, status: int, body: dict, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.rstrip("/") == "/v1/models":
                    self._json(
                        200, {"object": "list", "data": [{"id": server.model_name, "object": "model"}]}
                    )
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length))
                server.requests.append(request)
                server.headers.append(self.headers.get("Authorization", ""))
                name = request.get("model", "")
                if name == "fault-401":
                    return self._json(
                        401,
                        {
                            "error": {
                                "message": "Incorrect API key provided: "
                                + self.headers.get("Authorization", "")
                            }
                        },
                    )
                if name == "fault-500":
                    return self._json(500, {"error": {"message": "boom"}})
                if name == "fault-429" and server._failed < server.fail_first:
                    server._failed += 1
                    return self._json(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "10"})
                if name == "fault-nologprobs" and request.get("logprobs"):
                    return self._json(400, {"error": {"message": "logprobs are not supported"}})
                if name == "fault-noletter" and not request.get("stream"):
                    return self._reply(request, NO_LETTER, None)
                if name == "fault-hang":
                    server._stop.wait(30)
                    return None
                if server.reply is not None and not name.startswith("fault-"):
                    return self._chosen(request, name, str(server.reply(request)))
                if not request.get("stream"):
                    return self._whole(request)
                return self._stream(request, name)

            def _decoding(self, request) -> Decoding:
                return Decoding(
                    temperature=request.get("temperature") or 0.0,
                    top_p=request.get("top_p") or 1.0,
                    max_new_tokens=request.get("max_tokens") or 64,
                    stop=tuple(request.get("stop") or ()),
                    seed=request.get("seed"),
                )

            def _first_token_logprobs(self, request) -> dict:
                """The OpenAI ``logprobs`` of the first answer token: its ``top_logprobs`` likeliest."""
                import torch

                chat = server.model
                inputs = chat.encode(request["messages"])
                with torch.inference_mode():
                    logits = chat.model(**inputs).logits[0, -1].float()
                logprobs = torch.log_softmax(logits, dim=-1)
                top = torch.topk(logprobs, int(request.get("top_logprobs") or 1))
                alternatives = [
                    {"token": chat.tokenizer.decode([int(i)]), "logprob": float(v), "bytes": None}
                    for v, i in zip(top.values, top.indices, strict=True)
                ]
                return {"content": [{**alternatives[0], "top_logprobs": alternatives}]}

            def _reply(self, request, text, logprobs):
                self._json(200, {
                    "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                    "model": request["model"],
                    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": logprobs,
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
                })  # fmt: skip

            def _whole(self, request):
                generation = server.model.generate(request["messages"], self._decoding(request))
                if request.get("logprobs"):
                    return self._reply(request, generation.text, self._first_token_logprobs(request))
                self._json(200, {
                    "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                    "model": request["model"],
                    "choices": [{"index": 0, "finish_reason": generation.finish_reason,
                                 "message": {"role": "assistant", "content": generation.text}}],
                    "usage": {"prompt_tokens": generation.input_tokens, "completion_tokens": generation.output_tokens,
                              "total_tokens": generation.input_tokens + generation.output_tokens},
                })  # fmt: skip

            def _event(self, payload) -> None:
                data = payload if isinstance(payload, str) else json.dumps(payload)
                line = f"data: {data}\n\n".encode()
                self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.flush()

            def _chunk(
                self, model: str, content: str | None, finish: str | None = None, logprobs: dict | None = None
            ) -> dict:
                delta = {"content": content} if content is not None else {}
                choice = {"index": 0, "delta": delta, "finish_reason": finish}
                if logprobs is not None:
                    choice["logprobs"] = logprobs
                return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": model, "system_fingerprint": "fp_loopback", "choices": [choice]}  # fmt: skip

            def _chosen(self, request, name, text):
                """``text`` as the answer (``server.reply``), streamed in two pieces or whole."""
                if not request.get("stream"):
                    return self._reply(request, text, None)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                half = len(text) // 2
                try:
                    for number, piece in enumerate((text[:half], text[half:])):
                        if number == 1 and server.hold is not None:
                            server.hold.wait(30)
                        if number == 0:
                            # Counted before it is sent: a reader who has it may check the count at once
                            # (counted after, the count could lag the reader: seen once in the suite).
                            with server._count_lock:
                                server.first_sent += 1
                        if piece:
                            self._event(self._chunk(name, piece))
                except (BrokenPipeError, ConnectionResetError):
                    return None
                self._event(self._chunk(name, None, "stop"))
                if (request.get("stream_options") or {}).get("include_usage"):
                    self._event({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": int(time.time()),
                                 "model": name, "choices": [],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})  # fmt: skip
                self._event("[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                return None

            def _stream(self, request, name):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    if name == "fault-endless":
                        while not server._stop.is_set():
                            self._event(self._chunk(name, "la "))
                            time.sleep(0.05)
                        return
                    if name == "fault-noletter":
                        self._event(self._chunk(name, NO_LETTER))
                        self._event(self._chunk(name, None, "stop"))
                        self._event("[DONE]")
                        self.wfile.write(b"0\r\n\r\n")
                        return
                    if name in ("fault-garbage", "fault-cut", "fault-stall"):
                        self._event(self._chunk(name, "Half "))
                        self._event(self._chunk(name, "an answer"))
                        if name == "fault-stall":
                            server._stop.wait(30)
                        if name == "fault-garbage":
                            self._event("{not json")
                        self.close_connection = True
                        return
                    logprobs = self._first_token_logprobs(request) if request.get("logprobs") else None
                    stream = server.model.stream(request["messages"], self._decoding(request))
                    for piece in stream:
                        self._event(self._chunk(name, piece, logprobs=logprobs))
                        logprobs = None  # the first token's, on the first piece only
                    generation = stream.generation
                    self._event(self._chunk(name, None, generation.finish_reason))
                    if (request.get("stream_options") or {}).get("include_usage"):
                        self._event({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": int(time.time()),
                                     "model": name, "choices": [],
                                     "usage": {"prompt_tokens": generation.input_tokens,
                                               "completion_tokens": generation.output_tokens,
                                               "total_tokens": generation.input_tokens + generation.output_tokens}})  # fmt: skip
                    self._event("[DONE]")
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler

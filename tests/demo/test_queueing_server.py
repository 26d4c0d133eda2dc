"""``demo.server.QueueingWSGIServer``, the demo server's HTTP server, on real loopback sockets: a burst
of connections waits in its backlog instead of being dropped, at most ``workers`` requests run at once,
and a silent connection does not hold a worker."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from django.core.servers.basehttp import WSGIRequestHandler

from demo.server import QueueingWSGIServer

REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


class SlowApp:
    """A WSGI app answering 200 after ``seconds``; ``most_at_once`` is the most calls seen running at once."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]


@contextlib.contextmanager
def listening(server_cls, app):
    """A ``server_cls`` bound to a free loopback port with ``app``, not serving yet; yields (server, a
    function that starts serving on a thread). Shut down and closed on exit."""
    server = server_cls(("127.0.0.1", 0), WSGIRequestHandler)
    server.set_app(app)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    try:
        yield server, thread.start
    finally:
        if thread.is_alive():
            server.shutdown()
        server.server_close()


def status_line(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    answer = b""
    while b"\r\n" not in answer:
        chunk = sock.recv(4096)
        if not chunk:
            break
        answer += chunk
    return answer.split(b"\r\n", 1)[0]


def burst(address, n: int, connect_timeout: float) -> tuple[list[socket.socket], list[BaseException]]:
    """``n`` connections opened at once (one thread each), each sending ``REQUEST``; returns the sockets
    connected within ``connect_timeout`` seconds and the errors of the others."""
    connected: list[socket.socket] = []
    errors: list[BaseException] = []
    start = threading.Barrier(n)

    def connect() -> None:
        start.wait()
        try:
            sock = socket.create_connection(address, timeout=connect_timeout)
            sock.sendall(REQUEST)
            connected.append(sock)
        except OSError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=connect) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return connected, errors


def test_it_listens_with_a_large_backlog_and_a_bounded_pool():
    assert QueueingWSGIServer.request_queue_size >= 128
    assert 1 <= QueueingWSGIServer.workers <= 16
    assert QueueingWSGIServer.with_workers(3).workers == 3


def test_60_connections_at_once_wait_in_the_backlog_and_all_get_200():
    # The server accepts nothing until all 60 are in: with runserver's backlog of 10 the kernel drops
    # the 12th handshake on, whose client sends its SYN again only a second later.
    with listening(QueueingWSGIServer, SlowApp()) as (server, serve):
        connected, errors = burst(server.server_address, 60, connect_timeout=0.5)
        try:
            assert errors == []
            serve()
            assert [status_line(sock, timeout=10) for sock in connected] == [b"HTTP/1.1 200 OK"] * 60
        finally:
            for sock in connected:
                sock.close()


def test_at_most_workers_requests_run_at_once_and_the_rest_wait_their_turn():
    app = SlowApp(seconds=0.05)
    server_cls = QueueingWSGIServer.with_workers(4)
    with listening(server_cls, app) as (server, serve):
        serve()
        connected, errors = burst(server.server_address, 60, connect_timeout=5)
        try:
            assert errors == []
            assert [status_line(sock, timeout=20) for sock in connected] == [b"HTTP/1.1 200 OK"] * 60
        finally:
            for sock in connected:
                sock.close()
    assert 2 <= app.most_at_once <= 4


def test_a_silent_connection_is_closed_and_frees_its_worker():
    server_cls = type("OneWorker", (QueueingWSGIServer.with_workers(1),), {"idle_timeout": 0.3})
    with listening(server_cls, SlowApp()) as (server, serve):
        serve()
        with socket.create_connection(server.server_address, timeout=3) as silent:
            time.sleep(0.1)  # the one worker has taken it and waits for its request line
            with socket.create_connection(server.server_address) as asking:
                asking.sendall(REQUEST)
                assert status_line(asking, timeout=3) == b"HTTP/1.1 200 OK"
            assert silent.recv(1) == b""  # closed by the server


def test_each_response_closes_its_connection():
    with listening(QueueingWSGIServer, SlowApp()) as (server, serve):
        serve()
        with socket.create_connection(server.server_address, timeout=5) as sock:
            sock.sendall(REQUEST)
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
    assert b"\r\nConnection: close\r\n" in answer


class WaitingOnModelApp:
    """A WSGI app whose path ``/answer`` joins a generation line (``engine.runtime.slots.GenerationSlots``,
    as a streamed answer does) and holds its slot until ``release`` is set; any other path is a page."""

    def __init__(self) -> None:
        from engine.runtime.slots import GenerationSlots

        self.slots = GenerationSlots(size=4)
        self.release = threading.Event()
        self.holding = threading.Semaphore(0)

    def __call__(self, environ, start_response):
        if environ["PATH_INFO"] == "/answer":
            with self.slots.slot():
                self.holding.release()
                self.release.wait(10)
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]


def serving(server) -> list[threading.Thread]:
    """The live threads of ``server``'s pool and those that left it (named after its port)."""
    prefix = f"demo-server-{server.server_port}-"
    return [thread for thread in threading.enumerate() if thread.name.startswith(prefix)]


def test_a_request_waiting_on_the_model_leaves_the_pool_so_pages_are_served_meanwhile():
    # One pool thread, two answers holding it in turn: before, the second answer and the page waited for
    # the first answer to end; now each answer's thread leaves the pool as it joins the line.
    app = WaitingOnModelApp()
    with listening(QueueingWSGIServer.with_workers(1), app) as (server, serve):
        serve()
        answers = [socket.create_connection(server.server_address, timeout=10) for _ in range(2)]
        try:
            for sock in answers:
                sock.sendall(b"GET /answer HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert app.holding.acquire(timeout=5), "the answer did not get a thread"
            with socket.create_connection(server.server_address, timeout=5) as page:
                page.sendall(REQUEST)
                assert status_line(page, timeout=5) == b"HTTP/1.1 200 OK"
            assert len(serving(server)) == 3  # the pool's one thread and the two that left it
            app.release.set()
            assert [status_line(sock, timeout=5) for sock in answers] == [b"HTTP/1.1 200 OK"] * 2
        finally:
            for sock in answers:
                sock.close()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the two that left end with their requests
            if len(serving(server)) == 1:
                break
            time.sleep(0.02)
        assert len(serving(server)) == 1

"""Remote red-teaming answers through the production profile: the platform's own cost per stream, with
the classifier crowd at work meanwhile.

Run:  .venv/bin/python benchmarks/remote_streams.py [--streams 200] [--turns 3] [--tokens 1000] [--rate 50]
                                                    [--annotators 50] [--validators 20] [--seconds 60]

What it does, all on loopback (docs/serving.md, "Many streams per worker"):
  1. starts a chat server written for this benchmark (``--fake-server``: asyncio on uvloop, OpenAI's
     streamed chat-completions protocol over HTTP/1.1): every request is answered with ``max_tokens``
     one-token chunks at ``--rate`` tokens per second each, with no limit on how many it serves at once,
     and the usage last;
  2. lays out ``load_production``'s database (the hate-speech task, its MiniLM target, 50 annotators and
     20 validators with tokens) and a red-teaming task whose target is that chat server (``--tokens``
     new tokens an answer: 20 s at 50 tokens/s), a budget on its round (so each turn reserves and
     settles), and ``--streams`` red-teamers, each with a conversation open;
  3. **directly**: ``--streams`` clients, each asking the chat server for ``--turns`` answers in a row,
     and notes each answer's time to its first token (the machine otherwise idle). The clients start
     spread evenly over one answer's length (seeded), so that about ``--streams`` answers stream at every
     moment and new turns arrive steadily (``--streams`` per answer length: 10 a second by default), not
     all in the same millisecond;
  4. starts ``scripts/serve.sh`` (gunicorn with ASGI workers, django-q2 on Redis, PostgreSQL), warms it up,
     and runs the classifier crowd alone (``load_production.run_load``: create, next, vote);
  5. **through the platform**: the same ``--streams`` clients, each sending ``--turns`` messages in a row
     through ``POST /api/conversations/{id}/turns/?stream=1`` (server-sent events), while the classifier
     crowd runs again; notes each turn's time to its first ``token`` event, and checks each ``done``
     (answered, ``--tokens`` tokens, stored);
  6. prints the time to first token (p50, p95, max) directly and through the platform, the p95 added,
     errors, the crowd's latency alone and beside the streams, the web processes' threads and memory
     at the busiest moment, the turns stored, and whether the aims were met: added p95 <= 150 ms, 0
     errors, the crowd's p95 < 300 ms for create, next and vote.
The stream clients run in a process of their own (asyncio, raw HTTP reading only the markers), the
crowd in this one; all share the 2 cores with the server, so the figures are a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import load_production as crowd  # noqa: E402

AIM_ADDED_P95_MS = 150.0


# --- the chat server written for the benchmark ------------------------------------------------------


def _sse_chunk(payload: bytes) -> bytes:
    """One server-sent event ``data: payload`` as one HTTP/1.1 chunk."""
    event = b"data: " + payload + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(event), event)


async def fake_chat_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rate: float):
    """Serve one connection of the chat server written for the benchmark: each ``POST
    .../chat/completions`` (kept alive, one after another, as the ``openai`` client sends them) is
    answered with ``max_tokens`` chunks of one token each, ``rate`` per second, then the finish reason,
    the usage and ``[DONE]``; anything else with a 404.

    Plain asyncio streams rather than an ASGI server: the server shares the 2 cores with the platform it
    measures, and uvicorn's machinery per chunk took 0.25 cores at 10,000 chunks a second."""
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path = (lines[0].split(" ") + ["", ""])[:2]
            headers = dict(
                (name.strip().lower(), value.strip())
                for name, _, value in (line.partition(":") for line in lines[1:] if line)
            )
            body = await reader.readexactly(int(headers.get("content-length") or 0))
            closing = headers.get("connection", "").lower() == "close"
            if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                if closing:
                    return
                continue
            request = json.loads(body or b"{}")
            tokens = int(request.get("max_tokens") or 16)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
            started = time.monotonic()
            for number in range(tokens):
                delay = started + (number + 1) / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                writer.write(_sse_chunk(
                    b'{"id":"c","object":"chat.completion.chunk","created":0,"model":"fake",'
                    b'"choices":[{"index":0,"delta":{"content":"w%d "},"finish_reason":null}]}' % number
                ))  # fmt: skip
                if writer.is_closing():
                    return
            usage = {"prompt_tokens": 20, "completion_tokens": tokens, "total_tokens": 20 + tokens}
            finish = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                      "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}  # fmt: skip
            last = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                    "choices": [], "usage": usage}  # fmt: skip
            writer.write(_sse_chunk(json.dumps(finish).encode()) + _sse_chunk(json.dumps(last).encode())
                         + _sse_chunk(b"[DONE]") + b"0\r\n\r\n")  # fmt: skip
            await writer.drain()
            if closing:
                return
    except ConnectionError:
        return
    finally:
        writer.close()


def serve_fake(port: int, rate: float) -> None:
    import uvloop

    async def main() -> None:
        server = await asyncio.start_server(
            lambda r, w: fake_chat_connection(r, w, rate), "127.0.0.1", port, backlog=4096
        )
        async with server:
            await server.serve_forever()

    uvloop.run(main())


# --- the stream clients (a process of their own) ----------------------------------------------------


async def one_stream(port: int, path: str, headers: dict, body: dict, first: bytes, end: bytes) -> dict:
    """POST ``body`` to ``path`` and read the streamed answer, searching only for the markers: the time
    to ``first`` and to ``end`` (ms), and the JSON after ``end`` (the platform's ``done``), or the error."""
    started = time.perf_counter()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as exc:
        return {"error": f"connect: {exc}"}
    payload = json.dumps(body).encode()
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json",
            f"Content-Length: {len(payload)}", "Accept: text/event-stream", "Connection: close"]  # fmt: skip
    head += [f"{k}: {v}" for k, v in headers.items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    seen = bytearray()
    ttft = done_ms = None
    result: dict = {}
    try:
        while True:
            data = await asyncio.wait_for(reader.read(65536), timeout=120)
            if not data:
                break
            start = max(0, len(seen) - len(end) - 8)
            seen += data
            if ttft is None and first in seen:
                ttft = (time.perf_counter() - started) * 1000
            if done_ms is None:
                at = seen.find(end, start)
                if at >= 0:
                    done_ms = (time.perf_counter() - started) * 1000
                    tail = bytes(seen[at + len(end) :])
                    while b"\n\n" not in tail:
                        more = await asyncio.wait_for(reader.read(65536), timeout=30)
                        if not more:
                            break
                        tail += more
                    result["done"] = tail.split(b"\n\n", 1)[0].strip()
                    break
            if len(seen) > 1 << 20:  # keep only the end: the markers are searched in what is new
                del seen[: len(seen) - 4096]
    except (TimeoutError, OSError) as exc:
        result["error"] = f"read: {type(exc).__name__}"
    finally:
        writer.close()
    status_line = bytes(seen[:40]).split(b"\r\n", 1)[0] if seen else b""
    if ttft is None and "error" not in result:
        result["error"] = f"no first token ({status_line.decode(errors='replace')})"
    elif done_ms is None and "error" not in result:
        result["error"] = "no end"
    return {"ttft_ms": ttft, "total_ms": done_ms, **result}


async def run_clients(spec: dict) -> list[dict]:
    """``spec["clients"]`` clients at once, each ``spec["turns"]`` streamed answers in a row."""
    port, mode, turns, tokens = spec["port"], spec["mode"], spec["turns"], spec["tokens"]

    async def client(number: int) -> list[dict]:
        # Starts spread over one answer's length: then about ``clients`` answers stream at every moment,
        # and new turns arrive steadily (clients / answer length per second), as a crowd's would.
        await asyncio.sleep(random.Random(number).uniform(0, spec["stagger"]))
        out = []
        for turn in range(turns):
            if mode == "direct":
                body = {"model": "fake", "messages": [{"role": "user", "content": f"hi {number} {turn}"}],
                        "stream": True, "max_tokens": tokens}  # fmt: skip
                got = await one_stream(port, "/v1/chat/completions", {}, body, b'"content"', b"data: [DONE]")
                got.pop("done", None)
                out.append(got)
            else:
                conversation, token = spec["conversations"][number]
                path = f"/api/conversations/{conversation}/turns/?stream=1"
                body = {"prompt": f"Tell me something, turn {turn}."}
                got = await one_stream(port, path, {"Authorization": f"Token {token}"}, body,
                                       b"event: token", b"event: done\ndata: ")  # fmt: skip
                if "done" in got:
                    done = json.loads(got.pop("done"))
                    tokens_out = (done.get("generation") or {}).get("output_tokens")
                    if done.get("status") != "answered" or tokens_out != tokens:
                        got["error"] = (
                            f"done: {done.get('status')} {done.get('finish_reason')} {tokens_out} tokens"
                        )
                out.append(got)
        return out

    results = await asyncio.gather(*(client(n) for n in range(spec["clients"])))
    return [r for rs in results for r in rs]


def clients_process(spec: dict) -> subprocess.Popen:
    """The stream clients in a process of their own; their results come as JSON on its stdout."""
    return subprocess.Popen(
        [sys.executable, __file__, "--clients-json", json.dumps(spec)], stdout=subprocess.PIPE, text=True
    )


# --- the platform's side ----------------------------------------------------------------------------


def set_up_red_team(chat_port: int, streams: int, tokens: int) -> list[tuple[int, str]]:
    """The red-teaming task on the chat server, a budget on its round, and ``streams`` red-teamers each
    with a conversation open: [(conversation id, API token)]."""
    from decimal import Decimal

    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.models import RoundBudget
    from annotation.red_team.conversations import start_conversation
    from tasks.models import Context
    from tests.factories.red_team import make_remote_red_team_round

    generation = {"max_new_tokens": tokens, "timeout": 600, "price_input_per_million": 1.0,
                  "price_output_per_million": 2.0}  # fmt: skip
    round_ = make_remote_red_team_round(
        f"http://127.0.0.1:{chat_port}/v1", chat_model_name="fake", generation=generation
    )
    task = round_.task
    RoundBudget.objects.create(round=round_, cap=Decimal("1000000"))
    passage = Context.objects.create(task=task, round=round_, data={"title": "T", "passage": "A passage."})
    User = get_user_model()
    out = []
    for n in range(streams):
        user = User.objects.create_user(f"red-teamer-{n}")
        conversation = start_conversation(round_=round_, annotator=user, context=passage)
        out.append((conversation.pk, Token.objects.create(user=user).key))
    return out


def web_threads_and_memory() -> tuple[int, float]:
    """Threads and resident MB of the gunicorn processes, summed, from /proc."""
    threads, rss = 0, 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"gunicorn" not in (entry / "cmdline").read_bytes():
                continue
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Threads:"):
                threads += int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss += int(line.split()[1]) / 1024
    return threads, rss


def summary(results: list[dict]) -> dict:
    ttfts = [r["ttft_ms"] for r in results if r.get("ttft_ms") is not None]
    errors = [r["error"] for r in results if "error" in r]
    return {
        "n": len(results),
        "p50": crowd.percentile(ttfts, 50) if ttfts else float("nan"),
        "p95": crowd.percentile(ttfts, 95) if ttfts else float("nan"),
        "max": max(ttfts) if ttfts else float("nan"),
        "errors": errors,
    }


def crowd_line(label: str, rec, setup: dict) -> tuple[str, bool]:
    """One line of the crowd's latency per request kind (``load_production.summarise``), and whether
    its aim was met (p95 under 300 ms for create, next and vote, max under 1 s, nothing lost)."""
    stats = crowd.summarise(rec, [u for u, _ in setup["annotators"]], [u for u, _ in setup["validators"]])
    parts = [
        f"{kind} p50/p95/max {p50:.0f}/{p95:.0f}/{top:.0f} ms (n {n})"
        for kind in ("create", "next", "vote")
        for n, p50, p95, top in [stats["latency"][kind]]
    ]
    return f"{label}: " + ", ".join(parts) + f"; 5xx {stats['fives']}, unanswered {rec.unanswered}", stats[
        "aim"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--validators", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think", type=float, default=2.0)
    parser.add_argument("--web-workers", type=int, default=2 * len(os.sched_getaffinity(0)))
    parser.add_argument("--port", type=int, default=8210)
    parser.add_argument("--server-log", type=Path, help="keep the server's output")
    parser.add_argument("--fake-server", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--clients-json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fake_server:
        serve_fake(args.fake_server, args.rate)
        return
    if args.clients_json:
        print(json.dumps(asyncio.run(run_clients(json.loads(args.clients_json)))))
        return

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        chat_port = probe.getsockname()[1]
    fake = subprocess.Popen(
        [sys.executable, __file__, "--fake-server", str(chat_port), "--rate", str(args.rate)]
    )
    try:
        measure(args, chat_port)
    finally:
        fake.terminate()
        fake.wait(timeout=10)


def measure(args, chat_port: int) -> None:
    """Steps 2-6 of the module's docstring, with the chat server on ``chat_port``."""
    env, setup = crowd.prepare_profile(
        annotators=args.annotators,
        validators=args.validators,
        port=args.port,
        web_workers=args.web_workers,
        extra={
            "DYNABENCH_ENDPOINT_ALLOWED_NETWORKS": "127.0.0.0/8",
            "DYNABENCH_RED_TEAM_TURN_RATE": "100000/min",
        },
    )
    conversations = set_up_red_team(chat_port, args.streams, args.tokens)
    from django.db import connections

    connections.close_all()
    spec = {
        "clients": args.streams,
        "turns": args.turns,
        "tokens": args.tokens,
        "stagger": args.tokens / args.rate,
    }

    direct_proc = clients_process({**spec, "port": chat_port, "mode": "direct"})
    direct = summary(json.loads(direct_proc.communicate()[0]))

    server = crowd.start_profile(env, args.server_log)
    base = f"http://127.0.0.1:{args.port}"
    busiest = (0, 0.0)
    try:
        crowd.wait_healthy(base)
        crowd.warm_up(base, setup, args.web_workers)
        alone = crowd.run_load(
            argparse.Namespace(seconds=args.seconds, think=args.think, ramp=10.0), base, setup
        )
        streams_proc = clients_process(
            {**spec, "port": args.port, "mode": "platform", "conversations": conversations}
        )
        sampling = threading.Event()

        def sample() -> None:
            nonlocal busiest
            while not sampling.wait(1.0):
                busiest = max(busiest, web_threads_and_memory())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        cpu_before, clock = crowd.process_cpu(), time.perf_counter()
        beside = crowd.run_load(
            argparse.Namespace(seconds=args.seconds, think=args.think, ramp=10.0), base, setup
        )
        platform = summary(json.loads(streams_proc.communicate()[0]))
        sampling.set()
        elapsed = time.perf_counter() - clock
        cpu = {k: (v - cpu_before[k]) / elapsed for k, v in crowd.process_cpu().items()}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

    from annotation.models import Turn

    stored = Turn.objects.filter(conversation__round__task__slug="red-remote")
    answered = stored.filter(status="answered").count()
    total = stored.count()
    added = platform["p95"] - direct["p95"]
    print(f"streams: {args.streams} red-teamers at once, {args.turns} turns each in a row, {args.tokens} tokens "
          f"an answer at {args.rate:.0f} tokens/s; {args.web_workers} ASGI workers; 2 cores")  # fmt: skip
    for label, got in (("directly", direct), ("through the platform", platform)):
        print(f"time to first token {label}: p50 {got['p50']:.0f} ms, p95 {got['p95']:.0f} ms, "
              f"max {got['max']:.0f} ms (n {got['n']}); errors {len(got['errors'])}"
              + (f": {sorted(set(got['errors']))[:3]}" if got["errors"] else ""))  # fmt: skip
    print(f"added by the platform at p95: {added:.0f} ms")
    print(f"web processes at the busiest sample: {busiest[0]} threads, {busiest[1]:.0f} MB resident")
    chunks = args.streams * args.turns * args.tokens
    print(f"CPU while the streams ran (cores busy, of 2): web {cpu['web']:.2f}, postgres {cpu['postgres']:.2f}, "
          f"this process (the crowd) {cpu['client']:.2f}; {chunks:,} chunks in {elapsed:.0f} s")  # fmt: skip
    print(f"turns stored: {total}, answered {answered} (of {args.streams * args.turns} sent)")
    line_alone, _ = crowd_line("classifier crowd alone", alone, setup)
    line_beside, crowd_met = crowd_line("classifier crowd beside the streams", beside, setup)
    print(line_alone)
    print(line_beside)
    met = (
        added <= AIM_ADDED_P95_MS
        and not platform["errors"]
        and crowd_met
        and answered == args.streams * args.turns
    )
    print(f"aim (added p95 <= {AIM_ADDED_P95_MS:.0f} ms, 0 errors, every turn answered, crowd p95 < "
          f"{crowd.AIM_P95_MS:.0f} ms beside the streams): {'met' if met else 'NOT met'}")  # fmt: skip
    connections.close_all()
    crowd.psql(f"DROP DATABASE IF EXISTS {crowd.DB_NAME} WITH (FORCE)")


if __name__ == "__main__":
    main()

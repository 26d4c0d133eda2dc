/*
 * The red-teaming page's streamed answers (progressive enhancement; annotation/red_team/views.py).
 *
 * Without this script the message form posts, the server generates the whole answer and the page comes
 * back with it. With it, the same form data is POSTed with fetch and "Accept: text/event-stream"; the
 * server answers with server-sent events (annotation/red_team/sse.py): "turn" (the stored turn's index and
 * its conversation's id), "queued" while the model answers others first (how many are ahead), "token"
 * per piece of the answer, "done" with the stored turn. The pieces are
 * appended to a new message as they come (textContent, never HTML). When the answer is done the rubric is
 * shown and the form gets a fresh client token and the conversation's id. The message box is emptied as
 * soon as the server takes the message, so what is typed meanwhile is kept for the next turn.
 *
 * Each turn's item carries its status (data-status); the judge form's "answered_turns" is the number of
 * answered turns on the page, so the server can refuse a judgement of answers this page never showed.
 *
 * A refusal (4xx, plain text: a message over the model's context, the round closed) is shown under the
 * box and the text stays in it. A network failure before the answer starts, or a sign-in page, falls
 * back to the plain POST, which keeps the rules on the server. A network failure mid-answer (or a stream
 * that ends without "done") gives the form back: the message in the box with its client token, the
 * button enabled, and what happened said under the box (``giveBack``). The button is disabled while
 * sending, so a double click sends once; the client token makes a resent form a no-op anyway.
 */
(function () {
  "use strict";

  /* Split a buffer of server-sent-event text into complete events; returns [events, rest]. */
  function parseEvents(buffer) {
    const events = [];
    const blocks = buffer.replace(/\r\n/g, "\n").split("\n\n");
    const rest = blocks.pop();
    for (const block of blocks) {
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) {
        try {
          events.push({ name: name, data: JSON.parse(data.join("\n")) });
        } catch (e) {
          /* a malformed event is skipped; "done" carries the stored answer anyway */
        }
      }
    }
    return [events, rest];
  }

  function newToken() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return "10000000-1000-4000-8000-100000000000".replace(/[018]/g, (c) =>
      (c ^ (crypto.getRandomValues(new Uint8Array(1))[0] & (15 >> (c / 4)))).toString(16)
    );
  }

  function message(role, text) {
    const box = document.createElement("div");
    box.className = "message " + role;
    const who = document.createElement("span");
    who.className = "speaker";
    who.textContent = role === "user" ? "You" : "Model";
    const p = document.createElement("p");
    p.className = "wrap-anywhere" + (role === "assistant" ? " answer" : "");
    p.dir = "auto";
    p.textContent = text;
    box.append(who, p);
    return [box, p];
  }

  function hiddenField(form, name, value) {
    let input = form.querySelector('input[name="' + name + '"]');
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      form.prepend(input);
    }
    input.value = value;
    return input;
  }

  /*
   * Read the answer's events from ``response`` into the page: the turn's id (and the conversation's, on
   * both forms), the queue's place, each piece of the answer appended to ``answer``. Returns the "done"
   * event's data (the stored turn), or null when the stream ended without it; rejects when the network
   * fails mid-stream (reader.read() rejects), for ``send`` to give the form back.
   */
  async function readStream(response, form, item, answer, status) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let done = null;
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      const parsed = parseEvents(buffer);
      buffer = parsed[1];
      for (const ev of parsed[0]) {
        if (ev.name === "turn") {
          // The same turn shown before (its answer broke off, then the message was sent again with its
          // client token, which brings back the stored turn): the new item replaces the old one.
          const before = document.getElementById("turn-" + ev.data.turn);
          if (before && before !== item) before.remove();
          item.id = "turn-" + ev.data.turn;
          hiddenField(form, "conversation", ev.data.conversation);
          const judge = document.getElementById("judge-form");
          if (judge) hiddenField(judge, "conversation", ev.data.conversation);
        } else if (ev.name === "queued") {
          status.textContent =
            ev.data.ahead > 0
              ? "The model is answering others first: " + ev.data.ahead + " ahead of you…"
              : "Your answer is next…";
        } else if (ev.name === "token") {
          if (answer.textContent === "") status.textContent = "The model is answering…";
          answer.textContent += ev.data.text;
        } else if (ev.name === "done") {
          done = ev.data;
        }
      }
    }
    return done;
  }

  /*
   * The answer's stream broke (a network error, or it ended without "done"): what came stays on the page,
   * marked; the message goes back in the box (unless another one was typed meanwhile) with the same
   * client token, so sending it again brings back what the server stored instead of a second turn; the
   * button is enabled again and the status says what happened.
   */
  function giveBack(form, parts, prompt, error) {
    const { button, status, box, item, modelBox } = parts;
    item.dataset.status = "broken";
    const warn = document.createElement("p");
    warn.className = "warning";
    warn.textContent = "The connection broke before this answer was complete; what came is shown.";
    modelBox.append(warn);
    const reason = error && error.message ? " (" + error.message + ")" : "";
    const why = "The connection to the server broke" + reason;
    if (!box.value.trim() || box.value === prompt) {
      box.value = prompt;
      status.textContent =
        why + " before the answer was complete. Your message is back in the box: send it again to get " +
        "what was stored (it is not stored twice), or reload the page.";
    } else {
      hiddenField(form, "client_token", newToken()); // the box holds a new message: a new turn
      status.textContent = why + " before the answer was complete. Reload the page to see what was stored.";
    }
    status.classList.add("warning");
    button.disabled = false;
    box.focus();
  }

  /*
   * Side by side (data-side-by-side on the form: the conversation's first message goes to several models):
   * the "turn" event says how many answers come; each "token" and "queued" event names its answer's slot
   * (0 for A), and the answers come together, interleaved, each into its own box. When "done" comes, the page
   * is loaded again: the server draws the rating form under each answer. Returns false when the stream
   * ended without "done".
   */
  async function readSideBySide(response, form, status, prompt) {
    const turns = document.getElementById("turns");
    const empty = turns.querySelector(".empty-turns");
    if (empty) empty.remove();
    const item = document.createElement("li");
    item.className = "turn side-by-side-stream";
    const [userBox] = message("user", prompt);
    const grid = document.createElement("div");
    grid.className = "answers-grid";
    item.append(userBox, grid);
    turns.append(item);
    const boxes = [];
    // Leaving now stops the answer being written and the later ones are never asked: the browser asks first.
    const stay = (event) => {
      event.preventDefault();
      event.returnValue = "";
    };
    window.addEventListener("beforeunload", stay);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      const parsed = parseEvents(buffer);
      buffer = parsed[1];
      for (const ev of parsed[0]) {
        if (ev.name === "turn") {
          for (let slot = 0; slot < (ev.data.answers || 0); slot++) {
            const [box, answer] = message("assistant", "");
            box.querySelector(".speaker").textContent = "Answer " + String.fromCharCode(65 + slot);
            grid.append(box);
            boxes.push(answer);
          }
        } else if (ev.name === "queued") {
          status.textContent = "The models are answering others first: " + ev.data.ahead + " ahead of you…";
        } else if (ev.name === "token" && boxes[ev.data.slot]) {
          status.textContent = "The answers are coming…";
          boxes[ev.data.slot].textContent += ev.data.text;
        } else if (ev.name === "done") {
          window.removeEventListener("beforeunload", stay);
          status.textContent = "Every answer came. Loading the rating form…";
          window.location.hash = "answers";
          window.location.reload();
          return true;
        }
      }
    }
    window.removeEventListener("beforeunload", stay);
    return false;
  }

  async function send(form, event) {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    const status = form.querySelector(".stream-status");
    const box = form.querySelector("textarea[name=prompt]");
    const prompt = box.value;
    if (!prompt.trim()) {
      status.textContent = "Write a message first.";
      return;
    }
    button.disabled = true;
    status.textContent = "The model is answering…";
    let response;
    try {
      response = await fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        headers: { Accept: "text/event-stream", "X-Requested-With": "fetch" },
        credentials: "same-origin",
      });
    } catch (e) {
      form.submit(); // the plain way
      return;
    }
    const type = response.headers.get("Content-Type") || "";
    if (!response.ok || !type.startsWith("text/event-stream")) {
      // A refusal (4xx), or a full line for the model (503, models_registry/queue_full.py), said in place:
      // sending the form the plain way would only knock again on a server that just said it is busy.
      const refused = (response.status >= 400 && response.status < 500) || response.status === 503;
      if (refused && type.startsWith("text/plain")) {
        status.textContent = await response.text();
        status.classList.add("warning");
        button.disabled = false;
        return; // the text stays in the box
      }
      form.submit();
      return;
    }
    status.classList.remove("warning");
    if (form.dataset.sideBySide) {
      // As for one answer: the message is the conversation's now, and skipping its passage would
      // abandon it.
      if (box.value === prompt) box.value = "";
      // No next message before the answers are rated, and the page reloads into the rating form when
      // they have come: a draft typed meanwhile would be lost, so the box takes none.
      box.disabled = true;
      const skip = document.querySelector(".skip-context");
      if (skip) skip.remove();
      let ended = false;
      try {
        ended = await readSideBySide(response, form, status, prompt);
      } catch (e) {
        ended = false;
      }
      if (!ended) {
        box.disabled = false;
        status.textContent =
          "The connection broke before every answer came. Reload the page to see what was stored.";
        status.classList.add("warning");
      }
      return;
    }
    // The message is now the conversation's (shown above as yours): the box is emptied at once, so that
    // what is typed while the model answers is kept, ready for the next turn.
    if (box.value === prompt) box.value = "";
    // While the answer comes, the box is for the next message, and the judgement waits: the server
    // refuses one while an answer is being written.
    const label = form.querySelector("label[for=id_prompt] .muted");
    const labelBefore = label ? label.textContent : "";
    const max = Number(form.dataset.maxTurns);
    const next = Number(form.dataset.turns) + 2;
    if (label) label.textContent = next > max ? "(this is the last message)" : "(" + next + " of " + max + ")";
    // After the last message the form goes: a draft typed while its answer comes would go with it.
    if (next > max) box.disabled = true;
    const judgeButton = document.querySelector("#judge-form button[type=submit]");
    if (judgeButton) judgeButton.disabled = true;
    const turns = document.getElementById("turns");
    const empty = turns.querySelector(".empty-turns");
    if (empty) empty.remove();
    const item = document.createElement("li");
    item.className = "turn";
    const [userBox] = message("user", prompt);
    const [modelBox, answer] = message("assistant", "");
    item.append(userBox, modelBox);
    turns.append(item);
    let done = null;
    let broken = null;
    try {
      done = await readStream(response, form, item, answer, status);
    } catch (e) {
      broken = e; // the network failed mid-answer: read on below, the form is given back
    }
    // The page now holds a conversation: skipping its passage would abandon it, so the link goes.
    const skip = document.querySelector(".skip-context");
    if (skip) skip.remove();
    if (judgeButton) judgeButton.disabled = false;
    if (!done) {
      if (label) label.textContent = labelBefore; // the message may be sent again
      box.disabled = false;
      giveBack(form, { button, status, box, item, modelBox }, prompt, broken);
      return;
    }
    answer.textContent = done.answer; // the stored answer is the record
    item.dataset.status = done.status;
    if (done.status === "failed" || done.finish_reason === "error" || done.finish_reason === "timeout") {
      const warn = document.createElement("p");
      warn.className = "warning";
      warn.textContent =
        "The answer broke off" + (done.error ? ": " + done.error : "") + ". What came is kept.";
      modelBox.append(warn);
    } else if (done.finish_reason === "cut_short") {
      // A message sent again after a break: the stored answer is what came before the page left.
      const warn = document.createElement("p");
      warn.className = "warning";
      warn.textContent = "The answer was cut short: the page was left before it finished. What came is kept.";
      modelBox.append(warn);
    }
    const count = Number(form.dataset.turns) + 1;
    form.dataset.turns = String(count);
    hiddenField(form, "client_token", newToken());
    status.textContent = "";
    const rubric = document.getElementById("rubric");
    if (rubric && done.status === "answered") rubric.hidden = false;
    // The judgement covers the answers shown: the server refuses one from a page that shows fewer.
    const judgeForm = document.getElementById("judge-form");
    if (judgeForm) {
      const shown = turns.querySelectorAll('li.turn[data-status="answered"]').length;
      hiddenField(judgeForm, "answered_turns", String(shown));
    }
    if (count >= max) {
      form.hidden = true;
      const note = document.createElement("p");
      note.className = "muted";
      note.textContent = "This conversation has its " + form.dataset.maxTurns + " messages. Judge the answers below.";
      form.after(note);
    } else {
      if (label) label.textContent = "(" + (count + 1) + " of " + max + ")";
      button.disabled = false;
      box.focus();
    }
  }

  if (typeof document !== "undefined") {
    // A rating slider says its value beside it as it moves. One never touched is sent with no name, so
    // no score: its 50 would be a rating nobody chose, and the server asks for one instead. A click or a
    // key on it counts as touching it (a deliberate 50).
    const sliders = document.querySelectorAll ? document.querySelectorAll("input[type=range][data-output]") : [];
    for (const slider of sliders) {
      const output = document.getElementById(slider.dataset.output);
      const touch = () => {
        if (slider.dataset.name) slider.name = slider.dataset.name;
        slider.classList.remove("untouched");
        if (output) output.textContent = slider.value;
      };
      if (slider.hasAttribute("data-untouched")) {
        slider.dataset.name = slider.name;
        slider.removeAttribute("name");
        slider.classList.add("untouched");
        if (output) output.textContent = "not rated yet";
      }
      for (const type of ["input", "pointerdown", "keydown"]) slider.addEventListener(type, touch);
    }
    const form = document.getElementById("send-form");
    if (form && window.fetch && window.ReadableStream && window.TextDecoder) {
      form.addEventListener("submit", (event) => send(form, event));
    }
  }
  if (typeof module !== "undefined") module.exports = { parseEvents };
})();

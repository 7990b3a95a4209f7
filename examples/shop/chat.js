// The chat widget of the demo shop, loaded in an iframe (<iframe id="chat" src="/chat.html">) by every page.
// Messages are elements marked data-chat-role="user" | "agent"; once the agent has answered, the root
// element carries data-session-id (the chat's random id, which also names the agent's tool calls under
// /terrarium/sessions/<id>/history). The id is kept in sessionStorage, so moving between pages keeps the
// conversation: the widget reloads it from the server. "New chat" ends the old one on the server.

const SESSION_KEY = "terrarium-shop-chat-session";

const root = document.getElementById("chat-root");
const log = document.getElementById("chat-log");
const form = document.getElementById("chat-form");
const input = document.getElementById("chat-input");
const send = document.getElementById("chat-send");
const typing = document.getElementById("chat-typing");
const errorLine = document.getElementById("chat-error");
const mode = document.getElementById("chat-mode");
const reset = document.getElementById("chat-reset");

let sessionId = null;
let waiting = false;

function storedSession() {
  try {
    return sessionStorage.getItem(SESSION_KEY);
  } catch {
    return null;
  }
}

function remember(id) {
  sessionId = id;
  try {
    if (id) sessionStorage.setItem(SESSION_KEY, id);
    else sessionStorage.removeItem(SESSION_KEY);
  } catch {
    // storage may be off: the conversation then lasts as long as the page
  }
  if (id) root.setAttribute("data-session-id", id);
  else root.removeAttribute("data-session-id");
}

function addMessage(role, text) {
  const element = document.createElement("div");
  element.className = `chat-message chat-${role}`;
  element.setAttribute("data-chat-role", role);
  element.textContent = text;
  log.appendChild(element);
  log.scrollTop = log.scrollHeight;
  return element;
}

function showError(text) {
  errorLine.textContent = text;
  errorLine.hidden = !text;
}

function setWaiting(on) {
  waiting = on;
  typing.hidden = !on;
  send.disabled = on;
  root.setAttribute("aria-busy", on ? "true" : "false");
}

async function post(message) {
  const body = sessionId ? { sessionId, message } : { message };
  const response = await fetch("/api/chat", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  return { status: response.status, data };
}

async function sendMessage(text) {
  const message = text.trim();
  if (!message || waiting) return;
  showError("");
  addMessage("user", message);
  setWaiting(true);
  try {
    let answer = await post(message);
    if (answer.status === 404 && sessionId) {
      // The server forgot this conversation (restarted): start a new one with the same message.
      remember(null);
      answer = await post(message);
    }
    if (answer.status !== 200) {
      // A failed turn still belongs to its conversation: keep it, so the next message goes on with it.
      if (typeof answer.data?.sessionId === "string") remember(answer.data.sessionId);
      showError(answer.data?.error?.message ?? `The assistant is unavailable (HTTP ${answer.status}).`);
      return;
    }
    remember(answer.data.sessionId);
    addMessage("agent", answer.data.reply);
  } catch {
    showError("The assistant could not be reached. Please try again.");
  } finally {
    setWaiting(false);
    input.focus();
  }
}

async function restore() {
  const id = storedSession();
  if (!id) return;
  try {
    const response = await fetch(`/api/chat/${encodeURIComponent(id)}`);
    if (response.status !== 200) {
      remember(null);
      return;
    }
    const data = await response.json();
    for (const message of data.messages) addMessage(message.role, message.text);
    remember(data.sessionId);
  } catch {
    // offline: start afresh
  }
}

async function showMode() {
  try {
    const info = await (await fetch("/api/info")).json();
    mode.textContent = info.agent === "scripted" ? "scripted answers" : `agent: ${info.model}`;
  } catch {
    mode.textContent = "";
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  if (waiting) return;
  const text = input.value;
  if (!text.trim()) return;
  input.value = "";
  void sendMessage(text);
});

reset.addEventListener("click", () => {
  // Ending the conversation on the server frees it at once (else it goes when it has been idle long enough).
  if (sessionId)
    void fetch(`/api/chat/${encodeURIComponent(sessionId)}`, { method: "DELETE" }).catch(() => {});
  remember(null);
  for (const element of [...log.querySelectorAll("[data-chat-role]")]) element.remove();
  showError("");
  input.focus();
});

// The shop's pages (same origin only) can send a message for the customer, e.g. from the returns form.
window.addEventListener("message", (event) => {
  if (event.origin !== window.location.origin) return;
  const data = event.data;
  if (data && data.type === "shop:chat-send" && typeof data.text === "string") void sendMessage(data.text);
});

void showMode();
void restore();

import { SEMANTIC_ID_ATTRIBUTE } from "./types.js";

/**
 * The script terrarium runs inside every frame of a page. It is plain JavaScript in a string (the project
 * compiles without the DOM library, and a string survives any transpiler untouched); the session installs
 * it in every document before the page's own scripts (`addInitScript`) and again on demand, and calls it
 * through `globalThis.__terrariumUi`. Installing twice is harmless: a document keeps its first copy.
 *
 * What it does, per document:
 * - `observe()`: walks the flat tree (shadow roots entered — open ones, and closed ones too, since the
 *   wrapped `attachShadow` keeps them —, slots followed, iframes left to the
 *   session, which evaluates this script in each frame) and returns the visible elements a user can act
 *   on, each classified into exactly one kind, plus headings and short text blocks in document order.
 *   Each element carries the semantic id it already has (read from the one attribute terrarium writes)
 *   and a slug base for a new one; the session picks new ids over the whole page and writes them back
 *   with `assign()`.
 * - a MutationObserver on the document and on every shadow root (open or closed: `attachShadow` is
 *   wrapped so that none is missed) records when the DOM last changed, for the session's settle.
 * - `probe(id)`, `scroll(...)`, `readChat(...)`: what actions and the chat reader need.
 *
 * Ids stay: an element whose attribute terrarium wrote keeps it (a WeakMap remembers which element got
 * which id, so a clone of a named element, which copies the attribute, is told apart and gets its own).
 */
const SCRIPT_VERSION = 1;

const BODY = String.raw`
(function () {
  var ATTR = __ATTR__;
  var VERSION = __VERSION__;
  var g = globalThis;
  if (g.__terrariumUi && g.__terrariumUi.version === VERSION) return g.__terrariumUi;
  if (typeof document === "undefined") return null;

  var state = {
    ids: new WeakMap(),
    owners: new Map(),
    pending: [],
    closedRoots: new WeakMap(),
    lastMutation: Date.now(),
    token: Math.random().toString(36).slice(2) + Date.now().toString(36),
  };

  var observer = new MutationObserver(function (records) {
    for (var i = 0; i < records.length; i++) {
      var r = records[i];
      if (!(r.type === "attributes" && r.attributeName === ATTR)) {
        state.lastMutation = Date.now();
        return;
      }
    }
  });
  var watched = new WeakSet();
  function watch(root) {
    if (!root || watched.has(root)) return;
    watched.add(root);
    try {
      observer.observe(root, { subtree: true, childList: true, attributes: true, characterData: true });
    } catch (e) {}
  }
  watch(document);
  try {
    var originalAttach = Element.prototype.attachShadow;
    if (originalAttach && !originalAttach.__terrarium) {
      var wrapped = function attachShadow(init) {
        var root = originalAttach.call(this, init);
        if (init && init.mode === "closed") state.closedRoots.set(this, root);
        watch(root);
        state.lastMutation = Date.now();
        return root;
      };
      wrapped.__terrarium = true;
      Element.prototype.attachShadow = wrapped;
    }
  } catch (e) {}

  var SKIP = { script: 1, style: 1, noscript: 1, template: 1, head: 1, meta: 1, link: 1, title: 1, base: 1, iframe: 1, frame: 1, object: 1, embed: 1 };
  var BUTTON_INPUTS = { button: 1, submit: 1, reset: 1, image: 1, checkbox: 1, radio: 1, file: 1, color: 1 };
  var CLICK_ROLES = { button: 1, link: 1, tab: 1, menuitem: 1, menuitemcheckbox: 1, menuitemradio: 1, checkbox: 1, radio: 1, "switch": 1, option: 1, treeitem: 1 };
  var HEADINGS = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 };
  var LABEL_MAX = 80;
  var TEXT_MAX = 300;
  var VALUE_MAX = 200;
  var OPTIONS_MAX = 50;

  function clean(text, max) {
    var t = String(text == null ? "" : text).replace(/\s+/g, " ").trim();
    if (max && t.length > max) t = t.slice(0, max - 1) + "…";
    return t;
  }

  /** The parent in the composed tree: the parent element, or the shadow host above a shadow root. */
  function parentOf(el) {
    if (el.parentElement) return el.parentElement;
    var root = el.getRootNode && el.getRootNode();
    return root && root.host ? root.host : null;
  }

  function styleOf(el) {
    try {
      return getComputedStyle(el);
    } catch (e) {
      return null;
    }
  }

  function hasBox(el) {
    var r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  }

  /** Visible to a person: rendered, not visibility:hidden, a box of non-zero size, not aria-hidden. */
  function isVisible(el) {
    if (!el.isConnected) return false;
    if (typeof el.checkVisibility === "function" && !el.checkVisibility({ checkVisibilityCSS: true })) return false;
    var s = styleOf(el);
    if (!s || s.display === "none" || s.visibility === "hidden" || s.visibility === "collapse") return false;
    if (!hasBox(el)) return false;
    for (var n = el; n; n = parentOf(n)) {
      if (n.getAttribute && (n.getAttribute("aria-hidden") === "true" || n.hasAttribute("inert"))) return false;
    }
    return true;
  }

  function inputType(el) {
    return String(el.getAttribute("type") || "text").toLowerCase();
  }

  function roleOf(el) {
    var role = el.getAttribute("role");
    return role ? role.trim().split(/\s+/)[0].toLowerCase() : "";
  }

  /** One kind per element, or null: inputs and selects first, then everything that reacts to a click. */
  function kindOf(el, s) {
    var tag = el.localName;
    if (tag === "input") {
      var type = inputType(el);
      if (type === "hidden") return null;
      return BUTTON_INPUTS[type] ? "clickable" : "input";
    }
    if (tag === "textarea") return "input";
    if (tag === "select") return "select";
    if (el.isContentEditable) {
      var p = parentOf(el);
      return p && p.isContentEditable ? null : "input";
    }
    if (tag === "body" || tag === "html") return null;
    if (tag === "button" || tag === "summary") return "clickable";
    if ((tag === "a" || tag === "area") && el.hasAttribute("href")) return "clickable";
    if (CLICK_ROLES[roleOf(el)]) return "clickable";
    if (el.hasAttribute("onclick")) return "clickable";
    // A pointer cursor alone marks a clickable, unless it is a container of controls (a clickable card
    // around links and buttons): then its controls are the targets and its text stays readable.
    if (s && s.cursor === "pointer" && !el.querySelector("a[href], button, input, select, textarea")) {
      var parent = parentOf(el);
      var ps = parent ? styleOf(parent) : null;
      if (!ps || ps.cursor !== "pointer") return "clickable";
    }
    return null;
  }

  function isDisabled(el) {
    try {
      if (el.matches(":disabled")) return true;
    } catch (e) {}
    for (var n = el; n; n = parentOf(n)) {
      if (n.getAttribute && n.getAttribute("aria-disabled") === "true") return true;
    }
    return false;
  }

  function textById(el, ids) {
    var root = el.getRootNode();
    var parts = [];
    String(ids).split(/\s+/).forEach(function (id) {
      var n = id && root.getElementById ? root.getElementById(id) : null;
      if (n) parts.push(n.textContent);
    });
    return clean(parts.join(" "));
  }

  function visibleText(el) {
    var t = typeof el.innerText === "string" ? el.innerText : el.textContent;
    return clean(t);
  }

  function labelOf(el, kind) {
    var tag = el.localName;
    var aria = clean(el.getAttribute("aria-label"));
    if (aria) return aria;
    var by = el.getAttribute("aria-labelledby");
    if (by) {
      var t = textById(el, by);
      if (t) return t;
    }
    if (tag === "input" && BUTTON_INPUTS[inputType(el)] && inputType(el) !== "checkbox" && inputType(el) !== "radio") {
      var v = clean(el.value || el.getAttribute("alt") || el.getAttribute("title"));
      if (v) return v;
    }
    if (kind !== "clickable" || tag === "input") {
      if (el.labels && el.labels.length) {
        var l = clean(el.labels[0].innerText || el.labels[0].textContent);
        if (l) return l;
      }
      var wrap = el.closest && el.closest("label");
      if (wrap) {
        var w = clean(wrap.innerText || wrap.textContent);
        if (w) return w;
      }
      var attrs = ["placeholder", "aria-placeholder", "data-placeholder", "title", "name", "id"];
      for (var i = 0; i < attrs.length; i++) {
        var a = clean(el.getAttribute(attrs[i]));
        if (a) return a;
      }
      return "";
    }
    var text = visibleText(el);
    if (text) return text;
    var alt = el.querySelector && el.querySelector("img[alt], svg title, [aria-label]");
    if (alt) {
      var at = clean(alt.getAttribute("alt") || alt.getAttribute("aria-label") || alt.textContent);
      if (at) return at;
    }
    var rest = ["title", "name", "value", "id"];
    for (var j = 0; j < rest.length; j++) {
      var r = clean(el.getAttribute(rest[j]));
      if (r) return r;
    }
    return "";
  }

  /** The word a new id ends with, so that the id says what the element is. */
  function kindWord(el, kind) {
    var tag = el.localName;
    if (kind === "input") return "input";
    if (kind === "select") return "select";
    if (tag === "input") {
      var type = inputType(el);
      if (type === "checkbox" || type === "radio") return type;
      return "button";
    }
    var role = roleOf(el);
    if (role === "tab" || role === "checkbox" || role === "radio" || role === "switch" || role === "option") return role;
    if (role === "menuitem" || role === "menuitemcheckbox" || role === "menuitemradio") return "item";
    if (tag === "a" || tag === "area" || role === "link") return "link";
    return "button";
  }

  function slug(text) {
    var words = String(text || "")
      .toLowerCase()
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean)
      .slice(0, 4);
    var s = words.join("-");
    if (s.length > 40) s = s.slice(0, 40).replace(/-[^-]*$/, "") || s.slice(0, 40);
    return s;
  }

  function baseOf(el, kind, label) {
    var word = kindWord(el, kind);
    var s = slug(label) || slug(el.getAttribute("name")) || slug(el.id) || slug(el.localName);
    if (s === word || s.slice(-word.length - 1) === "-" + word) return s;
    return s + "-" + word;
  }

  function hostName(host) {
    var n = host.localName;
    if (host.id) n += "#" + host.id;
    return n;
  }

  /** Shadow hops from the document down to the element: "acme-helper>shadow" (joined by " > "). */
  function shadowPath(el) {
    var hops = [];
    var root = el.getRootNode();
    while (root && root.host) {
      hops.unshift(hostName(root.host) + ">shadow");
      root = root.host.getRootNode();
    }
    return hops.join(" > ");
  }

  function valueOf(el, kind) {
    if (kind === "select") {
      var opt = el.selectedOptions && el.selectedOptions[0];
      return opt ? clean(opt.label || opt.text, VALUE_MAX) : "";
    }
    if (kind !== "input") return undefined;
    if (el.localName === "input" || el.localName === "textarea") {
      if (el.localName === "input" && inputType(el) === "password") return el.value ? "••••" : "";
      return clean(el.value, VALUE_MAX);
    }
    return clean(el.innerText, VALUE_MAX);
  }

  function existingId(el) {
    var attr = el.getAttribute(ATTR);
    if (!attr) return null;
    if (state.ids.get(el) === attr) return attr;
    var ref = state.owners.get(attr);
    var owner = ref && ref.deref();
    if (!owner || owner === el || !owner.isConnected) return attr;
    return null;
  }

  function describe(el, kind) {
    var label = clean(labelOf(el, kind), LABEL_MAX);
    var item = {
      existingId: existingId(el),
      base: baseOf(el, kind, label),
      kind: kind,
      tag: el.localName,
      label: label,
      shadow: shadowPath(el),
    };
    var role = roleOf(el) || (el.localName === "input" && inputType(el) !== "text" ? inputType(el) : "");
    if (role) item.role = role;
    var value = valueOf(el, kind);
    if (value !== undefined) item.value = value;
    if (kind === "select") {
      item.options = Array.prototype.slice.call(el.options, 0, OPTIONS_MAX).map(function (o) {
        return clean(o.label || o.text, 60);
      });
    }
    var type = el.localName === "input" ? inputType(el) : "";
    if (type === "checkbox" || type === "radio") item.checked = !!el.checked;
    else if (el.hasAttribute("aria-checked")) item.checked = el.getAttribute("aria-checked") === "true";
    if (isDisabled(el)) item.disabled = true;
    return item;
  }

  /** An element's shadow root: open ones, and closed ones created after this script was installed. */
  function shadowOf(el) {
    return el.shadowRoot || (el.nodeType === 1 && state.closedRoots.get(el)) || null;
  }

  /** Children in the flat tree: a host's shadow root, a slot's assigned nodes (or its fallback). */
  function flatChildren(node) {
    var shadow = shadowOf(node);
    if (shadow) {
      watch(shadow);
      return shadow.childNodes;
    }
    if (node.localName === "slot" && typeof node.assignedNodes === "function") {
      var assigned = node.assignedNodes({ flatten: true });
      if (assigned.length) return assigned;
    }
    return node.childNodes;
  }

  function isInline(s) {
    return !s || s.display.indexOf("inline") === 0 || s.display === "contents";
  }

  /** Text of a block: its text nodes and inline descendants, stopping at nested blocks. */
  function inlineText(node, out) {
    var kids = flatChildren(node);
    for (var i = 0; i < kids.length; i++) {
      var k = kids[i];
      if (k.nodeType === 3) {
        out.all.push(k.data);
        if (!out.inControl) out.own.push(k.data);
        continue;
      }
      if (k.nodeType !== 1 || SKIP[k.localName] || k.localName === "svg") continue;
      var s = styleOf(k);
      if (!s || s.display === "none" || s.visibility === "hidden") continue;
      if (k.getAttribute("aria-hidden") === "true") continue;
      if (!isInline(s)) continue;
      var control = kindOf(k, s) !== null || k.localName === "label";
      if (control && (k.localName === "input" || k.localName === "select" || k.localName === "textarea")) continue;
      var was = out.inControl;
      if (control) out.inControl = true;
      inlineText(k, out);
      out.inControl = was;
    }
  }

  /**
   * For elements whose new id would repeat within this document ("View options" on every product), the
   * heading of the smallest ancestor that holds one of them only: "action-camera" (slug, 3 words).
   */
  function addContexts(nodes, elements) {
    var counts = {};
    elements.forEach(function (e) {
      counts[e.base] = (counts[e.base] || 0) + 1;
    });
    elements.forEach(function (e, i) {
      if (counts[e.base] < 2 || e.existingId) return;
      var el = nodes[i];
      var a = parentOf(el);
      for (var depth = 0; a && depth < 8; depth++, a = parentOf(a)) {
        var same = 0;
        for (var j = 0; j < nodes.length && same < 2; j++) {
          if (elements[j].base === e.base && (a === nodes[j] || a.contains(nodes[j]))) same++;
        }
        if (same > 1) return;
        var root = shadowOf(a) || a;
        var heading = root.querySelector && root.querySelector("h1, h2, h3, h4, h5, h6, [role=heading], legend, caption");
        if (heading && !el.contains(heading)) {
          var words = slug(heading.textContent).split("-").slice(0, 3).join("-");
          if (words) e.context = words;
          return;
        }
      }
    });
  }

  function observe(options) {
    var roleAttribute = (options && options.roleAttribute) || "data-chat-role";
    var elements = [];
    var nodes = [];
    var lines = [];
    var start = document.body || document.documentElement;

    function visit(el, insideControl) {
      if (el.nodeType !== 1) return;
      var tag = el.localName;
      if (SKIP[tag] || tag === "svg") return;
      if (el.getAttribute("aria-hidden") === "true" || el.hasAttribute("inert")) return;
      var s = styleOf(el);
      if (!s || s.display === "none") return;
      var shown = s.visibility !== "hidden" && s.visibility !== "collapse" && s.display !== "contents" && hasBox(el);
      var kind = kindOf(el, s);
      if (kind && shown) {
        nodes.push(el);
        elements.push(describe(el, kind));
        lines.push({ k: "e", i: elements.length - 1 });
        if (kind === "input" || kind === "select") return;
      } else if (shown && !insideControl && !isInline(s)) {
        var out = { all: [], own: [], inControl: false };
        inlineText(el, out);
        var own = clean(out.own.join(""));
        if (/[\p{L}\p{N}]/u.test(own)) {
          var level = HEADINGS[tag] || (roleOf(el) === "heading" ? Number(el.getAttribute("aria-level")) || 2 : 0);
          var text = clean(out.all.join(""), TEXT_MAX);
          if (level) lines.push({ k: "h", level: level, text: text });
          else {
            var speaker = chatRole(el, roleAttribute);
            lines.push({ k: "t", text: speaker ? "(" + speaker + ") " + text : text });
          }
        }
      }
      var inside = insideControl || (kind !== null && shown);
      var kids = flatChildren(el);
      for (var i = 0; i < kids.length; i++) visit(kids[i], inside);
    }

    if (start) visit(start, false);
    addContexts(nodes, elements);
    state.pending = nodes;
    return {
      url: location.href,
      title: document.title || "",
      token: state.token,
      elements: elements,
      lines: lines,
    };
  }

  /** Writes the ids the session chose: pairs of [index into the last observe, id]. */
  function assign(pairs) {
    for (var i = 0; i < pairs.length; i++) {
      var el = state.pending[pairs[i][0]];
      var id = pairs[i][1];
      if (!el) continue;
      el.setAttribute(ATTR, id);
      state.ids.set(el, id);
      state.owners.set(id, new WeakRef(el));
    }
    for (var j = 0; j < state.pending.length; j++) {
      var n = state.pending[j];
      var a = n.getAttribute(ATTR);
      if (a && state.ids.get(n) !== a) {
        state.ids.set(n, a);
        state.owners.set(a, new WeakRef(n));
      }
    }
    state.pending = [];
    return true;
  }

  /** Every element matching a selector in the document and in every shadow root we know, in tree order. */
  function deepQuery(selector) {
    var found = [];
    function walk(root) {
      var all = root.querySelectorAll("*");
      for (var i = 0; i < all.length; i++) {
        var el = all[i];
        if (el.matches(selector)) found.push(el);
        var shadow = shadowOf(el);
        if (shadow) walk(shadow);
      }
    }
    walk(document);
    return found;
  }

  function byId(id) {
    var sel = "[" + ATTR + '="' + String(id).replace(/["\\]/g, "\\$&") + '"]';
    return deepQuery(sel);
  }

  /** The first visible element with this id (what actions act on), or null. */
  function element(id) {
    var all = byId(id);
    for (var i = 0; i < all.length; i++) if (isVisible(all[i])) return all[i];
    return null;
  }

  /** What an action needs to know about its target in this document. */
  function probe(id) {
    var all = byId(id);
    if (!all.length) return { found: 0 };
    var el = null;
    for (var i = 0; i < all.length; i++) {
      if (isVisible(all[i])) {
        el = all[i];
        break;
      }
    }
    if (!el) return { found: all.length, visible: false, tag: all[0].localName };
    var s = styleOf(el);
    var kind = kindOf(el, s);
    var result = { found: all.length, visible: true, tag: el.localName, kind: kind, disabled: isDisabled(el) };
    if (el.localName === "select") {
      result.options = Array.prototype.map.call(el.options, function (o) {
        return { value: o.value, label: clean(o.label || o.text), disabled: !!o.disabled };
      });
      result.multiple = !!el.multiple;
    }
    return result;
  }

  function scrollable(el) {
    var s = styleOf(el);
    if (!s) return false;
    var oy = s.overflowY;
    return (oy === "auto" || oy === "scroll" || oy === "overlay") && el.scrollHeight > el.clientHeight + 1;
  }

  /** Scrolls the element (or its nearest scrollable ancestor, else the window) by dy pixels. */
  function scroll(id, dy) {
    var target = null;
    if (id) {
      var all = byId(id).filter(isVisible);
      if (!all.length) return { ok: false };
      for (var n = all[0]; n; n = parentOf(n)) {
        if (n.nodeType === 1 && scrollable(n)) {
          target = n;
          break;
        }
      }
    }
    if (target) {
      var before = target.scrollTop;
      target.scrollBy({ top: dy, behavior: "instant" });
      return { ok: true, moved: target.scrollTop - before, where: "element" };
    }
    var y = window.scrollY;
    window.scrollBy({ top: dy, behavior: "instant" });
    return { ok: true, moved: window.scrollY - y, where: "window" };
  }

  function roleName(raw) {
    var r = String(raw || "").trim().toLowerCase();
    if (r === "user" || r === "human" || r === "customer") return "user";
    if (r === "agent" || r === "assistant" || r === "bot") return "agent";
    return "";
  }

  /** Who wrote a chat message this block is part of (the nearest element with the role attribute). */
  function chatRole(el, roleAttribute) {
    var holder = null;
    try {
      holder = el.closest("[" + roleAttribute + "]");
    } catch (e) {}
    return holder ? roleName(holder.getAttribute(roleAttribute)) : "";
  }

  function readChat(message, roleAttribute, sessionAttribute) {
    var messages = [];
    var list = [];
    try {
      list = deepQuery(message);
    } catch (e) {
      return { error: "invalid message selector " + JSON.stringify(message) };
    }
    for (var i = 0; i < list.length; i++) {
      var el = list[i];
      var role = roleName(el.getAttribute(roleAttribute));
      if (!role) continue;
      var content = typeof el.innerText === "string" && isVisible(el) ? el.innerText : el.textContent;
      messages.push({ role: role, content: String(content || "").trim() });
    }
    var sessionId;
    if (sessionAttribute) {
      var holders = deepQuery("[" + sessionAttribute + "]");
      if (holders.length) sessionId = holders[0].getAttribute(sessionAttribute);
    }
    return { messages: messages, sessionId: sessionId };
  }

  function lastMutation() {
    return state.lastMutation;
  }

  var api = {
    version: VERSION,
    observe: observe,
    assign: assign,
    probe: probe,
    element: element,
    scroll: scroll,
    readChat: readChat,
    lastMutation: lastMutation,
    token: function () {
      return state.token;
    },
  };
  Object.defineProperty(g, "__terrariumUi", { value: api, configurable: true, enumerable: false, writable: true });
  return api;
})()
`;

/** The install script: evaluates to the `__terrariumUi` object of the document (installed if absent). */
export const PAGE_SCRIPT = BODY.replace("__ATTR__", JSON.stringify(SEMANTIC_ID_ATTRIBUTE)).replace(
  "__VERSION__",
  String(SCRIPT_VERSION),
);

/** An expression that calls `method(...args)` on the installed script (installing it first if needed). */
export function pageCall(method: string, ...args: unknown[]): string {
  const list = args.map((arg) => (arg === undefined ? "undefined" : JSON.stringify(arg))).join(", ");
  return `(${PAGE_SCRIPT.trim()}).${method}(${list})`;
}

// The demo shop's pages: the product list, the order page and the returns form. Data comes from the shop's
// JSON API (tau2-retail's store); every text is set with textContent, never parsed as HTML.

const SESSION_KEY = "terrarium-shop-chat-session";

function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  for (const child of children)
    element.append(typeof child === "string" ? document.createTextNode(child) : child);
  return element;
}

const money = (value) => `$${Number(value).toFixed(2)}`;
const options = (item) => Object.values(item.options ?? {}).join(", ");

function chatSession() {
  try {
    return sessionStorage.getItem(SESSION_KEY);
  } catch {
    return null;
  }
}

function normaliseOrderId(text) {
  const match = /^\s*#?\s*(W\d{7})\s*$/i.exec(text);
  return match ? `#${match[1].toUpperCase()}` : null;
}

/** The order as the customer's chat session sees it (so a return made in the chat shows), else as stored. */
async function fetchOrder(orderId) {
  const session = chatSession();
  const query = session ? `?session=${encodeURIComponent(session)}` : "";
  const response = await fetch(`/api/orders/${encodeURIComponent(orderId)}${query}`);
  const data = await response.json().catch(() => ({}));
  if (response.status !== 200) throw new Error(data?.error?.message ?? `HTTP ${response.status}`);
  return data;
}

// --- products ------------------------------------------------------------------------------------------

async function productsPage() {
  const status = document.getElementById("products-status");
  const list = document.getElementById("products");
  try {
    const { products } = await (await fetch("/api/products")).json();
    for (const product of products) {
      const details = el("div", { class: "variants", hidden: "" });
      const button = el("button", { type: "button", "aria-expanded": "false" }, "View options");
      button.addEventListener("click", () => toggleVariants(product, button, details));
      list.append(
        el(
          "article",
          { class: "card product", "data-product-id": product.product_id },
          el("h2", {}, product.name),
          el(
            "p",
            { class: "price" },
            product.min_price === product.max_price
              ? money(product.min_price)
              : `${money(product.min_price)} – ${money(product.max_price)}`,
          ),
          el("p", { class: "stock" }, `${product.available} of ${product.variants} options in stock`),
          button,
          details,
        ),
      );
    }
    status.textContent = `${products.length} products`;
  } catch {
    status.textContent = "The products could not be loaded.";
  }
}

async function toggleVariants(product, button, details) {
  const open = button.getAttribute("aria-expanded") === "true";
  button.setAttribute("aria-expanded", open ? "false" : "true");
  button.textContent = open ? "View options" : "Hide options";
  details.hidden = open;
  if (open || details.childElementCount > 0) return;
  try {
    const data = await (await fetch(`/api/products/${encodeURIComponent(product.product_id)}`)).json();
    const rows = data.variants.map((variant) =>
      el("li", {}, `${options(variant)} — ${money(variant.price)}${variant.available ? "" : " (sold out)"}`),
    );
    details.append(el("ul", {}, ...rows));
  } catch {
    details.append(el("p", {}, "The options could not be loaded."));
  }
}

// --- order status --------------------------------------------------------------------------------------

function renderOrder(container, order) {
  container.replaceChildren(
    el("h2", {}, `Order ${order.order_id}`),
    el(
      "p",
      {},
      "Status: ",
      el("strong", { class: "order-status", "data-status": order.status }, order.status),
    ),
    el(
      "table",
      { class: "items" },
      el("thead", {}, el("tr", {}, el("th", {}, "Item"), el("th", {}, "Options"), el("th", {}, "Price"))),
      el(
        "tbody",
        {},
        ...order.items.map((item) =>
          el(
            "tr",
            { "data-item-id": item.item_id },
            el("td", {}, item.name),
            el("td", {}, options(item)),
            el("td", {}, money(item.price)),
          ),
        ),
      ),
    ),
    el("p", {}, `Paid: ${money(order.paid)} · Ships to ${order.ship_to.city}, ${order.ship_to.state}`),
    ...(order.tracking.length > 0 ? [el("p", {}, `Tracking: ${order.tracking.join(", ")}`)] : []),
    ...(order.return_items
      ? [el("p", {}, `Return requested for items ${order.return_items.join(", ")}`)]
      : []),
    ...(order.cancel_reason ? [el("p", {}, `Cancelled: ${order.cancel_reason}`)] : []),
    el("p", { class: "hint" }, "Need help with this order? Ask our assistant in the chat."),
  );
  container.hidden = false;
}

async function lookUpOrder(text) {
  const status = document.getElementById("order-status");
  const result = document.getElementById("order-result");
  const orderId = normaliseOrderId(text);
  result.hidden = true;
  if (!orderId) {
    status.textContent = "An order number looks like #W1234567.";
    return;
  }
  status.textContent = "Looking up the order…";
  try {
    renderOrder(result, await fetchOrder(orderId));
    status.textContent = "";
  } catch (error) {
    status.textContent = `We could not find that order (${error.message}).`;
  }
}

function orderPage() {
  const form = document.getElementById("order-form");
  const input = document.getElementById("order-id");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void lookUpOrder(input.value);
  });
  const fromUrl = new URLSearchParams(window.location.search).get("id");
  if (fromUrl) {
    input.value = fromUrl;
    void lookUpOrder(fromUrl);
  }
}

// --- returns -------------------------------------------------------------------------------------------

function returnsPage() {
  const form = document.getElementById("return-form");
  const orderInput = document.getElementById("return-order");
  const email = document.getElementById("return-email");
  const itemSelect = document.getElementById("return-item");
  const reason = document.getElementById("return-reason");
  const refund = document.getElementById("return-refund");
  const notes = document.getElementById("return-notes");
  const status = document.getElementById("return-status");
  let loaded = null;

  async function loadItems() {
    const orderId = normaliseOrderId(orderInput.value);
    if (!orderId) {
      status.textContent = "Enter an order number such as #W1234567 first.";
      return;
    }
    try {
      const order = await fetchOrder(orderId);
      loaded = order;
      itemSelect.replaceChildren(
        el("option", { value: "" }, "Choose an item"),
        ...order.items.map((item) =>
          el("option", { value: item.item_id }, `${item.name} (${options(item)}) — ${money(item.price)}`),
        ),
        el("option", { value: "all" }, "All items of the order"),
      );
      status.textContent =
        order.status === "delivered"
          ? `Order ${order.order_id} is delivered: choose what to return.`
          : `Order ${order.order_id} is ${order.status}; only delivered orders can be returned.`;
    } catch (error) {
      loaded = null;
      status.textContent = `We could not find that order (${error.message}).`;
    }
  }

  document.getElementById("return-load").addEventListener("click", () => void loadItems());
  orderInput.addEventListener("change", () => void loadItems());

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const orderId = normaliseOrderId(orderInput.value);
    const problems = [];
    if (!orderId) problems.push("an order number such as #W1234567");
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email.value.trim())) problems.push("the email on your account");
    if (!itemSelect.value) problems.push("the item to return");
    if (!reason.value) problems.push("a reason");
    if (problems.length > 0) {
      status.textContent = `Please give ${problems.join(", ")}.`;
      return;
    }
    const item = loaded?.items.find((candidate) => candidate.item_id === itemSelect.value);
    const what =
      itemSelect.value === "all"
        ? "all items"
        : item
          ? `the ${item.name} (item ${item.item_id})`
          : `item ${itemSelect.value}`;
    const text =
      `I'd like to return ${what} from order ${orderId}. My email is ${email.value.trim()}. ` +
      `Reason: ${reason.value}. Please refund it to ${refund.value}.` +
      (notes.value.trim() ? ` Note: ${notes.value.trim()}` : "");
    const chat = document.getElementById("chat");
    chat.contentWindow.postMessage({ type: "shop:chat-send", text }, window.location.origin);
    status.textContent = "Your request was sent to our assistant: please confirm it in the chat.";
  });
}

const page = document.body.dataset.page;
if (page === "products") void productsPage();
else if (page === "order") orderPage();
else if (page === "returns") returnsPage();

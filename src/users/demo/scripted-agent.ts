import type { CallOutcome, Engine } from "../../sim/engine.js";

/**
 * The shop's agent when no model is configured: a small rule-based support agent. It is deterministic
 * (the same messages give the same replies and tool calls), yet every fact it states comes from a real
 * tau2-retail tool call made through the engine, so the calls are in the session's history like a
 * model agent's. It follows the retail policy's outline: identify the customer by email, check that the
 * order is theirs, say what will change, and act only after an explicit yes.
 */

interface OrderItem {
  name: string;
  item_id: string;
  price: number;
  options: Record<string, string>;
}

interface Order {
  order_id: string;
  user_id: string;
  status: string;
  items: OrderItem[];
  fulfillments?: Array<{ tracking_id: string[]; item_ids: string[] }>;
  payment_history: Array<{ transaction_type: string; amount: number; payment_method_id: string }>;
}

interface UserDetails {
  user_id: string;
  name: { first_name: string; last_name: string };
  payment_methods: Record<string, { source: string; id: string; brand?: string; last_four?: string }>;
  orders: string[];
}

type Intent = "return" | "cancel" | "status" | "orders" | "products" | "human" | "thanks" | "hello";

type Pending =
  | { kind: "return"; orderId: string; itemIds: string[]; paymentMethodId: string }
  | { kind: "cancel"; orderId: string; reason: "no longer needed" | "ordered by mistake" };

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/;
const ORDER_ID = /#?\s?\b(W\d{7})\b/i;
const ITEM_ID = /\b\d{10}\b/g;
const YES =
  /^\W*(y|yes|yeah|yep|sure|ok|okay|confirm|confirmed|i confirm|please (do|go ahead|proceed)|go ahead|proceed|do it|correct)\b/i;
const NO = /\b(n|no|nope|don't|do not|stop|never ?mind|not now|cancel that|wait)\b/i;

/** A short answer that starts by agreeing, and neither refuses nor asks something else. */
const isYes = (text: string) => text.length <= 120 && YES.test(text) && !NO.test(text) && !text.includes("?");
/** A short answer that refuses. */
const isNo = (text: string) => text.length <= 120 && NO.test(text) && !YES.test(text);

const INTENTS: Array<[Intent, RegExp]> = [
  ["human", /\b(human|real person|representative|supervisor|someone else)\b/i],
  ["cancel", /\bcancel/i],
  ["return", /\b(return|refund|send (it|them) back)/i],
  ["products", /\b(products?|catalog(ue)?|what do you sell|in stock|sell)\b/i],
  ["orders", /\b(my orders|orders do i have|list (my )?orders|order history)\b/i],
  ["status", /\b(status|where is|track|tracking|arriv|deliver|shipped|details?)\b/i],
  ["thanks", /\b(thanks|thank you|that's all|that is all|bye)\b/i],
  ["hello", /^(hi|hello|hey|good (morning|afternoon|evening))\b/i],
];

const money = (value: number) => `$${value.toFixed(2)}`;

/** The text of a tool's failure (tau2's guards answer with a sentence). */
function failureOf(outcome: CallOutcome): string {
  const observation = outcome.observation as { error?: unknown; message?: unknown } | string | null;
  if (typeof observation === "string") return observation;
  if (observation && typeof observation === "object") {
    if (typeof observation.error === "string") return observation.error;
    if (typeof observation.message === "string") return observation.message;
  }
  return outcome.errors[0]?.message ?? outcome.status;
}

/** One conversation's rule-based agent; it holds only this conversation's memory. */
export class ScriptedShopAgent {
  private email: string | undefined;
  private userId: string | undefined;
  private orderId: string | undefined;
  private wanted: Intent | undefined;
  private pending: Pending | undefined;
  /** The customer's messages since they said what they want (items named earlier still count). */
  private said: string[] = [];

  constructor(
    private readonly engine: Engine,
    readonly sessionId: string,
  ) {}

  async reply(message: string): Promise<string> {
    const text = message.trim();
    const intent = INTENTS.find(([, pattern]) => pattern.test(text))?.[0];

    if (this.pending) {
      if (isYes(text)) return this.perform(this.pending);
      if (isNo(text)) {
        this.pending = undefined;
        return "All right, I have not changed anything. Is there something else I can help with?";
      }
    }
    if (intent === "human") {
      await this.call("transfer_to_human_agents", {
        summary: `The customer asked for a person. Their last message: ${text.slice(0, 300)}`,
      });
      return "I have passed your conversation to a colleague; a person will continue with you shortly.";
    }

    const email = EMAIL.exec(text)?.[0];
    if (email && email.toLowerCase() !== this.email?.toLowerCase()) {
      const found = await this.call("find_user_id_by_email", { email });
      if (found.status !== "ok")
        return `I could not find an account with the email ${email}. Could you check it and send it again?`;
      this.email = email;
      this.userId = String(found.observation);
    }
    const mentionedOrder = ORDER_ID.exec(text)?.[1];
    if (mentionedOrder) {
      this.orderId = `#${mentionedOrder.toUpperCase()}`;
      this.pending = undefined;
    }
    if (intent && intent !== "thanks" && intent !== "hello" && intent !== this.wanted) {
      this.wanted = intent;
      this.said = [];
    }
    this.said = [...this.said, text].slice(-8);

    if (intent === "thanks") return "You're welcome! Have a good day.";
    if (intent === "products" && !mentionedOrder) return this.products();
    const goal = this.wanted ?? (mentionedOrder ? "status" : undefined);
    if (!goal) {
      if (email && this.userId)
        return "Thank you, I found your account. I can check an order, list your orders, start a return or cancel a pending order. What would you like to do?";
      return "Hello! I can check an order's status, help you return delivered items, cancel a pending order, or tell you about our products. To look at your orders, please give me the email on your account.";
    }
    if (goal === "products") return this.products();
    if (!this.userId)
      return "Happy to help. First, please give me the email address on your account so I can find you.";
    if (goal === "orders") return this.listOrders();
    if (!this.orderId)
      return "Which order is it about? The order id starts with #W, for example #W1234567 (you can also ask me to list your orders).";
    const order = await this.order(this.orderId);
    if (typeof order === "string") return order;
    if (goal === "status") return describeOrder(order);
    if (goal === "cancel") return this.proposeCancel(order, this.said.join("\n"));
    return this.proposeReturn(order, text);
  }

  private async call(name: string, args: Record<string, unknown>): Promise<CallOutcome> {
    return this.engine.call(this.sessionId, { name, arguments: args });
  }

  private async products(): Promise<string> {
    const outcome = await this.call("list_all_product_types", {});
    if (outcome.status !== "ok") return `I could not read the catalogue right now (${failureOf(outcome)}).`;
    const names = Object.keys(outcome.observation as Record<string, string>);
    return `We sell ${names.length} kinds of products, among them ${names.slice(0, 8).join(", ")}. The product list on our home page shows them all with their prices.`;
  }

  private async listOrders(): Promise<string> {
    const outcome = await this.call("get_user_details", { user_id: this.userId });
    if (outcome.status !== "ok") return `I could not read your account (${failureOf(outcome)}).`;
    const user = outcome.observation as UserDetails;
    this.wanted = undefined;
    return `You have ${user.orders.length} order(s): ${user.orders.join(", ")}. Which one would you like me to look at?`;
  }

  /** The order if it exists and belongs to the customer, otherwise what to tell them. */
  private async order(orderId: string): Promise<Order | string> {
    const outcome = await this.call("get_order_details", { order_id: orderId });
    if (outcome.status !== "ok") {
      this.orderId = undefined;
      return `I could not find the order ${orderId}. Could you check the order id?`;
    }
    const order = outcome.observation as Order;
    if (order.user_id !== this.userId) {
      this.orderId = undefined;
      return `The order ${orderId} is not on the account of ${this.email}, so I cannot discuss it. Could you check the order id?`;
    }
    return order;
  }

  private async proposeReturn(order: Order, text: string): Promise<string> {
    if (order.status !== "delivered")
      return `The order ${order.order_id} is ${order.status}; only delivered orders can be returned.${order.status === "pending" ? " A pending order can be cancelled instead, if you like." : ""}`;
    const items = chooseItems(order, text);
    if (items.length === 0) items.push(...chooseItems(order, this.said.join("\n")));
    if (items.length === 0)
      return `Which item(s) of ${order.order_id} would you like to return? It has ${order.items
        .map((item) => `${item.name} (${describeOptions(item)}, ${money(item.price)})`)
        .join("; ")}. You can also say "all of them".`;
    const method = await this.refundMethod(order, this.said.join("\n"));
    if (typeof method !== "object") return method;
    this.pending = {
      kind: "return",
      orderId: order.order_id,
      itemIds: items.map((item) => item.item_id),
      paymentMethodId: method.id,
    };
    const total = items.reduce((sum, item) => sum + item.price, 0);
    return `To confirm: return ${items.map((item) => `${item.name} (item ${item.item_id})`).join(", ")} from order ${order.order_id}, with ${money(total)} refunded to ${method.label}. Shall I go ahead? Please answer yes or no.`;
  }

  /** The original payment method, or a gift card of the customer when they ask for one. */
  private async refundMethod(order: Order, text: string): Promise<{ id: string; label: string } | string> {
    const original = order.payment_history[0]?.payment_method_id;
    const outcome = await this.call("get_user_details", { user_id: this.userId });
    if (outcome.status !== "ok") return `I could not read your account (${failureOf(outcome)}).`;
    const user = outcome.observation as UserDetails;
    const methods = Object.values(user.payment_methods);
    const giftCard = methods.find((method) => method.source === "gift_card");
    const chosen =
      /gift ?card/i.test(text) && giftCard ? giftCard : methods.find((method) => method.id === original);
    if (!chosen) return "I could not find the payment method of this order on your account.";
    const label =
      chosen.source === "credit_card"
        ? `your ${chosen.brand ?? "credit"} card ending in ${chosen.last_four ?? "?"}`
        : chosen.source === "gift_card"
          ? "your gift card"
          : "your PayPal account";
    return { id: chosen.id, label };
  }

  private proposeCancel(order: Order, text: string): string {
    if (order.status !== "pending")
      return `The order ${order.order_id} is ${order.status}; only pending orders can be cancelled.${order.status === "delivered" ? " Delivered items can be returned instead." : ""}`;
    const reason = /mistake|wrong|accident/i.test(text) ? "ordered by mistake" : "no longer needed";
    this.pending = { kind: "cancel", orderId: order.order_id, reason };
    return `To confirm: cancel order ${order.order_id} (${order.items.length} item(s)) because it was ${reason === "ordered by mistake" ? "ordered by mistake" : "no longer needed"}; the payment is refunded to where it came from. Shall I go ahead? Please answer yes or no.`;
  }

  private async perform(pending: Pending): Promise<string> {
    this.pending = undefined;
    this.wanted = undefined;
    this.said = [];
    if (pending.kind === "return") {
      const outcome = await this.call("return_delivered_order_items", {
        order_id: pending.orderId,
        item_ids: pending.itemIds,
        payment_method_id: pending.paymentMethodId,
      });
      if (outcome.status !== "ok") return `The return could not be requested: ${failureOf(outcome)}.`;
      return `Done: the return of ${pending.itemIds.length} item(s) from order ${pending.orderId} is requested. You will receive an email with the return label; the refund follows once the items arrive. Anything else?`;
    }
    const outcome = await this.call("cancel_pending_order", {
      order_id: pending.orderId,
      reason: pending.reason,
    });
    if (outcome.status !== "ok") return `The order could not be cancelled: ${failureOf(outcome)}.`;
    return `Done: order ${pending.orderId} is cancelled and the payment will be refunded. Anything else?`;
  }
}

/** Items the message names: by item id, by product name, or all of them. */
function chooseItems(order: Order, text: string): OrderItem[] {
  const lower = text.toLowerCase();
  if (/\b(all|everything|whole order|entire order)\b/.test(lower)) return order.items;
  const ids = new Set(text.match(ITEM_ID) ?? []);
  const byId = order.items.filter((item) => ids.has(item.item_id));
  if (byId.length > 0) return byId;
  const byName = order.items.filter((item) => {
    const name = item.name.toLowerCase();
    return lower.includes(name) || (name.endsWith("s") && lower.includes(name.slice(0, -1)));
  });
  if (byName.length > 0) return byName;
  return order.items.length === 1 ? order.items : [];
}

function describeOptions(item: OrderItem): string {
  return Object.values(item.options).join(", ");
}

function describeOrder(order: Order): string {
  const items = order.items.map((item) => `${item.name} (${describeOptions(item)})`).join("; ");
  const tracking = (order.fulfillments ?? []).flatMap((fulfillment) => fulfillment.tracking_id);
  return `Order ${order.order_id} is ${order.status}. It has ${order.items.length} item(s): ${items}.${
    tracking.length > 0 ? ` Tracking number: ${tracking.join(", ")}.` : ""
  } Can I help with anything else on this order?`;
}

import { describe, expect, it } from "vitest";
import { onlineStore } from "../../src/envs/corpus/online-store.js";
import type { EnvironmentInstance } from "../../src/envs/types.js";
import { changed, rejected, state, step } from "../helpers/transitions.js";

async function fresh(): Promise<EnvironmentInstance> {
  return onlineStore.create({ seed: 1 });
}

describe("online-store", () => {
  it("reads change nothing", async () => {
    const instance = await fresh();
    const products = await step(instance, "list_products", { category: "apparel" });
    expect(products.observation).toEqual({
      products: [
        { product_id: "P-TEE", name: "Organic cotton tee", price: 18, stock: 25 },
        { product_id: "P-HOODIE", name: "Fleece hoodie", price: 49, stock: 3 },
      ],
    });
    const summary = await step(instance, "store_summary");
    expect(summary.observation).toEqual({
      revenue: 275.17,
      refunds: 0,
      orders_placed: 4,
      out_of_stock: ["P-EARBUDS"],
    });
    for (const t of [
      products,
      summary,
      await step(instance, "get_customer", { customer_id: "CUS-ANA" }),
      await step(instance, "get_order", { order_id: "ORD-5001" }),
    ]) {
      expect(t.success).toBe(true);
      expect(t.delta).toBe(0);
    }
    rejected(await step(instance, "get_order", { order_id: "ORD-9999" }), "no order");
  });

  it("add_to_cart and remove_from_cart change one cart line", async () => {
    const instance = await fresh();
    changed(await step(instance, "add_to_cart", { customer_id: "CUS-ANA", product_id: "P-MUG", qty: 3 }), [
      "customers.CUS-ANA.cart.P-MUG",
    ]);
    expect((await state(instance)).customers["CUS-ANA"].cart).toEqual({ "P-MUG": 5, "P-NOVEL": 1 });
    changed(await step(instance, "add_to_cart", { customer_id: "CUS-CHLOE", product_id: "P-TEE", qty: 1 }), [
      "customers.CUS-CHLOE.cart.P-TEE",
    ]);
    rejected(
      await step(instance, "add_to_cart", { customer_id: "CUS-BEN", product_id: "P-EARBUDS", qty: 1 }),
      "not on sale",
    );
    rejected(
      await step(instance, "add_to_cart", { customer_id: "CUS-BEN", product_id: "P-HOODIE", qty: 3 }),
      "only 3 of Fleece hoodie in stock",
    );
    changed(await step(instance, "add_to_cart", { customer_id: "CUS-DEV", product_id: "P-MUG", qty: 1 }), [
      "customers.CUS-DEV.cart.P-MUG",
    ]);
    rejected(
      await step(instance, "add_to_cart", { customer_id: "CUS-DEV", product_id: "P-NOVEL", qty: 1 }),
      "at most 3 different products",
    );
    changed(await step(instance, "remove_from_cart", { customer_id: "CUS-DEV", product_id: "P-MUG" }), [
      "customers.CUS-DEV.cart.P-MUG",
    ]);
    rejected(
      await step(instance, "remove_from_cart", { customer_id: "CUS-DEV", product_id: "P-MUG" }),
      "not in the cart",
    );
    rejected(
      await step(instance, "add_to_cart", { customer_id: "CUS-ZED", product_id: "P-MUG", qty: 1 }),
      "no customer",
    );
  });

  it("checkout takes stock, empties the cart, applies coupon and credit, earns points, books revenue", async () => {
    const instance = await fresh();
    const checkout = await step(instance, "checkout", {
      customer_id: "CUS-ANA",
      shipping_method: "standard",
      coupon_code: "WELCOME10",
      use_store_credit: true,
    });
    const result = changed(checkout, [
      "products.P-MUG.stock",
      "products.P-NOVEL.stock",
      "customers.CUS-ANA.cart.P-MUG",
      "customers.CUS-ANA.cart.P-NOVEL",
      "customers.CUS-ANA.orders",
      "customers.CUS-ANA.store_credit",
      "customers.CUS-ANA.loyalty_points",
      "coupons.WELCOME10.uses_left",
      "totals.revenue",
      "totals.orders_placed",
      `orders.${checkout.observation && (checkout.observation as any).order_id}`,
    ]);
    // 2 mugs at 12.50 and a novel at 15.99: 40.99, 10% off (4.10) is 36.89, below 50 so shipping is 4.99:
    // 41.88, of which 25 from store credit; the card pays 16.88, 16 whole dollars at 2 points (gold).
    expect(result).toEqual({
      order_id: result.order_id,
      total: 41.88,
      charged_to_card: 16.88,
      points_earned: 32,
    });
    const after = await state(instance);
    expect(after.orders[result.order_id]).toMatchObject({
      customer_id: "CUS-ANA",
      subtotal: 40.99,
      discount: 4.1,
      shipping: 4.99,
      total: 41.88,
      paid_with_credit: 25,
      coupon: "WELCOME10",
      status: "paid",
    });
    expect(after.customers["CUS-ANA"]).toMatchObject({ cart: {}, store_credit: 0, loyalty_points: 352 });
    expect(after.products["P-MUG"].stock).toBe(38);
    expect(after.totals).toEqual({ revenue: 317.05, refunds: 0, orders_placed: 5 });
  });

  it("checkout of the last units delists the product; guards leave everything unchanged", async () => {
    const instance = await fresh();
    await step(instance, "add_to_cart", { customer_id: "CUS-BEN", product_id: "P-HOODIE", qty: 2 });
    const checkout = await step(instance, "checkout", { customer_id: "CUS-BEN", shipping_method: "express" });
    expect(checkout.success).toBe(true);
    // Without a coupon or credit: stock and the delisting, the cart line, the order, its list, points, totals.
    expect(checkout.delta).toBe(8);
    expect((await state(instance)).products["P-HOODIE"]).toMatchObject({ stock: 0, active: false });
    rejected(
      await step(instance, "checkout", { customer_id: "CUS-BEN", shipping_method: "standard" }),
      "empty",
    );
    rejected(
      await step(instance, "checkout", {
        customer_id: "CUS-ANA",
        shipping_method: "standard",
        coupon_code: "WINTER25",
      }),
      "needs a subtotal of at least 100",
    );
    rejected(
      await step(instance, "checkout", {
        customer_id: "CUS-DEV",
        shipping_method: "standard",
        coupon_code: "SUMMER15",
      }),
      "expired",
    );
    rejected(
      await step(instance, "checkout", {
        customer_id: "CUS-DEV",
        shipping_method: "standard",
        coupon_code: "NOPE1234",
      }),
      "no coupon",
    );
  });

  it("ship_order and mark_delivered move a paid order along", async () => {
    const instance = await fresh();
    const shipped = changed(await step(instance, "ship_order", { order_id: "ORD-5003", carrier: "DHL" }), [
      "orders.ORD-5003.status",
      "orders.ORD-5003.carrier",
      "orders.ORD-5003.tracking",
      "orders.ORD-5003.shipped_at",
    ]);
    expect(shipped.tracking).toMatch(/^DH[0-9]{8}$/);
    rejected(
      await step(instance, "ship_order", { order_id: "ORD-5003", carrier: "UPS" }),
      "only paid orders",
    );
    changed(await step(instance, "mark_delivered", { order_id: "ORD-5003" }), [
      "orders.ORD-5003.status",
      "orders.ORD-5003.delivered_at",
    ]);
    rejected(await step(instance, "mark_delivered", { order_id: "ORD-5001" }), "only shipped orders");
  });

  it("cancel_order gives back stock, points and revenue", async () => {
    const instance = await fresh();
    const result = changed(await step(instance, "cancel_order", { order_id: "ORD-5003" }), [
      "products.P-NOVEL.stock",
      "customers.CUS-ANA.loyalty_points",
      "orders.ORD-5003.status",
      "orders.ORD-5003.cancelled_at",
      "totals.revenue",
      "totals.orders_placed",
    ]);
    expect(result).toEqual({ order_id: "ORD-5003", status: "cancelled", refunded: 20.98 });
    const after = await state(instance);
    expect(after.customers["CUS-ANA"].loyalty_points).toBe(280);
    expect(after.totals.revenue).toBe(254.19);
    rejected(await step(instance, "cancel_order", { order_id: "ORD-5003" }), "only unshipped paid orders");
    rejected(await step(instance, "cancel_order", { order_id: "ORD-5002" }), "only unshipped paid orders");
  });

  it("refund_order refunds, restocks, takes points back; store credit adds 10%", async () => {
    const instance = await fresh();
    const refund = changed(
      await step(instance, "refund_order", {
        order_id: "ORD-5004",
        reason: "changed mind",
        refund_to: "store_credit",
        restock: true,
      }),
      [
        "products.P-HOODIE.stock",
        "products.P-EARBUDS.stock",
        "products.P-EARBUDS.active",
        "customers.CUS-CHLOE.store_credit",
        "orders.ORD-5004.status",
        "orders.ORD-5004.refund",
        "totals.refunds",
      ],
    );
    expect(refund).toEqual({ order_id: "ORD-5004", refunded: 136.62, to: "store_credit" });
    const after = await state(instance);
    expect(after.customers["CUS-CHLOE"].store_credit).toBe(146.62);
    expect(after.products["P-EARBUDS"]).toMatchObject({ stock: 1, active: true });
    // A damaged delivery is refunded to the card, not restocked; Ana's points are clawed back.
    changed(
      await step(instance, "refund_order", {
        order_id: "ORD-5001",
        reason: "damaged",
        refund_to: "card",
        restock: false,
      }),
      [
        "customers.CUS-ANA.loyalty_points",
        "orders.ORD-5001.status",
        "orders.ORD-5001.refund",
        "totals.refunds",
      ],
    );
    rejected(
      await step(instance, "refund_order", {
        order_id: "ORD-5002",
        reason: "damaged",
        refund_to: "card",
        restock: true,
      }),
      "cannot be restocked",
    );
    rejected(
      await step(instance, "refund_order", {
        order_id: "ORD-5003",
        reason: "wrong item",
        refund_to: "card",
        restock: false,
      }),
      "only shipped or delivered",
    );
  });

  it("restock_products adds units to several products, relists and stamps them", async () => {
    const instance = await fresh();
    changed(
      await step(instance, "restock_products", {
        deliveries: [
          { product_id: "P-EARBUDS", qty: 10 },
          { product_id: "P-KETTLE", qty: 4 },
        ],
      }),
      [
        "products.P-EARBUDS.stock",
        "products.P-EARBUDS.active",
        "products.P-EARBUDS.last_restocked",
        "products.P-KETTLE.stock",
        "products.P-KETTLE.last_restocked",
      ],
    );
    rejected(
      await step(instance, "restock_products", {
        deliveries: [
          { product_id: "P-MUG", qty: 1 },
          { product_id: "P-MUG", qty: 2 },
        ],
      }),
      "once",
    );
    rejected(
      await step(instance, "restock_products", { deliveries: [{ product_id: "P-LAMP", qty: 1 }] }),
      "no product",
    );
  });

  it("update_customer_address changes the fields that differ", async () => {
    const instance = await fresh();
    const result = changed(
      await step(instance, "update_customer_address", {
        customer_id: "CUS-BEN",
        line1: "4 Park Row",
        city: "Leeds",
        zip: "LS1 5AB",
      }),
      ["customers.CUS-BEN.address.line1", "customers.CUS-BEN.address.zip"],
    );
    expect(result.changed).toEqual(["line1", "zip"]);
    rejected(
      await step(instance, "update_customer_address", { customer_id: "CUS-BEN", city: "Leeds" }),
      "already reads that way",
    );
    const invalid = await step(instance, "update_customer_address", { customer_id: "CUS-BEN" });
    expect(invalid.success).toBe(false);
  });
});

import { describe, expect, it } from "vitest";
import { calendar } from "../../src/envs/corpus/calendar.js";
import { issueTracker } from "../../src/envs/corpus/issue-tracker.js";
import { restaurant } from "../../src/envs/corpus/restaurant.js";
import { smartHome } from "../../src/envs/corpus/smart-home.js";
import { vehicleControl } from "../../src/envs/corpus/vehicle-control.js";
import { warehouse } from "../../src/envs/corpus/warehouse.js";
import type { Environment, EnvironmentInstance } from "../../src/envs/types.js";
import { changed, rejected, state, step } from "../helpers/transitions.js";

/**
 * The tools that change several fields of existing environments in one call (a routine, a batch move, a
 * hand-over): each one's call, its exact changes, and its guards.
 */
async function fresh(environment: Environment): Promise<EnvironmentInstance> {
  return environment.create({ seed: 1 });
}

describe("smart-home routines", () => {
  it("leave_home switches off, locks, turns the heating down and arms away", async () => {
    const home = await fresh(smartHome);
    rejected(await step(home, "leave_home", { pin: "0000" }), "wrong PIN");
    const result = changed(await step(home, "leave_home", { pin: "4321" }), [
      "devices.light-living-main.state.power",
      "devices.light-living-main.state.brightness",
      "devices.lock-back.state.locked",
      "devices.thermo-main.state.target_c",
      "security.mode",
      "security.changed_at",
    ]);
    expect(result.devices_changed).toEqual(["light-living-main", "thermo-main", "lock-back"]);
    expect((await state(home)).devices["thermo-main"].state.target_c).toBe(18);
    rejected(await step(home, "leave_home", { pin: "4321" }), "already away");
  });

  it("arrive_home unlocks the front door, lights the entry and living room, heats to 21", async () => {
    const home = await fresh(smartHome);
    rejected(await step(home, "arrive_home", { pin: "4321" }), "armed-away");
    await step(home, "leave_home", { pin: "4321" });
    changed(await step(home, "arrive_home", { pin: "4321" }), [
      "devices.lock-front.state.locked",
      "devices.light-living-main.state.power",
      "devices.light-living-main.state.brightness",
      "devices.light-living-lamp.state.power",
      "devices.light-living-lamp.state.brightness",
      "devices.thermo-main.state.target_c",
      "security.mode",
      "security.changed_at",
    ]);
  });

  it("room_off switches a room's lights and speakers off and closes its blinds", async () => {
    const home = await fresh(smartHome);
    changed(await step(home, "room_off", { room: "living" }), [
      "devices.light-living-main.state.power",
      "devices.light-living-main.state.brightness",
      "devices.blinds-living.state.position",
    ]);
    rejected(await step(home, "room_off", { room: "living" }), "already off");
    // The porch light is offline and the locks are not switched: nothing to do in the entry.
    rejected(await step(home, "room_off", { room: "entry" }), "already off");
  });
});

describe("warehouse batch moves", () => {
  it("consolidate_bin moves every SKU of a bin into another", async () => {
    const wh = await fresh(warehouse);
    const result = changed(await step(wh, "consolidate_bin", { from_bin: "A-02", to_bin: "A-01" }), [
      "bins.A-02.contents.SKU-OIL-2L",
      "bins.A-01.contents.SKU-OIL-2L",
    ]);
    expect(result.moved).toEqual({ "SKU-OIL-2L": 6 });
    expect((await state(wh)).bins["A-01"].contents).toEqual({ "SKU-RICE-5KG": 25, "SKU-OIL-2L": 46 });
    changed(await step(wh, "consolidate_bin", { from_bin: "A-01", to_bin: "B-01" }), [
      "bins.A-01.contents.SKU-RICE-5KG",
      "bins.A-01.contents.SKU-OIL-2L",
      "bins.B-01.contents.SKU-RICE-5KG",
      "bins.B-01.contents.SKU-OIL-2L",
    ]);
    rejected(await step(wh, "consolidate_bin", { from_bin: "A-02", to_bin: "B-01" }), "empty");
    rejected(await step(wh, "consolidate_bin", { from_bin: "C-01", to_bin: "B-01" }), "must be stored cold");
    rejected(
      await step(wh, "consolidate_bin", { from_bin: "B-01", to_bin: "C-02" }),
      "cold bins are reserved",
    );
    rejected(await step(wh, "consolidate_bin", { from_bin: "B-01", to_bin: "B-01" }), "same bin");
  });

  it("receive_delivery records a received order and books the units in", async () => {
    const wh = await fresh(warehouse);
    const delivery = await step(wh, "receive_delivery", {
      supplier_id: "SUP-GREEN",
      bin_id: "C-02",
      lines: [
        { sku: "SKU-OAT-1L", qty: 24 },
        { sku: "SKU-YOG-500", qty: 30 },
      ],
    });
    const { po_id } = delivery.observation as { po_id: string };
    changed(delivery, [
      `purchase_orders.${po_id}`,
      "bins.C-02.contents.SKU-OAT-1L",
      "bins.C-02.contents.SKU-YOG-500",
      "totals.on_hand",
      "totals.received",
    ]);
    expect((await state(wh)).purchase_orders[po_id]).toMatchObject({
      status: "received",
      received_into: "C-02",
    });
    const lines = [{ sku: "SKU-RICE-5KG", qty: 10 }];
    rejected(
      await step(wh, "receive_delivery", { supplier_id: "SUP-MED", bin_id: "A-02", lines }),
      "not an active",
    );
    rejected(
      await step(wh, "receive_delivery", { supplier_id: "SUP-GREEN", bin_id: "A-02", lines }),
      "supplied by SUP-ASIA",
    );
    rejected(
      await step(wh, "receive_delivery", { supplier_id: "SUP-ASIA", bin_id: "C-02", lines }),
      "cold bins are reserved",
    );
    rejected(
      await step(wh, "receive_delivery", {
        supplier_id: "SUP-ASIA",
        bin_id: "A-01",
        lines: [{ sku: "SKU-RICE-5KG", qty: 40 }],
      }),
      "has room for 35 units",
    );
  });
});

describe("issue-tracker hand-overs and duplicates", () => {
  it("hand_over reassigns a member's unfinished issues of a project", async () => {
    const tracker = await fresh(issueTracker);
    const result = changed(
      await step(tracker, "hand_over", { project_key: "WEB", from_user: "kenji", to_user: "lena" }),
      [
        "issues.WEB-1.assignee",
        "issues.WEB-1.updated_at",
        "issues.WEB-2.assignee",
        "issues.WEB-2.updated_at",
        "users.kenji.assigned",
        "users.lena.assigned",
      ],
    );
    expect(result.handed_over).toEqual(["WEB-1", "WEB-2"]);
    expect((await state(tracker)).users.lena.assigned).toEqual(["API-1", "WEB-1", "WEB-2"]);
    rejected(
      await step(tracker, "hand_over", { project_key: "WEB", from_user: "kenji", to_user: "lena" }),
      "no unfinished WEB issues",
    );
    rejected(
      await step(tracker, "hand_over", { project_key: "WEB", from_user: "lena", to_user: "omar" }),
      "reporter",
    );
    rejected(
      await step(tracker, "hand_over", { project_key: "API", from_user: "lena", to_user: "kenji" }),
      "not a member",
    );
    rejected(
      await step(tracker, "hand_over", { project_key: "OLD", from_user: "rosa", to_user: "kenji" }),
      "archived",
    );
  });

  it("mark_duplicate resolves an issue with a comment and moves the counts", async () => {
    const tracker = await fresh(issueTracker);
    const marked = await step(tracker, "mark_duplicate", { issue_key: "WEB-2", target_issue_key: "WEB-1" });
    const comment = Object.keys((marked.after as any).issues["WEB-2"].comments)[0];
    changed(marked, [
      "issues.WEB-2.status",
      "issues.WEB-2.resolved_at",
      "issues.WEB-2.updated_at",
      `issues.WEB-2.comments.${comment}`,
      "issues.WEB-1.updated_at",
      "projects.WEB.counts.open",
      "projects.WEB.counts.done",
      "users.kenji.assigned",
    ]);
    expect((await state(tracker)).issues["WEB-2"].comments[comment as string]).toMatchObject({
      author: "rosa",
      body: "Duplicate of WEB-1.",
    });
    rejected(
      await step(tracker, "mark_duplicate", { issue_key: "WEB-2", target_issue_key: "WEB-1" }),
      "already done",
    );
    rejected(
      await step(tracker, "mark_duplicate", { issue_key: "WEB-1", target_issue_key: "API-1" }),
      "same project",
    );
    rejected(
      await step(tracker, "mark_duplicate", { issue_key: "WEB-1", target_issue_key: "WEB-1" }),
      "itself",
    );
    rejected(
      await step(tracker, "mark_duplicate", { issue_key: "WEB-1", target_issue_key: "WEB-3", actor: "zed" }),
      "no user zed",
    );
  });
});

describe("vehicle-control routines", () => {
  it("remote_start locks up, starts the engine and conditions the cabin", async () => {
    const car = await fresh(vehicleControl);
    changed(await step(car, "remote_start"), [
      "doors.driver",
      "doors.rear_right",
      "engine.running",
      "engine.started_at",
      "engine.rpm",
      "climate.ac_on",
      "climate.fan_speed",
    ]);
    rejected(await step(car, "remote_start"), "already running");
  });

  it("park_and_secure stops everything and clears the route", async () => {
    const car = await fresh(vehicleControl);
    await step(car, "remote_start");
    await step(car, "set_parking_brake", { state: "released" });
    await step(car, "set_navigation", { destination: "Office", distance_km: 12 });
    changed(await step(car, "park_and_secure"), [
      "parking_brake",
      "engine.running",
      "engine.started_at",
      "engine.rpm",
      "climate.ac_on",
      "climate.fan_speed",
      "navigation.destination",
      "navigation.distance_km",
      "navigation.eta_minutes",
      "navigation.set_at",
    ]);
    rejected(await step(car, "park_and_secure"), "already parked");
  });
});

describe("calendar: cancelling everything an organizer runs", () => {
  it("cancel_all_meetings cancels each meeting, takes it off every calendar and frees rooms", async () => {
    const cal = await fresh(calendar);
    const result = changed(await step(cal, "cancel_all_meetings", { organizer: "ana" }), [
      "events.EV-1.status",
      "events.EV-1.updated_at",
      "users.ana.calendar",
      "users.ben.calendar",
      "users.chloe.calendar",
      "rooms.R-FJORD.bookings",
      "stats.cancelled",
    ]);
    expect(result.cancelled).toEqual(["EV-1"]);
    expect((await state(cal)).users.ana.calendar).toEqual(["EV-2"]);
    rejected(await step(cal, "cancel_all_meetings", { organizer: "ana" }), "no confirmed meetings");
    rejected(await step(cal, "cancel_all_meetings", { organizer: "zoe" }), "no user zoe");
  });
});

describe("restaurant: walk-ins", () => {
  it("seat_walk_in picks the least busy server on shift and opens the order", async () => {
    const floor = await fresh(restaurant);
    const seated = await step(floor, "seat_walk_in", { table_id: "T2", guests: 3 });
    const { order_id, server_id } = seated.observation as { order_id: string; server_id: string };
    expect(server_id).toBe("jo");
    changed(seated, [
      `orders.${order_id}`,
      "tables.T2.status",
      "tables.T2.server",
      "tables.T2.order_id",
      "staff.jo.open_tables",
      "sales.covers",
    ]);
    rejected(await step(floor, "seat_walk_in", { table_id: "T2", guests: 2 }), "taken");
    rejected(await step(floor, "seat_walk_in", { table_id: "B1", guests: 3 }), "seats 2");
    // Sam and Jo each take tables until both sections are full (3 tables each).
    for (const table of ["T1", "P1", "B1"]) await step(floor, "seat_walk_in", { table_id: table, guests: 1 });
    const state_ = await state(floor);
    expect([state_.staff.sam.open_tables, state_.staff.jo.open_tables]).toEqual([2, 3]);
  });
});

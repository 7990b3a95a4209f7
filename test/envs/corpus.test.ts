import { describe, expect, it } from "vitest";
import { airline } from "../../src/envs/corpus/airline.js";
import { calendar } from "../../src/envs/corpus/calendar.js";
import { hotel } from "../../src/envs/corpus/hotel.js";
import { issueTracker } from "../../src/envs/corpus/issue-tracker.js";
import { libraryLoans } from "../../src/envs/corpus/library-loans.js";
import { restaurant } from "../../src/envs/corpus/restaurant.js";
import { rideHailing } from "../../src/envs/corpus/ride-hailing.js";
import { smartHome } from "../../src/envs/corpus/smart-home.js";
import { vehicleControl } from "../../src/envs/corpus/vehicle-control.js";
import { warehouse } from "../../src/envs/corpus/warehouse.js";
import type { Environment, Transition } from "../../src/envs/types.js";

/** Runs one call on the instance under test and records the transition. */
type Run = (name: string, args?: Record<string, unknown>) => Promise<Transition>;

interface Script {
  env: Environment;
  /** A realistic session; asserts as it goes, so a script is also a test. */
  play(run: Run): Promise<void>;
}

/** Plays a script on a fresh instance seeded with 1 and returns every transition. */
async function play(script: Script): Promise<Transition[]> {
  const instance = await script.env.create({ seed: 1 });
  const transitions: Transition[] = [];
  await script.play(async (name, args = {}) => {
    const transition = await instance.step({ name, arguments: args });
    transitions.push(transition);
    return transition;
  });
  return transitions;
}

/** A successful step; with `delta`, also its exact number of EnvSimBench changes. */
function ok(t: Transition, delta?: number): any {
  expect(t.success, `${t.call.name} failed: ${JSON.stringify(t.observation)}`).toBe(true);
  if (delta !== undefined) expect(t.delta, `${t.call.name}: ${JSON.stringify(t.envChanges)}`).toBe(delta);
  return t.observation;
}

/** A rejected step: no change at all, and the error mentions `reason`. */
function rejected(t: Transition, reason: string | RegExp): any {
  expect(t.success, `${t.call.name} should have been rejected`).toBe(false);
  expect(t.delta).toBe(0);
  expect(t.after).toEqual(t.before);
  const error = (t.observation as { error: string }).error;
  if (typeof reason === "string") expect(error).toContain(reason);
  else expect(error).toMatch(reason);
  return t.observation;
}

const paths = (t: Transition) => t.envChanges.map((c) => c.path).sort();
const idLike = (prefix: string) => new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{12}$`);

const scripts: Record<string, Script> = {
  airline: {
    env: airline,
    async play(run) {
      const search = ok(
        await run("search_flights", { origin: "SFO", destination: "JFK", date: "2025-01-10" }),
        0,
      );
      expect(search.flights).toEqual([
        {
          flight_id: "TA100",
          departs_at: "2025-01-10T08:00:00Z",
          arrives_at: "2025-01-10T16:30:00Z",
          status: "scheduled",
          fares: { economy: 349, business: 1290 },
          available: { economy: 29, business: 7 },
        },
      ]);
      rejected(
        await run("book_flight", {
          passenger_id: "PAX-400",
          flight_id: "TA101",
          cabin: "economy",
          seat: "10A",
        }),
        "passport expires",
      );
      rejected(
        await run("book_flight", {
          passenger_id: "PAX-100",
          flight_id: "TA100",
          cabin: "business",
          seat: "1A",
        }),
        "seat 1A is taken",
      );
      rejected(
        await run("book_flight", {
          passenger_id: "PAX-100",
          flight_id: "TA330",
          cabin: "economy",
          seat: "10A",
        }),
        "cancelled",
      );
      const booking = await run("book_flight", {
        passenger_id: "PAX-100",
        flight_id: "TA100",
        cabin: "business",
        seat: "2C",
      });
      const booked = ok(booking, 8);
      expect(booked.reservation_id).toMatch(idLike("RES"));
      expect(booked).toMatchObject({ price: 1290, points_earned: 2580, tier: "gold" });
      const res = booked.reservation_id as string;
      expect(paths(booking)).toEqual(
        [
          "counters.bookings",
          "counters.revenue",
          "flights.TA100.available.business",
          "flights.TA100.seats.2C.passenger_id",
          "passengers.PAX-100.loyalty.points",
          "passengers.PAX-100.loyalty.tier",
          "passengers.PAX-100.reservations",
          `reservations.${res}`,
        ].sort(),
      );
      expect((booking.after as any).reservations[res].booked_at).toBe("2025-01-01T00:00:00.000Z");

      const map = ok(await run("get_seat_map", { flight_id: "TA100", cabin: "business" }), 0);
      expect(map.free_seats).toEqual(["1C", "1D", "1F", "2A", "2D", "2F"]);
      ok(await run("change_seat", { reservation_id: res, new_seat: "2D" }), 3);
      rejected(await run("change_seat", { reservation_id: res, new_seat: "10A" }), "not in business");
      rejected(await run("check_in", { reservation_id: res, bags: 1 }), "not open yet");
      rejected(await run("check_in", { reservation_id: "RES-7001", bags: 3 }), "at most 2 checked bags");
      const checkIn = await run("check_in", { reservation_id: "RES-7001", bags: 1 });
      expect(ok(checkIn, 3)).toEqual({ reservation_id: "RES-7001", seat: "11C", boarding_group: 3 });
      rejected(await run("cancel_reservation", { reservation_id: "RES-7001" }), "checked-in");
      const cancel = await run("cancel_reservation", { reservation_id: "RES-7003" });
      expect(ok(cancel, 8)).toEqual({ reservation_id: "RES-7003", refund: 279.2 });
      expect((cancel.after as any).passengers["PAX-400"].loyalty.points).toBe(851);
      expect((cancel.after as any).counters).toEqual({ bookings: 4, cancellations: 1, revenue: 2778.8 });
      ok(await run("update_contact", { passenger_id: "PAX-200", email: "lukas@example.org" }), 1);
      const reservation = ok(await run("get_reservation", { reservation_id: res }), 0);
      expect(reservation).toMatchObject({ seat: "2D", status: "confirmed", cabin: "business", price: 1290 });
    },
  },

  hotel: {
    env: hotel,
    async play(run) {
      const search = ok(
        await run("search_rooms", { check_in: "2025-01-01", check_out: "2025-01-03", guests: 2 }),
        0,
      );
      expect(search).toEqual({ nights: 2, rooms: [{ room: "201", type: "double", rate: 169, total: 338 }] });
      rejected(
        await run("create_booking", {
          guest_id: "G-03",
          room: "102",
          check_in: "2025-01-02",
          check_out: "2025-01-05",
          guests: 1,
        }),
        "booked for those dates",
      );
      rejected(
        await run("create_booking", {
          guest_id: "G-03",
          room: "101",
          check_in: "2025-01-02",
          check_out: "2025-01-05",
          guests: 2,
        }),
        "sleeps at most 1",
      );
      const create = await run("create_booking", {
        guest_id: "G-01",
        room: "201",
        check_in: "2025-01-01",
        check_out: "2025-01-03",
        guests: 2,
      });
      const booking = ok(create, 2);
      expect(booking.booking_id).toMatch(idLike("BK"));
      expect(booking).toMatchObject({ nights: 2, room_total: 304.2 });
      const id = booking.booking_id as string;
      rejected(await run("check_in_guest", { booking_id: id }), "not been cleaned");
      ok(await run("mark_room_clean", { room: "201" }), 2);
      const checkIn = await run("check_in_guest", { booking_id: id });
      ok(checkIn, 4);
      expect((checkIn.after as any).stats.occupied_rooms).toBe(2);
      const charge = await run("add_charge", { booking_id: "BK-501", category: "spa", amount: 120 });
      expect(ok(charge, 2)).toEqual({ booking_id: "BK-501", extras: 158 });
      rejected(
        await run("add_charge", { booking_id: "BK-502", category: "minibar", amount: 10 }),
        "only be posted while",
      );
      const checkOut = await run("check_out_guest", { booking_id: "BK-501" });
      expect(ok(checkOut, 8)).toEqual({ booking_id: "BK-501", total_due: 1100.3, loyalty_tier: "silver" });
      expect((checkOut.after as any).rooms["202"]).toMatchObject({
        status: "available",
        housekeeping: { clean: false },
      });
      expect(ok(await run("cancel_booking", { booking_id: "BK-502" }), 3)).toEqual({
        booking_id: "BK-502",
        fee: 159,
      });
      rejected(await run("cancel_booking", { booking_id: "BK-502" }), "only reserved bookings");
      ok(await run("set_guest_vip", { guest_id: "G-02", vip: true }), 1);
    },
  },

  calendar: {
    env: calendar,
    async play(run) {
      const free = ok(
        await run("find_free_slots", { user_ids: ["ana", "ben"], date: "2025-01-06", duration_minutes: 60 }),
        0,
      );
      expect(free.slots).toEqual(
        ["10:00", "10:30", "11:00", "11:30", "12:00", "12:30", "13:00", "15:00"].map(
          (t) => `2025-01-06T${t}:00.000Z`,
        ),
      );
      rejected(
        await run("schedule_meeting", {
          organizer: "ana",
          title: "Early sync",
          start: "2025-01-06T07:00:00Z",
          duration_minutes: 30,
          attendees: ["ben"],
        }),
        "outside the organizer's working hours",
      );
      const busy = rejected(
        await run("schedule_meeting", {
          organizer: "ben",
          title: "Roadmap sync",
          start: "2025-01-06T09:30:00Z",
          duration_minutes: 60,
          attendees: ["eli"],
        }),
        "busy",
      );
      expect(busy.busy).toEqual(["ben"]);
      const schedule = await run("schedule_meeting", {
        organizer: "ana",
        title: "Quarterly roadmap",
        start: "2025-01-06T10:00:00Z",
        duration_minutes: 60,
        attendees: ["ben", "chloe", "eli"],
        room: "R-FJORD",
      });
      const meeting = ok(schedule, 7);
      expect(meeting).toMatchObject({ start: "2025-01-06T10:00:00.000Z", end: "2025-01-06T11:00:00.000Z" });
      expect(meeting.event_id).toMatch(idLike("EV"));
      const ev = meeting.event_id as string;
      expect(paths(schedule)).toEqual(
        [
          `events.${ev}`,
          "rooms.R-FJORD.bookings",
          "stats.scheduled",
          "users.ana.calendar",
          "users.ben.calendar",
          "users.chloe.calendar",
          "users.eli.calendar",
        ].sort(),
      );
      rejected(
        await run("schedule_meeting", {
          organizer: "dev",
          title: "Pairing",
          start: "2025-01-06T11:00:00Z",
          duration_minutes: 30,
          attendees: ["eli", "ben"],
          room: "R-NOOK",
        }),
        "seats only 2",
      );
      ok(await run("respond_to_invite", { event_id: "EV-1", user_id: "chloe", response: "accepted" }), 1);
      ok(await run("respond_to_invite", { event_id: ev, user_id: "eli", response: "declined" }), 2);
      rejected(
        await run("respond_to_invite", { event_id: ev, user_id: "eli", response: "declined" }),
        "already",
      );
      ok(await run("respond_to_invite", { event_id: ev, user_id: "ben", response: "accepted" }), 1);
      rejected(
        await run("reschedule_meeting", { event_id: ev, actor: "ben", new_start: "2025-01-06T11:00:00Z" }),
        "only the organizer",
      );
      const clash = rejected(
        await run("reschedule_meeting", { event_id: ev, actor: "ana", new_start: "2025-01-06T14:00:00Z" }),
        "busy",
      );
      expect(clash.busy).toEqual(["ana", "chloe"]);
      const moved = await run("reschedule_meeting", {
        event_id: ev,
        actor: "ana",
        new_start: "2025-01-06T11:00:00Z",
      });
      ok(moved, 4);
      expect((moved.after as any).events[ev].attendees).toEqual({
        ben: "pending",
        chloe: "pending",
        eli: "declined",
      });
      ok(await run("cancel_meeting", { event_id: "EV-2", actor: "dev" }), 6);
      rejected(await run("cancel_meeting", { event_id: "EV-2", actor: "dev" }), "already cancelled");
      const day = ok(await run("list_events", { user_id: "ana", date: "2025-01-06" }), 0);
      expect(day.events.map((e: any) => e.event_id)).toEqual(["EV-1", ev]);
    },
  },

  "issue-tracker": {
    env: issueTracker,
    async play(run) {
      const open = ok(await run("list_issues", { project: "WEB", status: "open" }), 0);
      expect(open.issues.map((i: any) => i.key)).toEqual(["WEB-2"]);
      const fields = { title: "Search returns stale results", type: "bug", priority: "high" };
      rejected(await run("create_issue", { project: "OLD", reporter: "rosa", ...fields }), "archived");
      rejected(await run("create_issue", { project: "API", reporter: "kenji", ...fields }), "not a member");
      const create = await run("create_issue", { project: "WEB", reporter: "omar", ...fields });
      expect(ok(create, 3)).toEqual({ issue_key: "WEB-4" });
      expect((create.after as any).issues["WEB-4"].created_at).toBe("2025-01-01T00:00:00.000Z");
      rejected(
        await run("assign_issue", { issue_key: "WEB-4", assignee: "lena", actor: "omar" }),
        "reporters cannot assign",
      );
      rejected(
        await run("assign_issue", { issue_key: "WEB-4", assignee: "omar", actor: "rosa" }),
        "cannot take issues",
      );
      ok(await run("assign_issue", { issue_key: "WEB-4", assignee: "lena", actor: "rosa" }), 3);
      const reassign = await run("assign_issue", { issue_key: "WEB-2", assignee: "lena", actor: "rosa" });
      expect(ok(reassign, 4)).toEqual({ issue_key: "WEB-2", assignee: "lena", previous: "kenji" });
      rejected(
        await run("transition_issue", { issue_key: "WEB-4", to: "in_review", actor: "lena" }),
        "cannot move from open to in_review",
      );
      ok(await run("transition_issue", { issue_key: "WEB-4", to: "in_progress", actor: "lena" }), 2);
      rejected(
        await run("transition_issue", { issue_key: "WEB-1", to: "done", actor: "kenji" }),
        "cannot approve their own work",
      );
      const done = await run("transition_issue", { issue_key: "WEB-1", to: "done", actor: "rosa" });
      ok(done, 6);
      expect((done.after as any).projects.WEB.counts).toEqual({ open: 2, done: 2 });
      expect((done.after as any).users.kenji.assigned).toEqual([]);
      const comment = ok(
        await run("add_comment", { issue_key: "WEB-1", author: "omar", body: "Still broken on iOS." }),
        2,
      );
      expect(comment.comment_id).toMatch(idLike("CMT"));
      const reopen = await run("transition_issue", { issue_key: "WEB-1", to: "open", actor: "omar" });
      ok(reopen, 6);
      expect((reopen.after as any).issues["WEB-1"].resolved_at).toBeNull();
      ok(await run("add_label", { issue_key: "WEB-4", label: "regression" }), 1);
      rejected(await run("add_label", { issue_key: "WEB-4", label: "backend" }), 'no label "backend"');
      const issue = ok(await run("get_issue", { issue_key: "WEB-1" }), 0);
      expect(issue.status).toBe("open");
      expect(Object.keys(issue.comments)).toHaveLength(2);
    },
  },

  "library-loans": {
    env: libraryLoans,
    async play(run) {
      const found = ok(await run("search_catalog", { query: "road" }), 0);
      expect(found.results).toEqual([
        { isbn: "9780307277671", title: "The Road", author: "Cormac McCarthy", available: 2, holds: 0 },
      ]);
      rejected(await run("checkout_copy", { member_id: "M-04", copy_id: "C-3001" }), "borrowing is blocked");
      expect(ok(await run("pay_fine", { member_id: "M-04", amount: 5 }), 1)).toEqual({
        member_id: "M-04",
        fines: 7.75,
      });
      rejected(await run("pay_fine", { member_id: "M-04", amount: 8 }), "owes only 7.75");
      const loan = ok(await run("checkout_copy", { member_id: "M-04", copy_id: "C-3001" }), 5);
      expect(loan.loan_id).toMatch(idLike("LOAN"));
      expect(loan.due).toBe("2025-01-22");
      rejected(await run("checkout_copy", { member_id: "M-05", copy_id: "C-3002" }), "suspended");
      rejected(await run("checkout_copy", { member_id: "M-01", copy_id: "C-4001" }), "is lost");
      rejected(await run("place_hold", { member_id: "M-01", isbn: "9780307277671" }), "on the shelf");
      expect(ok(await run("place_hold", { member_id: "M-01", isbn: "9780062315007" }), 1)).toEqual({
        isbn: "9780062315007",
        position: 2,
      });
      rejected(await run("renew_loan", { loan_id: "L-901" }), "waiting for this title");
      expect(ok(await run("renew_loan", { loan_id: "L-900" }), 2)).toEqual({
        loan_id: "L-900",
        due: "2025-01-31",
        renewals: 1,
      });
      const back = await run("return_copy", { loan_id: "L-901", condition: "damaged" });
      expect(ok(back, 10)).toEqual({ loan_id: "L-901", days_late: 12, fine: 18, held_for: "M-03" });
      expect((back.after as any).books["9780062315007"].holds).toEqual(["M-01"]);
      rejected(
        await run("checkout_copy", { member_id: "M-01", copy_id: "C-2001" }),
        "held for another member",
      );
      const held = ok(await run("checkout_copy", { member_id: "M-03", copy_id: "C-2001" }), 6);
      expect(held.due).toBe("2025-02-12");
      const member = ok(await run("get_member", { member_id: "M-02" }), 0);
      expect(member).toMatchObject({ fines: 19.5, loans: [] });
    },
  },

  restaurant: {
    env: restaurant,
    async play(run) {
      const mains = ok(await run("get_menu", { category: "main" }), 0);
      expect(mains.items.map((i: any) => i.item)).toEqual(["risotto", "salmon"]);
      rejected(await run("seat_party", { table_id: "T2", guests: 5, server_id: "jo" }), "seats 4");
      rejected(await run("seat_party", { table_id: "T2", guests: 3, server_id: "max" }), "not on shift");
      rejected(await run("seat_party", { table_id: "T3", guests: 2, server_id: "jo" }), "taken");
      const seat = ok(await run("seat_party", { table_id: "T2", guests: 3, server_id: "jo" }), 6);
      expect(seat.order_id).toMatch(idLike("ORD"));
      const order = seat.order_id as string;
      rejected(
        await run("add_items", { order_id: order, items: [{ item: "calamari", qty: 4 }] }),
        "only 3 portions",
      );
      rejected(
        await run("add_items", { order_id: order, items: [{ item: "short_rib", qty: 1 }] }),
        "not available",
      );
      const add = await run("add_items", {
        order_id: order,
        items: [
          { item: "calamari", qty: 3 },
          { item: "salmon", qty: 2, notes: "no fennel" },
          { item: "lemonade", qty: 3 },
        ],
      });
      expect(ok(add, 6)).toEqual({ order_id: order, subtotal: 112 });
      expect((add.after as any).menu.calamari).toMatchObject({ portions_left: 0, available: false });
      const fire = await run("fire_order", { order_id: order });
      expect(ok(fire, 4)).toEqual({ order_id: order, queue_position: 2 });
      rejected(await run("close_check", { order_id: order, tip: 10, payment: "card" }), "serve it before");
      ok(await run("mark_served", { order_id: "ORD-100" }), 2);
      ok(await run("mark_served", { order_id: order }), 2);
      rejected(await run("close_check", { order_id: order, tip: 80, payment: "card" }), "needs a manager");
      const close = await run("close_check", { order_id: order, tip: 20, payment: "card" });
      expect(ok(close, 11)).toEqual({ order_id: order, tax: 8.96, total: 140.96 });
      expect((close.after as any).tables.T2).toEqual({
        seats: 4,
        section: "main",
        status: "free",
        server: null,
        order_id: null,
      });
      expect((close.after as any).sales).toEqual({ revenue: 1961.46, covers: 44, checks_closed: 13 });
      rejected(await run("set_item_availability", { item: "calamari", available: true }), "no portions left");
      ok(await run("set_item_availability", { item: "negroni", available: false }), 1);
    },
  },

  "smart-home": {
    env: smartHome,
    async play(run) {
      const locks = ok(await run("list_devices", { room: "entry", type: "lock" }), 0);
      expect(locks.devices.map((d: any) => [d.device_id, d.state.locked])).toEqual([
        ["lock-front", true],
        ["lock-back", false],
      ]);
      const away = rejected(await run("set_security_mode", { mode: "away", pin: "4321" }), "lock every door");
      expect(away.unlocked).toEqual(["lock-back"]);
      ok(await run("set_lock", { device_id: "lock-back", locked: true }), 1);
      rejected(await run("set_lock", { device_id: "lock-front", locked: false, pin: "0000" }), "correct PIN");
      rejected(await run("set_light", { device_id: "light-porch", power: "on" }), "offline");
      rejected(await run("set_light", { device_id: "thermo-main", power: "on" }), "not a light");
      ok(
        await run("set_light", {
          device_id: "light-living-lamp",
          power: "on",
          brightness: 50,
          color_temp_k: 3000,
        }),
        3,
      );
      const off = await run("set_light", { device_id: "light-living-main", power: "off" });
      ok(off, 2);
      expect(paths(off)).toEqual([
        "devices.light-living-main.state.brightness",
        "devices.light-living-main.state.power",
      ]);
      const movie = await run("create_scene", {
        name: "Movie night",
        actions: [
          { device: "light-living-main", setting: "brightness", value: 10 },
          { device: "light-living-lamp", setting: "power", value: "off" },
          { device: "blinds-living", setting: "position", value: 0 },
          { device: "speaker-living", setting: "power", value: "on" },
          { device: "speaker-living", setting: "volume", value: 45 },
          { device: "lock-front", setting: "locked", value: true },
          { device: "thermo-main", setting: "target_c", value: 22 },
        ],
      });
      const scene = ok(movie, 1).scene_id as string;
      expect(scene).toMatch(idLike("SCN"));
      rejected(
        await run("create_scene", {
          name: "Welcome",
          actions: [{ device: "lock-back", setting: "locked", value: false }],
        }),
        "cannot unlock",
      );
      rejected(
        await run("create_scene", {
          name: "Bright blinds",
          actions: [{ device: "blinds-bedroom", setting: "brightness", value: 50 }],
        }),
        "no setting brightness",
      );
      const runScene = await run("run_scene", { scene_id: scene });
      expect(ok(runScene, 8)).toEqual({ scene_id: scene, applied: 7 });
      expect((runScene.after as any).scenes[scene].run_count).toBe(1);
      ok(await run("set_security_mode", { mode: "away", pin: "4321" }), 2);
      rejected(await run("set_thermostat", { device_id: "thermo-main", target_c: 21 }), "caps heating at 18");
      ok(await run("set_thermostat", { device_id: "thermo-main", target_c: 17.5 }), 1);
      const living = ok(await run("get_room", { room: "living" }), 0);
      expect(living.sensors).toEqual({ temperature_c: 20.5, humidity_pct: 41, occupied: true });
    },
  },

  "vehicle-control": {
    env: vehicleControl,
    async play(run) {
      const doors = ok(await run("get_vehicle_status", { section: "doors" }), 0);
      expect(doors.doors.driver).toBe("unlocked");
      const start = rejected(await run("start_engine"), "lock all doors");
      expect(start.unlocked).toEqual(["driver", "rear_right"]);
      const lock = await run("lock_doors", {
        lock: true,
        doors: ["driver", "passenger", "rear_left", "rear_right"],
      });
      expect(ok(lock, 2).changed).toEqual(["driver", "rear_right"]);
      rejected(await run("set_climate", { ac_on: true }), "need the engine running");
      expect(ok(await run("set_navigation", { destination: "Lake Tahoe", distance_km: 300 }), 4)).toEqual({
        destination: "Lake Tahoe",
        eta_minutes: 300,
        fuel_needed_l: 21.6,
      });
      rejected(await run("fill_fuel", { liters: 50 }), "only 43 litres fit");
      expect(ok(await run("fill_fuel", { liters: 30 }), 1)).toEqual({ level_l: 42 });
      ok(await run("start_engine"), 3);
      rejected(await run("fill_fuel", { liters: 1 }), "turn the engine off");
      rejected(await run("drive_to_destination"), "release the parking brake");
      ok(await run("set_parking_brake", { state: "released" }), 1);
      ok(await run("set_climate", { target_c: 21, fan_speed: 3, ac_on: true }), 3);
      const drive = await run("drive_to_destination");
      expect(ok(drive, 9)).toEqual({ arrived_at: "Lake Tahoe", fuel_left_l: 20.4, odometer_km: 18_540.6 });
      expect((drive.after as any).trip).toEqual({ distance_km: 300, fuel_used_l: 21.6 });
      rejected(await run("drive_to_destination"), "set a destination first");
      rejected(await run("stop_engine"), "engage the parking brake");
      ok(await run("set_parking_brake", { state: "engaged" }), 1);
      const stop = await run("stop_engine");
      ok(stop, 4);
      expect((stop.after as any).climate.ac_on).toBe(false);
      const tires = ok(await run("check_tire_pressure"), 0);
      expect(tires.low).toEqual(["rear_left"]);
      // A write that finds nothing to do succeeds without changing anything.
      expect(ok(await run("lock_doors", { lock: true, doors: ["driver"] }), 0).changed).toEqual([]);
    },
  },

  "ride-hailing": {
    env: rideHailing,
    async play(run) {
      expect(
        ok(await run("estimate_fare", { pickup: "mission", dropoff: "marina", category: "standard" }), 0),
      ).toEqual({ distance_km: 7.1, fare: { base: 13.65, surge: 1, discount: 0, total: 13.65 } });
      const near = ok(await run("list_available_drivers", { zone: "soma", category: "standard" }), 0);
      expect(near.drivers.map((d: any) => [d.driver_id, d.km_away])).toEqual([
        ["D-11", 0],
        ["D-10", 2.5],
      ]);
      const trip = {
        pickup: "soma",
        dropoff: "airport",
        category: "standard",
        passengers: 1,
        use_promo: true,
      };
      rejected(await run("request_ride", { rider_id: "U-3", ...trip }), "already has ride RIDE-90");
      const short = rejected(await run("request_ride", { rider_id: "U-1", ...trip }), "wallet balance");
      expect(short).toMatchObject({ fare: 41.4, balance: 18 });
      expect(ok(await run("top_up_wallet", { rider_id: "U-1", amount: 50 }), 1).wallet_balance).toBe(68);
      const request = ok(await run("request_ride", { rider_id: "U-1", ...trip }), 4);
      expect(request).toMatchObject({ driver_id: "D-11", pickup_km: 0, fare: 41.4 });
      expect(request.ride_id).toMatch(idLike("RIDE"));
      const ride = request.ride_id as string;
      rejected(
        await run("request_ride", {
          rider_id: "U-2",
          pickup: "soma",
          dropoff: "marina",
          category: "xl",
          passengers: 5,
        }),
        "no xl driver available",
      );
      rejected(await run("start_ride", { ride_id: ride, driver_id: "D-10" }), "only the assigned driver");
      rejected(await run("cancel_ride", { ride_id: "RIDE-90", by: "rider" }), "has started");
      ok(await run("start_ride", { ride_id: ride, driver_id: "D-11" }), 2);
      const done = await run("complete_ride", { ride_id: ride });
      expect(ok(done, 9)).toEqual({ ride_id: ride, charged: 41.4, payment: "wallet" });
      expect((done.after as any).drivers["D-11"]).toMatchObject({
        zone: "airport",
        status: "available",
        earnings: { today: 31.05, trips_today: 1 },
      });
      expect((done.after as any).riders["U-1"].payment.wallet_balance).toBe(26.6);
      expect(ok(await run("rate_ride", { ride_id: ride, stars: 4 }), 3).driver_average).toBe(4.69);
      rejected(await run("rate_ride", { ride_id: ride, stars: 5 }), "already rated");
      const second = ok(
        await run("request_ride", {
          rider_id: "U-2",
          pickup: "mission",
          dropoff: "sunset",
          category: "standard",
          passengers: 2,
        }),
        3,
      );
      expect(second.driver_id).toBe("D-10");
      expect(ok(await run("cancel_ride", { ride_id: second.ride_id, by: "rider" }), 6)).toEqual({
        ride_id: second.ride_id,
        fee: 5,
      });
      ok(await run("complete_ride", { ride_id: "RIDE-90" }), 8);
    },
  },

  warehouse: {
    env: warehouse,
    async play(run) {
      expect(ok(await run("get_stock", { sku: "SKU-OIL-2L" }), 0)).toEqual({
        sku: "SKU-OIL-2L",
        total: 46,
        bins: { "A-01": 40, "A-02": 6 },
        reorder: false,
      });
      const needs = ok(await run("list_reorder_needs"), 0);
      expect(needs.needs).toEqual([
        { sku: "SKU-OAT-1L", on_hand: 48, incoming: 0, order_qty: 120, supplier: "SUP-GREEN" },
      ]);
      const move = { qty: 10 };
      rejected(
        await run("move_stock", { sku: "SKU-OAT-1L", from_bin: "C-01", to_bin: "A-02", ...move }),
        "must be stored cold",
      );
      rejected(
        await run("move_stock", { sku: "SKU-RICE-5KG", from_bin: "A-01", to_bin: "C-02", ...move }),
        "reserved for cold-chain",
      );
      const moved = await run("move_stock", { sku: "SKU-OIL-2L", from_bin: "A-01", to_bin: "A-02", qty: 30 });
      expect(ok(moved, 2)).toEqual({ sku: "SKU-OIL-2L", from: 10, to: 36 });
      rejected(
        await run("create_purchase_order", {
          supplier_id: "SUP-MED",
          lines: [{ sku: "SKU-OIL-2L", qty: 48 }],
        }),
        "not an active supplier",
      );
      rejected(
        await run("create_purchase_order", {
          supplier_id: "SUP-GREEN",
          lines: [
            { sku: "SKU-OAT-1L", qty: 120 },
            { sku: "SKU-RICE-5KG", qty: 5 },
          ],
        }),
        "supplied by SUP-ASIA",
      );
      const po = ok(
        await run("create_purchase_order", {
          supplier_id: "SUP-GREEN",
          lines: [
            { sku: "SKU-OAT-1L", qty: 120 },
            { sku: "SKU-YOG-500", qty: 30 },
          ],
        }),
        2,
      );
      expect(po.po_id).toMatch(idLike("PO"));
      expect(po.expected_date).toBe("2025-01-03");
      rejected(
        await run("receive_purchase_order", { po_id: po.po_id, bin_id: "C-01" }),
        "has room for 32 units",
      );
      const receive = await run("receive_purchase_order", { po_id: po.po_id, bin_id: "C-02" });
      expect(ok(receive, 8)).toEqual({ po_id: po.po_id, units: 150 });
      expect((receive.after as any).bins["C-02"].contents).toEqual({ "SKU-OAT-1L": 120, "SKU-YOG-500": 30 });
      const ship = await run("ship_order", {
        order_ref: "SO-1001",
        customer: "Corner Grocer",
        lines: [
          { sku: "SKU-OIL-2L", qty: 8 },
          { sku: "SKU-RICE-5KG", qty: 12 },
          { sku: "SKU-YOG-500", qty: 20 },
        ],
      });
      const shipped = ok(ship, 6);
      expect(shipped.shipment_id).toMatch(idLike("SHP"));
      expect(shipped.picks).toEqual([
        { sku: "SKU-OIL-2L", qty: 8, bin: "A-01" },
        { sku: "SKU-RICE-5KG", qty: 12, bin: "A-01" },
        { sku: "SKU-YOG-500", qty: 20, bin: "C-02" },
      ]);
      expect((ship.after as any).totals).toEqual({ on_hand: 309, received: 150, shipped: 40 });
      rejected(
        await run("ship_order", {
          order_ref: "SO-1001",
          customer: "Corner Grocer",
          lines: [{ sku: "SKU-OIL-2L", qty: 1 }],
        }),
        "already shipped",
      );
      const split = rejected(
        await run("ship_order", {
          order_ref: "SO-1002",
          customer: "Bistro 9",
          lines: [{ sku: "SKU-RICE-5KG", qty: 30 }],
        }),
        "no single bin",
      );
      expect(split.on_hand).toBe(23);
      expect(
        ok(await run("cycle_count", { bin_id: "A-02", sku: "SKU-OIL-2L", counted: 36 }), 0).variance,
      ).toBe(0);
      expect(
        ok(await run("cycle_count", { bin_id: "B-01", sku: "SKU-RICE-5KG", counted: 8 }), 2).variance,
      ).toBe(-2);
      ok(await run("cancel_purchase_order", { po_id: "PO-3001" }), 2);
      ok(await run("set_reorder_point", { sku: "SKU-OAT-1L", reorder_point: 100 }), 1);
    },
  },
};

describe("built-in corpus environments", () => {
  for (const [name, script] of Object.entries(scripts)) {
    it(`${name}: a scripted session gives the expected results`, async () => {
      expect(script.env.name).toBe(name);
      const transitions = await play(script);
      expect(transitions.length).toBeGreaterThanOrEqual(12);
    });
  }

  it("together the scripts produce deltas 0, 1, 2 and at least three values from 3 to 12", async () => {
    const deltas = new Set<number>();
    for (const script of Object.values(scripts)) {
      expect(script.env.tools.length).toBeGreaterThanOrEqual(6);
      for (const t of await play(script)) {
        deltas.add(t.delta);
        expect(t.delta).toBeLessThanOrEqual(12);
        // Reads never change anything.
        const tool = script.env.tools.find((x) => x.name === t.call.name);
        if (tool?.effect === "read") expect(t.delta).toBe(0);
      }
    }
    for (const d of [0, 1, 2]) expect(deltas.has(d), `delta ${d}`).toBe(true);
    expect([...deltas].filter((d) => d >= 3 && d <= 12).length).toBeGreaterThanOrEqual(3);
  });

  it("every environment has a kebab-case name, a description and read and write tools", () => {
    for (const script of Object.values(scripts)) {
      expect(script.env.name).toMatch(/^[a-z]+(-[a-z]+)*$/);
      expect(script.env.description.length).toBeGreaterThan(10);
      expect(script.env.tools.some((t) => t.effect === "read")).toBe(true);
      expect(script.env.tools.some((t) => t.effect === "write")).toBe(true);
    }
  });

  it("the same seed and calls give identical transitions", async () => {
    for (const script of Object.values(scripts)) {
      const first = JSON.stringify(await play(script));
      const second = JSON.stringify(await play(script));
      expect(second).toBe(first);
    }
  });
});

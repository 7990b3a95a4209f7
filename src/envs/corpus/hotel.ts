import { defineEnvironment } from "../define.js";

type RoomType = "single" | "double" | "suite";
type BookingStatus = "reserved" | "checked_in" | "checked_out" | "cancelled";

interface Room {
  type: RoomType;
  floor: number;
  rate: number;
  max_guests: number;
  status: "available" | "occupied" | "maintenance";
  housekeeping: { clean: boolean; last_cleaned: string };
  maintenance_note: string | null;
}

interface Guest {
  name: string;
  email: string;
  vip: boolean;
  loyalty: { nights: number; tier: "member" | "silver" | "gold" };
  bookings: string[];
}

interface ExtraCharge {
  category: "minibar" | "restaurant" | "spa" | "parking" | "laundry";
  amount: number;
  at: string;
}

interface Booking {
  guest_id: string;
  room: string;
  check_in: string;
  check_out: string;
  nights: number;
  guests: number;
  status: BookingStatus;
  charges: { room: number; extras: number; items: ExtraCharge[] };
  created_at: string;
  checked_in_at: string | null;
  checked_out_at: string | null;
  cancelled_at: string | null;
}

interface HotelState {
  hotel: { name: string; check_in_time: string; free_cancellation_hours: number; max_nights: number };
  rooms: Record<string, Room>;
  guests: Record<string, Guest>;
  bookings: Record<string, Booking>;
  stats: { occupied_rooms: number; revenue: number };
}

const DAY = 86_400_000;
const round2 = (n: number) => Math.round(n * 100) / 100;
const nightsBetween = (from: string, to: string) => Math.round((Date.parse(to) - Date.parse(from)) / DAY);
const isLive = (b: Booking) => b.status === "reserved" || b.status === "checked_in";
/** Two stays clash when each starts before the other ends (check-out day is free for the next guest). */
const overlaps = (b: Booking, checkIn: string, checkOut: string) =>
  b.check_in < checkOut && checkIn < b.check_out;

function tierFor(nights: number): Guest["loyalty"]["tier"] {
  return nights >= 50 ? "gold" : nights >= 20 ? "silver" : "member";
}

function initialState(): HotelState {
  const room = (type: RoomType, floor: number, rate: number, max: number, clean = true): Room => ({
    type,
    floor,
    rate,
    max_guests: max,
    status: "available",
    housekeeping: { clean, last_cleaned: "2024-12-31T11:00:00Z" },
    maintenance_note: null,
  });
  return {
    hotel: {
      name: "Harbor Light Hotel",
      check_in_time: "15:00",
      free_cancellation_hours: 48,
      max_nights: 14,
    },
    rooms: {
      "101": room("single", 1, 119, 1),
      "102": room("double", 1, 159, 2),
      "201": room("double", 2, 169, 3, false),
      "202": { ...room("suite", 2, 349, 4), status: "occupied" },
      "301": { ...room("suite", 3, 399, 4), status: "maintenance", maintenance_note: "leaking shower" },
    },
    guests: {
      "G-01": {
        name: "Priya Raman",
        email: "priya.raman@example.com",
        vip: true,
        loyalty: { nights: 18, tier: "member" },
        bookings: ["BK-501"],
      },
      "G-02": {
        name: "Tom Becker",
        email: "tom.becker@example.com",
        vip: false,
        loyalty: { nights: 3, tier: "member" },
        bookings: ["BK-502"],
      },
      "G-03": {
        name: "Sofia Marino",
        email: "sofia.marino@example.it",
        vip: false,
        loyalty: { nights: 61, tier: "gold" },
        bookings: [],
      },
    },
    bookings: {
      "BK-501": {
        guest_id: "G-01",
        room: "202",
        check_in: "2024-12-30",
        check_out: "2025-01-02",
        nights: 3,
        guests: 2,
        status: "checked_in",
        charges: {
          room: 942.3,
          extras: 38,
          items: [{ category: "minibar", amount: 38, at: "2024-12-30T22:10:00Z" }],
        },
        created_at: "2024-11-02T09:00:00Z",
        checked_in_at: "2024-12-30T15:20:00Z",
        checked_out_at: null,
        cancelled_at: null,
      },
      "BK-502": {
        guest_id: "G-02",
        room: "102",
        check_in: "2025-01-01",
        check_out: "2025-01-04",
        nights: 3,
        guests: 2,
        status: "reserved",
        charges: { room: 477, extras: 0, items: [] },
        created_at: "2024-12-15T12:00:00Z",
        checked_in_at: null,
        checked_out_at: null,
        cancelled_at: null,
      },
    },
    stats: { occupied_rooms: 1, revenue: 0 },
  };
}

const dateField = { type: "string", format: "date" };

/** A single hotel: availability search, bookings, arrivals, folio charges and departures. */
export const hotel = defineEnvironment<HotelState>({
  name: "hotel",
  description: "Hotel front desk: search free rooms, book, check guests in and out, post charges, cancel.",
  initialState,
  tools: {
    search_rooms: {
      description: "List rooms free for every night between check-in and check-out, optionally of one type.",
      effect: "read",
      input: {
        properties: {
          check_in: dateField,
          check_out: dateField,
          guests: { type: "integer", minimum: 1, maximum: 4 },
          type: { type: "string", enum: ["single", "double", "suite"] },
        },
        required: ["check_in", "check_out", "guests"],
      },
      run: ({ state, args, fail }) => {
        if (args.check_out <= args.check_in) fail("check-out must be after check-in");
        const nights = nightsBetween(args.check_in, args.check_out);
        const free = Object.entries(state.rooms).filter(
          ([id, room]) =>
            room.status !== "maintenance" &&
            room.max_guests >= args.guests &&
            (args.type === undefined || room.type === args.type) &&
            !Object.values(state.bookings).some(
              (b) => b.room === id && isLive(b) && overlaps(b, args.check_in, args.check_out),
            ),
        );
        return {
          nights,
          rooms: free.map(([id, room]) => ({
            room: id,
            type: room.type,
            rate: room.rate,
            total: room.rate * nights,
          })),
        };
      },
    },
    get_booking: {
      description: "Return one booking with its folio.",
      effect: "read",
      input: { properties: { booking_id: { type: "string" } }, required: ["booking_id"] },
      run: ({ state, args, fail }) =>
        state.bookings[args.booking_id] ?? fail(`no booking ${args.booking_id}`),
    },
    create_booking: {
      description:
        "Book a room for a guest. The stay must start today or later, last at most 14 nights, fit the room, and not overlap another live booking. VIP guests get 10% off the room rate.",
      effect: "write",
      input: {
        properties: {
          guest_id: { type: "string" },
          room: { type: "string", pattern: "^[0-9]{3}$" },
          check_in: dateField,
          check_out: dateField,
          guests: { type: "integer", minimum: 1, maximum: 4 },
        },
        required: ["guest_id", "room", "check_in", "check_out", "guests"],
      },
      run: ({ state, args, now, ids, fail }) => {
        const guest = state.guests[args.guest_id] ?? fail(`no guest ${args.guest_id}`);
        const room = state.rooms[args.room] ?? fail(`no room ${args.room}`);
        if (args.check_out <= args.check_in) fail("check-out must be after check-in");
        const nights = nightsBetween(args.check_in, args.check_out);
        if (nights > state.hotel.max_nights) fail(`stays are limited to ${state.hotel.max_nights} nights`);
        if (args.guests > room.max_guests) fail(`room ${args.room} sleeps at most ${room.max_guests}`);
        const clash = Object.entries(state.bookings).find(
          ([, b]) => b.room === args.room && isLive(b) && overlaps(b, args.check_in, args.check_out),
        );
        if (clash) fail(`room ${args.room} is booked for those dates`, { conflicting_booking: clash[0] });
        const at = now();
        if (args.check_in < at.slice(0, 10)) fail("check-in date is in the past");
        const id = ids.next("BK");
        const roomTotal = round2(room.rate * nights * (guest.vip ? 0.9 : 1));
        state.bookings[id] = {
          guest_id: args.guest_id,
          room: args.room,
          check_in: args.check_in,
          check_out: args.check_out,
          nights,
          guests: args.guests,
          status: "reserved",
          charges: { room: roomTotal, extras: 0, items: [] },
          created_at: at,
          checked_in_at: null,
          checked_out_at: null,
          cancelled_at: null,
        };
        guest.bookings.push(id);
        return { booking_id: id, nights, room_total: roomTotal };
      },
    },
    check_in_guest: {
      description:
        "Check in a reserved booking on or after its check-in date. The room must be clean and not occupied or under maintenance.",
      effect: "write",
      input: { properties: { booking_id: { type: "string" } }, required: ["booking_id"] },
      run: ({ state, args, now, fail }) => {
        const b = state.bookings[args.booking_id] ?? fail(`no booking ${args.booking_id}`);
        if (b.status !== "reserved") fail(`booking is ${b.status}`);
        const room = state.rooms[b.room] ?? fail(`no room ${b.room}`);
        if (room.status !== "available") fail(`room ${b.room} is ${room.status}`);
        if (!room.housekeeping.clean) fail(`room ${b.room} has not been cleaned yet`);
        const at = now();
        if (at.slice(0, 10) < b.check_in) fail(`check-in opens on ${b.check_in}`);
        b.status = "checked_in";
        b.checked_in_at = at;
        room.status = "occupied";
        state.stats.occupied_rooms += 1;
        return { booking_id: args.booking_id, room: b.room, check_out: b.check_out };
      },
    },
    add_charge: {
      description: "Post an extra charge to the folio of a checked-in booking.",
      effect: "write",
      input: {
        properties: {
          booking_id: { type: "string" },
          category: { type: "string", enum: ["minibar", "restaurant", "spa", "parking", "laundry"] },
          amount: { type: "number", exclusiveMinimum: 0, maximum: 2000 },
        },
        required: ["booking_id", "category", "amount"],
      },
      run: ({ state, args, now, fail }) => {
        const b = state.bookings[args.booking_id] ?? fail(`no booking ${args.booking_id}`);
        if (b.status !== "checked_in") fail("charges can only be posted while the guest is checked in");
        b.charges.items.push({ category: args.category, amount: args.amount, at: now() });
        b.charges.extras = round2(b.charges.extras + args.amount);
        return { booking_id: args.booking_id, extras: b.charges.extras };
      },
    },
    check_out_guest: {
      description:
        "Check out a checked-in booking: settles the folio, frees the room for housekeeping, and credits loyalty nights.",
      effect: "write",
      input: { properties: { booking_id: { type: "string" } }, required: ["booking_id"] },
      run: ({ state, args, now, fail }) => {
        const b = state.bookings[args.booking_id] ?? fail(`no booking ${args.booking_id}`);
        if (b.status !== "checked_in") fail(`booking is ${b.status}`);
        const room = state.rooms[b.room] ?? fail(`no room ${b.room}`);
        const guest = state.guests[b.guest_id] ?? fail(`no guest ${b.guest_id}`);
        const total = round2(b.charges.room + b.charges.extras);
        b.status = "checked_out";
        b.checked_out_at = now();
        room.status = "available";
        room.housekeeping.clean = false;
        guest.loyalty.nights += b.nights;
        guest.loyalty.tier = tierFor(guest.loyalty.nights);
        state.stats.occupied_rooms -= 1;
        state.stats.revenue = round2(state.stats.revenue + total);
        return { booking_id: args.booking_id, total_due: total, loyalty_tier: guest.loyalty.tier };
      },
    },
    cancel_booking: {
      description:
        "Cancel a reserved booking. Free until 48 hours before check-in (at 15:00); later, one night is kept as a fee.",
      effect: "write",
      input: { properties: { booking_id: { type: "string" } }, required: ["booking_id"] },
      run: ({ state, args, now, fail }) => {
        const b = state.bookings[args.booking_id] ?? fail(`no booking ${args.booking_id}`);
        if (b.status !== "reserved") fail(`only reserved bookings can be cancelled; this one is ${b.status}`);
        const at = now();
        const arrival = Date.parse(`${b.check_in}T${state.hotel.check_in_time}:00Z`);
        const late = arrival - Date.parse(at) < state.hotel.free_cancellation_hours * 3_600_000;
        const fee = late ? round2(b.charges.room / b.nights) : 0;
        b.status = "cancelled";
        b.cancelled_at = at;
        b.charges.room = fee;
        return { booking_id: args.booking_id, fee };
      },
    },
    mark_room_clean: {
      description: "Record that housekeeping has cleaned a room.",
      effect: "write",
      input: { properties: { room: { type: "string", pattern: "^[0-9]{3}$" } }, required: ["room"] },
      run: ({ state, args, now, fail }) => {
        const room = state.rooms[args.room] ?? fail(`no room ${args.room}`);
        if (room.status === "occupied")
          fail("occupied rooms are cleaned through the daily service, not here");
        room.housekeeping.clean = true;
        room.housekeeping.last_cleaned = now();
        return { room: args.room, clean: true };
      },
    },
    set_guest_vip: {
      description: "Grant or remove a guest's VIP flag.",
      effect: "write",
      input: {
        properties: { guest_id: { type: "string" }, vip: { type: "boolean" } },
        required: ["guest_id", "vip"],
      },
      run: ({ state, args, fail }) => {
        const guest = state.guests[args.guest_id] ?? fail(`no guest ${args.guest_id}`);
        guest.vip = args.vip;
        return { guest_id: args.guest_id, vip: guest.vip };
      },
    },
  },
});

import { defineEnvironment } from "../define.js";

type Cabin = "economy" | "business";
type Tier = "basic" | "silver" | "gold";

interface Seat {
  cabin: Cabin;
  /** Who sits here, or null when the seat is free. */
  passenger_id: string | null;
}

interface Flight {
  origin: string;
  destination: string;
  departs_at: string;
  arrives_at: string;
  aircraft: string;
  status: "scheduled" | "delayed" | "cancelled" | "departed";
  fares: Record<Cabin, number>;
  /** Free seats per cabin, kept in step with the seat map so searches need not scan it. */
  available: Record<Cabin, number>;
  seats: Record<string, Seat>;
}

interface Passenger {
  name: string;
  email: string;
  passport: { number: string; country: string; expires: string };
  loyalty: { tier: Tier; points: number };
  reservations: string[];
}

interface Reservation {
  flight_id: string;
  passenger_id: string;
  cabin: Cabin;
  seat: string;
  price: number;
  status: "confirmed" | "checked_in" | "cancelled";
  bags: number;
  booked_at: string;
  checked_in_at: string | null;
  cancelled_at: string | null;
  refund: number | null;
}

interface AirlineState {
  flights: Record<string, Flight>;
  passengers: Record<string, Passenger>;
  reservations: Record<string, Reservation>;
  policy: {
    /** Share of the fare refunded when an economy ticket is cancelled more than a day before departure. */
    economy_refund_pct: number;
    max_bags: Record<Cabin, number>;
    check_in_opens_hours: number;
    booking_cutoff_minutes: number;
  };
  counters: { bookings: number; cancellations: number; revenue: number };
}

const HOUR = 3_600_000;
const round2 = (n: number) => Math.round(n * 100) / 100;

/** Loyalty tiers by points: reaching a threshold upgrades, and a tier earned is kept for the year. */
function tierFor(points: number, current: Tier): Tier {
  const earned: Tier = points >= 20_000 ? "gold" : points >= 5_000 ? "silver" : "basic";
  const rank: Record<Tier, number> = { basic: 0, silver: 1, gold: 2 };
  return rank[earned] > rank[current] ? earned : current;
}

/** A small narrow-body seat map: business rows 1-2 (A C D F), economy rows 10-14 (A-F). */
function seatMap(occupied: Record<string, string>): Record<string, Seat> {
  const seats: Record<string, Seat> = {};
  for (const row of [1, 2]) {
    for (const letter of ["A", "C", "D", "F"]) {
      const seat = `${row}${letter}`;
      seats[seat] = { cabin: "business", passenger_id: occupied[seat] ?? null };
    }
  }
  for (const row of [10, 11, 12, 13, 14]) {
    for (const letter of ["A", "B", "C", "D", "E", "F"]) {
      const seat = `${row}${letter}`;
      seats[seat] = { cabin: "economy", passenger_id: occupied[seat] ?? null };
    }
  }
  return seats;
}

function flight(
  route: Pick<Flight, "origin" | "destination" | "departs_at" | "arrives_at" | "aircraft" | "status">,
  fares: Record<Cabin, number>,
  occupied: Record<string, string> = {},
): Flight {
  const seats = seatMap(occupied);
  const free = (cabin: Cabin) =>
    Object.values(seats).filter((seat) => seat.cabin === cabin && seat.passenger_id === null).length;
  return { ...route, fares, available: { economy: free("economy"), business: free("business") }, seats };
}

function initialState(): AirlineState {
  return {
    flights: {
      TA050: flight(
        {
          origin: "SFO",
          destination: "LAX",
          departs_at: "2025-01-01T18:00:00Z",
          arrives_at: "2025-01-01T19:25:00Z",
          aircraft: "A220",
          status: "scheduled",
        },
        { economy: 129, business: 389 },
        { "11C": "PAX-200" },
      ),
      TA100: flight(
        {
          origin: "SFO",
          destination: "JFK",
          departs_at: "2025-01-10T08:00:00Z",
          arrives_at: "2025-01-10T16:30:00Z",
          aircraft: "A321",
          status: "scheduled",
        },
        { economy: 349, business: 1290 },
        { "1A": "PAX-300", "12A": "PAX-400" },
      ),
      TA101: flight(
        {
          origin: "JFK",
          destination: "SFO",
          departs_at: "2025-01-17T14:00:00Z",
          arrives_at: "2025-01-17T20:10:00Z",
          aircraft: "A321",
          status: "scheduled",
        },
        { economy: 329, business: 1190 },
      ),
      TA220: flight(
        {
          origin: "SFO",
          destination: "SEA",
          departs_at: "2025-01-10T12:15:00Z",
          arrives_at: "2025-01-10T14:20:00Z",
          aircraft: "E175",
          status: "delayed",
        },
        { economy: 159, business: 459 },
      ),
      TA330: flight(
        {
          origin: "SEA",
          destination: "SFO",
          departs_at: "2025-01-05T09:00:00Z",
          arrives_at: "2025-01-05T11:05:00Z",
          aircraft: "E175",
          status: "cancelled",
        },
        { economy: 149, business: 449 },
      ),
    },
    passengers: {
      "PAX-100": {
        name: "Amara Okafor",
        email: "amara.okafor@example.com",
        passport: { number: "N4481902", country: "NG", expires: "2029-06-30" },
        loyalty: { tier: "silver", points: 19_800 },
        reservations: [],
      },
      "PAX-200": {
        name: "Lukas Brandt",
        email: "lukas.brandt@example.de",
        passport: { number: "C01X00T47", country: "DE", expires: "2031-02-11" },
        loyalty: { tier: "basic", points: 640 },
        reservations: ["RES-7001"],
      },
      "PAX-300": {
        name: "Mei Tanaka",
        email: "mei.tanaka@example.jp",
        passport: { number: "TZ1029384", country: "JP", expires: "2027-09-01" },
        loyalty: { tier: "gold", points: 52_310 },
        reservations: ["RES-7002"],
      },
      "PAX-400": {
        name: "Diego Ramos",
        email: "diego.ramos@example.com",
        // Expires before January's flights: booking him must be refused.
        passport: { number: "P7730021", country: "MX", expires: "2025-01-08" },
        loyalty: { tier: "basic", points: 1_200 },
        reservations: ["RES-7003"],
      },
    },
    reservations: {
      "RES-7001": {
        flight_id: "TA050",
        passenger_id: "PAX-200",
        cabin: "economy",
        seat: "11C",
        price: 129,
        status: "confirmed",
        bags: 0,
        booked_at: "2024-12-02T10:15:00Z",
        checked_in_at: null,
        cancelled_at: null,
        refund: null,
      },
      "RES-7002": {
        flight_id: "TA100",
        passenger_id: "PAX-300",
        cabin: "business",
        seat: "1A",
        price: 1290,
        status: "confirmed",
        bags: 0,
        booked_at: "2024-11-20T08:00:00Z",
        checked_in_at: null,
        cancelled_at: null,
        refund: null,
      },
      "RES-7003": {
        flight_id: "TA100",
        passenger_id: "PAX-400",
        cabin: "economy",
        seat: "12A",
        price: 349,
        status: "confirmed",
        bags: 0,
        booked_at: "2024-10-05T19:40:00Z",
        checked_in_at: null,
        cancelled_at: null,
        refund: null,
      },
    },
    policy: {
      economy_refund_pct: 80,
      max_bags: { economy: 2, business: 3 },
      check_in_opens_hours: 24,
      booking_cutoff_minutes: 60,
    },
    counters: { bookings: 3, cancellations: 0, revenue: 1768 },
  };
}

const reservationId = { type: "string", pattern: "^RES[-_][0-9A-Za-z]+$" };
const seatCode = { type: "string", pattern: "^[0-9]{1,2}[A-F]$" };

/** Flight reservations: search flights, book seats, change seats, check in and cancel. */
export const airline = defineEnvironment<AirlineState>({
  name: "airline",
  description: "Airline booking: search flights, book and cancel reservations, pick seats, check in.",
  initialState,
  tools: {
    search_flights: {
      description: "List flights between two airports on a date, with fares and free seats per cabin.",
      effect: "read",
      input: {
        properties: {
          origin: { type: "string", pattern: "^[A-Z]{3}$", description: "IATA airport code" },
          destination: { type: "string", pattern: "^[A-Z]{3}$" },
          date: { type: "string", format: "date", description: "Departure date (UTC)" },
        },
        required: ["origin", "destination", "date"],
      },
      run: ({ state, args }) => ({
        flights: Object.entries(state.flights)
          .filter(
            ([, f]) =>
              f.origin === args.origin &&
              f.destination === args.destination &&
              f.departs_at.slice(0, 10) === args.date,
          )
          .map(([id, f]) => ({
            flight_id: id,
            departs_at: f.departs_at,
            arrives_at: f.arrives_at,
            status: f.status,
            fares: f.fares,
            available: f.available,
          })),
      }),
    },
    get_seat_map: {
      description: "Return the free seats of one cabin of a flight.",
      effect: "read",
      input: {
        properties: {
          flight_id: { type: "string" },
          cabin: { type: "string", enum: ["economy", "business"] },
        },
        required: ["flight_id", "cabin"],
      },
      run: ({ state, args, fail }) => {
        const f = state.flights[args.flight_id] ?? fail(`no flight ${args.flight_id}`);
        const free = Object.entries(f.seats)
          .filter(([, seat]) => seat.cabin === args.cabin && seat.passenger_id === null)
          .map(([code]) => code);
        return { flight_id: args.flight_id, cabin: args.cabin, free_seats: free };
      },
    },
    get_reservation: {
      description: "Return one reservation by its id.",
      effect: "read",
      input: { properties: { reservation_id: reservationId }, required: ["reservation_id"] },
      run: ({ state, args, fail }) =>
        state.reservations[args.reservation_id] ?? fail(`no reservation ${args.reservation_id}`),
    },
    book_flight: {
      description:
        "Book a seat for a passenger: the seat must be free and in the chosen cabin, the passport valid on the day, and booking closes an hour before departure. Earns loyalty points (double in business).",
      effect: "write",
      input: {
        properties: {
          passenger_id: { type: "string" },
          flight_id: { type: "string" },
          cabin: { type: "string", enum: ["economy", "business"] },
          seat: seatCode,
        },
        required: ["passenger_id", "flight_id", "cabin", "seat"],
      },
      run: ({ state, args, now, ids, fail }) => {
        const f = state.flights[args.flight_id] ?? fail(`no flight ${args.flight_id}`);
        const pax = state.passengers[args.passenger_id] ?? fail(`no passenger ${args.passenger_id}`);
        if (f.status === "cancelled" || f.status === "departed")
          fail(`flight ${args.flight_id} is ${f.status}`);
        const seat = f.seats[args.seat] ?? fail(`flight ${args.flight_id} has no seat ${args.seat}`);
        if (seat.cabin !== args.cabin) fail(`seat ${args.seat} is in ${seat.cabin}, not ${args.cabin}`);
        if (seat.passenger_id !== null) fail(`seat ${args.seat} is taken`);
        if (pax.passport.expires <= f.departs_at.slice(0, 10))
          fail("the passenger's passport expires before the flight", { expires: pax.passport.expires });
        const already = pax.reservations.some((id) => {
          const r = state.reservations[id];
          return r !== undefined && r.flight_id === args.flight_id && r.status !== "cancelled";
        });
        if (already) fail(`passenger ${args.passenger_id} is already booked on ${args.flight_id}`);
        const at = now();
        const cutoff = Date.parse(f.departs_at) - state.policy.booking_cutoff_minutes * 60_000;
        if (Date.parse(at) > cutoff) fail("booking for this flight has closed");

        const cabin = args.cabin as Cabin;
        const price = f.fares[cabin];
        const id = ids.next("RES");
        seat.passenger_id = args.passenger_id;
        f.available[cabin] -= 1;
        state.reservations[id] = {
          flight_id: args.flight_id,
          passenger_id: args.passenger_id,
          cabin,
          seat: args.seat,
          price,
          status: "confirmed",
          bags: 0,
          booked_at: at,
          checked_in_at: null,
          cancelled_at: null,
          refund: null,
        };
        pax.reservations.push(id);
        const earned = Math.round(price) * (cabin === "business" ? 2 : 1);
        pax.loyalty.points += earned;
        pax.loyalty.tier = tierFor(pax.loyalty.points, pax.loyalty.tier);
        state.counters.bookings += 1;
        state.counters.revenue = round2(state.counters.revenue + price);
        return { reservation_id: id, price, points_earned: earned, tier: pax.loyalty.tier };
      },
    },
    change_seat: {
      description: "Move a confirmed reservation to another free seat in the same cabin.",
      effect: "write",
      input: {
        properties: { reservation_id: reservationId, new_seat: seatCode },
        required: ["reservation_id", "new_seat"],
      },
      run: ({ state, args, fail }) => {
        const r = state.reservations[args.reservation_id] ?? fail(`no reservation ${args.reservation_id}`);
        if (r.status !== "confirmed")
          fail(`reservation is ${r.status}; only confirmed ones can change seats`);
        const f = state.flights[r.flight_id] ?? fail(`no flight ${r.flight_id}`);
        const target = f.seats[args.new_seat] ?? fail(`flight ${r.flight_id} has no seat ${args.new_seat}`);
        if (target.cabin !== r.cabin) fail(`seat ${args.new_seat} is not in ${r.cabin}`);
        if (target.passenger_id !== null) fail(`seat ${args.new_seat} is taken`);
        const old = f.seats[r.seat];
        if (old) old.passenger_id = null;
        target.passenger_id = r.passenger_id;
        const from = r.seat;
        r.seat = args.new_seat;
        return { reservation_id: args.reservation_id, from, to: args.new_seat };
      },
    },
    check_in: {
      description:
        "Check in a confirmed reservation and declare checked bags. Check-in opens 24 hours before departure.",
      effect: "write",
      input: {
        properties: {
          reservation_id: reservationId,
          bags: { type: "integer", minimum: 0, maximum: 3 },
        },
        required: ["reservation_id", "bags"],
      },
      run: ({ state, args, now, fail }) => {
        const r = state.reservations[args.reservation_id] ?? fail(`no reservation ${args.reservation_id}`);
        if (r.status !== "confirmed") fail(`reservation is ${r.status}`);
        const f = state.flights[r.flight_id] ?? fail(`no flight ${r.flight_id}`);
        if (f.status !== "scheduled" && f.status !== "delayed") fail(`flight is ${f.status}`);
        const limit = state.policy.max_bags[r.cabin];
        if (args.bags > limit) fail(`${r.cabin} allows at most ${limit} checked bags`);
        const at = now();
        const opens = Date.parse(f.departs_at) - state.policy.check_in_opens_hours * HOUR;
        if (Date.parse(at) < opens)
          fail("check-in is not open yet", { opens_at: new Date(opens).toISOString() });
        r.status = "checked_in";
        r.bags = args.bags;
        r.checked_in_at = at;
        return {
          reservation_id: args.reservation_id,
          seat: r.seat,
          boarding_group: r.cabin === "business" ? 1 : 3,
        };
      },
    },
    cancel_reservation: {
      description:
        "Cancel a confirmed reservation: frees the seat, takes back its loyalty points, and refunds business in full or economy at 80% when more than 24 hours remain.",
      effect: "write",
      input: { properties: { reservation_id: reservationId }, required: ["reservation_id"] },
      run: ({ state, args, now, fail }) => {
        const r = state.reservations[args.reservation_id] ?? fail(`no reservation ${args.reservation_id}`);
        if (r.status === "checked_in") fail("checked-in reservations cannot be cancelled");
        if (r.status === "cancelled") fail("reservation is already cancelled");
        const f = state.flights[r.flight_id] ?? fail(`no flight ${r.flight_id}`);
        const pax = state.passengers[r.passenger_id] ?? fail(`no passenger ${r.passenger_id}`);
        const at = now();
        const early = Date.parse(f.departs_at) - Date.parse(at) > 24 * HOUR;
        // A cancelled flight is always refunded in full: the airline broke the contract, not the passenger.
        const pct =
          f.status === "cancelled" || r.cabin === "business"
            ? 100
            : early
              ? state.policy.economy_refund_pct
              : 0;
        const refund = round2((r.price * pct) / 100);
        r.status = "cancelled";
        r.cancelled_at = at;
        r.refund = refund;
        const seat = f.seats[r.seat];
        if (seat) seat.passenger_id = null;
        f.available[r.cabin] += 1;
        const earned = Math.round(r.price) * (r.cabin === "business" ? 2 : 1);
        pax.loyalty.points = Math.max(0, pax.loyalty.points - earned);
        state.counters.cancellations += 1;
        state.counters.revenue = round2(state.counters.revenue - refund);
        return { reservation_id: args.reservation_id, refund };
      },
    },
    update_contact: {
      description: "Change a passenger's contact email.",
      effect: "write",
      input: {
        properties: { passenger_id: { type: "string" }, email: { type: "string", format: "email" } },
        required: ["passenger_id", "email"],
      },
      run: ({ state, args, fail }) => {
        const pax = state.passengers[args.passenger_id] ?? fail(`no passenger ${args.passenger_id}`);
        if (pax.email === args.email) fail("that is already the passenger's email");
        pax.email = args.email;
        return { passenger_id: args.passenger_id, email: args.email };
      },
    },
  },
});

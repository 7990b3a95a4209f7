import { defineEnvironment } from "../define.js";

type MemberType = "adult" | "child" | "staff";
type Condition = "good" | "worn" | "damaged";

interface Copy {
  branch: string;
  condition: Condition;
  status: "available" | "on_loan" | "on_hold_shelf" | "lost";
  loan_id: string | null;
  /** The member a copy on the hold shelf is kept for. */
  held_for: string | null;
}

interface Book {
  title: string;
  author: string;
  year: number;
  copies: Record<string, Copy>;
  /** Members waiting for this title, first come first served. */
  holds: string[];
}

interface LibraryMember {
  name: string;
  type: MemberType;
  status: "active" | "suspended";
  loans: string[];
  fines: number;
  total_loans: number;
}

interface Loan {
  isbn: string;
  copy_id: string;
  member_id: string;
  borrowed_at: string;
  due: string;
  renewals: number;
  status: "active" | "returned";
  returned_at: string | null;
  fine: number;
}

interface LibraryState {
  books: Record<string, Book>;
  members: Record<string, LibraryMember>;
  loans: Record<string, Loan>;
  policy: {
    loan_days: Record<MemberType, number>;
    max_loans: Record<MemberType, number>;
    max_renewals: number;
    daily_fine: number;
    max_fine_per_loan: number;
    damage_fee: number;
    /** Members owing this much or more cannot borrow. */
    fine_block: number;
  };
}

const DAY = 86_400_000;
const round2 = (n: number) => Math.round(n * 100) / 100;
const addDays = (iso: string, days: number) =>
  new Date(Date.parse(iso) + days * DAY).toISOString().slice(0, 10);

function findCopy(state: LibraryState, copyId: string): { isbn: string; book: Book; copy: Copy } | undefined {
  for (const [isbn, book] of Object.entries(state.books)) {
    const copy = book.copies[copyId];
    if (copy) return { isbn, book, copy };
  }
  return undefined;
}

function initialState(): LibraryState {
  const copy = (branch: string, status: Copy["status"] = "available", loan: string | null = null): Copy => ({
    branch,
    condition: "good",
    status,
    loan_id: loan,
    held_for: null,
  });
  return {
    books: {
      "9780441013593": {
        title: "Dune",
        author: "Frank Herbert",
        year: 1965,
        copies: { "C-1001": copy("central"), "C-1002": copy("central", "on_loan", "L-900") },
        holds: [],
      },
      "9780062315007": {
        title: "The Alchemist",
        author: "Paulo Coelho",
        year: 1988,
        copies: { "C-2001": copy("riverside", "on_loan", "L-901") },
        holds: ["M-03"],
      },
      "9780307277671": {
        title: "The Road",
        author: "Cormac McCarthy",
        year: 2006,
        copies: { "C-3001": copy("central"), "C-3002": { ...copy("riverside"), condition: "worn" } },
        holds: [],
      },
      "9780439708180": {
        title: "Harry Potter and the Sorcerer's Stone",
        author: "J. K. Rowling",
        year: 1997,
        copies: { "C-4001": copy("riverside", "lost") },
        holds: [],
      },
    },
    members: {
      "M-01": {
        name: "Grace Hopper",
        type: "adult",
        status: "active",
        loans: ["L-900"],
        fines: 0,
        total_loans: 41,
      },
      "M-02": {
        name: "Leo Park",
        type: "child",
        status: "active",
        loans: ["L-901"],
        fines: 1.5,
        total_loans: 7,
      },
      "M-03": {
        name: "Nadia Haddad",
        type: "staff",
        status: "active",
        loans: [],
        fines: 0,
        total_loans: 120,
      },
      "M-04": {
        name: "Ivan Petrov",
        type: "adult",
        status: "active",
        loans: [],
        fines: 12.75,
        total_loans: 9,
      },
      "M-05": { name: "Zoe Adams", type: "adult", status: "suspended", loans: [], fines: 0, total_loans: 2 },
    },
    loans: {
      "L-900": {
        isbn: "9780441013593",
        copy_id: "C-1002",
        member_id: "M-01",
        borrowed_at: "2024-12-20T10:00:00Z",
        due: "2025-01-10",
        renewals: 0,
        status: "active",
        returned_at: null,
        fine: 0,
      },
      "L-901": {
        isbn: "9780062315007",
        copy_id: "C-2001",
        member_id: "M-02",
        borrowed_at: "2024-12-06T15:30:00Z",
        // Twelve days overdue on 2025-01-01.
        due: "2024-12-20",
        renewals: 1,
        status: "active",
        returned_at: null,
        fine: 0,
      },
    },
    policy: {
      loan_days: { adult: 21, child: 14, staff: 42 },
      max_loans: { adult: 5, child: 3, staff: 10 },
      max_renewals: 2,
      daily_fine: 0.25,
      max_fine_per_loan: 10,
      damage_fee: 15,
      fine_block: 10,
    },
  };
}

const copyId = { type: "string", pattern: "^C-[0-9]{4}$" };
const memberId = { type: "string", pattern: "^M-[0-9]{2}$" };

/** A public library: catalog search, loans with due dates, renewals, holds queues and fines. */
export const libraryLoans = defineEnvironment<LibraryState>({
  name: "library-loans",
  description:
    "Library circulation: search the catalog, lend and return copies, renew, queue holds, pay fines.",
  initialState,
  tools: {
    search_catalog: {
      description:
        "Find titles whose title or author contains the query, with how many copies are on the shelf.",
      effect: "read",
      input: { properties: { query: { type: "string", minLength: 2 } }, required: ["query"] },
      run: ({ state, args }) => {
        const q = String(args.query).toLowerCase();
        return {
          results: Object.entries(state.books)
            .filter(([, b]) => b.title.toLowerCase().includes(q) || b.author.toLowerCase().includes(q))
            .map(([isbn, b]) => ({
              isbn,
              title: b.title,
              author: b.author,
              available: Object.values(b.copies).filter((c) => c.status === "available").length,
              holds: b.holds.length,
            })),
        };
      },
    },
    get_member: {
      description: "Return a member's account: loans with due dates, fines, standing.",
      effect: "read",
      input: { properties: { member_id: memberId }, required: ["member_id"] },
      run: ({ state, args, fail }) => {
        const m = state.members[args.member_id] ?? fail(`no member ${args.member_id}`);
        return {
          ...m,
          loans: m.loans.map((id) => ({
            loan_id: id,
            due: state.loans[id]?.due,
            copy_id: state.loans[id]?.copy_id,
          })),
        };
      },
    },
    checkout_copy: {
      description:
        "Lend a copy to a member. The member must be active, owe less than 10.00 and be under their loan limit; a copy on the hold shelf goes only to the member it is held for.",
      effect: "write",
      input: { properties: { member_id: memberId, copy_id: copyId }, required: ["member_id", "copy_id"] },
      run: ({ state, args, now, ids, fail }) => {
        const member = state.members[args.member_id] ?? fail(`no member ${args.member_id}`);
        const found = findCopy(state, args.copy_id) ?? fail(`no copy ${args.copy_id}`);
        if (member.status !== "active") fail("the member's card is suspended");
        if (member.fines >= state.policy.fine_block)
          fail(
            `the member owes ${member.fines.toFixed(2)}; borrowing is blocked from ${state.policy.fine_block}`,
          );
        const limit = state.policy.max_loans[member.type];
        if (member.loans.length >= limit) fail(`${member.type} members may have ${limit} loans at a time`);
        const { copy } = found;
        if (copy.status === "on_hold_shelf" && copy.held_for !== args.member_id)
          fail("this copy is held for another member");
        if (copy.status !== "available" && copy.status !== "on_hold_shelf")
          fail(`copy ${args.copy_id} is ${copy.status}`);
        const at = now();
        const id = ids.next("LOAN");
        const due = addDays(at, state.policy.loan_days[member.type]);
        state.loans[id] = {
          isbn: found.isbn,
          copy_id: args.copy_id,
          member_id: args.member_id,
          borrowed_at: at,
          due,
          renewals: 0,
          status: "active",
          returned_at: null,
          fine: 0,
        };
        copy.status = "on_loan";
        copy.loan_id = id;
        copy.held_for = null;
        member.loans.push(id);
        member.total_loans += 1;
        return { loan_id: id, due };
      },
    },
    renew_loan: {
      description:
        "Extend an active loan by another loan period from its due date. Refused when overdue, when renewed twice already, or when others are waiting for the title.",
      effect: "write",
      input: { properties: { loan_id: { type: "string" } }, required: ["loan_id"] },
      run: ({ state, args, now, fail }) => {
        const loan = state.loans[args.loan_id] ?? fail(`no loan ${args.loan_id}`);
        if (loan.status !== "active") fail("the loan was returned");
        const member = state.members[loan.member_id] ?? fail(`no member ${loan.member_id}`);
        const book = state.books[loan.isbn] ?? fail(`no book ${loan.isbn}`);
        if (loan.renewals >= state.policy.max_renewals)
          fail(`a loan can be renewed ${state.policy.max_renewals} times`);
        if (book.holds.length > 0) fail("other members are waiting for this title");
        if (now().slice(0, 10) > loan.due) fail("overdue loans must be returned, not renewed");
        loan.due = addDays(`${loan.due}T00:00:00Z`, state.policy.loan_days[member.type]);
        loan.renewals += 1;
        return { loan_id: args.loan_id, due: loan.due, renewals: loan.renewals };
      },
    },
    return_copy: {
      description:
        "Return a loaned copy. Late returns are fined 0.25 a day (at most 10.00); a copy returned damaged adds 15.00. If members are waiting, the copy goes to the hold shelf for the first of them.",
      effect: "write",
      input: {
        properties: {
          loan_id: { type: "string" },
          condition: { type: "string", enum: ["good", "worn", "damaged"] },
        },
        required: ["loan_id"],
      },
      run: ({ state, args, now, fail }) => {
        const loan = state.loans[args.loan_id] ?? fail(`no loan ${args.loan_id}`);
        if (loan.status !== "active") fail("the loan was already returned");
        const book = state.books[loan.isbn] ?? fail(`no book ${loan.isbn}`);
        const copy = book.copies[loan.copy_id] ?? fail(`no copy ${loan.copy_id}`);
        const member = state.members[loan.member_id] ?? fail(`no member ${loan.member_id}`);
        const at = now();
        const daysLate = Math.max(
          0,
          Math.floor((Date.parse(at) - Date.parse(`${loan.due}T23:59:59Z`)) / DAY) + 1,
        );
        const lateFine = Math.min(state.policy.max_fine_per_loan, round2(daysLate * state.policy.daily_fine));
        const damaged = args.condition === "damaged" && copy.condition !== "damaged";
        const fine = round2(lateFine + (damaged ? state.policy.damage_fee : 0));
        loan.status = "returned";
        loan.returned_at = at;
        loan.fine = fine;
        if (args.condition) copy.condition = args.condition;
        copy.loan_id = null;
        const next = book.holds[0];
        if (next !== undefined) {
          copy.status = "on_hold_shelf";
          copy.held_for = next;
          book.holds = book.holds.slice(1);
        } else {
          copy.status = "available";
        }
        member.loans = member.loans.filter((id) => id !== args.loan_id);
        member.fines = round2(member.fines + fine);
        return { loan_id: args.loan_id, days_late: daysLate, fine, held_for: next ?? null };
      },
    },
    place_hold: {
      description:
        "Join the waiting list for a title. Only when no copy is on the shelf, and not for a title the member already has or is waiting for.",
      effect: "write",
      input: {
        properties: { member_id: memberId, isbn: { type: "string", pattern: "^97[89][0-9]{10}$" } },
        required: ["member_id", "isbn"],
      },
      run: ({ state, args, fail }) => {
        const member = state.members[args.member_id] ?? fail(`no member ${args.member_id}`);
        const book = state.books[args.isbn] ?? fail(`no book ${args.isbn}`);
        if (member.status !== "active") fail("the member's card is suspended");
        if (Object.values(book.copies).some((c) => c.status === "available"))
          fail("a copy is on the shelf; check it out instead");
        if (book.holds.includes(args.member_id)) fail("the member is already waiting for this title");
        if (member.loans.some((id) => state.loans[id]?.isbn === args.isbn))
          fail("the member already has this title");
        book.holds.push(args.member_id);
        return { isbn: args.isbn, position: book.holds.length };
      },
    },
    pay_fine: {
      description: "Pay part or all of what a member owes.",
      effect: "write",
      input: {
        properties: { member_id: memberId, amount: { type: "number", exclusiveMinimum: 0, maximum: 500 } },
        required: ["member_id", "amount"],
      },
      run: ({ state, args, fail }) => {
        const member = state.members[args.member_id] ?? fail(`no member ${args.member_id}`);
        if (member.fines === 0) fail("the member owes nothing");
        if (args.amount > member.fines) fail(`the member owes only ${member.fines.toFixed(2)}`);
        member.fines = round2(member.fines - args.amount);
        return { member_id: args.member_id, fines: member.fines };
      },
    },
  },
});

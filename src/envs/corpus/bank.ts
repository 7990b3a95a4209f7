import { defineEnvironment, type EnvironmentDefinition } from "../define.js";

interface Account {
  owner: string;
  balance: number;
  currency: string;
  status: "open" | "frozen" | "closed";
  opened_at: string;
}

interface Transfer {
  id: string;
  from: string;
  to: string;
  amount: number;
  memo: string;
  created_at: string;
}

interface BankState {
  accounts: Record<string, Account>;
  transfers: Record<string, Transfer>;
  limits: { daily_transfer_max: number };
  stats: { transfer_count: number; total_moved: number };
}

/** A small retail bank: accounts, transfers between them, and freezes (its definition, whose tools' code the benchmarks also run alone). */
export const bankDefinition: EnvironmentDefinition<BankState> = {
  name: "bank",
  description: "Retail banking: look up accounts, open and close them, move money between them, freeze them.",
  initialState: {
    accounts: {
      "ACC-1001": {
        owner: "Maria Lopez",
        balance: 2500,
        currency: "USD",
        status: "open",
        opened_at: "2023-04-02T10:00:00Z",
      },
      "ACC-1002": {
        owner: "Maria Lopez",
        balance: 120.5,
        currency: "USD",
        status: "open",
        opened_at: "2024-01-15T09:30:00Z",
      },
      "ACC-2001": {
        owner: "Dev Patel",
        balance: 40,
        currency: "USD",
        status: "frozen",
        opened_at: "2022-11-20T14:00:00Z",
      },
    },
    transfers: {},
    limits: { daily_transfer_max: 1000 },
    stats: { transfer_count: 0, total_moved: 0 },
  },
  tools: {
    get_account: {
      description: "Return one account by its id.",
      effect: "read",
      input: { properties: { account_id: { type: "string" } }, required: ["account_id"] },
      run: ({ state, args, fail }) =>
        state.accounts[args.account_id] ?? fail(`no account ${args.account_id}`),
    },
    list_accounts: {
      description: "List the ids of the accounts of an owner.",
      effect: "read",
      input: { properties: { owner: { type: "string" } }, required: ["owner"] },
      run: ({ state, args }) => ({
        account_ids: Object.entries(state.accounts)
          .filter(([, account]) => account.owner === args.owner)
          .map(([id]) => id),
      }),
    },
    open_account: {
      description: "Open a new account for an owner with an initial deposit.",
      effect: "write",
      input: {
        properties: {
          owner: { type: "string", minLength: 1 },
          deposit: { type: "number", minimum: 0 },
          currency: { type: "string", enum: ["USD", "EUR"] },
        },
        required: ["owner", "deposit"],
      },
      run: ({ state, args, ids, now }) => {
        const id = `ACC-${ids.next().slice(0, 6).toUpperCase()}`;
        state.accounts[id] = {
          owner: args.owner,
          balance: args.deposit,
          currency: args.currency ?? "USD",
          status: "open",
          opened_at: now(),
        };
        return { account_id: id };
      },
    },
    transfer: {
      description: "Move money between two open accounts in the same currency, within the daily limit.",
      effect: "write",
      input: {
        properties: {
          from_account: { type: "string" },
          to_account: { type: "string" },
          amount: { type: "number", exclusiveMinimum: 0 },
          memo: { type: "string", maxLength: 140 },
        },
        required: ["from_account", "to_account", "amount"],
      },
      run: ({ state, args, ids, now, fail }) => {
        const from = state.accounts[args.from_account] ?? fail(`no account ${args.from_account}`);
        const to = state.accounts[args.to_account] ?? fail(`no account ${args.to_account}`);
        if (args.from_account === args.to_account) fail("cannot transfer to the same account");
        if (from.status !== "open" || to.status !== "open") fail("both accounts must be open");
        if (from.currency !== to.currency) fail("accounts use different currencies");
        if (args.amount > state.limits.daily_transfer_max)
          fail(`amount exceeds the daily limit of ${state.limits.daily_transfer_max}`);
        if (from.balance < args.amount) fail("insufficient funds");
        from.balance = Math.round((from.balance - args.amount) * 100) / 100;
        to.balance = Math.round((to.balance + args.amount) * 100) / 100;
        const id = `TRF-${ids.next().slice(0, 8).toUpperCase()}`;
        state.transfers[id] = {
          id,
          from: args.from_account,
          to: args.to_account,
          amount: args.amount,
          memo: args.memo ?? "",
          created_at: now(),
        };
        state.stats.transfer_count += 1;
        state.stats.total_moved = Math.round((state.stats.total_moved + args.amount) * 100) / 100;
        return { transfer_id: id, from_balance: from.balance, to_balance: to.balance };
      },
    },
    freeze_account: {
      description: "Freeze an open account.",
      effect: "write",
      input: { properties: { account_id: { type: "string" } }, required: ["account_id"] },
      run: ({ state, args, fail }) => {
        const account = state.accounts[args.account_id] ?? fail(`no account ${args.account_id}`);
        if (account.status !== "open") fail(`account is ${account.status}`);
        account.status = "frozen";
        return { account_id: args.account_id, status: "frozen" };
      },
    },
    close_account: {
      description: "Close an account whose balance is zero.",
      effect: "write",
      input: { properties: { account_id: { type: "string" } }, required: ["account_id"] },
      run: ({ state, args, fail }) => {
        const account = state.accounts[args.account_id] ?? fail(`no account ${args.account_id}`);
        if (account.balance !== 0) fail("only accounts with a zero balance can be closed");
        account.status = "closed";
        return { account_id: args.account_id, status: "closed" };
      },
    },
  },
};

export const bank = defineEnvironment(bankDefinition);

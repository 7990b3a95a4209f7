import { describe, expect, it } from "vitest";
import { clinic } from "../../src/envs/corpus/clinic.js";
import type { EnvironmentInstance } from "../../src/envs/types.js";
import { changed, rejected, state, step } from "../helpers/transitions.js";

async function fresh(): Promise<EnvironmentInstance> {
  return clinic.create({ seed: 1 });
}

describe("clinic", () => {
  it("reads change nothing", async () => {
    const instance = await fresh();
    const open = await step(instance, "list_open_times", { provider_id: "DR-LIND" });
    expect(open.observation).toEqual({
      provider_id: "DR-LIND",
      on_duty: true,
      open: ["09:30", "10:00", "11:00", "14:00"],
    });
    const stock = await step(instance, "pharmacy_stock");
    expect((stock.observation as any).drugs).toHaveLength(5);
    for (const t of [
      open,
      stock,
      await step(instance, "get_patient", { patient_id: "PT-1001" }),
      await step(instance, "get_appointment", { appointment_id: "APT-2001" }),
    ]) {
      expect(t.success).toBe(true);
      expect(t.delta).toBe(0);
    }
    rejected(await step(instance, "get_patient", { patient_id: "PT-9" }), "no patient");
  });

  it("book_appointment fills a free time; guards for duty, taken times and balances", async () => {
    const instance = await fresh();
    const booked = await step(instance, "book_appointment", {
      patient_id: "PT-1004",
      provider_id: "DR-OKAFOR",
      time: "14:00",
      reason: "flu symptoms",
    });
    const id = (booked.observation as any).appointment_id;
    changed(booked, [
      `appointments.${id}`,
      "providers.DR-OKAFOR.schedule.14:00",
      "patients.PT-1004.appointments",
    ]);
    expect((await state(instance)).appointments[id]).toMatchObject({ status: "scheduled", time: "14:00" });
    const args = { patient_id: "PT-1002", reason: "check-up" };
    rejected(
      await step(instance, "book_appointment", { ...args, provider_id: "DR-SATO", time: "10:00" }),
      "not on duty",
    );
    rejected(
      await step(instance, "book_appointment", { ...args, provider_id: "DR-OKAFOR", time: "14:00" }),
      "already booked",
    );
    rejected(
      await step(instance, "book_appointment", { ...args, provider_id: "DR-LIND", time: "14:30" }),
      "does not see patients at 14:30",
    );
    // Hannah owes 180; a no-show fee takes her past the 200 limit.
    await step(instance, "mark_no_show", { appointment_id: "APT-2005" });
    rejected(
      await step(instance, "book_appointment", {
        patient_id: "PT-1003",
        provider_id: "DR-LIND",
        time: "14:00",
        reason: "follow-up",
      }),
      "settle the balance",
    );
  });

  it("cancel_appointment frees the time; a late one costs a fee", async () => {
    const instance = await fresh();
    changed(await step(instance, "cancel_appointment", { appointment_id: "APT-2006", late: true }), [
      "appointments.APT-2006.status",
      "appointments.APT-2006.cancelled_at",
      "providers.DR-OKAFOR.schedule.11:00",
      "patients.PT-1004.balance",
    ]);
    expect((await state(instance)).patients["PT-1004"].balance).toBe(15);
    changed(await step(instance, "cancel_appointment", { appointment_id: "APT-2005", late: false }), [
      "appointments.APT-2005.status",
      "appointments.APT-2005.cancelled_at",
      "providers.DR-LIND.schedule.10:30",
    ]);
    rejected(
      await step(instance, "cancel_appointment", { appointment_id: "APT-2001", late: false }),
      "in_room",
    );
  });

  it("check_in queues the patient and collects or bills the copay", async () => {
    const instance = await fresh();
    changed(await step(instance, "check_in", { appointment_id: "APT-2006", collect_copay: true }), [
      "appointments.APT-2006.status",
      "appointments.APT-2006.checked_in_at",
      "providers.DR-OKAFOR.queue",
      "stats.revenue",
    ]);
    expect((await state(instance)).providers["DR-OKAFOR"].queue).toEqual(["APT-2004", "APT-2006"]);
    // No copay on Hannah's plan: nothing to collect or bill.
    changed(await step(instance, "check_in", { appointment_id: "APT-2005", collect_copay: false }), [
      "appointments.APT-2005.status",
      "appointments.APT-2005.checked_in_at",
      "providers.DR-LIND.queue",
    ]);
    rejected(
      await step(instance, "check_in", { appointment_id: "APT-2002", collect_copay: true }),
      "not on duty",
    );
    rejected(
      await step(instance, "check_in", { appointment_id: "APT-2004", collect_copay: true }),
      "checked_in",
    );
  });

  it("room_patient takes a queued patient into a free room", async () => {
    const instance = await fresh();
    rejected(
      await step(instance, "room_patient", { appointment_id: "APT-2004", room_id: "EX-4" }),
      "cleaning",
    );
    changed(await step(instance, "room_patient", { appointment_id: "APT-2004", room_id: "EX-3" }), [
      "appointments.APT-2004.status",
      "appointments.APT-2004.room",
      "rooms.EX-3.status",
      "rooms.EX-3.patient_id",
      "rooms.EX-3.provider_id",
      "providers.DR-OKAFOR.queue",
    ]);
    rejected(
      await step(instance, "room_patient", { appointment_id: "APT-2006", room_id: "EX-3" }),
      "check the patient in first",
    );
    changed(await step(instance, "clean_room", { room_id: "EX-4" }), ["rooms.EX-4.status"]);
    rejected(await step(instance, "clean_room", { room_id: "EX-4" }), "EX-4 is free");
  });

  it("record_vitals sets the signs given", async () => {
    const instance = await fresh();
    changed(await step(instance, "record_vitals", { appointment_id: "APT-2001", bp: "128/84", pulse: 72 }), [
      "appointments.APT-2001.vitals.bp",
      "appointments.APT-2001.vitals.pulse",
    ]);
    rejected(await step(instance, "record_vitals", { appointment_id: "APT-2006", pulse: 70 }), "scheduled");
    expect((await step(instance, "record_vitals", { appointment_id: "APT-2001" })).success).toBe(false);
  });

  it("complete_visit records, bills after insurance, frees the room and counts the visit", async () => {
    const instance = await fresh();
    const result = changed(
      await step(instance, "complete_visit", { appointment_id: "APT-2001", diagnosis: "acute bronchitis" }),
      [
        "appointments.APT-2001.status",
        "appointments.APT-2001.diagnosis",
        "appointments.APT-2001.completed_at",
        "appointments.APT-2001.charge",
        "rooms.EX-1.status",
        "rooms.EX-1.patient_id",
        "rooms.EX-1.provider_id",
        "providers.DR-OKAFOR.visits_today",
        "patients.PT-1001.last_visit",
        "patients.PT-1001.balance",
        "stats.visits_completed",
      ],
    );
    // Fee 120, the basic plan pays half, less the 20 copay: 40.
    expect(result).toEqual({ appointment_id: "APT-2001", charge: 40, balance: 40 });
    rejected(
      await step(instance, "complete_visit", { appointment_id: "APT-2001", diagnosis: "again" }),
      "only a patient in a room",
    );
  });

  it("mark_no_show charges the fee and counts the miss", async () => {
    const instance = await fresh();
    changed(await step(instance, "mark_no_show", { appointment_id: "APT-2002" }), [
      "appointments.APT-2002.status",
      "patients.PT-1002.no_shows",
      "patients.PT-1002.balance",
      "stats.no_shows",
    ]);
    rejected(await step(instance, "mark_no_show", { appointment_id: "APT-2002" }), "no_show");
  });

  it("prescribe checks allergies and controlled drugs; fill_prescription dispenses and completes", async () => {
    const instance = await fresh();
    rejected(
      await step(instance, "prescribe", {
        appointment_id: "APT-2001",
        drug_id: "amoxicillin-500mg",
        qty: 21,
        refills: 0,
      }),
      "allergic to penicillin",
    );
    rejected(
      await step(instance, "prescribe", {
        appointment_id: "APT-2003",
        drug_id: "oxycodone-5mg",
        qty: 10,
        refills: 1,
      }),
      "controlled drugs",
    );
    rejected(
      await step(instance, "prescribe", {
        appointment_id: "APT-2006",
        drug_id: "ibuprofen-400mg",
        qty: 10,
        refills: 0,
      }),
      "written at a visit",
    );
    const written = await step(instance, "prescribe", {
      appointment_id: "APT-2003",
      drug_id: "hydrocortisone-1pct",
      qty: 1,
      refills: 0,
    });
    const id = (written.observation as any).prescription_id;
    changed(written, [`prescriptions.${id}`, "patients.PT-1003.medications"]);
    changed(await step(instance, "fill_prescription", { prescription_id: id }), [
      `prescriptions.${id}.fills_left`,
      `prescriptions.${id}.status`,
      `prescriptions.${id}.last_filled`,
      "drugs.hydrocortisone-1pct.stock",
      "patients.PT-1003.balance",
      "stats.prescriptions_filled",
    ]);
    rejected(await step(instance, "fill_prescription", { prescription_id: id }), "no fills left");
    // RX-3001 needs 10 cetirizine; the pharmacy has 8.
    rejected(await step(instance, "fill_prescription", { prescription_id: "RX-3001" }), "only 8 units");
  });

  it("pay_balance takes no more than is owed", async () => {
    const instance = await fresh();
    changed(await step(instance, "pay_balance", { patient_id: "PT-1002", amount: 20 }), [
      "patients.PT-1002.balance",
      "stats.revenue",
    ]);
    rejected(await step(instance, "pay_balance", { patient_id: "PT-1002", amount: 20 }), "owes only 15");
    rejected(await step(instance, "pay_balance", { patient_id: "PT-1001", amount: 5 }), "owes nothing");
  });
});

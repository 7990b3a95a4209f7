import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { compareUsersRunFolders, renderUsersReportFromFolder } from "../../../users/report/index.js";
import type { CliIo } from "../../io.js";
import { printTableRow } from "./shared.js";

export function registerUsersReportCommands(users: Command, io: CliIo): void {
  users
    .command("report <dir>")
    .description(
      "re-render report.html of a users run folder from its summary and transcripts (no model calls)",
    )
    .option("--json", "print summary.json to stdout")
    .addHelpText("after", "\nExample:\n  terrarium users report runs/retail\n")
    .action((dir: string, options: { json?: boolean }) => {
      const { html, summary } = renderUsersReportFromFolder(dir);
      writeFileSync(join(dir, "report.html"), html);
      if (options.json) io.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
      else printTableRow(io, summary, dir);
    });

  users
    .command("compare <dirs...>")
    .description(
      "put users runs side by side in the shape of VISTA's Table 1 (e.g. two user modes or models)",
    )
    .option("--html <file>", "also write the comparison as an HTML page")
    .option("--json", "print the comparison rows as JSON")
    .addHelpText(
      "after",
      "\nExample:\n  terrarium users compare runs/planner runs/chat --html compare.html\n",
    )
    .action((dirs: string[], options: { html?: string; json?: boolean }) => {
      const comparison = compareUsersRunFolders(dirs);
      if (options.html) writeFileSync(options.html, comparison.html);
      io.stdout.write(
        options.json ? `${JSON.stringify(comparison.rows, null, 2)}\n` : `${comparison.text}\n`,
      );
    });
}

/**
 * Reports of `terrarium users run`: the single-file HTML report of a run folder and the side-by-side
 * comparison of several runs in the shape of VISTA's Table 1.
 */
export {
  type ComparisonColumn,
  type ComparisonRow,
  compareUsersRunFolders,
  compareUsersRuns,
  type ScenarioComparison,
  type UsersComparison,
} from "./compare.js";
export { anchorPart, escapeHtml, runAnchor, truncate, turnAnchor } from "./html.js";
export {
  folderLabel,
  readUsersSummary,
  renderUsersReport,
  renderUsersReportFromFolder,
  type UsersReportOptions,
} from "./render.js";
export {
  type ColumnGroup,
  formatTokens,
  type MetricColumn,
  passKs,
  table1Columns,
} from "./table1.js";
